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
 *  - Every frame goes out through mcp_send_frame() (dispatch.c), which holds write_lock for the
 *    whole line: one writer at a time, so frames never interleave. stdout carries frames only;
 *    fd 1 is pointed at stderr at start so nothing else can write protocol bytes by accident.
 *  - s->lock guards batches, the stop flag and the negotiated version; the runner has its own.
 *  - --stateful: execute_python calls (and reset_session) are cells of one session. They still
 *    go through the runner, but take turns in arrival order (session_queue, session_lock), so
 *    one cell runs at a time; the session itself belongs to the call whose turn it is.
 *
 * Lifecycle: on EOF of stdin the server stops reading, lets queued and running calls finish
 * (each is bounded by its timeout), writes their replies and exits 0. On SIGTERM or SIGINT, or
 * when stdout is gone, it drops queued calls, cancels running ones (their sandboxes are killed
 * and destroyed) and exits 0 once every worker has returned.
 *
 * This file is the main loop and its set-up; internal.h lists the others. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cliopts.h"
#include "common/io.h"
#include "common/surface.h"

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

/* Cancels everything: queued jobs are dropped unanswered, running ones are killed. */
void mcp_request_stop(struct server *s)
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
            mcp_log("poll: %s", strerror(errno));
            break;
        }
        if (pf[0].revents) {
            char c = 0;
            if (read(sig_rd, &c, 1) == 1)
                mcp_log("%s: cancelling calls in progress and stopping", c ? strsignal(c) : "stop");
            break;
        }
        if (!pf[1].revents)
            continue;
        ssize_t n = read(s->in_fd, chunk, MCP_READ_CHUNK);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (n < 0)
                mcp_log("reading stdin: %s", strerror(errno));
            jrpc_reader_finish(&rd, mcp_on_frame, s);
            eof = 1;
            break;
        }
        if (jrpc_reader_feed(&rd, chunk, (size_t)n, mcp_on_frame, s) < 0) {
            mcp_log("out of memory reading a frame");
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
        mcp_log("end of input: finishing %zu call(s) in progress", st.queued + st.running);
    while (runner_wait_idle(s->runner, MCP_DRAIN_POLL_MS) < 0) {
        struct pollfd pf = {.fd = sig_rd, .events = POLLIN};
        if (poll(&pf, 1, 0) > 0) {
            char c = 0;
            if (read(sig_rd, &c, 1) == 1)
                mcp_log("%s: cancelling calls in progress", c ? strsignal(c) : "stop");
            mcp_request_stop(s);
        }
    }
}

/* Takes stdin and stdout, makes the executor and warms its pool. 0, or -1 with the reason on
 * stderr. */
static int start(struct server *s, struct cli_sandbox *sb)
{
    if (take_stdio(s) < 0)
        return -1;
    sb->exec.sweep_now = true; /* a restart cleans up after its killed predecessor now */
    sb->exec.keep_cgroups = true;
    if (cli_sandbox_executor(sb, &s->ex) < 0)
        return -1;
    /* With --pool, Python sandboxes for the host's own policy start now, before the first call
     * (a call asking for a shorter timeout is another policy: its pool fills after it). */
    struct execbox_error perr = {0}; /* a no-op without --pool */
    if (execbox_executor_prewarm(s->ex, &s->policy, "python", &perr) < 0)
        fprintf(stderr, "execbox mcp: warm pool: %s\n", perr.msg);
    return 0;
}

/* Serves until EOF or a signal, with the signal pipe, the locks and the runner around serve()
 * and drain(). The exit status; exits the process at once when a reply stays blocked on stdout
 * past the grace period. */
static int run(struct server *s)
{
    int status = EXIT_EXECBOX;
    /* SIGTERM and SIGINT wake the main loop through a pipe (a second one has the default
     * effect, should the server be stuck); SIGPIPE is ignored so that a vanished client shows
     * up as EPIPE on write, not as sudden death mid-run. */
    int sig_pipe[2];
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "execbox mcp: pipe: %s\n", strerror(errno));
        return EXIT_EXECBOX;
    }
    wake_fd = sig_pipe[1];
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->write_lock, NULL);
    pthread_mutex_init(&s->session_lock, NULL);
    pthread_cond_init(&s->session_turn, NULL);
    mcp_session_setup(s);
    struct runner_config rc = {
        .workers = s->n_workers, .queue = MCP_MAX_PENDING, .max_cost = MCP_CODE_BYTES_MAX};
    struct execbox_error rerr = {0};
    if (runner_new(&rc, &mcp_runner_ops, s, &s->runner, &rerr) < 0) {
        fprintf(stderr, "execbox mcp: %s\n", rerr.msg);
    } else {
        char names[512] = "";
        for (size_t i = 0; i < s->n_tools; i++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), " %s", s->tools[i].name);
        mcp_log("ready: backend '%s', %u parallel call(s), timeout %g s, tools:%s%s",
                execbox_executor_backend(s->ex), s->n_workers, s->policy.timeout, names,
                s->stateful ? " (stateful: one session, cells one at a time)" : "");
        if (serve(s, sig_pipe[0]))
            drain(s, sig_pipe[0]);
        mcp_request_stop(s);
        status = 0;
        /* The runs are cancelled by now, but a worker can still be blocked writing a reply to
         * a client that stopped reading. Wait a bounded time, then leave without it. */
        if (runner_stop(s->runner, MCP_STOP_GRACE_S * 1000) < 0) {
            mcp_log("a reply is still blocked on stdout after %d s; exiting without it",
                    MCP_STOP_GRACE_S);
            fflush(stderr);
            _exit(status); /* the thread still uses s, so no cleanup can run */
        }
        s->runner = runner_free(s->runner);
        mcp_session_end(s, "the server stopped");
    }
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    wake_fd = -1;
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    pthread_cond_destroy(&s->session_turn);
    pthread_mutex_destroy(&s->session_lock);
    pthread_mutex_destroy(&s->write_lock);
    pthread_mutex_destroy(&s->lock);
    return status;
}

/* Frees what cmd_mcp set up (what was made; the rest is still empty). */
static void teardown(struct server *s)
{
    execbox_executor_free(s->ex);
    for (size_t i = 0; i < s->n_tools; i++) {
        json_decref(s->tools[i].def);
        json_decref(s->tools[i].langs);
        free(s->tools[i].name);
    }
    if (s->in_fd >= 0)
        close(s->in_fd);
    if (s->out_fd >= 0)
        close(s->out_fd);
}

int cmd_mcp(int argc, char **argv)
{
    struct cli_sandbox sb;
    cli_sandbox_init(&sb);
    /* jansson seeds its hash function on first use; do it now, before any thread exists. */
    json_object_seed(0);
    cli_raise_nofile(); /* before the executor and its pool open anything */
    struct server s = {.in_fd = -1, .out_fd = -1};
    s.inline_max = MCP_DEFAULT_INLINE_MAX;
    s.frame_limit = MCP_DEFAULT_FRAME_LIMIT;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s.n_workers = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
    struct mcp_options o = {0};
    int status = EXIT_EXECBOX;
    int r = mcp_parse_options(argc, argv, &s, &sb, &o);
    if (r > 0)
        status = 0; /* --help */
    else if (r == 0 && mcp_tools_setup(&s, &sb, &o) == 0 && start(&s, &sb) == 0)
        status = run(&s);
    teardown(&s);
    free(o.langs_buf);
    return status;
}
