/* SPDX-License-Identifier: MIT */
/*
 * server.c - the HTTP service: libmicrohttpd's one polling thread parses requests and never
 * waits on a sandbox; an accepted run goes into a bounded queue, its connection is suspended,
 * and a worker thread runs it and resumes the connection with the answer.
 *
 * The queue and the workers are the surfaces' shared job runner (common/runner.h). A job (one
 * HTTP request) is shared by three owners, each holding a reference: the connection (until
 * libmicrohttpd reports the request completed), the runner (until its done() callback), and a
 * streaming response (until libmicrohttpd frees it). Lock order: a job's lock, then the
 * server's, then the runner's; the runner calls us back with none of them held.
 *
 * A suspended connection is not watched by libmicrohttpd, so a watchdog thread polls the
 * sockets of queued and running jobs for a hang-up and fires the run's cancel token: the
 * sandbox of a client that went away is killed, not left to run out its timeout.
 *
 * Connections come in through the front door (front.c), which checks every request head's
 * framing before libmicrohttpd reads it and hands libmicrohttpd one end of a socket pair.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/runner.h"
#include "common/sessions.h"
#include "e2b.h"
#include "front.h"
#include "metrics.h"
#include "request.h"

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

struct job {
    int refs; /* __atomic */
    pthread_mutex_t lock;
    struct srv *srv;
    struct MHD_Connection *conn; /* NULL once libmicrohttpd is done with it */
    int fd;                      /* the client's socket, for the watchdog */
    char id[72];
    char remote[64];
    char method[16];
    char path[96];
    enum route route;
    enum op op;
    char sess_id[SESS_ID_SIZE]; /* from the path; "" when not a session's */
    struct sess *sess;          /* its reference, taken when the headers are in */
    bool cell_claimed;          /* sess_cell_begin() succeeded; released in http_done() */
    char *file_path;            /* decoded workspace path of R_SESSION_FILE */
    bool bad_path;              /* ... which is not one a client may name */
    size_t body_max;            /* largest body taken: --max-body, or less for a file */
    struct e2b_call e2b;        /* R_E2B: the E2B call */
    const char *allow;          /* a 405's Allow header when the route alone does not say */
    uint64_t t0_ns;
    enum jstate state;
    bool sse;       /* Accept: text/event-stream */
    bool cors;      /* an allowed Origin: answers carry Access-Control-Allow-Origin */
    bool preflight; /* OPTIONS from an allowed Origin: answered 204 with what it may do */
    char origin[256];
    bool suspended;   /* we suspended the connection and owe it a resume */
    bool accepted;    /* counted in srv->pending */
    bool client_gone; /* hung up before the answer */
    bool too_large;
    bool close; /* a chunked body: the front door cannot follow it, so the connection ends */
    bool ctype_not_json; /* a body that may be empty came without application/json: 415 unless
                            it is empty */
    /* an answer decided from the headers, sent once the body is in (answering earlier would
     * make libmicrohttpd close the connection) */
    int rej_status;
    const char *rej_code;
    char rej_msg[128];
    char rej_field[16];
    size_t rej_retry;
    struct runner_job rj; /* its place in the runner, and its cancel token */
    char *body;
    size_t body_len, body_cap, discarded;
    struct srv_run_spec spec;
    /* the answer */
    int status;
    int run_status; /* the worker's answer, published as status in http_done() */
    char *resp;
    size_t resp_len;
    void (*resp_free)(void *); /* how resp is freed: free, or execbox_free */
    int resp_fd;               /* a download: the file, sent from it (resp is NULL); or -1 */
    uint64_t resp_fd_size;     /* ... its size when opened: what is sent */
    const char *resp_ctype;    /* static; NULL: application/json */
    const char *outcome;       /* for the log; NULL when nothing ran */
    int exit_code;
    double run_s;
    /* streaming */
    char *sse_buf;
    size_t sse_cap;          /* sse_buf's size */
    size_t sse_off, sse_len; /* sse_buf[sse_off, sse_len) is still to be sent */
    uint64_t sse_dropped;    /* bytes of output the client was too slow for (not streamed) */
    bool sse_done;
    char carry[2][4]; /* an incomplete UTF-8 sequence at the end of the last chunk */
    size_t carry_len[2];
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- logging ----------------------------------------------------------------------------- */

/* One JSON object as one line, in one write(2) so that lines from threads never interleave. */
static void log_object(json_t *o)
{
    char t[48];
    cli_iso_time(NULL, 3, t, sizeof(t));
    json_object_set_new(o, "time", json_string(t));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!s)
        return;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return;
    }
    line[n] = '\n';
    (void)!write(STDERR_FILENO, line, n + 1);
    free(line);
}

void srv_log(const char *level, const char *event, const char *message)
{
    json_t *o = json_object();
    if (!o)
        return;
    json_object_set_new(o, "level", json_string(level));
    json_object_set_new(o, "event", json_string(event));
    /* json_string refuses invalid UTF-8; a message is ours, but be safe. */
    json_t *m = json_string(message);
    json_object_set_new(o, "message", m ? m : json_string("(unprintable)"));
    log_object(o);
}

/* Replaces every copy of the token in msg with "***" (libmicrohttpd's messages quote the url,
 * and an E2B url carries the token). */
static void redact_token(char *msg, const char *token)
{
    size_t tl = token ? strlen(token) : 0;
    char *p;
    while (tl >= 3 && (p = strstr(msg, token))) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + tl, strlen(p + tl) + 1);
    }
}

__attribute__((format(printf, 2, 0))) static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    struct srv *s = cls;
    /* The front door's socket pairs are not TCP: setting TCP_NODELAY or TCP_CORK on them fails
     * (EOPNOTSUPP), and 0.9.75 cannot be told so for a connection given with
     * MHD_add_connection(); it warns then, at every response. */
    if (strncmp(fmt, "Setting %s option to %s state failed", 36) == 0 ||
        strncmp(fmt, "Failed to push the data from buffers", 36) == 0)
        return;
    /* Whole, so that the token is found before the message is cut to a log line's size. */
    char *full = NULL;
    if (vasprintf(&full, fmt, ap) < 0)
        return;
    redact_token(full, s->cfg.token);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", full);
    free(full);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    srv_log("warning", "httpd", msg);
}

static json_t *access_object(const char *id, const char *remote, const char *method,
                             const char *path, int status, double ms)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "level", json_string("info"));
    json_object_set_new(o, "event", json_string("access"));
    json_object_set_new(o, "request_id", json_string(id));
    json_object_set_new(o, "remote", json_string(remote));
    json_t *m = json_string(method);
    json_object_set_new(o, "method", m ? m : json_string("(not UTF-8)"));
    json_t *p = json_string(path);
    json_object_set_new(o, "path", p ? p : json_string("(not UTF-8)"));
    json_object_set_new(o, "status", json_integer(status));
    json_object_set_new(o, "duration_ms", json_real(ms));
    return o;
}

static void access_log(struct job *j, int status)
{
    json_t *o = access_object(j->id, j->remote, j->method, j->path, status,
                              (double)(now_ns() - j->t0_ns) / 1e6);
    if (!o)
        return;
    if (j->route == R_EXECUTE || j->route == R_SESSION_EXECUTE || j->route == R_E2B) {
        json_object_set_new(o, "stream", json_boolean(j->sse));
        if (j->outcome) {
            json_object_set_new(o, "outcome", json_string(j->outcome));
            json_object_set_new(o, "exit_code", json_integer(j->exit_code));
            json_object_set_new(o, "run_ms", json_real(j->run_s * 1e3));
        }
        if (j->client_gone)
            json_object_set_new(o, "client_gone", json_true());
    }
    log_object(o);
}

/* ---- jobs -------------------------------------------------------------------------------- */

static struct job *job_ref(struct job *j)
{
    __atomic_add_fetch(&j->refs, 1, __ATOMIC_RELAXED);
    return j;
}

static void job_unref(struct job *j)
{
    if (!j || __atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    pthread_mutex_destroy(&j->lock);
    runner_job_release(&j->rj);
    e2b_call_clear(j->srv->e2b, &j->e2b);
    free(j->body);
    srv_run_spec_clear(&j->spec);
    if (j->resp)
        j->resp_free(j->resp);
    if (j->resp_fd >= 0)
        close(j->resp_fd);
    free(j->sse_buf);
    free(j->file_path);
    sess_put(j->sess);
    free(j);
}

/* The client's IP address, or "local" (a unix socket). */
static void format_remote(const struct sockaddr *sa, char *buf, size_t n)
{
    char host[48] = "";
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
    snprintf(buf, n, "%s", host[0] ? host : "local");
}

static void new_request_id(struct srv *s, char *buf, size_t n)
{
    pthread_mutex_lock(&s->lock);
    uint64_t seq = ++s->seq;
    pthread_mutex_unlock(&s->lock);
    snprintf(buf, n, "%s-%06llx", s->id_prefix, (unsigned long long)seq);
}

static struct job *job_new(struct srv *s, struct MHD_Connection *c, const char *url,
                           const char *method)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->refs = 1; /* the connection's */
    pthread_mutex_init(&j->lock, NULL);
    j->srv = s;
    j->conn = c;
    j->fd = -1;
    j->resp_fd = -1;
    j->resp_free = free;
    j->body_max = s->cfg.max_body;
    j->t0_ns = now_ns();
    snprintf(j->method, sizeof(j->method), "%s", method);
    snprintf(j->path, sizeof(j->path), "%s", url);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        j->fd = ci->connect_fd;
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    format_remote(ci ? ci->client_addr : NULL, j->remote, sizeof(j->remote));
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    if (srv_request_id_ok(rid))
        snprintf(j->id, sizeof(j->id), "%s", rid);
    else
        new_request_id(s, j->id, sizeof(j->id));
    return j;
}

/* ---- responses --------------------------------------------------------------------------- */

static size_t retry_after(struct srv *s)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    double wait = st.avg_run_s * (double)(st.queued + 1) / (double)st.workers;
    size_t secs = (size_t)wait + 1;
    return secs > SRV_RETRY_AFTER_MAX ? SRV_RETRY_AFTER_MAX : secs;
}

/* A page of an allowed origin may read the answer; every answer varies with Origin. */
static void add_cors_headers(struct job *j, struct MHD_Response *r)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    if (!j->cors)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, j->origin);
    if (j->preflight) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "POST, GET, HEAD, PUT, DELETE");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Accept, X-Request-Id");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "X-Request-Id, Retry-After");
}

static const char *allowed_methods(enum route r)
{
    switch (r) {
    case R_EXECUTE:
    case R_SESSION_EXECUTE: return "POST";
    case R_SESSIONS: return "GET, HEAD, POST";
    case R_SESSION: return "GET, HEAD, DELETE";
    case R_SESSION_FILE: return "GET, HEAD, PUT, DELETE";
    default: return "GET, HEAD";
    }
}

/* Adds the headers every answer carries and queues it. */
static enum MHD_Result queue_answer(struct job *j, struct MHD_Connection *c, int status,
                                    const char *ctype, struct MHD_Response *r, size_t retry_secs)
{
    if (status != 204)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "X-Request-Id", j->id);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (retry_secs) {
        char v[16];
        snprintf(v, sizeof(v), "%zu", retry_secs);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"execbox\"");
    add_cors_headers(j, r);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
                                j->allow ? j->allow : allowed_methods(j->route));
    /* Bytes of a sandbox's file are the code's, not ours: never sniffed, never run as a page
     * of this origin. */
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (j->route == R_SESSION_FILE)
        MHD_add_response_header(r, "Content-Security-Policy", "sandbox; default-src 'none'");
    /* Leaving or draining: no connection is kept, so the client's next request opens a new
     * one, which a load balancer sends elsewhere. */
    if (j->close || __atomic_load_n(&j->srv->draining, __ATOMIC_RELAXED) ||
        __atomic_load_n(&j->srv->leaving, __ATOMIC_RELAXED))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    j->status = status;
    j->state = J_ANSWERED;
    return ok;
}

/* Queues a response whose body (malloc'd, freed by free_fn) is handed over. */
static enum MHD_Result respond(struct job *j, struct MHD_Connection *c, int status,
                               const char *ctype, char *body, size_t len, void (*free_fn)(void *),
                               size_t retry_secs)
{
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, body, free_fn);
    if (!r) {
        free_fn(body);
        return MHD_NO;
    }
    return queue_answer(j, c, status, ctype, r, retry_secs);
}

/* A download's reader: the next block of the file, read at the offset libmicrohttpd asks for
 * into its one buffer of SRV_FILE_BLOCK bytes. A file that shrank under the download (a cell
 * truncated it) ends the response with an error: the connection is closed, and the client sees
 * a body shorter than its Content-Length rather than a wait. */
static ssize_t file_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    int fd = (int)(intptr_t)cls;
    ssize_t n;
    do
        n = pread(fd, buf, max, (off_t)pos);
    while (n < 0 && errno == EINTR);
    return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_close(void *cls)
{
    close((int)(intptr_t)cls);
}

/* Queues a download sent from the file itself (fd, handed over): it is read a block at a time
 * as the client takes it, so that the server holds one block of it per connection however
 * large it is and however slowly the client reads. size is what is sent (its size when
 * opened). */
static enum MHD_Result respond_file(struct job *j, struct MHD_Connection *c, const char *ctype,
                                    int fd, uint64_t size)
{
    struct MHD_Response *r = MHD_create_response_from_callback(size, SRV_FILE_BLOCK, file_read,
                                                               (void *)(intptr_t)fd, file_close);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    return queue_answer(j, c, 200, ctype, r, 0);
}

static enum MHD_Result respond_error(struct job *j, struct MHD_Connection *c, int status,
                                     const char *code, const char *message, const char *field,
                                     size_t retry_secs)
{
    char *body = srv_error_json(code, message, field);
    if (!body)
        return MHD_NO;
    return respond(j, c, status, "application/json", body, strlen(body), free, retry_secs);
}

static enum MHD_Result respond_json(struct job *j, struct MHD_Connection *c, int status, json_t *o)
{
    char *body = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                   JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!body)
        return MHD_NO;
    return respond(j, c, status, "application/json", body, strlen(body), free, 0);
}

/* ---- the queue --------------------------------------------------------------------------- */

/* Takes a job into the runner. 0, -EAGAIN when full, -ESHUTDOWN when draining. */
static int enqueue(struct srv *s, struct job *j)
{
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining || s->stopping;
    if (!draining)
        s->pending++; /* before the runner may finish it */
    pthread_mutex_unlock(&s->lock);
    if (draining)
        return -ESHUTDOWN;
    j->state = J_QUEUED;
    int r = runner_submit(s->runner, &job_ref(j)->rj);
    if (r < 0) {
        job_unref(j);
        j->state = J_READING;
        pthread_mutex_lock(&s->lock);
        s->pending--;
        pthread_mutex_unlock(&s->lock);
        return r == -EEXIST ? -EAGAIN : r;
    }
    j->accepted = true;
    return 0;
}

/* ---- streaming --------------------------------------------------------------------------- */

/* Makes room for len more bytes at the end of the job's stream buffer: what the client has
 * already been sent is dropped from its front first, so that the buffer holds only what is
 * still to be sent (a client that keeps up a little at a time never drains it fully, and a
 * buffer that only grew would hold every byte ever streamed). Called with j->lock held. */
static bool sse_reserve(struct job *j, size_t len)
{
    size_t pending = j->sse_len - j->sse_off;
    if (j->sse_off && (j->sse_off >= j->sse_cap / 2 || j->sse_cap - j->sse_len < len)) {
        memmove(j->sse_buf, j->sse_buf + j->sse_off, pending);
        j->sse_off = 0;
        j->sse_len = pending;
    }
    if (j->sse_cap - j->sse_len >= len)
        return true;
    size_t cap = j->sse_cap ? j->sse_cap : SRV_SSE_BUF_MIN;
    while (cap < j->sse_len + len)
        cap *= 2;
    char *nb = realloc(j->sse_buf, cap);
    if (!nb)
        return false;
    j->sse_buf = nb;
    j->sse_cap = cap;
    return true;
}

/* Appends a frame to the job's stream and wakes its connection; false when it was dropped
 * (the client is more than SRV_SSE_PENDING_MAX behind; a forced frame is never dropped for
 * that). Called with j->lock held. */
static bool sse_push(struct job *j, const char *frame, size_t len, bool force)
{
    if ((!force && j->sse_len - j->sse_off + len > SRV_SSE_PENDING_MAX) || !sse_reserve(j, len))
        return false;
    memcpy(j->sse_buf + j->sse_len, frame, len);
    j->sse_len += len;
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    return true;
}

/* e2b_run's push: an NDJSON line into the same bounded stream as the server-sent events. */
static bool e2b_push(void *ud, const char *line, size_t len, bool force)
{
    struct job *j = ud;
    pthread_mutex_lock(&j->lock);
    bool kept = sse_push(j, line, len, force);
    pthread_mutex_unlock(&j->lock);
    return kept;
}

static bool sse_event(struct job *j, const char *event, const char *json, bool force)
{
    size_t n;
    char *f = srv_sse_frame(event, json, &n);
    if (!f)
        return false;
    pthread_mutex_lock(&j->lock);
    bool kept = sse_push(j, f, n, force);
    pthread_mutex_unlock(&j->lock);
    free(f);
    return kept;
}

/* The note that output was dropped from the stream, as one stderr event that is never
 * dropped itself. Called with j->lock held. */
static void sse_dropped_note(struct job *j)
{
    char note[200];
    snprintf(note, sizeof(note),
             "{\"data\":\"\\n[execbox: %llu bytes of output were not streamed: the client read "
             "too slowly]\\n\"}",
             (unsigned long long)j->sse_dropped);
    size_t n;
    char *f = srv_sse_frame("stderr", note, &n);
    if (f)
        sse_push(j, f, n, true);
    free(f);
}

/* The run's on_output: one "stdout" or "stderr" event per chunk, as {"data": "..."} with any
 * invalid UTF-8 replaced and a sequence split between chunks carried over whole. */
static void on_output(void *ud, enum execbox_stream stream, const char *data, size_t len)
{
    struct job *j = ud;
    int k = stream == EXECBOX_STREAM_STDERR ? 1 : 0;
    size_t total = j->carry_len[k] + len;
    char *joined = malloc(total ? total : 1);
    if (!joined)
        return;
    memcpy(joined, j->carry[k], j->carry_len[k]);
    memcpy(joined + j->carry_len[k], data, len);
    size_t keep = 0, clen = 0;
    char *clean = execbox_utf8_sanitize(joined, total, &clen, &keep);
    if (clean) {
        memcpy(j->carry[k], joined + total - keep, keep);
        j->carry_len[k] = keep;
        json_t *o = clen ? json_pack("{s:s%}", "data", clean, clen) : NULL;
        char *s =
            o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS)) : NULL;
        if (clen && (!s || !sse_event(j, k ? "stderr" : "stdout", s, false)))
            j->sse_dropped += clen; /* only the worker's thread counts it */
        free(s);
        json_decref(o);
        execbox_free(clean);
    }
    free(joined);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct job *j = cls;
    pthread_mutex_lock(&j->lock);
    ssize_t r;
    if (j->sse_len > j->sse_off) {
        size_t n = j->sse_len - j->sse_off;
        if (n > max)
            n = max;
        memcpy(buf, j->sse_buf + j->sse_off, n);
        j->sse_off += n;
        if (j->sse_off == j->sse_len) {
            /* All sent: the buffer starts over, and a large one goes back to the system. */
            j->sse_off = j->sse_len = 0;
            if (j->sse_cap > SRV_SSE_BUF_MIN) {
                free(j->sse_buf);
                j->sse_buf = NULL;
                j->sse_cap = 0;
            }
        }
        r = (ssize_t)n;
    } else if (j->sse_done) {
        r = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing to send yet: park the connection until the worker has more (returning 0
         * without suspending would make libmicrohttpd spin). */
        j->suspended = true;
        MHD_suspend_connection(j->conn);
        r = 0;
    }
    pthread_mutex_unlock(&j->lock);
    return r;
}

static void sse_free(void *cls)
{
    job_unref(cls);
}

/* ---- the workers ------------------------------------------------------------------------- */

static enum srv_outcome outcome_of(const struct execbox_result *r)
{
    if (r->timed_out)
        return SRV_OUTCOME_TIMEOUT;
    if (r->oom_killed)
        return SRV_OUTCOME_OOM;
    if (r->exit_code == 0 && !r->error_name)
        return SRV_OUTCOME_OK;
    return SRV_OUTCOME_ERROR;
}

/* Sets the worker's answer, read by http_done() on the same thread. body is malloc'd (freed
 * with free_fn), or NULL for none. */
static void set_answer(struct job *j, int status, char *body, size_t len, const char *ctype,
                       void (*free_fn)(void *))
{
    j->run_status = status;
    j->resp = body;
    j->resp_len = body ? len : 0;
    j->resp_ctype = ctype;
    j->resp_free = free_fn;
}

static void set_json_answer(struct job *j, int status, json_t *o)
{
    char *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                   : NULL;
    json_decref(o);
    if (!body) {
        status = 503;
        body = srv_error_json("unavailable", "out of memory", NULL);
    }
    set_answer(j, status, body, body ? strlen(body) : 0, NULL, free);
}

static void set_error_answer(struct job *j, int status, const char *code, const char *msg,
                             const char *field)
{
    char *body = srv_error_json(code, msg, field);
    set_answer(j, status, body, body ? strlen(body) : 0, NULL, free);
}

/* The HTTP answer to an API error of a session call, from its code, kind and field (never from
 * its message). */
static void set_api_error(struct job *j, int r, const struct execbox_error *e)
{
    const char *field = e->field[0] ? e->field : NULL;
    switch (r) {
    case -EINVAL:
    case -EPERM:
    case -EISDIR:
    case -ENOTDIR:
    case -ENAMETOOLONG: set_error_answer(j, 400, "bad_request", e->msg, field); return;
    case -ENOENT: set_error_answer(j, 404, "file_not_found", e->msg, "path"); return;
    case -ETIMEDOUT:
        set_error_answer(j, 404, "session_expired", "the session expired (idle or lifetime)", NULL);
        return;
    case -ESHUTDOWN:
        set_error_answer(j, 404, "session_ended", "the session has ended", NULL);
        return;
    case -EBUSY:
        set_error_answer(j, 409, "session_busy", "a cell is already running in this session", NULL);
        return;
    case -ENOTEMPTY: set_error_answer(j, 409, "not_empty", e->msg, "path"); return;
    case -EAGAIN: set_error_answer(j, 429, "too_many_sessions", e->msg, NULL); return;
    case -EFBIG: set_error_answer(j, 413, "payload_too_large", e->msg, field); return;
    case -ENOSPC: set_error_answer(j, 507, "insufficient_storage", e->msg, NULL); return;
    case -ENOTSUP:
        /* A field at fault is the request's; without one, this server cannot have sessions. */
        if (field)
            set_error_answer(j, 400, "bad_request", e->msg, field);
        else
            set_error_answer(j, 501, "not_implemented", e->msg, NULL);
        return;
    case -ENOMEM: set_error_answer(j, 503, "unavailable", "out of memory", NULL); return;
    default: set_error_answer(j, 500, "internal", e->msg[0] ? e->msg : "internal error", NULL);
    }
}

/* A finished run or cell: counts it and answers with its record. */
static void set_result_answer(struct srv *s, struct job *j, struct execbox_result *res)
{
    enum srv_outcome o = outcome_of(res);
    bool cancelled = res->killed_reason == EXECBOX_KILLED_CANCELLED;
    srv_metrics_run(&s->metrics, o, cancelled);
    srv_metrics_egress(&s->metrics, res);
    j->outcome = cancelled ? "cancelled" : srv_outcome_name(o);
    j->exit_code = res->exit_code;
    char *body = NULL;
    struct execbox_error err = {0};
    if (execbox_result_to_json(res, 0, &body, &err) < 0) {
        set_error_answer(j, 500, "internal", err.msg, NULL);
        return;
    }
    /* The library's allocation is freed with execbox_free. */
    set_answer(j, 200, body, strlen(body), NULL, execbox_free);
}

static struct execbox_request request_of(struct job *j, const struct execbox_policy *policy)
{
    return (struct execbox_request){
        .language = j->spec.language,
        .code = j->spec.code_len ? j->spec.code : "\n",
        .code_len = j->spec.code_len ? j->spec.code_len : 1,
        .stdin_data = j->spec.stdin_data,
        .stdin_len = j->spec.stdin_len,
        .policy = policy,
        .on_output = j->sse ? on_output : NULL,
        .userdata = j,
        .cancel = j->rj.cancel,
        .files = j->spec.files,
        .n_files = j->spec.n_files,
        .rich_results = j->spec.rich_results,
    };
}

static void run_once(struct srv *s, struct job *j)
{
    struct execbox_request req = request_of(j, &j->spec.policy);
    req.inline_files_max = SRV_INLINE_FILES_MAX;
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    uint64_t t = now_ns();
    int r = execbox_executor_run(s->cfg.exec, &req, &res, &err);
    j->run_s = (double)(now_ns() - t) / 1e9;
    if (r < 0) {
        if (r == -ENOMEM)
            set_error_answer(j, 503, "unavailable", err.msg, NULL);
        else
            set_error_answer(j, 400, "bad_request", err.msg,
                             err.field[0]                            ? err.field
                             : r == -ENOTSUP && j->spec.rich_results ? "rich_results"
                                                                     : NULL);
        return;
    }
    set_result_answer(s, j, res);
    execbox_result_free(res);
}

static void run_cell(struct srv *s, struct job *j)
{
    struct execbox_request req = request_of(j, &j->spec.policy);
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    uint64_t t = now_ns();
    int r = execbox_session_run(sess_session(j->sess), &req, &res, &err);
    j->run_s = (double)(now_ns() - t) / 1e9;
    j->cell_claimed = false;
    sess_cell_end(j->sess, r == 0 ? res : NULL);
    if (r < 0) {
        set_api_error(j, r, &err);
        return;
    }
    set_result_answer(s, j, res);
    execbox_result_free(res);
}

/* A session as the API shows it. */
static json_t *session_json(const struct sess_summary *m)
{
    char created[32], expires[32], used[32];
    sess_iso_time(m->info.created_at, created, sizeof(created));
    sess_iso_time(m->info.expires_at, expires, sizeof(expires));
    sess_iso_time(m->info.last_used_at, used, sizeof(used));
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:I, s:I, s:b, s:I, s:I}", "id", m->id, "language",
        m->info.language, "created_at", created, "expires_at", expires, "last_used_at", used,
        "idle_timeout", (json_int_t)m->idle_timeout, "rollback", !m->no_rollback, "execution_count",
        (json_int_t)m->info.execution_count, "rolled_back_count", (json_int_t)m->info.rolled_back,
        "busy", m->cell_accepted || m->info.busy, "memory_bytes", (json_int_t)m->info.memory_bytes,
        "memory_peak_bytes", (json_int_t)m->info.memory_peak_bytes);
}

static void run_create(struct srv *s, struct job *j)
{
    struct sess_options o = {
        .language = j->spec.language,
        .policy = &j->spec.policy,
        .no_rollback = j->spec.no_rollback,
        .idle_timeout = j->spec.idle_timeout,
        .surface = "http",
    };
    struct sess *ss = NULL;
    struct execbox_error err = {0};
    int r = sess_create(s->sessions, &o, &ss, &err);
    if (r < 0) {
        set_api_error(j, r, &err);
        return;
    }
    if (__atomic_load_n(&j->client_gone, __ATOMIC_RELAXED)) {
        /* Nobody will ever know its id. */
        sess_remove(s->sessions, sess_id(ss), NULL, NULL);
        sess_put(ss);
        set_error_answer(j, 499, "client_gone", "the client disconnected", NULL);
        return;
    }
    struct sess_summary m;
    sess_summarize(ss, &m);
    sess_put(ss);
    set_json_answer(j, 201, session_json(&m));
}

/* The policy's file_size, resolved. */
static size_t file_cap(const struct execbox_policy *p)
{
    uint64_t v = p->file_size ? p->file_size : EXECBOX_DEFAULT_FILE_SIZE;
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

static void run_file_op(struct job *j)
{
    struct execbox_session *es = sess_session(j->sess);
    struct execbox_error err = {0};
    int r = 0;
    switch (j->op) {
    case OP_FILE_LIST: {
        struct execbox_file *files = NULL;
        size_t n = 0;
        r = execbox_session_list_files(es, &files, &n, &err);
        if (r < 0)
            break;
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
            char *p = execbox_utf8_sanitize(files[i].path, strlen(files[i].path), NULL, NULL);
            json_t *e =
                p ? json_pack("{s:s, s:I, s:s}", "path", p, "size", (json_int_t)files[i].size,
                              "mime", files[i].mime ? files[i].mime : "application/octet-stream")
                  : NULL;
            execbox_free(p);
            if (!e || json_array_append_new(a, e) < 0) {
                json_decref(a);
                a = NULL;
            }
        }
        execbox_files_free(files, n);
        set_json_answer(j, 200, a ? json_pack("{s:o}", "files", a) : NULL);
        return;
    }
    case OP_FILE_GET: {
        /* Opened here, sent from the descriptor by the polling thread (respond_file). */
        int fd = -1;
        uint64_t size = 0;
        r = execbox_session_open_file(es, j->file_path, file_cap(sess_policy(j->sess)), &fd, &size,
                                      &err);
        if (r < 0)
            break;
        if (size == 0) { /* nothing to send from it */
            close(fd);
            char *empty = strdup("");
            if (!empty) {
                set_error_answer(j, 503, "unavailable", "out of memory", NULL);
                return;
            }
            set_answer(j, 200, empty, 0, srv_mime_from_name(j->file_path), free);
            return;
        }
        set_answer(j, 200, NULL, 0, srv_mime_from_name(j->file_path), free);
        j->resp_fd = fd;
        j->resp_fd_size = size;
        return;
    }
    case OP_FILE_PUT: {
        r = execbox_session_write_file(es, j->file_path, j->body ? j->body : "", j->body_len, &err);
        if (r < 0)
            break;
        char *p = execbox_utf8_sanitize(j->file_path, strlen(j->file_path), NULL, NULL);
        set_json_answer(
            j, 201, p ? json_pack("{s:s, s:I}", "path", p, "size", (json_int_t)j->body_len) : NULL);
        execbox_free(p);
        return;
    }
    case OP_FILE_DELETE:
        r = execbox_session_remove_file(es, j->file_path, &err);
        if (r < 0)
            break;
        set_answer(j, 204, strdup(""), 0, NULL, free);
        return;
    default: r = -EINVAL; break;
    }
    set_api_error(j, r, &err);
}

/* An E2B call on a worker: execute streams its lines; the others prepare their answer. */
static void run_e2b(struct srv *s, struct job *j)
{
    struct e2b_answer a;
    struct e2b_outcome o;
    uint64_t t = now_ns();
    e2b_run(s->e2b, &j->e2b, j->rj.cancel, e2b_push, j, &a, &o);
    j->run_s = (double)(now_ns() - t) / 1e9;
    if (o.ran) {
        enum srv_outcome so = o.timed_out    ? SRV_OUTCOME_TIMEOUT
                              : o.oom_killed ? SRV_OUTCOME_OOM
                              : o.failed     ? SRV_OUTCOME_ERROR
                                             : SRV_OUTCOME_OK;
        srv_metrics_run(&s->metrics, so, o.cancelled);
        j->outcome = o.cancelled ? "cancelled" : srv_outcome_name(so);
        j->exit_code = o.exit_code;
    }
    set_answer(j, e2b_op_streams(j->e2b.op) ? 200 : a.status, a.body, a.len, a.ctype, free);
}

/* The runner's run(): runs one job and prepares its answer (run_status and resp). */
static bool http_run(struct runner_job *rj, void *ud)
{
    struct srv *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    pthread_mutex_lock(&j->lock);
    bool skip = j->client_gone;
    j->state = J_RUNNING;
    pthread_mutex_unlock(&j->lock);
    if (skip)
        return false; /* the client hung up while queued: nothing to run, nobody to answer */
    if (j->op == OP_E2B) {
        run_e2b(s, j);
        return true;
    }
    if (j->sse) {
        char start[128];
        snprintf(start, sizeof(start), "{\"request_id\":\"%s\"}", j->id);
        sse_event(j, "start", start, true);
    }
    switch (j->op) {
    case OP_RUN: run_once(s, j); break;
    case OP_CELL: run_cell(s, j); break;
    case OP_CREATE: run_create(s, j); break;
    default: run_file_op(j); break;
    }
    free(j->body); /* a file's bytes, once written */
    j->body = NULL;
    return true;
}

/* The runner's done(): the runner's books are already updated (once the connection is resumed
 * the client may ask /metrics at once); publishes the answer and drops the runner's reference.
 * A job that never ran (its client left while it was queued, or everything was cancelled) is
 * answered 499. */
static void http_done(struct runner_job *rj, enum runner_end end, void *ud)
{
    (void)ud;
    struct job *j = container_of(rj, struct job, rj);
    if (j->cell_claimed) { /* the cell never ran */
        j->cell_claimed = false;
        sess_cell_end(j->sess, NULL);
    }
    pthread_mutex_lock(&j->lock);
    int status = j->run_status;
    if (end == RUNNER_DROPPED || (!j->resp && j->resp_fd < 0 && !status)) {
        __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
        if (j->resp)
            j->resp_free(j->resp);
        if (j->resp_fd >= 0)
            close(j->resp_fd);
        j->resp_fd = -1;
        status = 499;
        j->resp = srv_error_json("client_gone", "the client disconnected before the run", NULL);
        j->resp_len = j->resp ? strlen(j->resp) : 0;
        j->resp_free = free;
        j->resp_ctype = NULL;
    }
    char *body = j->resp;
    j->status = status;
    j->state = J_DONE;
    if (j->sse && j->route == R_E2B) {
        /* The lines were the answer; a call that never ran just ends. */
        j->sse_done = true;
    } else if (j->sse) {
        /* What the client was too slow for is said on stderr, as on the E2B route; then the
         * final event: the result record, or the error. */
        if (j->sse_dropped)
            sse_dropped_note(j);
        if (body) {
            size_t n;
            char *f = srv_sse_frame(status == 200 ? "result" : "error", body, &n);
            if (f)
                sse_push(j, f, n, true);
            free(f);
        }
        j->sse_done = true;
    }
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->lock);
    job_unref(j);
}

static const struct runner_ops http_runner_ops = {.run = http_run, .done = http_done};

struct watch_set {
    struct job **jobs;
    struct pollfd *pfds;
    size_t n, cap;
};

/* runner_foreach's callback: collects the live jobs whose client may still hang up. */
static void watch_collect(struct runner_job *rj, bool running, void *ctx)
{
    (void)running;
    struct watch_set *w = ctx;
    struct job *j = container_of(rj, struct job, rj);
    if (w->n >= w->cap || j->fd < 0 || __atomic_load_n(&j->client_gone, __ATOMIC_RELAXED))
        return;
    w->jobs[w->n] = job_ref(j);
    w->pfds[w->n] = (struct pollfd){.fd = j->fd, .events = POLLRDHUP};
    w->n++;
}

/* Polls the sockets of queued and running jobs for a hang-up; cancels the run. */
static void *watchdog_main(void *arg)
{
    struct srv *s = arg;
    struct watch_set w = {.cap = s->cfg.queue + s->cfg.workers};
    w.jobs = calloc(w.cap, sizeof(*w.jobs));
    w.pfds = calloc(w.cap, sizeof(*w.pfds));
    if (!w.jobs || !w.pfds) {
        srv_log("error", "watchdog", "out of memory: disconnected clients will not be noticed");
        free(w.jobs);
        free(w.pfds);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        w.n = 0;
        runner_foreach(s->runner, watch_collect, &w);
        if (w.n == 0) {
            usleep(SRV_WATCH_MS * 1000);
            continue;
        }
        int r = poll(w.pfds, w.n, SRV_WATCH_MS);
        for (size_t i = 0; i < w.n; i++) {
            struct job *j = w.jobs[i];
            if (r > 0 && (w.pfds[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                pthread_mutex_lock(&j->lock);
                /* Only while still queued or running is the fd surely still this client's:
                 * the connection stays open until the job is answered. */
                bool gone = (j->state == J_QUEUED || j->state == J_RUNNING) && !j->client_gone;
                if (gone)
                    __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
                pthread_mutex_unlock(&j->lock);
                if (gone) /* a queued job is answered 499 now, a running one is killed */
                    runner_cancel(s->runner, &j->rj);
            }
            job_unref(j);
        }
    }
    free(w.jobs);
    free(w.pfds);
    return NULL;
}

/* ---- the request handler ----------------------------------------------------------------- */

static bool authorized(struct srv *s, struct MHD_Connection *c)
{
    if (!s->cfg.token || !*s->cfg.token)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    return srv_token_equal(h, s->cfg.token);
}

static bool wants_sse(struct MHD_Connection *c)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return a && strcasestr(a, "text/event-stream") != NULL;
}

static void fill_gauges(struct srv *s, struct srv_gauges *g)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    g->queue_depth = st.queued;
    g->queue_capacity = st.queue_capacity;
    g->in_flight = st.running;
    g->workers = st.workers;
    g->jobs_accepted = st.accepted;
    g->jobs_rejected = st.rejected;
    g->jobs_ran = st.ran;
    g->jobs_cancelled = st.cancelled;
    g->jobs_dropped = st.dropped;
    g->draining = __atomic_load_n(&s->draining, __ATOMIC_RELAXED) ||
                  __atomic_load_n(&s->leaving, __ATOMIC_RELAXED);
    g->backend = execbox_executor_backend(s->cfg.exec);
    sess_get_stats(s->sessions, &g->sessions);
    execbox_executor_pool_stats(s->cfg.exec, &g->pool);
}

static enum MHD_Result serve_health(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct srv_gauges g;
    fill_gauges(s, &g);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "status", g.draining ? "draining" : "ok",
        "version", execbox_version(), "backend", g.backend, "workers", (json_int_t)g.workers,
        "in_flight", (json_int_t)g.in_flight, "queue_depth", (json_int_t)g.queue_depth,
        "queue_capacity", (json_int_t)g.queue_capacity, "sessions", (json_int_t)g.sessions.open);
    if (!o)
        return MHD_NO;
    return respond_json(j, c, g.draining ? 503 : 200, o);
}

static enum MHD_Result serve_metrics(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct srv_gauges g;
    fill_gauges(s, &g);
    size_t len;
    char *text = srv_metrics_render(&s->metrics, &g, &len);
    if (!text)
        return MHD_NO;
    return respond(j, c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, free, 0);
}

/* Whether a page of this origin may call us (--allow-origin; "*" allows any). An origin is
 * compared whole, ignoring case (scheme and host are case-insensitive). */
static bool origin_allowed(struct srv *s, const char *origin)
{
    if (strlen(origin) >= sizeof(((struct job *)0)->origin))
        return false;
    for (size_t i = 0; i < s->cfg.n_allow_origins; i++)
        if (strcmp(s->cfg.allow_origins[i], "*") == 0 ||
            strcasecmp(s->cfg.allow_origins[i], origin) == 0)
            return true;
    return false;
}

/* application/json, with or without parameters (charset=utf-8). */
static bool json_content_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return false;
    ct += sizeof(want) - 1;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

static void reject(struct job *j, int status, const char *code, const char *msg, size_t retry)
{
    j->rej_status = status;
    j->rej_code = code;
    snprintf(j->rej_msg, sizeof(j->rej_msg), "%s", msg);
    j->rej_retry = retry;
}

/* Routes a path (as sent: percent-escapes are decoded here, once, only where a path names a
 * file). Fills j->route, j->sess_id and, for a file, j->file_path or j->bad_path. */
static void route(struct job *j, const char *url)
{
    static const char sessions[] = "/v1/sessions";
    j->route = R_OTHER;
    if (strcmp(url, "/v1/execute") == 0) {
        j->route = R_EXECUTE;
        return;
    }
    if (strcmp(url, "/v1/health") == 0) {
        j->route = R_HEALTH;
        return;
    }
    if (strcmp(url, "/metrics") == 0) {
        j->route = R_METRICS;
        return;
    }
    if (strncmp(url, sessions, sizeof(sessions) - 1) != 0)
        return;
    const char *t = url + sizeof(sessions) - 1;
    if (*t == '\0') {
        j->route = R_SESSIONS;
        return;
    }
    if (*t != '/')
        return;
    t++;
    size_t n = strcspn(t, "/");
    if (n == 0)
        return;
    /* An id of another shape is no session's: it stays "" and the route answers 404. */
    if (n == SESS_ID_LEN && strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789-_") >= n) {
        memcpy(j->sess_id, t, n);
        j->sess_id[n] = '\0';
    }
    t += n;
    if (*t == '\0')
        j->route = R_SESSION;
    else if (strcmp(t, "/execute") == 0)
        j->route = R_SESSION_EXECUTE;
    else if (strcmp(t, "/files") == 0)
        j->route = R_SESSION_FILES;
    else if (strncmp(t, "/files/", 7) == 0) {
        j->route = R_SESSION_FILE;
        const char *raw = t + 7;
        size_t len = strlen(raw), dlen = 0;
        j->file_path = malloc(len + 1);
        if (!j->file_path || srv_url_decode(raw, len, j->file_path, len + 1, &dlen) < 0 ||
            !srv_workspace_path_ok(j->file_path, dlen))
            j->bad_path = true;
    }
}

/* The method a route takes, and what its job does. OP_NONE with *ok: answered now. */
static bool route_method(struct job *j, bool get, bool *ret_json_body)
{
    const char *m = j->method;
    bool post = strcmp(m, "POST") == 0, del = strcmp(m, "DELETE") == 0, put = strcmp(m, "PUT") == 0;
    *ret_json_body = post;
    switch (j->route) {
    case R_EXECUTE: j->op = OP_RUN; return post;
    case R_SESSIONS: j->op = post ? OP_CREATE : OP_NONE; return post || get;
    case R_SESSION: return get || del;
    case R_SESSION_EXECUTE: j->op = OP_CELL; return post;
    case R_SESSION_FILES: j->op = OP_FILE_LIST; return get;
    case R_SESSION_FILE:
        j->op = get ? OP_FILE_GET : put ? OP_FILE_PUT : OP_FILE_DELETE;
        return get || put || del;
    default: return get;
    }
}

/* The first call for a request: its headers are in. Routes it (an E2B path's token is kept out
 * of j->path, which the log shows), and decides what can be decided without the body. */
static enum MHD_Result first_call(struct srv *s, struct job *j, struct MHD_Connection *c,
                                  const char *url)
{
    bool get = strcmp(j->method, "GET") == 0 || strcmp(j->method, "HEAD") == 0;
    const char *e2b_sub = NULL;
    enum e2b_match em = e2b_match_path(url, s->cfg.token, &e2b_sub, j->path, sizeof(j->path));
    if (em != E2B_NOT_OURS)
        j->route = R_E2B;
    else
        route(j, url);
    /* The front door checked that this is "chunked" and the only framing header. */
    j->close =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;

    /* DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 is, to the
     * browser, of the same origin as this server, and may read every answer; its requests
     * still name evil.example in Host. Without a token, only our own names are served. */
    if (s->cfg.check_host) {
        const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        if (host && !srv_host_allowed(host, s->cfg.allow_hosts, s->cfg.n_allow_hosts)) {
            j->op = OP_NONE;
            reject(j, 421, "misdirected_request",
                   "Host names no name of this server (without a token: its address, "
                   "localhost, --allow-host-header)",
                   0);
            return MHD_YES;
        }
    }

    /* A browser names the page behind a request in Origin, and sends a "simple" cross-site
     * POST without asking first: a page the user merely opens must not run code here. */
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin) {
        if (!origin_allowed(s, origin)) {
            reject(j, 403, "forbidden_origin",
                   "requests from web pages of this origin are not allowed (--allow-origin)", 0);
            return MHD_YES;
        }
        j->cors = true;
        snprintf(j->origin, sizeof(j->origin), "%s", origin);
        if (strcmp(j->method, "OPTIONS") == 0 && j->route != R_OTHER) {
            j->preflight = true;
            return MHD_YES;
        }
    }

    if (j->route == R_OTHER) {
        reject(j, 404, "not_found", "no such endpoint", 0);
        return MHD_YES;
    }
    bool json_body = false;
    if (j->route == R_E2B) {
        /* E2B's SDK cannot send our bearer header: the token rides in the path. */
        if (em == E2B_NO_TOKEN && !authorized(s, c)) {
            reject(j, 401, "unauthorized",
                   "missing or wrong token: with a token, the E2B routes are under /e2b/TOKEN/", 0);
            return MHD_YES;
        }
        int r = e2b_route(j->method, e2b_sub, &j->e2b, &j->allow);
        if (r == 404)
            reject(j, 404, "not_found", "no such endpoint", 0);
        else if (r == 405)
            reject(j, 405, "method_not_allowed", "method not allowed here (see Allow)", 0);
        if (r || e2b_op_immediate(j->e2b.op))
            return MHD_YES;
        j->op = OP_E2B; /* a POST with a JSON body */
        json_body = true;
    } else if (!route_method(j, get, &json_body)) {
        j->op = OP_NONE;
        reject(j, 405, "method_not_allowed",
               j->route == R_EXECUTE || j->route == R_SESSION_EXECUTE ? "use POST"
                                                                      : "method not allowed",
               0);
        return MHD_YES;
    }
    if (j->route == R_HEALTH || (j->route == R_METRICS && authorized(s, c)))
        return MHD_YES;
    if (j->route != R_E2B && !authorized(s, c)) {
        j->op = OP_NONE;
        reject(j, 401, "unauthorized", "missing or wrong bearer token", 0);
        return MHD_YES;
    }
    if (j->route == R_METRICS)
        return MHD_YES;
    if (__atomic_load_n(&s->draining, __ATOMIC_RELAXED)) {
        j->op = OP_NONE;
        reject(j, 503, "draining", "the server is shutting down", retry_after(s));
        return MHD_YES;
    }
    if (j->route >= R_SESSION && j->route <= R_SESSION_FILE) {
        j->sess = j->sess_id[0] ? sess_get(s->sessions, j->sess_id) : NULL;
        if (!j->sess) {
            j->op = OP_NONE;
            reject(j, 404, "session_not_found", "no such session (unknown, deleted or expired)", 0);
            return MHD_YES;
        }
        if (j->route == R_SESSION_FILE && j->bad_path) {
            j->op = OP_NONE;
            reject(j, 400, "bad_request",
                   "path: expected a path relative to /workspace, without '.', '..' or empty "
                   "parts (escapes are decoded once)",
                   0);
            snprintf(j->rej_field, sizeof(j->rej_field), "path");
            return MHD_YES;
        }
        /* A file's body is bounded by the session's file_size as well as --max-body. */
        if (j->op == OP_FILE_PUT && file_cap(sess_policy(j->sess)) < j->body_max)
            j->body_max = file_cap(sess_policy(j->sess));
    }
    if (j->op == OP_NONE)
        return MHD_YES; /* answered at the last call */
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long cl_len = 0; /* 0 also without Content-Length */
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        cl_len = n;
        if (errno || *end || n > j->body_max) {
            j->too_large = true;
            if (errno || n > SRV_DISCARD_MAX) {
                /* Too much to read and throw away: answer now and close. */
                char msg[96];
                snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes",
                         j->body_max);
                return respond_error(j, c, 413, "payload_too_large", msg, NULL, 0);
            }
        }
    }
    if (json_body && !json_content_type(MHD_lookup_connection_value(
                         c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        /* Also what keeps a browser from sending it cross-site without a preflight. A file's
         * PUT takes any type: a browser never sends a PUT cross-site without a preflight,
         * which an origin not given with --allow-origin fails (403). A new session and an E2B
         * restart take no body at all (`curl -X POST`, E2B's SDK): an empty one is defaults,
         * whatever its type. Without Content-Length (chunked) that is known once it is in. */
        bool optional = j->op == OP_CREATE || (j->op == OP_E2B && j->e2b.op == E2B_OP_RESTART);
        if (optional && cl_len == 0) {
            j->ctype_not_json = true;
        } else {
            j->op = OP_NONE;
            reject(j, 415, "unsupported_media_type", "the body must be sent as application/json",
                   0);
            return MHD_YES;
        }
    }
    if (j->op == OP_RUN || j->op == OP_CELL)
        j->sse = wants_sse(c);
    else if (j->op == OP_E2B)
        j->sse = e2b_op_streams(j->e2b.op);
    j->state = J_READING;
    return MHD_YES;
}

static enum MHD_Result serve_session(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct sess_summary m;
    sess_summarize(j->sess, &m);
    (void)s;
    json_t *o = session_json(&m);
    return o ? respond_json(j, c, 200, o) : MHD_NO;
}

static enum MHD_Result serve_sessions(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    size_t max = s->cfg.max_sessions ? s->cfg.max_sessions : SESS_MAX_DEFAULT;
    struct sess_summary *v = calloc(max, sizeof(*v));
    if (!v)
        return respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1);
    size_t n = sess_list(s->sessions, NULL, v, max);
    if (n > max)
        n = max;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, session_json(&v[i])) < 0) {
            json_decref(a);
            a = NULL;
        }
    free(v);
    json_t *o = a ? json_pack("{s:o}", "sessions", a) : NULL;
    return o ? respond_json(j, c, 200, o) : MHD_NO;
}

/* sess_remove's callback, on the registry's thread once the session's processes are gone:
 * answers the suspended DELETE. */
static void session_removed(void *ud)
{
    struct job *j = ud;
    pthread_mutex_lock(&j->lock);
    j->resp = strdup("");
    j->resp_len = 0;
    j->resp_free = free;
    j->status = j->resp ? 204 : 503;
    j->state = J_DONE;
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->lock);
    job_unref(j);
}

/* DELETE /v1/sessions/{id}: the session is unlisted now and ended on the registry's thread;
 * the connection waits, suspended, for its 204. */
static enum MHD_Result delete_session(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    pthread_mutex_lock(&s->lock);
    s->pending++;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&j->lock);
    j->accepted = true;
    j->state = J_RUNNING;
    int r = sess_remove(s->sessions, sess_id(j->sess), session_removed, job_ref(j));
    if (r == 0) {
        j->suspended = true;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&j->lock);
    if (r == 0)
        return MHD_YES;
    job_unref(j); /* removed by someone else meanwhile */
    return respond_error(j, c, 404, "session_not_found", "no such session", NULL, 0);
}

/* The last call for a request that is not a run. */
static enum MHD_Result answer_now(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (j->rej_status)
        return respond_error(j, c, j->rej_status, j->rej_code, j->rej_msg,
                             j->rej_field[0] ? j->rej_field : NULL, j->rej_retry);
    if (j->preflight) {
        char *empty = strdup("");
        return empty ? respond(j, c, 204, "text/plain", empty, 0, free, 0) : MHD_NO;
    }
    switch (j->route) {
    case R_HEALTH: return serve_health(s, j, c);
    case R_METRICS: return serve_metrics(s, j, c);
    case R_SESSIONS: return serve_sessions(s, j, c);
    case R_SESSION:
        return strcmp(j->method, "DELETE") == 0 ? delete_session(s, j, c) : serve_session(s, j, c);
    case R_E2B: {
        struct e2b_answer a;
        if (e2b_answer(s->e2b, &j->e2b, &a) < 0)
            return MHD_NO;
        return respond(j, c, a.status, a.ctype, a.body, a.len, free, 0);
    }
    default: return respond_error(j, c, 404, "not_found", "no such endpoint", NULL, 0);
    }
}

static enum MHD_Result upload(struct srv *s, struct job *j, const char *data, size_t n)
{
    (void)s;
    if (!j->too_large && j->body_len + n > j->body_max)
        j->too_large = true;
    if (j->too_large) {
        free(j->body);
        j->body = NULL;
        j->body_cap = 0;
        j->discarded += n;
        return j->discarded > SRV_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (j->body_len + n + 1 > j->body_cap) {
        /* Grow geometrically: a body arrives in many small pieces. */
        size_t cap = j->body_cap ? j->body_cap : 4096;
        while (cap < j->body_len + n + 1)
            cap *= 2;
        char *nb = realloc(j->body, cap);
        if (!nb)
            return MHD_NO;
        j->body = nb;
        j->body_cap = cap;
    }
    memcpy(j->body + j->body_len, data, n);
    j->body_len += n;
    return MHD_YES;
}

/* Parses the JSON body of a run, a new session or a cell into j->spec. An answer is sent when
 * it is bad (returns false, *ret set). */
static bool parse_body(struct srv *s, struct job *j, struct MHD_Connection *c, enum MHD_Result *ret)
{
    enum srv_body_kind kind = j->op == OP_CREATE ? SRV_BODY_SESSION
                              : j->op == OP_CELL ? SRV_BODY_CELL
                                                 : SRV_BODY_RUN;
    const struct execbox_policy *base = j->op == OP_CELL ? sess_policy(j->sess) : &s->cfg.policy;
    char field[64];
    struct execbox_error err = {0};
    int r = srv_parse_body(kind, j->body ? j->body : "", j->body_len, base, &j->spec, field,
                           sizeof(field), &err);
    free(j->body);
    j->body = NULL;
    if (r == 0 && kind == SRV_BODY_SESSION) {
        double idle;
        r = sess_idle_check(s->sessions, j->spec.idle_timeout, &idle, &err);
        snprintf(field, sizeof(field), "%s", r < 0 ? "idle_timeout" : "");
    }
    if (r == 0)
        return true;
    *ret = r == -ENOMEM ? respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1)
                        : respond_error(j, c, 400, "bad_request", err.msg, field, 0);
    return false;
}

static enum MHD_Result queue_job(struct srv *s, struct job *j, struct MHD_Connection *c);

/* An E2B call's body is in: prepare it, and queue it unless that answered it. */
static enum MHD_Result e2b_submit(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct e2b_answer a;
    int r = e2b_prepare(s->e2b, &j->e2b, j->body ? j->body : "", j->body_len, &a);
    free(j->body);
    j->body = NULL;
    if (r < 0)
        return respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1);
    if (r > 0)
        return respond(j, c, a.status, a.ctype, a.body, a.len, free, 0);
    struct execbox_error err = {0};
    if (runner_job_init(&j->rj, &err) < 0)
        return respond_error(j, c, 503, "unavailable", err.msg, NULL, 1);
    return queue_job(s, j, c);
}

/* The body is in: validate it and queue the job. */
static enum MHD_Result submit(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (j->too_large) {
        char msg[96];
        snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes", j->body_max);
        return respond_error(j, c, 413, "payload_too_large", msg, NULL, 0);
    }
    if (j->ctype_not_json && j->body_len > 0)
        return respond_error(j, c, 415, "unsupported_media_type",
                             "the body must be sent as application/json", NULL, 0);
    if (j->op == OP_E2B)
        return e2b_submit(s, j, c);
    enum MHD_Result ret = MHD_YES;
    if ((j->op == OP_RUN || j->op == OP_CREATE || j->op == OP_CELL) && !parse_body(s, j, c, &ret))
        return ret;
    if (j->op != OP_FILE_PUT) {
        free(j->body);
        j->body = NULL;
    }
    struct execbox_error err = {0};
    if (runner_job_init(&j->rj, &err) < 0)
        return respond_error(j, c, 503, "unavailable", err.msg, NULL, 1);
    if (j->op == OP_CELL) {
        /* One cell at a time, decided now rather than when a worker takes it. */
        int r = sess_cell_begin(j->sess);
        if (r == -EBUSY)
            return respond_error(j, c, 409, "session_busy",
                                 "a cell is already running in this session", NULL, 0);
        if (r < 0)
            return respond_error(j, c, 404, "session_not_found", "the session has ended", NULL, 0);
        j->cell_claimed = true;
    }
    return queue_job(s, j, c);
}

/* Queues a job whose runner part is ready, and parks its connection or starts its stream. */
static enum MHD_Result queue_job(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    enum MHD_Result ret = MHD_YES;
    pthread_mutex_lock(&j->lock);
    int r = enqueue(s, j);
    if (r < 0 && j->cell_claimed) {
        j->cell_claimed = false;
        sess_cell_end(j->sess, NULL);
    }
    if (r == -EAGAIN) {
        ret = respond_error(j, c, 429, "queue_full", "all workers are busy and the queue is full",
                            NULL, retry_after(s));
    } else if (r < 0) {
        ret = respond_error(j, c, 503, "draining", "the server is shutting down", NULL,
                            retry_after(s));
    } else if (j->sse) {
        /* Queued below, outside the job's lock, which the stream's reader takes. */
    } else {
        /* Park the connection until a worker has the answer; the worker resumes it, and
         * libmicrohttpd then calls us again to send it. */
        j->suspended = true;
        MHD_suspend_connection(c);
    }
    bool stream = r == 0 && j->sse;
    pthread_mutex_unlock(&j->lock);
    if (stream) {
        struct MHD_Response *resp = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 16384, sse_read, job_ref(j), sse_free);
        if (!resp) {
            job_unref(j);
            /* The worker still runs it; the connection will be closed. */
            ret = MHD_NO;
        } else {
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                    j->route == R_E2B ? "application/x-ndjson"
                                                      : "text/event-stream");
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
            MHD_add_response_header(resp, "X-Request-Id", j->id);
            MHD_add_response_header(resp, "X-Accel-Buffering", "no");
            if (j->close)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
            add_cors_headers(j, resp);
            ret = MHD_queue_response(c, 200, resp);
            MHD_destroy_response(resp);
            pthread_mutex_lock(&j->lock);
            j->status = 200;
            pthread_mutex_unlock(&j->lock);
        }
    }
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    (void)version;
    struct srv *s = cls;
    struct job *j = *con_cls;
    if (!j) {
        j = job_new(s, c, url, method);
        if (!j)
            return MHD_NO;
        *con_cls = j;
        return first_call(s, j, c, url);
    }
    if (*data_size) {
        size_t n = *data_size;
        *data_size = 0;
        if (j->state == J_READING)
            return upload(s, j, data, n);
        /* The body of a request that is answered without it: thrown away, up to a point. */
        j->discarded += n;
        return j->discarded > SRV_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (j->state == J_READING)
        return submit(s, j, c);
    if (j->state == J_NEW)
        return answer_now(s, j, c);
    pthread_mutex_lock(&j->lock);
    enum MHD_Result ret = MHD_YES;
    if (j->state == J_DONE && !j->sse && j->resp_fd >= 0) {
        int fd = j->resp_fd;
        j->resp_fd = -1;
        ret = respond_file(j, c, j->resp_ctype ? j->resp_ctype : "application/octet-stream", fd,
                           j->resp_fd_size);
    } else if (j->state == J_DONE && !j->sse) {
        char *body = j->resp;
        j->resp = NULL;
        if (!body)
            ret = MHD_NO;
        else
            ret = respond(j, c, j->status, j->resp_ctype ? j->resp_ctype : "application/json", body,
                          j->resp_len, j->resp_free, 0);
    }
    pthread_mutex_unlock(&j->lock);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    struct srv *s = cls;
    struct job *j = *con_cls;
    if (!j)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&j->lock);
    j->conn = NULL;
    j->suspended = false;
    bool live = j->state == J_QUEUED || j->state == J_RUNNING;
    if (live) /* a streaming client hung up mid-run */
        __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
    int status = j->status;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
        (j->client_gone || toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT ||
         toe == MHD_REQUEST_TERMINATED_READ_ERROR || status == 0))
        status = 499;
    if (j->client_gone)
        status = 499;
    bool accepted = j->accepted;
    pthread_mutex_unlock(&j->lock);
    if (live)
        runner_cancel(s->runner, &j->rj);

    srv_metrics_status(&s->metrics, status);
    if (j->route == R_EXECUTE)
        srv_metrics_latency(&s->metrics, (double)(now_ns() - j->t0_ns) / 1e9);
    access_log(j, status);
    if (accepted) {
        pthread_mutex_lock(&s->lock);
        s->pending--;
        pthread_mutex_unlock(&s->lock);
    }
    job_unref(j);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

static bool front_hand_off(void *ud, int fd, const struct sockaddr *sa, socklen_t len)
{
    struct srv *s = ud;
    pthread_mutex_lock(&s->add_lock);
    bool ok = !s->daemon_stopped && MHD_add_connection(s->daemon, fd, sa, len) == MHD_YES;
    if (s->daemon_stopped)
        close(fd);
    pthread_mutex_unlock(&s->add_lock);
    return ok;
}

static void front_refused(void *ud, int status, const char *method, const char *path,
                          const struct sockaddr *sa, char *id, size_t id_size)
{
    struct srv *s = ud;
    char remote[64];
    format_remote(sa, remote, sizeof(remote));
    new_request_id(s, id, id_size);
    srv_metrics_status(&s->metrics, status);
    /* An E2B path carries the token (/e2b/TOKEN/...), maybe cut short by the front door:
     * whatever stands where a token would, never into the log. */
    char shown[128];
    snprintf(shown, sizeof(shown), "%s", path);
    if (s->cfg.token && strncmp(shown, "/e2b/", 5) == 0) {
        const char *rest = strchr(shown + 5, '/');
        char tail[128];
        snprintf(tail, sizeof(tail), "%s", rest ? rest : "");
        snprintf(shown + 5, sizeof(shown) - 5, "***%s", tail);
    }
    json_t *o = access_object(id, remote, method, shown, status, 0);
    if (o)
        log_object(o);
}

static const struct front_ops srv_front_ops = {.hand_off = front_hand_off,
                                               .refused = front_refused};

/* libmicrohttpd's unescaping of the path: none. route() decodes a file's path itself, once,
 * and then validates it (a decoded "%00" or "%2e%2e" must be seen, not cut or resolved). */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

int srv_start(const struct srv_config *cfg, struct srv **ret, struct execbox_error *err)
{
    struct srv *s = calloc(1, sizeof(*s));
    if (!s) {
        close(cfg->listen_fd);
        return -ENOMEM;
    }
    s->cfg = *cfg;
    srv_metrics_init(&s->metrics);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->add_lock, NULL);
    unsigned char rnd[4] = {0};
    if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
        uint64_t t = now_ns();
        memcpy(rnd, &t, sizeof(rnd));
    }
    snprintf(s->id_prefix, sizeof(s->id_prefix), "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3]);
    struct sess_config sc = {
        .exec = cfg->exec,
        .max_sessions = cfg->max_sessions,
        .idle_default = cfg->session_idle,
        .idle_max = cfg->session_idle_max,
        .lifetime = cfg->session_lifetime,
    };
    int r = sess_registry_new(&sc, &s->sessions, err);
    struct e2b_config ec = {.sessions = s->sessions, .policy = &s->cfg.policy};
    if (r == 0)
        r = e2b_new(&ec, &s->e2b, err);
    if (r < 0) {
        close(cfg->listen_fd);
        srv_stop(s);
        return r;
    }
    struct runner_config rc = {.workers = (unsigned)cfg->workers, .queue = cfg->queue};
    r = runner_new(&rc, &http_runner_ops, s, &s->runner, err);
    if (r < 0) {
        close(cfg->listen_fd);
        srv_stop(s);
        return r;
    }
    r = pthread_create(&s->watchdog, NULL, watchdog_main, s);
    if (r) {
        close(cfg->listen_fd);
        srv_stop(s);
        snprintf(err->msg, sizeof(err->msg), "cannot start the watchdog: %s", strerror(r));
        return -r;
    }
    s->watchdog_started = true;
    /* One internal polling thread (epoll where available) does all the HTTP work; runs never
     * block it. ITC lets a resume from a worker, or a connection from the front door, wake it
     * at once. */
    s->daemon = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
            MHD_USE_NO_LISTEN_SOCKET,
        0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
        SRV_CONN_TIMEOUT_S, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL, MHD_OPTION_END);
    if (!s->daemon) {
        close(cfg->listen_fd);
        srv_stop(s);
        snprintf(err->msg, sizeof(err->msg), "libmicrohttpd could not start");
        return -EIO;
    }
    struct front_config fc = {
        .listen_fd = cfg->listen_fd, .max_body = cfg->max_body, .ops = &srv_front_ops, .ud = s};
    r = front_start(&fc, &s->front, err);
    if (r < 0) {
        srv_stop(s);
        return r;
    }
    *ret = s;
    return 0;
}

void srv_leave(struct srv *s)
{
    __atomic_store_n(&s->leaving, true, __ATOMIC_RELAXED);
}

void srv_quiesce(struct srv *s)
{
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->draining, true, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);
    runner_drain(s->runner);
    if (s->front)
        front_quiesce(s->front);
}

bool srv_idle(struct srv *s)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    pthread_mutex_lock(&s->lock);
    bool idle = st.queued == 0 && st.running == 0 && s->pending == 0;
    pthread_mutex_unlock(&s->lock);
    return idle;
}

static void mark_gone(struct runner_job *rj, bool running, void *ctx)
{
    (void)running;
    (void)ctx;
    __atomic_store_n(&container_of(rj, struct job, rj)->client_gone, true, __ATOMIC_RELAXED);
}

void srv_cancel_all(struct srv *s)
{
    runner_foreach(s->runner, mark_gone, NULL);
    runner_cancel_all(s->runner);
    sess_close_all(s->sessions);
}

void srv_close_sessions(struct srv *s)
{
    sess_close_all(s->sessions);
}

void srv_stop(struct srv *s)
{
    if (!s)
        return;
    /* libmicrohttpd stops first and closes its ends; the front door then relays what is still
     * in flight to the clients and closes them. */
    pthread_mutex_lock(&s->add_lock);
    s->daemon_stopped = true;
    pthread_mutex_unlock(&s->add_lock);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    s->front = front_free(s->front);
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    if (s->watchdog_started)
        pthread_join(s->watchdog, NULL);
    s->runner = runner_free(s->runner);
    s->e2b = e2b_free(s->e2b);
    /* Last: every job, and with it every reference to a session, is gone. */
    s->sessions = sess_registry_free(s->sessions);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->add_lock);
    srv_metrics_destroy(&s->metrics);
    free(s);
}
