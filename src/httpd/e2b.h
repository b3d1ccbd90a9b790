/* SPDX-License-Identifier: MIT */
/* e2b.h - the wire of E2B's code interpreter under /e2b/ in `execbox serve` (docs/e2b.md), so
 * that E2B's own SDK (E2B_SANDBOX_URL=http://HOST:PORT/e2b, in debug mode or with E2B_API_URL
 * the same) drives execbox: POST /execute streaming NDJSON lines, /contexts (create, list,
 * delete, restart), GET /health, envd's routes (e2b_envd.h) and the control plane's
 * (e2b_api.h).
 *
 * An E2B context is a session of the shared registry (common/sessions.h, surface "e2b") under an
 * id of its own that stays the same across a restart. No context_id means the default context
 * of the language in the call's scope: its tenant's and its E2B sandbox's (e2b_api.h; without
 * one, the tenant's shared scope), made at its first use.
 *
 * HTTP stays in the service (route.c, job.c): this module routes a path, parses bodies, keeps
 * the contexts and runs the work of one call on a worker, handing NDJSON lines to a push
 * callback. Thread-safe. */
#ifndef EBSRV_E2B_H
#define EBSRV_E2B_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sessions.h"
#include "execbox/execbox.h"

/* A context id: a UUID, as E2B's are. */
#define E2B_ID_SIZE 37
/* A sandbox id (e2b_api.h): 20 hex digits, or the SDK's debug id. */
#define E2B_SBX_ID_SIZE 24
/* Most contexts listed at once (stale entries of expired sessions are dropped first). */
#define E2B_CONTEXTS_MAX SESS_MAX_LIMIT
/* Most calls waiting behind the one a context runs (E2B queues them; past this, 429). */
#define E2B_QUEUE_MAX 16
/* Longest a call whose turn came waits for a restart of its context to finish. */
#define E2B_RESTART_WAIT_S 30

struct e2b;

struct e2b_config {
    struct sess_registry *sessions;      /* borrowed; outlives the module */
    const struct execbox_policy *policy; /* borrowed: every context's policy */
};

int e2b_new(const struct e2b_config *cfg, struct e2b **ret, struct execbox_error *err);
/* Forgets every context (their sessions stay the registry's). No call may be live. Accepts
 * NULL; returns NULL. */
struct e2b *e2b_free(struct e2b *e);

/* How a request path relates to /e2b. */
enum e2b_match {
    E2B_NOT_OURS = 0, /* not under /e2b */
    E2B_OURS,         /* under /e2b, and the token (if any) is in the path */
    E2B_NO_TOKEN,     /* under /e2b, but a token is set and the path does not carry it */
};

/* Matches path against "/e2b[/TOKEN]/SUB". With a token, "/e2b/TOKEN/SUB" gives E2B_OURS and
 * sub "/SUB"; any other path under /e2b gives E2B_NO_TOKEN and sub "/" followed by all after
 * "/e2b/" (a caller that authenticated otherwise may use it). shown gets the path for logs,
 * with the token replaced by "***". Compares the token in constant time. */
enum e2b_match e2b_match_path(const char *path, const char *token, const char **ret_sub,
                              char *shown, size_t shown_size);

enum e2b_op {
    E2B_OP_NONE = 0, /* no such route: 404 */
    E2B_OP_HEALTH,   /* GET /health */
    E2B_OP_EXECUTE,  /* POST /execute */
    E2B_OP_LIST,     /* GET /contexts */
    E2B_OP_CREATE,   /* POST /contexts */
    E2B_OP_DELETE,   /* DELETE /contexts/{id} */
    E2B_OP_RESTART,  /* POST /contexts/{id}/restart */
    /* envd's routes, in the default context (e2b_envd.h) */
    E2B_OP_FILES_GET,   /* GET /files?path= */
    E2B_OP_FILES_POST,  /* POST /files[?path=], multipart or octet-stream */
    E2B_OP_FS_STAT,     /* POST /filesystem.Filesystem/Stat (Connect, JSON) */
    E2B_OP_FS_LIST,     /* .../ListDir */
    E2B_OP_FS_MKDIR,    /* .../MakeDir */
    E2B_OP_FS_REMOVE,   /* .../Remove */
    E2B_OP_FS_MOVE,     /* .../Move */
    E2B_OP_PROC_START,  /* POST /process.Process/Start (Connect server stream, JSON) */
    E2B_OP_PROC_SIGNAL, /* .../SendSignal */
    E2B_OP_RPC_OTHER,   /* another method of those services: unimplemented */
    /* the control plane's (e2b_api.h), in this order */
    E2B_OP_SBX_CREATE,  /* POST /v2/sandboxes */
    E2B_OP_SBX_LIST,    /* GET /v2/sandboxes */
    E2B_OP_SBX_CONNECT, /* POST /v2/sandboxes/{id}/connect */
    E2B_OP_SBX_INFO,    /* GET /sandboxes/{id} */
    E2B_OP_SBX_TIMEOUT, /* POST /sandboxes/{id}/timeout */
    E2B_OP_SBX_KILL,    /* DELETE /sandboxes/{id} */
};

/* One call: routed, then prepared, then (for the ops that need a worker) run. Zero it. */
struct e2b_call {
    enum e2b_op op;
    char id[E2B_ID_SIZE]; /* from the path: DELETE, restart */
    /* private: the context it works on and what it holds */
    void *ctx;
    struct sess *sess;
    bool claimed;                /* holds the session's cell (sess_cell_begin) */
    bool queued_cell;            /* takes the cell when its turn comes (e2b_call_serial) */
    bool create;                 /* the worker makes the context's session */
    char old_sess[SESS_ID_SIZE]; /* restart: the session it replaces */
    char *code;
    size_t code_len;
    char ctx_id[E2B_ID_SIZE]; /* the context it works in */
    /* The sandbox it is in ("" the tenant's shared scope), from E2b-Sandbox-Id and
     * X-Access-Token as e2b_call_request kept them (e2b_api_enter). */
    char sandbox[E2B_SBX_ID_SIZE];
    char *sbx_header, *sbx_token;
    /* The tenant the call is of ("" none): it finds, lists and makes that tenant's contexts
     * only, at most owner_max sessions of them (0: no cap). Set with e2b_call_owner. */
    char owner[SESS_OWNER_MAX + 1];
    size_t owner_max;
    char *env_setup, *env_restore; /* execute's env_vars: the cells around the code's */
    /* envd: the request's ?path= (NULL without one) and Content-Type (e2b_call_request), and
     * what its body asked for (private to e2b_envd.c) */
    char *query_path;
    bool query_bad; /* ?path= is not a path (a bad escape, a NUL) */
    char *ctype;
    void *envd;
};

/* Keeps what a route needs of the request besides its body: the query's path (as sent,
 * percent-escaped), the Content-Type, and the SDK's E2b-Sandbox-Id and X-Access-Token headers
 * (each may be NULL). 0, or -ENOMEM. */
int e2b_call_request(struct e2b_call *call, const char *query_path, const char *ctype,
                     const char *sandbox_id, const char *access_token);

/* Makes the call one of owner's (a tenant's name; NULL: none), with its session cap. */
void e2b_call_owner(struct e2b_call *call, const char *owner, size_t owner_max);

/* Whether the op's body must be application/json (the contexts, execute, Connect's unary
 * calls) rather than what the route checks itself (a file's upload, a Connect stream). */
bool e2b_op_json_body(enum e2b_op op);

/* The Content-Type of a streamed answer. */
const char *e2b_stream_ctype(enum e2b_op op);

/* Routes SUB (as e2b_match_path gave it) for method. Returns 0 with call->op set, 404 for no
 * such route, 405 for a route without this method (*ret_allow then names the methods). */
int e2b_route(const char *method, const char *sub, struct e2b_call *call, const char **ret_allow);

/* Whether the op is answered on the HTTP thread at once (e2b_answer), or has a body to read and
 * goes through e2b_prepare and a worker. */
bool e2b_op_immediate(enum e2b_op op);

/* An answer: HTTP status, content type (static) and a malloc'd body (free()). */
struct e2b_answer {
    int status;
    const char *ctype;
    char *body;
    size_t len;
    bool has_fd; /* the body is sent from fd (fd_size bytes; the receiver closes it), not body */
    int fd;
    uint64_t fd_size;
};

/* Answers an immediate op (health, list, delete). 0, or -ENOMEM. */
int e2b_answer(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret);

/* Validates an op's body and takes what it needs (the context, its cell). 0: hand the call to a
 * worker (e2b_run); 1: *ret holds the answer (an error) and the call is finished. -ENOMEM. */
int e2b_prepare(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                struct e2b_answer *ret);

/* Whether e2b_run streams NDJSON lines (execute) rather than filling an answer. */
bool e2b_op_streams(enum e2b_op op);

/* Receives one NDJSON line (with its "\n"). force: the line must be kept (a result, the end);
 * otherwise it may be refused when the client is too slow. Returns whether it was kept. */
typedef bool (*e2b_push_fn)(void *ud, const char *line, size_t len, bool force);

/* What a cell did, for the access log and the metrics. */
struct e2b_outcome {
    bool ran; /* a cell ran and has a result */
    bool timed_out, oom_killed, cancelled, failed;
    int exit_code;
};

/* Runs a prepared call on a worker. Execute streams its lines through push; the other ops fill
 * *ret. cancel (may be NULL) kills the cell. */
void e2b_run(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel, e2b_push_fn push,
             void *ud, struct e2b_answer *ret, struct e2b_outcome *out);

/* The key under which the calls on one context take turns (runner_job.serial): an execute and
 * the making of a context; NULL for a call that needs no turn. Valid while the call is. */
const char *e2b_call_serial(const struct e2b_call *call);

/* Releases what the call still holds (a claimed cell, a session reference, a context being made
 * by a call that never ran) and zeroes it. Never blocks. */
void e2b_call_clear(struct e2b *e, struct e2b_call *call);

#endif
