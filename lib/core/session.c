/* SPDX-License-Identifier: MIT */
/*
 * session.c - sessions: an interpreter's state kept across cells (see execbox.h and
 * docs/sessions.md). The backend makes the sandbox (session_start: a template's fork, walled,
 * whose interpreter runs lib/lang/python_session.py); this file speaks to it over one
 * SOCK_SEQPACKET socket and supervises each cell with the same code as every run (eb_supervise).
 *
 * One cell:
 *   library --{"t":"cell"} + fds: stdout, stderr, status (write ends), results memfd, code
 *             memfd, stdin-->  state S
 *   S forks C (its own process group). C --{"t":"started"}--> library: the kernel tells us who
 *   sent it (a pidfd, SCM_PIDFD; before kernel 6.5 only its pid, SO_PASSCRED); we pin that
 *   process, check it is of the session's sandbox (recv_from_member: a message queued by a
 *   process now gone names nobody), and make it the OOM killer's first choice, S its last.
 *   library --{"t":"go"}--> C, which runs the cell. Then either
 *   - C ended normally: it leaves the cell's pipes, tells S ('p', S exits) and sends
 *     EB_MSG_KEPT on the status pipe: C is the new state; or
 *   - C failed, was killed at the deadline or by a cancel, or by the OOM killer: S reaps it,
 *     kills what it left in its group and sends EB_MSG_EXIT with its status: S is still the
 *     state, exactly as before the cell (rolled back).
 * Everything the sandbox sends is untrusted (every process in it runs the user's code, and a
 * cell holds the socket and its status pipe): messages are bounded, every wait has a deadline,
 * a process is acted on only through a pidfd once it is known to be the sandbox's, and a
 * session that stops making sense is killed and ended, never trusted further.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/util.h"
#include "core/executor.h"
#include "core/pipeline.h"
#include "core/session.h"
#include "model/lang.h"
#include "model/policy.h"
#include "model/result.h"
#include "proc/proc.h"
#include "ws/workspace.h"
#include "ws/wsdir.h"
#include "ws/wsfile.h"

#define SESSION_READY_MS 60000 /* a session started warm from nothing imports its preload */
#define SESSION_MSG_MAX 4096   /* what the sandbox may send us in one message */
#define SESSION_DRAIN_MS 200   /* after a cell's end, output a leftover process still holds */
#define SESSION_EXIT_WAIT_MS 5000
#define RESULTS_READ_MAX ((size_t)EXECBOX_RICH_BYTES_MAX * 2 + (1U << 20))

struct execbox_session {
    const struct eb_lifecycle *lc; /* the executor's, borrowed */
    const struct eb_backend_ops *ops;
    const struct eb_language *lang;
    struct execbox_policy policy;
    struct eb_lease sbx;
    struct eb_session_link box;
    bool rollback;
    double idle, lifetime;
    pthread_mutex_t lock; /* what info() reads, state_pidfd */
    atomic_bool busy, killed;
    bool ended;
    int state_pidfd;
    int old_state_pidfd; /* the state before the last kept cell, until it is seen gone */
    uint64_t count, rolled_back;
    double created, last_used;
    bool oom_adj; /* we may set oom_score_adj (root) */
};

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double expires_at(const struct execbox_session *s)
{
    double a = s->last_used + s->idle, b = s->created + s->lifetime;
    return a < b ? a : b;
}

static int pidfd_of(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The OOM killer's choice inside the session's cgroup: the cell before anything else, the
 * state last (root may set either; a cell may not lower its own again). procdir is the
 * process's /proc directory, pinned (struct sender): never a path by its number. */
static void set_oom_adj(const struct execbox_session *s, int procdir, int adj)
{
    if (!s->oom_adj || procdir < 0)
        return;
    char v[16];
    int n = snprintf(v, sizeof(v), "%d", adj);
    int fd = openat(procdir, "oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)!write(fd, v, (size_t)n);
        close(fd);
    }
}

#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04 /* linux/socket.h, for older headers */
#endif

/* Who sent a message, as the kernel named it: the process pinned (pidfd), the directory of
 * /proc that is its and no other's (procdir, eb_pidfd_procdir), its pid as we see it. */
struct sender {
    int pidfd;
    int procdir;
    pid_t pid;
};

static void sender_close(struct sender *who)
{
    eb_close(&who->pidfd);
    eb_close(&who->procdir);
    who->pid = 0;
}

/* Receives one message from the sandbox within timeout_ms, with the sender as the kernel named
 * it: the pidfd it attached (SCM_PIDFD) in *ret_pidfd, or -1, and the pid number it gave
 * (SCM_CREDENTIALS) in *ret_pid, or 0; *ret_trunc when the message or its fds did not fit. fds
 * that came along are closed. watch_fd (a pidfd, or -1) turning readable first is -ESRCH. The
 * text is NUL-terminated. */
static int recv_msg(int sock, int watch_fd, uint64_t end, char *buf, size_t cap, int *ret_pidfd,
                    pid_t *ret_pid, bool *ret_trunc, struct execbox_error *err)
{
    for (;;) {
        uint64_t now = eb_now_ns();
        if (now >= end)
            return eb_error_set(err, -ETIMEDOUT, "the session did not answer in time");
        struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = watch_fd, .events = POLLIN}};
        int n = poll(p, watch_fd >= 0 ? 2 : 1, (int)((end - now) / 1000000ULL) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return eb_error_set(err, -errno, "poll the session: %s", execbox_strerror(-errno));
        if (n == 0)
            continue;
        if (p[0].revents & POLLIN)
            break;
        if (p[0].revents)
            return eb_error_set(err, -EPIPE, "the session's socket closed");
        if (watch_fd >= 0 && p[1].revents)
            return eb_error_set(err, -ESRCH, "the session's process ended");
    }
    union {
        char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int)) +
                 CMSG_SPACE(sizeof(int) * 16)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = buf, .iov_len = cap - 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n <= 0)
        return eb_error_set(err, n == 0 ? -EPIPE : -errno, "the session's socket closed");
    pid_t pid = 0;
    int pidfd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET)
            continue;
        if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cr;
            memcpy(&cr, CMSG_DATA(c), sizeof(cr));
            pid = cr.pid;
        } else if (c->cmsg_type == SCM_PIDFD && c->cmsg_len == CMSG_LEN(sizeof(int))) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
            if (pidfd >= 0)
                close(fd);
            else
                pidfd = fd;
        } else if (c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                close(fd);
            }
        }
    }
    buf[n] = '\0';
    *ret_pidfd = pidfd;
    *ret_pid = pid;
    *ret_trunc = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    return 0;
}

/* Receives the next message from a process of the session's sandbox, by end (monotonic ns),
 * with its sender pinned in *ret (the caller closes it). A message whose sender is gone, or is
 * not of the sandbox, is dropped unread: what the sandbox sent earlier and left queued (a cell
 * may queue anything on the socket before it exits) names a process by a number that may be
 * another's by now, and nothing is ever done to a process on such a message. The sender is
 * pinned before it is checked (a pidfd, then its /proc directory while the pidfd says it still
 * lives), so the check and every later act (its oom_score_adj through procdir, its kill
 * through pidfd) are about the one process, which cannot leave the sandbox's pid namespace. */
static int recv_from_member(struct execbox_session *s, int watch_fd, uint64_t end, char *buf,
                            size_t cap, struct sender *ret, struct execbox_error *err)
{
    for (;;) {
        int pidfd = -1;
        pid_t pid = 0;
        bool trunc = false;
        int r = recv_msg(s->box.sock, watch_fd, end, buf, cap, &pidfd, &pid, &trunc, err);
        if (r < 0)
            return r;
        /* With SCM_PIDFD on, a message without a pidfd is from a process already gone; its
         * number is never used. Without it (kernels before 6.5), the number is all we have: we
         * pin whatever process has it now, and check that one. */
        if (pidfd < 0 && !s->box.pidfd_cmsg && pid > 0)
            pidfd = pidfd_of(pid);
        struct sender who = {.pidfd = pidfd, .procdir = -1};
        if (who.pidfd >= 0)
            who.procdir = eb_pidfd_procdir(who.pidfd, &who.pid);
        if (who.procdir < 0 || !s->ops->session_member(s->sbx.box, who.pid, who.procdir)) {
            sender_close(&who);
            continue;
        }
        if (trunc) {
            sender_close(&who);
            return eb_error_set(err, -EBADMSG, "the session sent a message too large");
        }
        *ret = who;
        return 0;
    }
}

static bool msg_is(const char *buf, const char *type)
{
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    bool ok = o && json_is_string(json_object_get(o, "t")) &&
              strcmp(json_string_value(json_object_get(o, "t")), type) == 0;
    json_decref(o);
    return ok;
}

/* Sends one message with fds (n may be 0). */
static int send_msg(int sock, const char *text, const int *fds, size_t n)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n) {
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    for (;;) {
        if (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

/* Ends the session (under no lock; idempotent): everything in its sandbox is killed. */
static void end_session(struct execbox_session *s)
{
    pthread_mutex_lock(&s->lock);
    bool was = s->ended;
    s->ended = true;
    pthread_mutex_unlock(&s->lock);
    if (!was && s->sbx.box)
        s->ops->session_kill(s->sbx.box);
}

/* execbox_session_new on a lifecycle: the public call and a rich one-shot run start here. */
static int session_open(const struct eb_lifecycle *lc, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err)
{
    struct execbox_session_options opt = {0};
    if (o)
        opt = *o;
    const struct eb_language *lang = eb_language_find(opt.language);
    if (!lang) {
        char names[128];
        execbox_language_list(names, sizeof(names));
        return eb_error_set(err, -EINVAL, "unknown language '%s' (supported: %s)", opt.language,
                            names);
    }
    if (!lang->sessions)
        return eb_error_set(err, -ENOTSUP, "sessions are for python only, not %s", lang->name);
    if (opt.idle_timeout < 0 || opt.max_lifetime < 0)
        return eb_error_set(err, -EINVAL, "idle_timeout and max_lifetime must not be negative");
    struct execbox_session *s = calloc(1, sizeof(*s));
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    s->lc = lc;
    s->ops = lc->ops;
    if (!s->ops->session_stats || !s->ops->warm) {
        int r = eb_error_set(err, -ENOTSUP, "the %s backend has no sessions (the jail has)",
                             s->ops->name);
        free(s);
        return r;
    }
    s->lang = lang;
    if (opt.policy)
        s->policy = *opt.policy;
    eb_policy_resolve(&s->policy);
    s->rollback = !opt.no_rollback;
    s->idle = opt.idle_timeout > 0 ? opt.idle_timeout : EXECBOX_SESSION_IDLE_DEFAULT;
    s->lifetime = opt.max_lifetime > 0 ? opt.max_lifetime : EXECBOX_SESSION_LIFETIME_DEFAULT;
    s->state_pidfd = -1;
    s->old_state_pidfd = -1;
    s->box.sock = -1;
    s->box.ws_fd = -1;
    s->oom_adj = geteuid() == 0;
    pthread_mutex_init(&s->lock, NULL);
    struct eb_start st = {
        .policy = &s->policy, .lang = lang, .preload = lc->preload, .session = &s->box};
    int r = eb_lease_start(lc, &st, &s->sbx, err);
    if (r < 0) {
        execbox_session_free(s);
        return r;
    }
    char buf[SESSION_MSG_MAX];
    struct sender who = {.pidfd = -1, .procdir = -1};
    r = recv_from_member(s, -1, eb_now_ns() + (uint64_t)SESSION_READY_MS * 1000000ULL, buf,
                         sizeof(buf), &who, err);
    if (r == 0 && !msg_is(buf, "ready"))
        r = eb_error_set(err, -EBADMSG, "the session did not start as it should (pid %d: %.80s)",
                         (int)who.pid, buf);
    if (r < 0) {
        sender_close(&who);
        eb_error_prefix(err, r, "start a session");
        execbox_session_free(s);
        return r;
    }
    set_oom_adj(s, who.procdir, -999);
    s->state_pidfd = TAKE_FD(who.pidfd);
    sender_close(&who);
    s->created = s->last_used = now_wall();
    *ret = s;
    return 0;
}

int execbox_session_new(struct execbox_executor *ex, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err)
{
    if (!ex || !ret)
        return eb_error_set(err, -EINVAL, "executor and result are required");
    return session_open(&ex->lc, o, ret, err);
}

static void touch(struct execbox_session *s)
{
    pthread_mutex_lock(&s->lock);
    s->last_used = now_wall();
    pthread_mutex_unlock(&s->lock);
}

void execbox_session_touch(struct execbox_session *s)
{
    if (s)
        touch(s);
}

/* 0 when the session can take a call now; -ESHUTDOWN or -ETIMEDOUT (it is ended then). */
static int usable(struct execbox_session *s, struct execbox_error *err)
{
    pthread_mutex_lock(&s->lock);
    bool ended = s->ended;
    bool expired = now_wall() >= expires_at(s);
    struct pollfd p = {.fd = s->state_pidfd, .events = POLLIN};
    bool gone = s->state_pidfd < 0 || poll(&p, 1, 0) != 0;
    pthread_mutex_unlock(&s->lock);
    if (ended)
        return eb_error_set(err, -ESHUTDOWN, "the session has ended");
    if (expired) {
        end_session(s);
        return eb_error_set(err, -ETIMEDOUT, "the session has expired");
    }
    if (gone) {
        end_session(s);
        return eb_error_set(err, -ESHUTDOWN, "the session's state process is gone");
    }
    return 0;
}

struct cell_kill {
    int pidfd;
};

static void kill_cell(void *ctx)
{
    struct cell_kill *k = ctx;
    if (k->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
}

/* The results the cell wrote into its memfd, if they parse: {"results": [...], "dropped": N,
 * "cut": N} (lib/lang/python_session.py keeps it within RESULTS_READ_MAX, which the cell message
 * tells it; a larger file was written by the cell itself and is dropped whole). */
static int read_results(int fd, struct execbox_result *res)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0)
        return 0;
    if ((size_t)st.st_size > RESULTS_READ_MAX) {
        res->results_truncated = true;
        res->results_file_dropped = true;
        return 0;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf)
        return -ENOMEM;
    ssize_t k = pread(fd, buf, n, 0);
    int r = 0;
    if (k > 0) {
        json_error_t je;
        json_t *o = json_loadb(buf, (size_t)k, JSON_ALLOW_NUL, &je);
        struct execbox_error e = {0, ""};
        if (o && eb_result_rich_from_array(json_object_get(o, "results"), res, &e) == -ENOMEM)
            r = -ENOMEM;
        /* The bootstrap's counts, taken as numbers only: a cell could write anything here. */
        const json_t *dropped = json_object_get(o, "dropped"), *cut = json_object_get(o, "cut");
        if (json_is_integer(dropped) && json_integer_value(dropped) > 0)
            res->results_dropped += (size_t)json_integer_value(dropped);
        if (json_is_integer(cut) && json_integer_value(cut) > 0)
            res->results_cut += (size_t)json_integer_value(cut);
        if (res->results_dropped || res->results_cut)
            res->results_truncated = true;
        json_decref(o);
    }
    free(buf);
    return r;
}

/* One cell, with the session marked busy. Fills res; a negative errno only for a bad request
 * or no memory; a sandbox that failed is a SandboxError result (and ends the session). */
/* The cell's share of the session's counters (its CPU, the session's peak of state and cell,
 * the OOM kills during the cell) and its end, mapped into res with the rich outputs the cell's
 * interpreter left in res_fd. 0 or -ENOMEM. */
static int cell_result(struct execbox_session *s, const struct execbox_request *req,
                       const struct execbox_policy *pol, const struct eb_outcome *oc,
                       const struct eb_box_stats *before, int res_fd, struct execbox_result *res)
{
    struct eb_box_stats after = {.cpu_ns = -1};
    s->ops->session_stats(s->sbx.box, &after);
    struct eb_wait w;
    eb_wait_init(&w);
    w.oc = *oc;
    w.cpu_ns =
        before->cpu_ns >= 0 && after.cpu_ns >= before->cpu_ns ? after.cpu_ns - before->cpu_ns : -2;
    w.peak_memory = (int64_t)after.peak_memory;
    w.oom_kills = after.oom_kills - before->oom_kills;
    if (!eb_oom_files_detail(w.oom_files, sizeof(w.oom_files), after.files_tmp, after.files_ws))
        w.oom_files[0] = '\0';
    snprintf(w.oom_why, sizeof(w.oom_why),
             "the session's memory cap covers its state and the running cell");
    w.ws_fd = openat(s->box.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (eb_wait_to_result(pol, req, &w, res) < 0)
        return -ENOMEM;
    return read_results(res_fd, res) < 0 ? -ENOMEM : 0;
}

/* A kept cell: its process (*cell_pidfd, taken) is the state now. */
static void keep_new_state(struct execbox_session *s, int *cell_pidfd, int cell_procdir)
{
    /* The cell's process is the state now. The old state was told to exit; it is killed
     * too, so that a cell that reported success without telling it (or stopped it) leaves
     * no second state behind. Its exit (the memory it shares with the new state given
     * back) still takes a few ms: info() waits for it, the cell's reply does not. */
    pthread_mutex_lock(&s->lock);
    eb_close(&s->old_state_pidfd);
    s->old_state_pidfd = TAKE_FD(s->state_pidfd);
    syscall(SYS_pidfd_send_signal, s->old_state_pidfd, SIGKILL, NULL, 0);
    s->state_pidfd = TAKE_FD(*cell_pidfd);
    pthread_mutex_unlock(&s->lock);
    set_oom_adj(s, cell_procdir, -999);
}

/* Delivers a prepared cell to the session's state and waits for its end (the pipeline's deliver
 * and wait for cells). 0 with res mapped; -ENOMEM with err set; any other -errno: the session
 * failed (serr says how; res is rolled back), for eb_finish to report. */
static int run_cell(struct execbox_session *s, const struct execbox_request *req,
                    const struct eb_prepared *p, struct execbox_result *res,
                    struct execbox_error *serr, struct execbox_error *err)
{
    const struct execbox_policy *pol = &p->policy;
    uint64_t start_ns = p->start_ns;
    size_t code_len = p->code_len;
    int fds[6] = {-1, -1, -1, -1, -1, -1}; /* out r/w, err r/w, status r/w */
    _cleanup_close_ int res_fd = -1, code_fd = -1, in_fd = -1, cell_pidfd = -1, cell_procdir = -1;
    int r = 0;
    bool broken = false;
    for (int i = 0; i < 6; i += 2)
        if (pipe2(&fds[i], O_CLOEXEC) < 0) {
            r = eb_error_set(serr, -errno, "pipe: %s", execbox_strerror(-errno));
            goto sandbox_error;
        }
    res_fd = memfd_create("execbox-results", MFD_CLOEXEC);
    code_fd = memfd_create("execbox-cell", MFD_CLOEXEC);
    if (res_fd < 0 || code_fd < 0) {
        r = eb_error_set(serr, -errno, "memfd_create: %s", execbox_strerror(-errno));
        goto sandbox_error;
    }
    if ((r = eb_write_all(code_fd, req->code, code_len)) < 0 || lseek(code_fd, 0, SEEK_SET) < 0) {
        r = eb_error_set(serr, r < 0 ? r : -errno, "write the cell's code");
        goto sandbox_error;
    }
    in_fd = eb_stdin_fd(req->stdin_data, req->stdin_len, serr);
    if (in_fd < 0) {
        r = in_fd;
        goto sandbox_error;
    }
    uint64_t n;
    pthread_mutex_lock(&s->lock);
    n = ++s->count;
    pthread_mutex_unlock(&s->lock);
    char text[256];
    snprintf(text, sizeof(text),
             "{\"t\": \"cell\", \"n\": %llu, \"rollback\": %s, \"msg_size\": %zu, "
             "\"exit\": %d, \"kept\": %d, \"rich_max\": %d, \"rich_bytes_max\": %zu, "
             "\"results_max\": %zu}",
             (unsigned long long)n, s->rollback ? "true" : "false", sizeof(struct eb_msg),
             EB_MSG_EXIT, EB_MSG_KEPT, EXECBOX_RICH_MAX, (size_t)EXECBOX_RICH_BYTES_MAX,
             RESULTS_READ_MAX);
    int send_fds[6] = {fds[1], fds[3], fds[5], res_fd, code_fd, in_fd};
    if ((r = send_msg(s->box.sock, text, send_fds, 6)) < 0) {
        eb_error_set(serr, r, "hand the cell to the session: %s", execbox_strerror(r));
        broken = true;
        goto sandbox_error;
    }
    for (int i = 1; i < 6; i += 2)
        eb_close(&fds[i]);
    eb_close(&code_fd);
    eb_close(&in_fd);

    /* The cell's process announces itself; the deadline already runs. */
    uint64_t deadline = start_ns + (uint64_t)(pol->timeout * 1e9);
    char buf[SESSION_MSG_MAX];
    struct sender who = {.pidfd = -1, .procdir = -1};
    r = recv_from_member(s, s->state_pidfd, deadline, buf, sizeof(buf), &who, serr);
    if (r == 0 && !msg_is(buf, "started"))
        r = eb_error_set(serr, -EBADMSG, "the session did not start the cell as it should");
    pid_t pid = who.pid;
    cell_pidfd = TAKE_FD(who.pidfd);
    cell_procdir = TAKE_FD(who.procdir);
    if (r < 0) {
        broken = true;
        if (r == -ETIMEDOUT) {
            /* Not even forked by the deadline: a timeout, and a session we cannot trust. */
            struct eb_outcome oc = {.timed_out = true};
            res->execution_time = (double)(eb_now_ns() - start_ns) / 1e9;
            end_session(s);
            return eb_outcome_to_result(&oc, pol, res) < 0 ? -ENOMEM : 0;
        }
        goto sandbox_error;
    }
    set_oom_adj(s, cell_procdir, 1000);
    struct eb_box_stats before = {.cpu_ns = -1};
    s->ops->session_stats(s->sbx.box, &before);
    if ((r = send_msg(s->box.sock, "{\"t\": \"go\"}", NULL, 0)) < 0) {
        eb_error_set(serr, r, "start the cell: %s", execbox_strerror(r));
        broken = true;
        goto sandbox_error;
    }

    struct cell_kill k = {.pidfd = cell_pidfd};
    struct eb_child c;
    eb_child_init(&c);
    c.pid = pid;
    c.pidfd = cell_pidfd;
    c.not_ours = true;
    c.out_fd = TAKE_FD(fds[0]);
    c.err_fd = TAKE_FD(fds[2]);
    c.status_fd = TAKE_FD(fds[4]);
    c.kill_all = kill_cell;
    c.ctx = &k;
    c.exit_msg_ends = true;
    c.drain_after_exit_ms = SESSION_DRAIN_MS;
    struct eb_outcome oc;
    r = eb_supervise(&c, req, pol, start_ns, res, &oc, serr);
    c.pidfd = -1; /* still cell_pidfd's */
    eb_child_close(&c);
    if (r == -ENOMEM)
        return eb_error_set(err, -ENOMEM, "out of memory");
    if (atomic_load(&s->killed)) {
        oc.cancelled = true; /* ended by execbox_session_kill while it ran */
        broken = true;
    }
    if (r == 0 && !oc.got_exit && !oc.timed_out && !oc.cancelled) {
        /* The cell's process is gone and the state said nothing: it is gone too, or lost. */
        broken = true;
        eb_error_set(serr, -ESHUTDOWN,
                     "the session's state process is gone (killed, or out of memory)");
        r = -ESHUTDOWN;
    }
    if (r < 0)
        goto sandbox_error;
    if (!oc.got_exit)
        broken = true; /* timed out or cancelled, and the state never reported: lost */
    struct pollfd cp = {.fd = cell_pidfd, .events = POLLIN};
    if (oc.got_exit && !oc.kept && poll(&cp, 1, 0) == 0) {
        /* The state reports a failed cell only once it has reaped the cell's process: this
         * report, with the process still running, came from the cell (which holds the status
         * pipe too, to report its own success). Nothing of it is believed. */
        kill_cell(&k);
        broken = true;
    }
    if (cell_result(s, req, pol, &oc, &before, res_fd, res) < 0)
        return eb_error_set(err, -ENOMEM, "out of memory");
    res->rolled_back = !oc.kept;
    if (oc.kept)
        keep_new_state(s, &cell_pidfd, cell_procdir);
    if (broken)
        end_session(s);
    return 0;

sandbox_error:
    for (int i = 0; i < 6; i++)
        eb_close(&fds[i]);
    if (broken)
        end_session(s);
    res->rolled_back = true;
    if (!serr->msg[0])
        eb_error_set(serr, r, "the session failed: %s", execbox_strerror(r));
    return r == -ENOMEM ? -EIO : r; /* the session's failure, not the caller's memory */
}

int execbox_session_run(struct execbox_session *s, const struct execbox_request *req,
                        struct execbox_result **ret, struct execbox_error *err)
{
    if (!s || !req || !ret)
        return eb_error_set(err, -EINVAL, "session, request and result are required");
    struct eb_prepared p;
    int pr = eb_prepare_cell(req, s->lang, &s->policy, &p, err);
    if (pr < 0)
        return pr;
    bool no = false;
    if (!atomic_compare_exchange_strong(&s->busy, &no, true))
        return eb_error_set(err, -EBUSY, "a cell is running in this session");
    int r = usable(s, err);
    if (r < 0) {
        atomic_store(&s->busy, false);
        return r;
    }
    touch(s);
    struct execbox_result *res = eb_result_new(s->ops->name, s->lang->name);
    if (!res) {
        atomic_store(&s->busy, false);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    struct execbox_error serr = {0, ""};
    /* The input files go into the workspace first: failing that is the request's error. */
    bool placed = !req->n_files || (r = eb_ws_place(s->box.ws_fd, req, &p.policy, err)) == 0;
    if (placed) {
        p.start_ns = eb_now_ns(); /* the cell's deadline counts from its delivery */
        r = run_cell(s, req, &p, res, &serr, err);
    }
    if (placed && r != -ENOMEM) {
        res->in_session = true;
        pthread_mutex_lock(&s->lock);
        res->execution_count = s->count;
        if (res->rolled_back)
            s->rolled_back++;
        pthread_mutex_unlock(&s->lock);
        r = eb_finish(s->lc, s->lang, r, &serr, p.start_ns, res, err);
    }
    touch(s);
    atomic_store(&s->busy, false);
    if (r < 0) {
        execbox_result_free(res);
        return r;
    }
    *ret = res;
    return 0;
}

/* Waits (at most 1 s) until the state before the last kept cell has exited, so that the
 * session's memory read next is the new state's alone: the kernel gives a process's memory back
 * before its pidfd turns readable. The wait is on a dup, outside the lock, as a cell that ends
 * meanwhile may replace the fd. */
static void wait_old_state_gone(struct execbox_session *s)
{
    pthread_mutex_lock(&s->lock);
    int fd = s->old_state_pidfd >= 0 ? fcntl(s->old_state_pidfd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_mutex_unlock(&s->lock);
    if (fd < 0)
        return;
    uint64_t end = eb_now_ns() + 1000000000ull;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        uint64_t now = eb_now_ns();
        if (now >= end)
            break;
        int n = poll(&p, 1, (int)((end - now + 999999) / 1000000));
        if (n > 0 || (n < 0 && errno != EINTR))
            break;
    }
    close(fd);
    pthread_mutex_lock(&s->lock);
    struct pollfd q = {.fd = s->old_state_pidfd, .events = POLLIN};
    if (s->old_state_pidfd >= 0 && poll(&q, 1, 0) > 0)
        eb_close(&s->old_state_pidfd); /* gone: later calls need not wait */
    pthread_mutex_unlock(&s->lock);
}

void execbox_session_info(struct execbox_session *s, struct execbox_session_info *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!s)
        return;
    snprintf(ret->language, sizeof(ret->language), "%s", s->lang->name);
    pthread_mutex_lock(&s->lock);
    ret->created_at = s->created;
    ret->last_used_at = s->last_used;
    ret->expires_at = expires_at(s);
    ret->execution_count = s->count;
    ret->rolled_back = s->rolled_back;
    struct pollfd p = {.fd = s->state_pidfd, .events = POLLIN};
    bool gone = s->state_pidfd < 0 || poll(&p, 1, 0) != 0;
    ret->alive = !s->ended && !gone && now_wall() < ret->expires_at;
    pthread_mutex_unlock(&s->lock);
    ret->busy = atomic_load(&s->busy);
    wait_old_state_gone(s);
    if (s->sbx.box) {
        struct eb_box_stats st = {.cpu_ns = -1};
        s->ops->session_stats(s->sbx.box, &st);
        ret->memory_bytes = st.memory;
        ret->memory_peak_bytes = st.peak_memory;
    }
}

/* File calls: the session must be alive; they count as use. */
static int file_call(struct execbox_session *s, struct execbox_error *err)
{
    if (!s)
        return eb_error_set(err, -EINVAL, "no session");
    int r = usable(s, err);
    if (r == 0)
        touch(s);
    return r;
}

int execbox_session_write_file(struct execbox_session *s, const char *path, const void *data,
                               size_t len, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_write(s->box.ws_fd, path, data, len, s->policy.file_size, err);
}

int execbox_session_read_file(struct execbox_session *s, const char *path, size_t max,
                              char **ret_data, size_t *ret_len, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_read(s->box.ws_fd, path, max, ret_data, ret_len, err);
}

int execbox_session_open_file(struct execbox_session *s, const char *path, uint64_t max,
                              int *ret_fd, uint64_t *ret_size, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_open_read(s->box.ws_fd, path, max, ret_fd, ret_size, err);
}

int execbox_session_list_files(struct execbox_session *s, struct execbox_file **ret_files,
                               size_t *ret_n, struct execbox_error *err)
{
    int r = file_call(s, err);
    if (r < 0)
        return r;
    _cleanup_close_ int wfd = openat(s->box.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (wfd < 0)
        return eb_error_set(err, -errno, "open the workspace: %s", execbox_strerror(-errno));
    struct execbox_result tmp;
    memset(&tmp, 0, sizeof(tmp));
    r = eb_workspace_list(wfd, 0, NULL, &tmp);
    if (r < 0) {
        execbox_files_free(tmp.files, tmp.n_files);
        return eb_error_set(err, r, "list the workspace: %s", execbox_strerror(r));
    }
    *ret_files = tmp.files;
    *ret_n = tmp.n_files;
    return 0;
}

int execbox_session_remove_file(struct execbox_session *s, const char *path,
                                struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_remove(s->box.ws_fd, path, err);
}

int execbox_session_rename(struct execbox_session *s, const char *from, const char *to,
                           struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_rename(s->box.ws_fd, from, to, err);
}

int execbox_session_make_dir(struct execbox_session *s, const char *path, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_mkdir(s->box.ws_fd, path, err);
}

int execbox_session_stat(struct execbox_session *s, const char *path, struct execbox_dirent *ret,
                         struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_stat(s->box.ws_fd, path, ret, err);
}

int execbox_session_list_dir(struct execbox_session *s, const char *path, size_t max,
                             struct execbox_dirent **ret, size_t *ret_n, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_list_dir(s->box.ws_fd, path, max, ret, ret_n, err);
}

void execbox_files_free(struct execbox_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].path);
        free(files[i].mime);
        free(files[i].data);
    }
    free(files);
}

void execbox_session_kill(struct execbox_session *s)
{
    if (!s)
        return;
    atomic_store(&s->killed, true);
    end_session(s);
}

struct execbox_session *execbox_session_free(struct execbox_session *s)
{
    if (!s)
        return NULL;
    eb_lease_end(s->lc, &s->sbx);
    eb_close(&s->box.sock);
    eb_close(&s->state_pidfd);
    eb_close(&s->old_state_pidfd);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}

int eb_session_oneshot(const struct eb_lifecycle *lc, const struct execbox_request *req,
                       const struct eb_prepared *p, struct execbox_result **ret,
                       struct execbox_error *err)
{
    struct execbox_session_options o = {.language = req->language, .policy = &p->policy};
    struct execbox_session *s = NULL;
    struct execbox_error serr = {0, ""};
    int r = session_open(lc, &o, &s, &serr);
    if (r == -ENOTSUP || r == -EINVAL) {
        if (err)
            *err = serr;
        return eb_error_prefix(err, r, "rich results");
    }
    if (r < 0) {
        /* The sandbox could not start: a result, as for any run. */
        struct execbox_result *res = eb_result_new(lc->ops->name, p->lang->name);
        if (!res)
            return eb_error_set(err, -ENOMEM, "out of memory");
        if (eb_finish(lc, p->lang, r, &serr, p->start_ns, res, err) < 0) {
            execbox_result_free(res);
            return -ENOMEM;
        }
        *ret = res;
        return 0;
    }
    struct execbox_request cell = *req;
    cell.policy = NULL; /* the session's, which is the request's */
    struct execbox_result *res = NULL;
    r = execbox_session_run(s, &cell, &res, err);
    execbox_session_free(s);
    if (r < 0)
        return r;
    res->in_session = false; /* a one-shot run: no cell number, nothing to roll back */
    res->rolled_back = false;
    res->execution_count = 0;
    *ret = res;
    return 0;
}
