/* SPDX-License-Identifier: MIT */
/* internal.h - what the files of the HTTP service share: a job (one HTTP request) and the
 * server, and the functions each file offers the others. server.c starts and stops the service;
 * route.c is libmicrohttpd's request handler; job.c a job's lifecycle and the runner's
 * callbacks; v1.c the /v1 API; sse.c the streamed answers; respond.c queueing an answer;
 * watchdog.c the hang-up watch; log.c the log. E2B's wire is e2b.c, called from route.c
 * (e2b_match_path, e2b_route, e2b_prepare, e2b_answer) and job.c (e2b_run, e2b_call_clear). */
#ifndef EBSRV_INTERNAL_H
#define EBSRV_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common/runner.h"
#include "common/sessions.h"
#include "e2b.h"
#include "metrics.h"
#include "request.h"
#include "server.h"
#include "tenants.h"

/* A body larger than --max-body is read and thrown away up to this much, so that the client
 * reads its 413 rather than a reset; past it the connection is closed. */
#define SRV_DISCARD_MAX (64U << 20)
/* Output waiting to be streamed to a slow SSE client; past it, output is dropped from the
 * stream (the final result event still carries the run's capped output). */
#define SRV_SSE_PENDING_MAX (8U << 20)
/* The stream buffer's first size; it doubles as needed, and holds only what is unsent. */
#define SRV_SSE_BUF_MIN (64U << 10)
/* A download is read from its file this much at a time: what the server holds of it. */
#define SRV_FILE_BLOCK (64U << 10)
/* How often the watchdog looks for clients that hung up. */
#define SRV_WATCH_MS 50
#define SRV_CONN_TIMEOUT_S 60U
#define SRV_RETRY_AFTER_MAX 60
/* A one-shot run's image files up to this size come back inline in its record (its fresh
 * workspace is gone after the run); as `execbox mcp --inline-images` by default. */
#define SRV_INLINE_FILES_MAX (2U << 20)

enum route {
    R_EXECUTE,
    R_HEALTH,
    R_METRICS,
    R_SESSIONS,        /* /v1/sessions */
    R_SESSION,         /* /v1/sessions/{id} */
    R_SESSION_EXECUTE, /* /v1/sessions/{id}/execute */
    R_SESSION_FILES,   /* /v1/sessions/{id}/files */
    R_SESSION_FILE,    /* /v1/sessions/{id}/files/{path} */
    R_E2B,             /* /e2b/..., E2B's code-interpreter wire (e2b.h) */
    R_OTHER,
};

/* What a job does on a worker. */
enum op {
    OP_NONE,        /* answered by the polling thread */
    OP_RUN,         /* POST /v1/execute */
    OP_CREATE,      /* POST /v1/sessions */
    OP_CELL,        /* POST /v1/sessions/{id}/execute */
    OP_FILE_LIST,   /* GET /v1/sessions/{id}/files */
    OP_FILE_GET,    /* GET /v1/sessions/{id}/files/{path} */
    OP_FILE_PUT,    /* PUT ... */
    OP_FILE_DELETE, /* DELETE ... */
    OP_E2B,         /* an E2B call that needs a worker (e2b.h) */
};

enum jstate {
    J_NEW,      /* headers seen; a GET, or a rejected request, answered at the last call */
    J_READING,  /* POST /v1/execute: reading the body */
    J_QUEUED,   /* waiting for a worker */
    J_RUNNING,  /* a worker runs it */
    J_DONE,     /* the answer is ready */
    J_ANSWERED, /* a response was queued with libmicrohttpd */
};

/* What a request's headers say. */
struct job_request {
    char id[72];
    char remote[64];
    char method[16];
    char path[96];
    enum route route;
    enum op op;
    char sess_id[SESS_ID_SIZE]; /* from the path; "" when not a session's */
    char *file_path;            /* decoded workspace path of R_SESSION_FILE */
    bool bad_path;              /* ... which is not one a client may name */
    const char *allow;          /* a 405's Allow header when the route alone does not say */
    uint64_t t0_ns;
    bool sse;       /* Accept: text/event-stream */
    bool cors;      /* an allowed Origin: answers carry Access-Control-Allow-Origin */
    bool preflight; /* OPTIONS from an allowed Origin: answered 204 with what it may do */
    char origin[256];
    bool close; /* a chunked body: the front door cannot follow it, so the connection ends */
};

/* The request's body as it is read. */
struct job_body {
    char *data;
    size_t len, cap, discarded;
    size_t max; /* largest body taken: --max-body, or less for a file */
    bool too_large;
    bool ctype_not_json; /* a body that may be empty came without application/json: 415 unless
                            it is empty */
};

/* An answer decided from the headers, sent once the body is in (answering earlier would make
 * libmicrohttpd close the connection). status 0: none. */
struct job_reject {
    int status;
    const char *code;
    char msg[128];
    char field[16];
    size_t retry;
};

/* A worker's answer, and what the log says of the run. */
struct job_answer {
    int run_status; /* the worker's answer, published as the job's status in http_done() */
    char *body;
    size_t len;
    void (*free_fn)(void *); /* how body is freed: free, or execbox_free */
    int fd;                  /* a download: the file, sent from it (body is NULL); or -1 */
    uint64_t fd_size;        /* ... its size when opened: what is sent */
    const char *ctype;       /* static; NULL: application/json */
    const char *outcome;     /* for the log; NULL when nothing ran */
    size_t retry;            /* Retry-After seconds (a quota's 429); 0: none */
    int exit_code;
    double run_s;
};

/* A streamed answer's bytes still to be sent (sse.c). */
struct job_stream {
    char *buf;
    size_t cap;       /* buf's size */
    size_t off, len;  /* buf[off, len) is still to be sent */
    uint64_t dropped; /* bytes of output the client was too slow for (not streamed) */
    bool done;
    char carry[2][4]; /* an incomplete UTF-8 sequence at the end of the last chunk */
    size_t carry_len[2];
};

/* One HTTP request, from its headers to its completion (job.c). */
struct job {
    int refs; /* __atomic */
    pthread_mutex_t lock;
    struct srv *srv;
    struct MHD_Connection *conn; /* NULL once libmicrohttpd is done with it */
    int fd;                      /* the client's socket, for the watchdog */
    struct job_request req;
    struct sess *sess;   /* its reference, taken when the headers are in */
    bool cell_claimed;   /* sess_cell_begin() succeeded; released in http_done() */
    struct e2b_call e2b; /* R_E2B: the E2B call */
    enum jstate state;
    bool suspended;   /* we suspended the connection and owe it a resume */
    bool accepted;    /* counted in srv->pending */
    bool client_gone; /* hung up before the answer */
    struct job_body body;
    struct job_reject rej;
    struct runner_job rj; /* its place in the runner, and its cancel token */
    struct srv_run_spec spec;
    struct tenant tenant; /* who sent it (has_tenant), copied at authentication */
    bool has_tenant;
    bool run_counted; /* __atomic: counted in the tenant's max_runs until the run ends */
    int run_refused;  /* why tenants_run_begin refused it (-EDQUOT: the quota) */
    int status;       /* the HTTP status of what was queued with libmicrohttpd */
    struct job_answer answer;
    struct job_stream stream;
};

struct srv {
    struct srv_config cfg;
    struct MHD_Daemon *daemon;
    struct srv_metrics metrics;
    struct runner *runner; /* the queue and the workers */
    struct sess_registry *sessions;
    struct e2b *e2b; /* the E2B routes' contexts */
    pthread_mutex_t lock;
    size_t pending; /* accepted and not yet completed on the wire */
    bool draining, stopping;
    bool leaving; /* __atomic: srv_leave() was called: health says 503, runs still taken */
    pthread_t watchdog;
    bool watchdog_started;
    uint64_t seq;
    char id_prefix[9];
    struct front *front; /* accepts the connections */
    pthread_mutex_t add_lock;
    bool daemon_stopped; /* under add_lock: no more connections for libmicrohttpd */
};

/* ---- job.c: tenants ---- */

/* Gives back the run the job's tenant had counted (tenants_run_begin), once. */
void srv_run_uncount(struct srv *s, struct job *j);

/* The owner the job's sessions are found by: its tenant's name, NULL on a server without. */
const char *srv_owner(const struct job *j);

/* ---- log.c ---- */

/* in into out (cut to size), with the segment after every "/e2b/" (where a path carries a
 * token) replaced by three asterisks. */
void srv_mask_e2b_paths(const char *in, char *out, size_t size);

/* Writes o (stolen) with a "time" member as one line on stderr, in one write(2). */
void srv_log_object(json_t *o);

/* libmicrohttpd's logger (cls: the server): its warnings as srv_log lines, token redacted. */
__attribute__((format(printf, 2, 0))) void srv_mhd_logger(void *cls, const char *fmt, va_list ap);

/* The access-log object of one request (level, event, request_id, remote, method, path, status,
 * duration_ms); NULL when out of memory. */
json_t *srv_access_object(const char *id, const char *remote, const char *method, const char *path,
                          int status, double ms);

/* Logs a finished request with its final status (and, for a run, its outcome). */
void srv_access_log(struct job *j, int status);

/* ---- job.c ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t srv_now_ns(void);

/* Takes one more reference to j; returns j. */
struct job *job_ref(struct job *j);

/* Drops a reference (NULL is accepted); the last one frees the job and all it holds. */
void job_unref(struct job *j);

/* The client's IP address, or "local" (a unix socket), into buf. */
void srv_format_remote(const struct sockaddr *sa, char *buf, size_t n);

/* A new request id (this server's prefix and a sequence number) into buf. */
void srv_new_request_id(struct srv *s, char *buf, size_t n);

/* A job for a request whose headers are in, holding the connection's reference; NULL when out
 * of memory. */
struct job *job_new(struct srv *s, struct MHD_Connection *c, const char *url, const char *method);

/* The runner's callbacks for the service's jobs (run() on a worker, done() publishes). */
extern const struct runner_ops srv_runner_ops;

/* Queues a job whose runner part is ready, and suspends its connection until the answer or
 * starts its stream; answers 429 or 503 itself when it cannot be queued. */
enum MHD_Result job_queue(struct srv *s, struct job *j, struct MHD_Connection *c);

/* ---- respond.c ---- */

/* Seconds a client should wait before retrying, from the queue and the runs' average. */
size_t srv_retry_after(struct srv *s);

/* Adds Vary: Origin and, for an allowed Origin, the CORS headers (a preflight's too). */
void srv_add_cors_headers(struct job *j, struct MHD_Response *r);

/* Queues an answer whose body (freed with free_fn) is handed over; marks the job answered. */
enum MHD_Result srv_respond(struct job *j, struct MHD_Connection *c, int status, const char *ctype,
                            char *body, size_t len, void (*free_fn)(void *), size_t retry_secs);

/* Queues a 200 download read from fd (handed over) a block at a time; size bytes are sent. */
enum MHD_Result srv_respond_file(struct job *j, struct MHD_Connection *c, const char *ctype, int fd,
                                 uint64_t size);

/* Queues an error answer: srv_error_json(code, message, field). */
enum MHD_Result srv_respond_error(struct job *j, struct MHD_Connection *c, int status,
                                  const char *code, const char *message, const char *field,
                                  size_t retry_secs);

/* Queues o (stolen) as a JSON answer. */
enum MHD_Result srv_respond_json(struct job *j, struct MHD_Connection *c, int status, json_t *o);

/* 429 for a tenant's quota: {"error": {"code": "quota_exceeded", "message", "quota"}} with
 * Retry-After. */
enum MHD_Result srv_respond_quota(struct job *j, struct MHD_Connection *c, const char *quota,
                                  const char *message, size_t retry_secs);

/* ---- sse.c ---- */

/* Appends a frame to the job's stream and wakes its connection; false when dropped (the client
 * is too far behind, unless force). Called with j->lock held. */
bool sse_push(struct job *j, const char *frame, size_t len, bool force);

/* e2b_run's push (ud: the job): an NDJSON line into the job's stream. */
bool sse_e2b_push(void *ud, const char *line, size_t len, bool force);

/* Appends one server-sent event; false when it was dropped. Takes j->lock. */
bool sse_event(struct job *j, const char *event, const char *json, bool force);

/* Appends the stderr event saying how much output was not streamed. Called with j->lock held. */
void sse_dropped_note(struct job *j);

/* A run's on_output (ud: the job): one "stdout" or "stderr" event per chunk, valid UTF-8. */
void sse_on_output(void *ud, enum execbox_stream stream, const char *data, size_t len);

/* Queues the 200 streaming response, read from the job's stream until it is done. */
enum MHD_Result sse_respond(struct job *j, struct MHD_Connection *c);

/* ---- v1.c ---- */

/* Sets a worker's answer, published by the runner's done(): body (freed with free_fn) or NULL. */
void job_set_answer(struct job *j, int status, char *body, size_t len, const char *ctype,
                    void (*free_fn)(void *));

/* On a worker: POST /v1/execute, a run in a fresh sandbox. */
void v1_run(struct srv *s, struct job *j);

/* On a worker: POST /v1/sessions/{id}/execute, a cell of the job's session. */
void v1_cell(struct srv *s, struct job *j);

/* On a worker: POST /v1/sessions, a new session. */
void v1_create(struct srv *s, struct job *j);

/* The policy's file_size, resolved: the largest file a session's call may write or read. */
size_t v1_file_cap(const struct execbox_policy *p);

/* On a worker: the file calls of a session (list, download, upload, delete). */
void v1_file_op(struct job *j);

/* GET /v1/health: 200, or 503 while draining or leaving. */
enum MHD_Result v1_health(struct srv *s, struct job *j, struct MHD_Connection *c);

/* GET /metrics: the Prometheus text. */
enum MHD_Result v1_metrics(struct srv *s, struct job *j, struct MHD_Connection *c);

/* GET /v1/sessions/{id}: the job's session. */
enum MHD_Result v1_session(struct srv *s, struct job *j, struct MHD_Connection *c);

/* GET /v1/sessions: the open sessions. */
enum MHD_Result v1_sessions(struct srv *s, struct job *j, struct MHD_Connection *c);

/* DELETE /v1/sessions/{id}: ends the session; the connection waits, suspended, for its 204. */
enum MHD_Result v1_delete_session(struct srv *s, struct job *j, struct MHD_Connection *c);

/* Parses the JSON body of a run, a new session or a cell into j->spec; false with an answer
 * queued (*ret) when it is bad. */
bool v1_parse_body(struct srv *s, struct job *j, struct MHD_Connection *c, enum MHD_Result *ret);

/* ---- watchdog.c ---- */

/* The watchdog thread (arg: the server), until the server is stopping. */
void *srv_watchdog_main(void *arg);

/* ---- route.c ---- */

/* libmicrohttpd's access handler (cls: the server): every call for every request. */
enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls);

/* libmicrohttpd's completion callback: the final status, metrics, the access log. */
void srv_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe);

/* libmicrohttpd's unescape callback: leaves the path as sent. */
size_t srv_keep_escaped(void *cls, struct MHD_Connection *c, char *s);

#endif
