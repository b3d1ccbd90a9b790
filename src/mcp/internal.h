/* SPDX-License-Identifier: MIT */
/* internal.h - what the files of `execbox mcp` share: the server, its tools and its jobs (one
 * tools/call each), and the functions each file offers the others. server.c starts, serves and
 * stops; options.c reads the command line; dispatch.c is the JSON-RPC side; tools.c the tools
 * and tools/call; session.c the --stateful session; render.c (mcp.h) the results. */
#ifndef EBCLI_MCP_INTERNAL_H
#define EBCLI_MCP_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/cliopts.h"
#include "common/jsonrpc.h"
#include "common/onesession.h"
#include "common/runner.h"
#include "execbox/execbox.h"
#include "mcp.h"

#define MCP_DEFAULT_FRAME_LIMIT ((size_t)EXECBOX_CODE_MAX + (4U << 20))
#define MCP_DEFAULT_INLINE_MAX (2U << 20)
#define MCP_MAX_JOBS 64                /* largest --jobs */
#define MCP_MAX_PENDING 64             /* queued calls beyond the running ones; more get "busy" */
#define MCP_CODE_BYTES_MAX (64U << 20) /* code held by calls in progress; more get "busy" */
#define MCP_READ_CHUNK 65536
/* Image bytes one reply may carry: base64 grows them by 4/3, and the official clients drop a
 * connection whose frame passes 10 MiB. */
#define MCP_IMAGES_BUDGET (4U << 20)
#define MCP_DRAIN_POLL_MS 200
#define MCP_STOP_GRACE_S 10 /* after cancelling everything, how long workers may take */

/* What a tool does with a call. */
enum tool_kind {
    TOOL_RUN,   /* a fresh sandbox per call */
    TOOL_CELL,  /* --stateful: a cell of the connection's session */
    TOOL_RESET, /* --stateful: reset_session */
};

struct tool {
    char *name;
    enum tool_kind kind;
    bool multi;    /* takes a "language" argument */
    json_t *def;   /* the definition tools/list returns */
    json_t *langs; /* multi: the allowed languages (strings) */
};

struct batch {
    unsigned pending; /* requests not yet answered, plus one while it is being dispatched */
    json_t *replies;  /* the responses gathered so far */
};

struct job {
    struct runner_job rj; /* key: id; cost: code_len */
    json_t *id;           /* a private deep copy: jobs travel between threads */
    struct batch *batch;
    enum tool_kind kind;
    struct job *session_next; /* TOOL_CELL, TOOL_RESET: the next in session_queue */
    bool skip;                /* under session_lock: cancelled while waiting for its turn */
    char *code;
    size_t code_len;
    char *language;
    struct execbox_policy policy;
    json_t *result; /* the tool result, from the run to its reply */
};

struct server {
    /* set up before the workers start, read-only afterwards */
    struct execbox_executor *ex;
    struct execbox_policy policy; /* the defaults and the maximum a call may ask for */
    struct tool tools[3];
    size_t n_tools;
    unsigned n_workers;
    size_t inline_max;
    size_t frame_limit;
    bool verbose;
    int in_fd, out_fd;

    pthread_mutex_t write_lock; /* one frame at a time on out_fd */
    bool out_broken;            /* under write_lock */

    struct runner *runner; /* the calls: queued, running; --jobs workers */

    pthread_mutex_t lock;
    bool stopping;    /* signal or broken output: cancel everything */
    char version[16]; /* negotiated protocol version; "" before initialize */

    /* --stateful: the one session of this connection (stdio has one connection per process).
     * Session calls (cells and resets) take turns in arrival order through session_queue,
     * whatever worker runs them; one and sent belong to the job at its head. */
    bool stateful;
    double session_idle;          /* --session-idle; 0: the library's default */
    pthread_mutex_t session_lock; /* guards session_queue and each queued job's skip */
    pthread_cond_t session_turn;  /* the head of session_queue changed */
    struct job *session_queue;    /* session calls not yet done, oldest first */
    struct onesession one;        /* the session: none before the first cell and after a reset */
    struct mcp_sent sent; /* the session's images already attached (its workspace persists) */
};
/* ---- server.c ---- */

/* Cancels everything (queued calls are dropped unanswered, running ones killed) and wakes the
 * main loop. */
void mcp_request_stop(struct server *s);

/* ---- options.c ---- */

/* The command line's choices besides those kept in the server and the sandbox options. */
struct mcp_options {
    const char *tool_name; /* --tool-name, or NULL */
    char *langs_buf;       /* --languages, split in place into langs; freed by the caller */
    const char *langs[8];  /* NULL-terminated */
    bool have_langs;
};

/* Parses argv into s (workers, sizes, --stateful, --verbose), sb and o, and checks the
 * combination. 0, 1 after --help (the text printed), or -1 with the reason on stderr. */
int mcp_parse_options(int argc, char **argv, struct server *s, struct cli_sandbox *sb,
                      struct mcp_options *o);

/* ---- dispatch.c ---- */

/* Writes "execbox mcp: ..." as one line on stderr. */
__attribute__((format(printf, 1, 2))) void mcp_log(const char *fmt, ...);

/* A short printable rendering of a request id, for logs. */
void mcp_id_text(const json_t *id, char *out, size_t n);

/* Answers one request of a batch (m may be NULL: no answer); sends the batch when it was the
 * last. Steals m. Called without s->lock. */
void mcp_batch_put(struct server *s, struct batch *b, json_t *m);

/* Sends a reply to a request, directly or as part of its batch b (NULL: none). Steals m. */
void mcp_reply(struct server *s, struct batch *b, json_t *m);

/* True when the negotiated version is older than v (both "YYYY-MM-DD"; "" is the newest). */
bool mcp_version_before(struct server *s, const char *v);

/* jrpc_reader's callback (ud: the server): one frame, or NULL for one over the limit. */
int mcp_on_frame(void *ud, const char *line, size_t len, size_t dropped);

/* ---- tools.c ---- */

/* The runner's callbacks for tools/call jobs (keyed by request id). */
extern const struct runner_ops mcp_runner_ops;

/* The result of tools/list. NULL when out of memory. */
json_t *mcp_tools_list(struct server *s);

/* tools/call: validates and queues the call (NULL: the reply comes from a worker), or returns
 * the answer to send now. On the main thread; b, if any, is held once for this request. */
json_t *mcp_tools_call(struct server *s, json_t *id, json_t *params, struct batch *b);

/* Adds the tools the options ask for (execute_python, reset_session, execute_code). 0, or -1
 * with the reason on stderr. */
int mcp_tools_setup(struct server *s, const struct cli_sandbox *sb, const struct mcp_options *o);

/* ---- session.c ---- */

/* Appends a session call to the queue of turns; before runner_submit. */
void mcp_session_enqueue(struct server *s, struct job *j);

/* Takes a session call out of the queue (its turn is over, or it never ran). */
void mcp_session_dequeue(struct server *s, struct job *j);

/* Waits until j heads the queue of turns; false when it was cancelled meanwhile, or the server
 * is stopping. */
bool mcp_session_wait_turn(struct server *s, struct job *j);

/* Marks a waiting session call with this id as cancelled. */
void mcp_session_skip(struct server *s, json_t *id);

/* Sets up the session's holder (s->ex, s->policy and s->session_idle set); opens nothing. */
void mcp_session_setup(struct server *s);

/* Ends the session (if any) and forgets it and the images its replies attached. */
void mcp_session_end(struct server *s, const char *why);

/* Runs one cell in the session (a new one when there is none or it ended); the tool result. */
json_t *mcp_session_cell(struct server *s, struct job *j, const struct execbox_request *req);

/* reset_session: ends the session; the tool result. */
json_t *mcp_session_reset(struct server *s);

#endif
