/* SPDX-License-Identifier: MIT */
/* server.c - `execbox mcp`: the code tool over the Model Context Protocol on stdio.
 *
 * Threads and ownership:
 *  - The main thread reads stdin, splits it into newline-delimited JSON-RPC frames (bounded),
 *    answers initialize, ping and tools/list itself, queues tools/call as jobs, and handles
 *    notifications/cancelled. It also watches a self-pipe written by the SIGTERM/SIGINT handler.
 *  - The surfaces' shared job runner (common/runner.h) runs the queued calls on its worker
 *    threads (execbox_executor_run is thread-safe), so pipelined calls run in parallel up to
 *    --jobs; each reply carries its request's id, which is the job's key in the runner.
 *  - Every frame goes out through send_frame(), which holds write_lock for the whole line: one
 *    writer at a time, so frames never interleave. stdout carries frames only; fd 1 is pointed
 *    at stderr at start so nothing else can write protocol bytes by accident.
 *  - s->lock guards batches, the stop flag and the negotiated version; the runner has its own.
 *  - --stateful: execute_python calls (and reset_session) are cells of one session. They still
 *    go through the runner, but take turns in arrival order (session_queue, session_lock), so
 *    one cell runs at a time; the session itself belongs to the call whose turn it is.
 *
 * Lifecycle: on EOF of stdin the server stops reading, lets queued and running calls finish
 * (each is bounded by its timeout), writes their replies and exits 0. On SIGTERM or SIGINT, or
 * when stdout is gone, it drops queued calls, cancels running ones (their sandboxes are killed
 * and destroyed) and exits 0 once every worker has returned. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/surface.h"
#include "common/cliopts.h"
#include "common/io.h"
#include "common/jsonrpc.h"
#include "common/runner.h"
#include "execbox/execbox.h"
#include "mcp.h"

/* The protocol versions we speak, newest first: initialize echoes the client's when it is
 * one of these, else answers the newest. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                "2024-11-05"};

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
     * whatever worker runs them; session and lost belong to the job at its head. */
    bool stateful;
    double session_idle;             /* --session-idle; 0: the library's default */
    pthread_mutex_t session_lock;    /* guards session_queue and each queued job's skip */
    pthread_cond_t session_turn;     /* the head of session_queue changed */
    struct job *session_queue;       /* session calls not yet done, oldest first */
    struct execbox_session *session; /* NULL before the first cell and after a reset */
    char lost[160];       /* why the last session ended unasked; told by the next cell, then "" */
    struct mcp_sent sent; /* the session's images already attached (its workspace persists) */
};

/* Written by the signal handler, read by the main loop: the only global, as a handler has no
 * other way to reach the server. */
static int wake_fd = -1;

static void on_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;
    if (wake_fd >= 0)
        (void)!write(wake_fd, &c, 1);
    errno = saved;
}

__attribute__((format(printf, 1, 2))) static void logmsg(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "execbox mcp: %s\n", line);
}

/* A short printable rendering of a request id for logs. */
static void id_text(const json_t *id, char *out, size_t n)
{
    if (json_is_integer(id))
        snprintf(out, n, "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(out, n, "'%.40s'", json_string_value(id));
    else
        snprintf(out, n, "null");
}

/* ---- output --------------------------------------------------------------------------------- */

static void request_stop(struct server *s);

/* Writes one message as one line. Steals m. A failed write (the client went away) stops the
 * server: there is nobody left to answer. */
static void send_frame(struct server *s, json_t *m)
{
    if (!m) {
        logmsg("out of memory building a reply");
        return;
    }
    size_t len = 0;
    char *line = jrpc_frame_dump(m, &len);
    json_decref(m);
    if (!line) {
        logmsg("out of memory writing a reply");
        return;
    }
    bool broke = false;
    pthread_mutex_lock(&s->write_lock);
    if (!s->out_broken) {
        int r = cli_write_all(s->out_fd, line, len);
        if (r < 0) {
            logmsg("writing to stdout: %s; stopping", execbox_strerror(r));
            s->out_broken = broke = true;
        }
    }
    pthread_mutex_unlock(&s->write_lock);
    free(line);
    if (broke)
        request_stop(s);
}

/* Counts one more outstanding request in a batch. Caller holds s->lock. */
static void batch_hold(struct batch *b)
{
    if (b)
        b->pending++;
}

/* Answers one request of a batch (m may be NULL: no answer, e.g. cancelled); sends the
 * batch's array when it was the last. Steals m. Must be called without s->lock. */
static void batch_put(struct server *s, struct batch *b, json_t *m)
{
    pthread_mutex_lock(&s->lock);
    if (m && json_array_append_new(b->replies, m) < 0)
        logmsg("out of memory building a batch reply");
    bool done = --b->pending == 0;
    pthread_mutex_unlock(&s->lock);
    if (!done)
        return;
    if (json_array_size(b->replies) > 0)
        send_frame(s, b->replies); /* a batch of notifications only gets no answer */
    else
        json_decref(b->replies);
    free(b);
}

/* Sends a reply to a request, directly or as part of its batch. Steals m. */
static void reply(struct server *s, struct batch *b, json_t *m)
{
    if (b)
        batch_put(s, b, m);
    else
        send_frame(s, m);
}

/* ---- jobs ------------------------------------------------------------------------------------ */

static void job_free(struct job *j)
{
    if (!j)
        return;
    json_decref(j->id);
    free(j->code);
    free(j->language);
    json_decref(j->result);
    runner_job_release(&j->rj);
    free(j);
}

static bool id_equal(const void *a, const void *b)
{
    return json_equal((json_t *)a, (json_t *)b);
}

/* Cancels everything: queued jobs are dropped unanswered, running ones are killed. */
static void request_stop(struct server *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    runner_cancel_all(s->runner);
    /* Wake the main loop if it is waiting for input (a worker saw stdout go away). */
    char c = 0;
    if (wake_fd >= 0)
        (void)!write(wake_fd, &c, 1);
}

/* ---- the session (--stateful) ---------------------------------------------------------------- */

/* Appends a session call to the queue of turns; before runner_submit, so that its worker can
 * never wait for a job the queue does not hold. */
static void session_enqueue(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    struct job **p = &s->session_queue;
    while (*p)
        p = &(*p)->session_next;
    *p = j;
    j->session_next = NULL;
    pthread_mutex_unlock(&s->session_lock);
}

/* Takes a session call out of the queue (its turn is over, or it never ran). */
static void session_dequeue(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    for (struct job **p = &s->session_queue; *p; p = &(*p)->session_next)
        if (*p == j) {
            *p = j->session_next;
            break;
        }
    j->session_next = NULL;
    pthread_cond_broadcast(&s->session_turn);
    pthread_mutex_unlock(&s->session_lock);
}

/* Waits until j heads the queue. The runner hands jobs to workers oldest first, and the queue
 * is in arrival order, so the head has always been handed to a worker already: no deadlock.
 * False when j was cancelled while it waited. */
static bool session_wait_turn(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    while (s->session_queue != j)
        pthread_cond_wait(&s->session_turn, &s->session_lock);
    bool skip = j->skip;
    pthread_mutex_unlock(&s->session_lock);
    pthread_mutex_lock(&s->lock);
    skip |= s->stopping;
    pthread_mutex_unlock(&s->lock);
    return !skip;
}

/* Marks a waiting session call with this id as cancelled (its token is fired too). */
static void session_skip(struct server *s, json_t *id)
{
    pthread_mutex_lock(&s->session_lock);
    for (struct job *k = s->session_queue; k; k = k->session_next)
        if (json_equal(k->id, id))
            k->skip = true;
    pthread_mutex_unlock(&s->session_lock);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Why a session that is no longer alive ended, in words for the model. */
static void session_gone_why(struct server *s, char *out, size_t n)
{
    struct execbox_session_info si;
    execbox_session_info(s->session, &si);
    double now = wall_now();
    double idle = s->session_idle > 0 ? s->session_idle : EXECBOX_SESSION_IDLE_DEFAULT;
    if (si.expires_at > 0 && now >= si.expires_at) {
        if (now >= si.last_used_at + idle)
            snprintf(out, n, "the session expired after %g s without a call", idle);
        else
            snprintf(out, n, "the session reached its maximum lifetime");
    } else {
        snprintf(out, n, "the session's state process ended");
    }
}

/* Ends the session (if any) and forgets it, and the images its replies attached. */
static void session_end(struct server *s, const char *why)
{
    mcp_sent_clear(&s->sent);
    if (!s->session)
        return;
    s->session = execbox_session_free(s->session);
    logmsg("session ended: %s", why);
}

/* One cell: in the session, started first when there is none; when the session turns out to
 * have ended (expired, killed, its state out of memory), in a new one, and the result says
 * that the state was lost. */
static json_t *session_cell(struct server *s, struct job *j, const struct execbox_request *req)
{
    char lost[160] = "";
    snprintf(lost, sizeof(lost), "%s", s->lost);
    s->lost[0] = '\0';
    if (s->session) {
        struct execbox_session_info si;
        execbox_session_info(s->session, &si);
        if (!si.alive) {
            session_gone_why(s, lost, sizeof(lost));
            session_end(s, lost);
        }
    }
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    char msg[400];
    for (int attempt = 0;; attempt++) {
        if (!s->session) {
            struct execbox_session_options so = {.policy = &s->policy,
                                                 .idle_timeout = s->session_idle};
            if (execbox_session_new(s->ex, &so, &s->session, &err) < 0) {
                logmsg("cannot start a session: %s", err.msg);
                snprintf(msg, sizeof(msg), "execbox could not start a Python session: %s", err.msg);
                if (lost[0]) /* still to be told */
                    snprintf(s->lost, sizeof(s->lost), "%s", lost);
                return mcp_tool_error(msg);
            }
            logmsg("session started");
        }
        int r = execbox_session_run(s->session, req, &res, &err);
        if ((r == -ESHUTDOWN || r == -ETIMEDOUT) && attempt == 0) {
            /* It ended between the check above and this cell. */
            session_gone_why(s, lost, sizeof(lost));
            session_end(s, lost);
            continue;
        }
        if (r < 0) {
            snprintf(msg, sizeof(msg), "execbox could not run the code: %s", err.msg);
            return mcp_tool_error(msg);
        }
        break;
    }
    struct execbox_session_info si;
    execbox_session_info(s->session, &si);
    struct mcp_render o = {.timeout = j->policy.timeout,
                           .images_budget = MCP_IMAGES_BUDGET,
                           .lost = lost[0] ? lost : NULL,
                           .ended = !si.alive,
                           .sent = &s->sent};
    json_t *out = mcp_render_cell(res, &o);
    if (!si.alive) {
        snprintf(s->lost, sizeof(s->lost), "the session ended with the previous call%s",
                 res->oom_killed ? ", which ran out of memory" : "");
        session_end(s, s->lost);
    }
    execbox_result_free(res);
    return out;
}

/* reset_session: ends the session; the next cell starts a new one. */
static json_t *session_reset(struct server *s)
{
    bool had = s->session != NULL;
    session_end(s, "reset_session");
    s->lost[0] = '\0';
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                     had ? "The session was reset: its variables, imports, definitions and "
                           "/workspace files are gone. The next call starts in a fresh session."
                         : "There was no session state to reset. The next call starts in a "
                           "fresh session.",
                     "isError", 0);
}

/* The runner's run(): one call, on a worker thread. */
static bool mcp_run(struct runner_job *rj, void *ud)
{
    struct server *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    char idt[64];
    id_text(j->id, idt, sizeof(idt));
    if (j->kind != TOOL_RUN) {
        bool go = session_wait_turn(s, j);
        if (go && j->kind == TOOL_RESET) {
            j->result = session_reset(s);
        } else if (go) {
            struct execbox_request creq = {
                .code = j->code,
                .code_len = j->code_len,
                .policy = &j->policy,
                .cancel = j->rj.cancel,
                .inline_files_max = s->inline_max,
            };
            if (s->verbose)
                logmsg("call %s: running a cell of %zu bytes", idt, j->code_len);
            j->result = session_cell(s, j, &creq);
        } else {
            /* Cancelled while it waited (then not answered), or the server is stopping. */
            j->result = mcp_tool_error("the server is stopping; the call was not run");
        }
        session_dequeue(s, j);
        return go;
    }
    struct execbox_request req = {
        .language = j->language,
        .code = j->code,
        .code_len = j->code_len,
        .policy = &j->policy,
        .cancel = j->rj.cancel,
        .inline_files_max = s->inline_max,
    };
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    if (s->verbose)
        logmsg("call %s: running %zu bytes of %s", idt, j->code_len,
               j->language ? j->language : "python");
    if (execbox_executor_run(s->ex, &req, &res, &err) < 0) {
        char msg[320];
        snprintf(msg, sizeof(msg), "execbox could not run the code: %s", err.msg);
        j->result = mcp_tool_error(msg);
    } else {
        j->result = mcp_render_result(res, j->policy.timeout, MCP_IMAGES_BUDGET);
        if (s->verbose)
            logmsg("call %s: exit_code %d in %.3f s", idt, res->exit_code, res->execution_time);
        execbox_result_free(res);
    }
    return true;
}

/* The runner's done(): the id is free again by now; answers the call, unless it was
 * cancelled (MCP: the receiver of a cancellation should not answer the cancelled request). */
static void mcp_done(struct runner_job *rj, enum runner_end end, void *ud)
{
    struct server *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    if (end == RUNNER_DROPPED && j->kind != TOOL_RUN)
        session_dequeue(s, j); /* it never took its turn */
    if (end != RUNNER_RAN) {
        if (s->verbose && end == RUNNER_CANCELLED) {
            char idt[64];
            id_text(j->id, idt, sizeof(idt));
            logmsg("call %s: cancelled, not answered", idt);
        }
        if (j->batch)
            batch_put(s, j->batch, NULL);
    } else {
        json_t *m = j->result ? jrpc_result_new(j->id, j->result)
                              : jrpc_error_new(j->id, JRPC_INTERNAL_ERROR,
                                               "out of memory rendering the result", NULL);
        j->result = NULL; /* stolen by the reply */
        reply(s, j->batch, m);
    }
    job_free(j);
}

static const struct runner_ops mcp_runner_ops = {
    .run = mcp_run, .done = mcp_done, .key_equal = id_equal};

/* ---- methods --------------------------------------------------------------------------------- */

/* True when the negotiated version is older than v (both "YYYY-MM-DD"; "" is the newest). */
static bool version_before(struct server *s, const char *v)
{
    pthread_mutex_lock(&s->lock);
    bool before = s->version[0] && strcmp(s->version, v) < 0;
    pthread_mutex_unlock(&s->lock);
    return before;
}

static json_t *do_initialize(struct server *s, json_t *params, int *code, char *msg, size_t n)
{
    json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_object(params) || !json_is_string(pv)) {
        *code = JRPC_INVALID_PARAMS;
        snprintf(msg, n, "initialize: params.protocolVersion must be a string");
        return NULL;
    }
    const char *chosen = protocol_versions[0];
    for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++)
        if (strcmp(json_string_value(pv), protocol_versions[i]) == 0)
            chosen = protocol_versions[i];
    pthread_mutex_lock(&s->lock);
    snprintf(s->version, sizeof(s->version), "%s", chosen);
    pthread_mutex_unlock(&s->lock);
    const char *client =
        json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name"));
    logmsg("client '%.60s' connected, protocol %s (asked for '%.20s')", client ? client : "?",
           chosen, json_string_value(pv));
    char net[1024], instructions[1536];
    execbox_policy_network_text(&s->policy, net, sizeof(net));
    if (s->stateful)
        snprintf(instructions, sizeof(instructions),
                 "Runs Python in an isolated sandbox (backend '%s') that keeps its state between "
                 "calls of %s, like a notebook: variables, imports and definitions from earlier "
                 "calls stay defined. A call that fails is rolled back: the variables are as "
                 "before it. %s starts over with a fresh state.%s %s Limits per call: %g s wall "
                 "clock (a call may ask for less).",
                 execbox_executor_backend(s->ex), s->tools[0].name, s->tools[1].name,
                 s->n_tools > 2 ? " execute_code calls start clean every time." : "", net,
                 s->policy.timeout);
    else
        snprintf(instructions, sizeof(instructions),
                 "Runs code in a fresh, isolated sandbox (backend '%s') and returns its stdout, "
                 "stderr and exit code. Every call starts clean: nothing persists between calls. "
                 "%s Limits per call: %g s wall clock (a call may ask for less).",
                 execbox_executor_backend(s->ex), net, s->policy.timeout);
    return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", chosen,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "execbox",
                     "title", "execbox code sandbox", "version", execbox_version(), "instructions",
                     instructions);
}

static json_t *do_tools_list(struct server *s)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < s->n_tools; i++)
        json_array_append(list, s->tools[i].def);
    return list ? json_pack("{s:o}", "tools", list) : NULL;
}

static const struct tool *tool_find(struct server *s, const char *name)
{
    for (size_t i = 0; i < s->n_tools; i++)
        if (strcmp(s->tools[i].name, name) == 0)
            return &s->tools[i];
    return NULL;
}

/* Checks a call's arguments against the tool's inputSchema and fills the job. 0, or -1 with
 * the reason in msg. */
static int parse_arguments(const struct tool *t, json_t *args, struct job *j, char *msg, size_t n)
{
    const char *key;
    json_t *v;
    if (t->kind == TOOL_RESET) {
        json_object_foreach (args, key, v) {
            snprintf(msg, n, "unknown argument '%.60s' (reset_session takes none)", key);
            return -1;
        }
        return 0;
    }
    json_object_foreach (args, key, v) {
        if (strcmp(key, "code") != 0 && strcmp(key, "timeout") != 0 &&
            !(t->multi && strcmp(key, "language") == 0)) {
            snprintf(msg, n, "unknown argument '%.60s' (%s)", key,
                     t->multi ? "code, language, timeout" : "code, timeout");
            return -1;
        }
    }
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code)) {
        snprintf(msg, n, "argument 'code' is required and must be a string");
        return -1;
    }
    j->code_len = json_string_length(code);
    if (j->code_len > EXECBOX_CODE_MAX) {
        snprintf(msg, n, "argument 'code' is %zu bytes; the limit is %u", j->code_len,
                 EXECBOX_CODE_MAX);
        return -1;
    }
    j->code = malloc(j->code_len + 1);
    if (!j->code) {
        snprintf(msg, n, "out of memory");
        return -1;
    }
    memcpy(j->code, json_string_value(code), j->code_len + 1);
    if (t->multi) {
        json_t *lang = json_object_get(args, "language");
        bool ok = false;
        for (size_t i = 0; json_is_string(lang) && i < json_array_size(t->langs); i++)
            ok |= json_equal(lang, json_array_get(t->langs, i));
        if (!ok) {
            char *allowed = json_dumps(t->langs, JSON_COMPACT);
            snprintf(msg, n, "argument 'language' is required and must be one of %s",
                     allowed ? allowed : "the listed languages");
            free(allowed);
            return -1;
        }
        j->language = strdup(json_string_value(lang));
        if (!j->language) {
            snprintf(msg, n, "out of memory");
            return -1;
        }
    }
    json_t *to = json_object_get(args, "timeout");
    if (to) {
        double secs = json_number_value(to);
        if (!json_is_number(to) || secs < 1 || secs != floor(secs) || !isfinite(secs)) {
            snprintf(msg, n, "argument 'timeout' must be a whole number of seconds >= 1");
            return -1;
        }
        j->policy.timeout = secs;
    }
    return 0;
}

/* tools/call: validates and queues the call, whose reply then comes from a worker (NULL), or
 * returns the answer to send now (an error). Called from the main thread; b (if any) is held
 * once for this request. */
static json_t *do_tools_call(struct server *s, json_t *id, json_t *params, struct batch *b)
{
    char msg[512];
    if (!json_is_object(params))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS,
                              "tools/call: params must be an object with name and arguments", NULL);
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, "tools/call: params.name must be a string",
                              NULL);
    const struct tool *t = tool_find(s, json_string_value(name));
    if (!t) {
        snprintf(msg, sizeof(msg), "tools/call: unknown tool '%.80s'", json_string_value(name));
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, msg, NULL);
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS,
                              "tools/call: params.arguments must be an object", NULL);

    struct job *j = calloc(1, sizeof(*j));
    if (!j || runner_job_init(&j->rj, NULL) < 0 || !(j->id = json_deep_copy(id))) {
        job_free(j);
        return jrpc_error_new(id, JRPC_INTERNAL_ERROR, "out of memory", NULL);
    }
    j->policy = s->policy;
    j->kind = t->kind;
    json_t *empty = json_object();
    char why[400];
    int r = parse_arguments(t, args ? args : empty, j, why, sizeof(why));
    json_decref(empty);
    if (r < 0) {
        job_free(j);
        snprintf(msg, sizeof(msg), "%s: %s", t->name, why);
        /* 2025-11-25 made input validation errors tool execution errors, so the model sees
         * them and can fix its call; earlier versions list them as -32602. */
        if (version_before(s, "2025-11-25"))
            return jrpc_error_new(id, JRPC_INVALID_PARAMS, msg, NULL);
        return jrpc_result_new(id, mcp_tool_error(msg));
    }
    struct execbox_error err = {0};
    if (execbox_policy_check_within(&j->policy, &s->policy, &err) < 0) {
        /* A call sets only its timeout, but name whatever field the library says is over. */
        snprintf(msg, sizeof(msg), "%s: %s; call again with a smaller %s or none", t->name, err.msg,
                 err.field[0] ? err.field : "timeout");
        job_free(j);
        return jrpc_result_new(id, mcp_tool_error(msg));
    }

    j->batch = b;
    j->rj.key = j->id;
    j->rj.cost = j->code_len;
    if (j->kind != TOOL_RUN)
        session_enqueue(s, j);
    int r2 = runner_submit(s->runner, &j->rj);
    if (r2 == 0)
        return NULL; /* the reply comes from mcp_done() */
    if (j->kind != TOOL_RUN)
        session_dequeue(s, j);
    job_free(j);
    if (r2 == -EEXIST)
        return jrpc_error_new(id, JRPC_INVALID_REQUEST,
                              "invalid request: the id is in use by a call in progress", NULL);
    return jrpc_error_new(id, JRPC_SERVER_BUSY,
                          "server busy: too many calls in progress; retry later", NULL);
}

static void do_cancelled(struct server *s, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    if (!json_is_string(rid) && !json_is_integer(rid))
        return; /* MCP: an unknown or invalid requestId is ignored */
    const char *reason = json_string_value(json_object_get(params, "reason"));
    char idt[64];
    id_text(rid, idt, sizeof(idt));
    /* A running call is killed and mcp_done() stays silent; a queued one is dropped; a session
     * call still waiting for its turn is skipped when the turn comes. */
    enum runner_cancelled rc = runner_cancel_key(s->runner, rid);
    if (rc == RUNNER_FIRED && s->stateful)
        session_skip(s, rid);
    if (rc != RUNNER_NOT_LIVE)
        logmsg("call %s cancelled by the client%s%.100s", idt, reason ? ": " : "",
               reason ? reason : "");
}

static json_t *do_request(struct server *s, const struct jrpc_msg *msg, struct batch *b)
{
    json_t *id = msg->id;
    char text[200];
    if (msg->params && !json_is_object(msg->params)) {
        snprintf(text, sizeof(text), "%.80s: params must be an object", msg->method);
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, text, NULL);
    }
    if (strcmp(msg->method, "tools/call") == 0)
        return do_tools_call(s, id, msg->params, b);
    if (strcmp(msg->method, "ping") == 0)
        return jrpc_result_new(id, json_object());
    if (strcmp(msg->method, "tools/list") == 0)
        return jrpc_result_new(id, do_tools_list(s));
    if (strcmp(msg->method, "initialize") == 0) {
        if (b)
            return jrpc_error_new(id, JRPC_INVALID_REQUEST,
                                  "invalid request: initialize must not be part of a batch", NULL);
        int code = 0;
        json_t *r = do_initialize(s, msg->params, &code, text, sizeof(text));
        return r ? jrpc_result_new(id, r) : jrpc_error_new(id, code, text, NULL);
    }
    snprintf(text, sizeof(text), "method '%.80s' not found", msg->method);
    return jrpc_error_new(id, JRPC_METHOD_NOT_FOUND, text, NULL);
}

/* One message (a whole frame, or one element of a batch). */
static void handle_message(struct server *s, json_t *m, struct batch *b)
{
    struct jrpc_msg msg;
    json_t *answer = NULL;
    switch (jrpc_classify(m, &msg)) {
    case JRPC_KIND_INVALID:
        answer = jrpc_error_new(msg.id, msg.error_code, msg.error_msg, NULL);
        break;
    case JRPC_KIND_RESPONSE:
        /* We send no requests, so there is nothing to match it to. */
        if (s->verbose)
            logmsg("ignoring a response from the client");
        return;
    case JRPC_KIND_NOTIFICATION:
        if (strcmp(msg.method, "notifications/cancelled") == 0)
            do_cancelled(s, msg.params);
        else if (s->verbose)
            logmsg("notification '%.60s'", msg.method);
        return;
    case JRPC_KIND_REQUEST:
        if (b) {
            /* Held until answered: by reply() below, or by the worker for a queued call. */
            pthread_mutex_lock(&s->lock);
            batch_hold(b);
            pthread_mutex_unlock(&s->lock);
        }
        answer = do_request(s, &msg, b);
        if (!answer)
            return; /* queued */
        break;
    }
    if (b && msg.kind == JRPC_KIND_INVALID) {
        pthread_mutex_lock(&s->lock);
        batch_hold(b);
        pthread_mutex_unlock(&s->lock);
    }
    reply(s, b, answer);
}

/* A JSON-RPC batch. MCP 2025-03-26 required servers to accept them; 2025-06-18 removed
 * batching, so for newer versions (and before initialize) the whole array is refused. */
static void handle_batch(struct server *s, json_t *arr)
{
    pthread_mutex_lock(&s->lock);
    char version[16];
    memcpy(version, s->version, sizeof(version));
    pthread_mutex_unlock(&s->lock);
    char text[240];
    if (json_array_size(arr) == 0) {
        send_frame(
            s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, "invalid request: empty batch", NULL));
        return;
    }
    if (!version[0] || strcmp(version, "2025-06-18") >= 0) {
        snprintf(text, sizeof(text),
                 "invalid request: JSON-RPC batches are not supported in protocol version %s "
                 "(MCP removed batching in 2025-06-18); send one message per line",
                 version[0] ? version : "negotiation (initialize first)");
        send_frame(s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, text, NULL));
        return;
    }
    struct batch *b = calloc(1, sizeof(*b));
    if (!b || !(b->replies = json_array())) {
        free(b);
        send_frame(s, jrpc_error_new(NULL, JRPC_INTERNAL_ERROR, "out of memory", NULL));
        return;
    }
    b->pending = 1; /* our own hold while dispatching, so that no worker sends it early */
    size_t i;
    json_t *m;
    json_array_foreach (arr, i, m)
        handle_message(s, m, b);
    batch_put(s, b, NULL);
}

static int on_frame(void *ud, const char *line, size_t len, size_t dropped)
{
    struct server *s = ud;
    char text[256];
    if (!line) {
        snprintf(text, sizeof(text),
                 "invalid request: frame of %zu bytes exceeds the limit of %zu bytes; it was "
                 "discarded",
                 dropped, s->frame_limit);
        logmsg("%s", text);
        send_frame(s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, text, NULL));
        return 0;
    }
    json_t *root = NULL;
    if (jrpc_parse(line, len, &root, text, sizeof(text)) < 0) {
        if (s->verbose)
            logmsg("%s", text);
        send_frame(s, jrpc_error_new(NULL, JRPC_PARSE_ERROR, text, NULL));
        return 0;
    }
    if (json_is_array(root))
        handle_batch(s, root);
    else
        handle_message(s, root, NULL);
    json_decref(root);
    return 0;
}

/* ---- setup ----------------------------------------------------------------------------------- */

/* Adds a tool by its definition (stolen). */
static int tool_add_def(struct server *s, json_t *def, enum tool_kind kind, bool multi)
{
    const char *name = json_string_value(json_object_get(def, "name"));
    if (!name) {
        json_decref(def);
        fprintf(stderr, "execbox mcp: the library's tool schema has no name\n");
        return -1;
    }
    if (tool_find(s, name)) {
        json_decref(def);
        fprintf(stderr, "execbox mcp: two tools named '%s'\n", name);
        return -1;
    }
    struct tool *t = &s->tools[s->n_tools++];
    t->def = def;
    t->name = strdup(name);
    t->kind = kind;
    t->multi = multi;
    t->langs = json_incref(json_object_get(
        json_object_get(json_object_get(json_object_get(def, "inputSchema"), "properties"),
                        "language"),
        "enum"));
    return t->name ? 0 : -1;
}

static int tool_add(struct server *s, enum execbox_schema_format fmt,
                    const struct execbox_tool_options *o, enum tool_kind kind)
{
    char *text = NULL;
    struct execbox_error err = {0};
    if (execbox_tool_schema(fmt, o, &text, &err) < 0) {
        cli_error("mcp: tool schema", &err);
        return -1;
    }
    json_t *def = json_loads(text, 0, NULL);
    execbox_free(text);
    return tool_add_def(s, def, kind, o->languages != NULL);
}

/* --stateful: reset_session, which ends the session of the cell tool named cell. */
static int tool_add_reset(struct server *s, const char *cell)
{
    char desc[512];
    snprintf(desc, sizeof(desc),
             "End the Python session of %s and start over: every variable, import and "
             "definition from earlier calls is forgotten, and files in /workspace are removed. "
             "The next %s call starts in a fresh session. Use it when the state is broken or "
             "a task is done.",
             cell, cell);
    json_t *def = json_pack(
        "{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:s, s:b, s:b, s:b, s:b}}", "name", "reset_session",
        "title", "Reset the Python session", "description", desc, "inputSchema", "type", "object",
        "properties", "additionalProperties", 0, "annotations", "title", "Reset the Python session",
        "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1, "openWorldHint", 0);
    return def ? tool_add_def(s, def, TOOL_RESET, false) : -1;
}

/* MCP 2025-11-25: tool names SHOULD be 1-128 characters of A-Z a-z 0-9 _ - . */
static bool tool_name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 128)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return false;
    return true;
}

static int parse_size_opt(const char *flag, const char *arg, size_t min, size_t *ret)
{
    uint64_t v = 0;
    struct execbox_error err = {0};
    if (execbox_parse_size(arg, &v, &err) < 0) {
        fprintf(stderr, "execbox mcp: %s: %s\n", flag, err.msg);
        return -1;
    }
    if (v < min || v > (1ULL << 32)) {
        fprintf(stderr, "execbox mcp: %s: '%s' is out of range\n", flag, arg);
        return -1;
    }
    *ret = (size_t)v;
    return 0;
}

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox mcp [OPTIONS]\n\n"
            "Serves the code tool over the Model Context Protocol on stdin/stdout\n"
            "(newline-delimited JSON-RPC 2.0). Logs go to stderr. The sandbox options set each\n"
            "call's limits and the maximum a call's 'timeout' argument may ask for.\n\n"
            "  -n, --tool-name NAME     rename the tool (default execute_python)\n"
            "      --languages L        also offer execute_code with a language enum,\n"
            "                           e.g. python,javascript,bash\n"
            "  -j, --jobs N             calls run in parallel (default: CPUs, at most 8)\n"
            "      --inline-images SIZE largest image returned as image content (default 2M;\n"
            "                           0: none)\n"
            "      --frame-limit SIZE   largest JSON-RPC frame accepted (default 20M)\n"
            "      --stateful           execute_python keeps one Python session per connection:\n"
            "                           variables persist between calls, a failed call is\n"
            "                           rolled back; adds the reset_session tool\n"
            "      --session-idle SECONDS  end the session after this long without a call\n"
            "                           (default 600; the next call starts a new one)\n"
            "  -v, --verbose            log every call to stderr\n"
            "  -h, --help               this text\n\n" CLI_SANDBOX_HELP CLI_POOL_HELP
            "\nStops on EOF (after finishing calls in progress) and on SIGTERM/SIGINT (after\n"
            "cancelling them). See docs/mcp.md.\n");
}

static int parse_languages(char *buf, const char **langs, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (const char *const *l = execbox_languages(); *l; l++)
            known |= strcmp(*l, t) == 0;
        if (!known) {
            fprintf(stderr, "execbox mcp: --languages: unknown language '%s'\n", t);
            return -1;
        }
        if (n + 1 >= max) {
            fprintf(stderr, "execbox mcp: --languages: too many\n");
            return -1;
        }
        langs[n++] = t;
    }
    langs[n] = NULL;
    if (n == 0) {
        fprintf(stderr, "execbox mcp: --languages: empty list\n");
        return -1;
    }
    return 0;
}

/* Moves stdin and stdout to private close-on-exec fds and points fd 0 at /dev/null and fd 1 at
 * stderr: the protocol streams then cannot be read or written by anything but this file. */
static int take_stdio(struct server *s)
{
    s->in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
    s->out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (s->in_fd < 0 || s->out_fd < 0) {
        fprintf(stderr, "execbox mcp: stdin/stdout: %s\n", strerror(errno));
        return -1;
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0) {
        fprintf(stderr, "execbox mcp: redirecting stdio: %s\n", strerror(errno));
        if (null >= 0)
            close(null);
        return -1;
    }
    close(null);
    return 0;
}

/* Reads frames until EOF, a read error or a stop request. 1 on EOF, 0 on a stop. */
static int serve(struct server *s, int sig_rd)
{
    struct jrpc_reader rd;
    jrpc_reader_init(&rd, s->frame_limit);
    char *chunk = malloc(MCP_READ_CHUNK);
    int eof = 0;
    while (chunk) {
        struct pollfd pf[2] = {{.fd = sig_rd, .events = POLLIN},
                               {.fd = s->in_fd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            logmsg("poll: %s", strerror(errno));
            break;
        }
        if (pf[0].revents) {
            char c = 0;
            if (read(sig_rd, &c, 1) == 1)
                logmsg("%s: cancelling calls in progress and stopping", c ? strsignal(c) : "stop");
            break;
        }
        if (!pf[1].revents)
            continue;
        ssize_t n = read(s->in_fd, chunk, MCP_READ_CHUNK);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (n < 0)
                logmsg("reading stdin: %s", strerror(errno));
            jrpc_reader_finish(&rd, on_frame, s);
            eof = 1;
            break;
        }
        if (jrpc_reader_feed(&rd, chunk, (size_t)n, on_frame, s) < 0) {
            logmsg("out of memory reading a frame");
            break;
        }
        pthread_mutex_lock(&s->lock);
        bool stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
    }
    free(chunk);
    jrpc_reader_release(&rd);
    return eof;
}

/* After EOF: waits for the calls in progress, still honouring a signal. */
static void drain(struct server *s, int sig_rd)
{
    runner_drain(s->runner);
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    if (st.queued + st.running)
        logmsg("end of input: finishing %zu call(s) in progress", st.queued + st.running);
    while (runner_wait_idle(s->runner, MCP_DRAIN_POLL_MS) < 0) {
        struct pollfd pf = {.fd = sig_rd, .events = POLLIN};
        if (poll(&pf, 1, 0) > 0) {
            char c = 0;
            if (read(sig_rd, &c, 1) == 1)
                logmsg("%s: cancelling calls in progress", c ? strsignal(c) : "stop");
            request_stop(s);
        }
    }
}

int cmd_mcp(int argc, char **argv)
{
    enum {
        OPT_LANGUAGES = CLI_OPT__LAST + 1,
        OPT_INLINE,
        OPT_FRAME_LIMIT,
        OPT_STATEFUL,
        OPT_SESSION_IDLE
    };
    static const struct option longopts[] = {
        CLI_SANDBOX_LONGOPTS,
        CLI_POOL_LONGOPTS,
        {"tool-name", required_argument, NULL, 'n'},
        {"languages", required_argument, NULL, OPT_LANGUAGES},
        {"jobs", required_argument, NULL, 'j'},
        {"inline-images", required_argument, NULL, OPT_INLINE},
        {"frame-limit", required_argument, NULL, OPT_FRAME_LIMIT},
        {"stateful", no_argument, NULL, OPT_STATEFUL},
        {"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_sandbox sb;
    cli_sandbox_init(&sb);
    /* jansson seeds its hash function on first use; do it now, before any thread exists. */
    json_object_seed(0);
    struct server s = {.in_fd = -1, .out_fd = -1};
    s.inline_max = MCP_DEFAULT_INLINE_MAX;
    s.frame_limit = MCP_DEFAULT_FRAME_LIMIT;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s.n_workers = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
    const char *tool_name = NULL;
    char *langs_buf = NULL;
    const char *langs[8] = {NULL};
    bool have_langs = false;
    int status = EXIT_EXECBOX;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "n:j:vh", longopts, NULL)) != -1) {
        int r = cli_sandbox_option(&sb, c, optarg);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        switch (c) {
        case 'n':
            if (!tool_name_ok(optarg)) {
                fprintf(stderr,
                        "execbox mcp: --tool-name: '%s' is not 1-128 characters of "
                        "A-Z a-z 0-9 _ - .\n",
                        optarg);
                goto out;
            }
            tool_name = optarg;
            break;
        case OPT_LANGUAGES:
            free(langs_buf);
            langs_buf = strdup(optarg);
            if (!langs_buf || parse_languages(langs_buf, langs, 8) < 0)
                goto out;
            have_langs = true;
            break;
        case 'j': {
            char *end = NULL;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || !end || *end || v < 1 || v > MCP_MAX_JOBS) {
                fprintf(stderr, "execbox mcp: --jobs: '%s' is not a number from 1 to %d\n", optarg,
                        MCP_MAX_JOBS);
                goto out;
            }
            s.n_workers = (unsigned)v;
            break;
        }
        case OPT_INLINE:
            if (parse_size_opt("--inline-images", optarg, 0, &s.inline_max) < 0)
                goto out;
            break;
        case OPT_FRAME_LIMIT:
            if (parse_size_opt("--frame-limit", optarg, 4096, &s.frame_limit) < 0)
                goto out;
            break;
        case OPT_STATEFUL: s.stateful = true; break;
        case OPT_SESSION_IDLE: {
            char *end = NULL;
            double v = strtod(optarg, &end);
            if (!*optarg || *end || !(v > 0) || v > EXECBOX_SESSION_LIFETIME_DEFAULT) {
                fprintf(stderr,
                        "execbox mcp: --session-idle: '%s' is not a number of seconds (0 to "
                        "%g]\n",
                        optarg, EXECBOX_SESSION_LIFETIME_DEFAULT);
                goto out;
            }
            s.session_idle = v;
            break;
        }
        case 'v': s.verbose = true; break;
        case 'h':
            help(stdout);
            status = 0;
            goto out;
        default: fprintf(stderr, "execbox mcp: see 'execbox mcp --help'\n"); goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "execbox mcp: unexpected argument '%s'\n", argv[optind]);
        goto out;
    }
    if (cli_sandbox_policy(&sb, &s.policy) < 0)
        goto out;
    if (s.session_idle > 0 && !s.stateful) {
        fprintf(stderr, "execbox mcp: --session-idle needs --stateful\n");
        goto out;
    }
    /* A session has a /workspace of its own and no network (execbox_session_new). */
    if (s.stateful && s.policy.workspace[0]) {
        fprintf(stderr, "execbox mcp: --stateful: a session keeps its own /workspace; "
                        "--workspace cannot be used with it\n");
        goto out;
    }
    if (s.stateful && s.policy.network != EXECBOX_NETWORK_NONE) {
        fprintf(stderr, "execbox mcp: --stateful: sessions have no network; --network allow "
                        "cannot be used with it\n");
        goto out;
    }

    /* The tools: execute_python unless --languages leaves Python out, and execute_code with a
     * language enum when --languages is given. --tool-name renames the first. */
    bool python = !have_langs;
    for (size_t i = 0; have_langs && langs[i]; i++)
        python |= strcmp(langs[i], "python") == 0;
    if (s.stateful && !python) {
        fprintf(stderr, "execbox mcp: --stateful: sessions are Python only, and --languages "
                        "leaves Python out\n");
        goto out;
    }
    struct execbox_tool_options to = {
        .policy = &s.policy, .max_timeout = s.policy.timeout, .backend = sb.exec.backend};
    if (python) {
        /* With --stateful, this tool's calls are cells of the session and reset_session
         * follows it; execute_code stays one fresh sandbox per call. */
        to.name = tool_name ? tool_name : "execute_python";
        to.stateful = s.stateful;
        if (tool_add(&s, EXECBOX_SCHEMA_MCP, &to, s.stateful ? TOOL_CELL : TOOL_RUN) < 0)
            goto out;
        to.stateful = false;
        if (s.stateful && tool_add_reset(&s, s.tools[0].name) < 0)
            goto out;
    }
    if (have_langs) {
        to.name = python || !tool_name ? "execute_code" : tool_name;
        to.languages = langs;
        if (tool_add(&s, EXECBOX_SCHEMA_MCP, &to, TOOL_RUN) < 0)
            goto out;
    }

    if (take_stdio(&s) < 0)
        goto out;
    sb.exec.sweep_now = true; /* a restart cleans up after its killed predecessor now */
    if (cli_sandbox_executor(&sb, &s.ex) < 0)
        goto out;
    /* With --pool, Python sandboxes for the host's own policy start now, before the first call
     * (a call asking for a shorter timeout is another policy: its pool fills after it). */
    struct execbox_error perr = {0}; /* a no-op without --pool */
    if (execbox_executor_prewarm(s.ex, &s.policy, "python", &perr) < 0)
        fprintf(stderr, "execbox mcp: warm pool: %s\n", perr.msg);

    /* SIGTERM and SIGINT wake the main loop through a pipe (a second one has the default
     * effect, should the server be stuck); SIGPIPE is ignored so that a vanished client shows
     * up as EPIPE on write, not as sudden death mid-run. */
    int sig_pipe[2];
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "execbox mcp: pipe: %s\n", strerror(errno));
        goto out;
    }
    wake_fd = sig_pipe[1];
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_mutex_init(&s.lock, NULL);
    pthread_mutex_init(&s.write_lock, NULL);
    pthread_mutex_init(&s.session_lock, NULL);
    pthread_cond_init(&s.session_turn, NULL);
    struct runner_config rc = {
        .workers = s.n_workers, .queue = MCP_MAX_PENDING, .max_cost = MCP_CODE_BYTES_MAX};
    struct execbox_error rerr = {0};
    if (runner_new(&rc, &mcp_runner_ops, &s, &s.runner, &rerr) < 0) {
        fprintf(stderr, "execbox mcp: %s\n", rerr.msg);
    } else {
        char names[512] = "";
        for (size_t i = 0; i < s.n_tools; i++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), " %s", s.tools[i].name);
        logmsg("ready: backend '%s', %u parallel call(s), timeout %g s, tools:%s%s",
               execbox_executor_backend(s.ex), s.n_workers, s.policy.timeout, names,
               s.stateful ? " (stateful: one session, cells one at a time)" : "");
        if (serve(&s, sig_pipe[0]))
            drain(&s, sig_pipe[0]);
        request_stop(&s);
        status = 0;
        /* The runs are cancelled by now, but a worker can still be blocked writing a reply to
         * a client that stopped reading. Wait a bounded time, then leave without it. */
        if (runner_stop(s.runner, MCP_STOP_GRACE_S * 1000) < 0) {
            logmsg("a reply is still blocked on stdout after %d s; exiting without it",
                   MCP_STOP_GRACE_S);
            fflush(stderr);
            _exit(status); /* the thread still uses s, so no cleanup can run */
        }
        s.runner = runner_free(s.runner);
        session_end(&s, "the server stopped");
    }
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    wake_fd = -1;
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    pthread_cond_destroy(&s.session_turn);
    pthread_mutex_destroy(&s.session_lock);
    pthread_mutex_destroy(&s.write_lock);
    pthread_mutex_destroy(&s.lock);
out:
    execbox_executor_free(s.ex);
    for (size_t i = 0; i < s.n_tools; i++) {
        json_decref(s.tools[i].def);
        json_decref(s.tools[i].langs);
        free(s.tools[i].name);
    }
    if (s.in_fd >= 0)
        close(s.in_fd);
    if (s.out_fd >= 0)
        close(s.out_fd);
    free(langs_buf);
    return status;
}
