/* SPDX-License-Identifier: MIT */
/*
 * cells.c - a sandbox serving cells (cells.h): the backend makes it (a warm start with a
 * session link: a template's fork, walled, whose interpreter runs lib/lang/python_session.py);
 * this file speaks to it over one SOCK_SEQPACKET socket and supervises each cell with the same
 * code as every run (eb_supervise).
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
 * sandbox that stops making sense is killed and ended, never trusted further.
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
#include "core/cells.h"
#include "core/pipeline.h"
#include "model/lang.h"
#include "model/result.h"
#include "proc/proc.h"

#define CELLS_READY_MS 60000 /* a sandbox started warm from nothing imports its preload */
#define CELLS_MSG_MAX 4096   /* what the sandbox may send us in one message */
#define CELLS_DRAIN_MS 200   /* after a cell's end, output a leftover process still holds */
#define RESULTS_READ_MAX ((size_t)EXECBOX_RICH_BYTES_MAX * 2 + (1U << 20))

static int pidfd_of(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The OOM killer's choice inside the session's cgroup: the cell before anything else, the
 * state last (root may set either; a cell may not lower its own again). procdir is the
 * process's /proc directory, pinned (struct sender): never a path by its number. */
static void set_oom_adj(const struct eb_cellbox *cb, int procdir, int adj)
{
    if (!cb->oom_adj || procdir < 0)
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
static int recv_from_member(struct eb_cellbox *cb, int watch_fd, uint64_t end, char *buf,
                            size_t cap, struct sender *ret, struct execbox_error *err)
{
    for (;;) {
        int pidfd = -1;
        pid_t pid = 0;
        bool trunc = false;
        int r = recv_msg(cb->link.sock, watch_fd, end, buf, cap, &pidfd, &pid, &trunc, err);
        if (r < 0)
            return r;
        /* With SCM_PIDFD on, a message without a pidfd is from a process already gone; its
         * number is never used. Without it (kernels before 6.5), the number is all we have: we
         * pin whatever process has it now, and check that one. */
        if (pidfd < 0 && !cb->link.pidfd_cmsg && pid > 0)
            pidfd = pidfd_of(pid);
        struct sender who = {.pidfd = pidfd, .procdir = -1};
        if (who.pidfd >= 0)
            who.procdir = eb_pidfd_procdir(who.pidfd, &who.pid);
        if (who.procdir < 0 || !cb->lc->ops->session_member(cb->sbx.box, who.pid, who.procdir)) {
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

/* The cell's share of the sandbox's counters (its CPU, the session's peak of state and cell,
 * the OOM kills during the cell) and its end, mapped into res with the rich outputs the cell's
 * interpreter left in res_fd. 0 or -ENOMEM. */
static int cell_result(struct eb_cellbox *cb, const struct execbox_request *req,
                       const struct execbox_policy *pol, const struct eb_outcome *oc,
                       const struct eb_box_stats *before, int res_fd, struct execbox_result *res)
{
    struct eb_box_stats after = {.cpu_ns = -1};
    cb->lc->ops->session_stats(cb->sbx.box, &after);
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
    w.ws_fd = openat(cb->link.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (eb_wait_to_result(pol, req, &w, res) < 0)
        return -ENOMEM;
    return read_results(res_fd, res) < 0 ? -ENOMEM : 0;
}

/* A kept cell: its process (*cell_pidfd, taken) is the state now. */
static void keep_new_state(struct eb_cellbox *cb, int *cell_pidfd, int cell_procdir)
{
    /* The cell's process is the state now. The old state was told to exit; it is killed
     * too, so that a cell that reported success without telling it (or stopped it) leaves
     * no second state behind. Its exit (the memory it shares with the new state given
     * back) still takes a few ms: info() waits for it, the cell's reply does not. */
    pthread_mutex_lock(&cb->lock);
    eb_close(&cb->old_state_pidfd);
    cb->old_state_pidfd = TAKE_FD(cb->state_pidfd);
    syscall(SYS_pidfd_send_signal, cb->old_state_pidfd, SIGKILL, NULL, 0);
    cb->state_pidfd = TAKE_FD(*cell_pidfd);
    pthread_mutex_unlock(&cb->lock);
    set_oom_adj(cb, cell_procdir, -999);
}

int eb_cellbox_run(struct eb_cellbox *cb, const struct execbox_request *req,
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
    pthread_mutex_lock(&cb->lock);
    n = ++cb->count;
    pthread_mutex_unlock(&cb->lock);
    char text[256];
    snprintf(text, sizeof(text),
             "{\"t\": \"cell\", \"n\": %llu, \"rollback\": %s, \"msg_size\": %zu, "
             "\"exit\": %d, \"kept\": %d, \"rich_max\": %d, \"rich_bytes_max\": %zu, "
             "\"results_max\": %zu}",
             (unsigned long long)n, cb->rollback ? "true" : "false", sizeof(struct eb_msg),
             EB_MSG_EXIT, EB_MSG_KEPT, EXECBOX_RICH_MAX, (size_t)EXECBOX_RICH_BYTES_MAX,
             RESULTS_READ_MAX);
    int send_fds[6] = {fds[1], fds[3], fds[5], res_fd, code_fd, in_fd};
    if ((r = send_msg(cb->link.sock, text, send_fds, 6)) < 0) {
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
    char buf[CELLS_MSG_MAX];
    struct sender who = {.pidfd = -1, .procdir = -1};
    r = recv_from_member(cb, cb->state_pidfd, deadline, buf, sizeof(buf), &who, serr);
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
            eb_cellbox_end(cb, false);
            return eb_outcome_to_result(&oc, pol, res) < 0 ? -ENOMEM : 0;
        }
        goto sandbox_error;
    }
    set_oom_adj(cb, cell_procdir, 1000);
    struct eb_box_stats before = {.cpu_ns = -1};
    cb->lc->ops->session_stats(cb->sbx.box, &before);
    if ((r = send_msg(cb->link.sock, "{\"t\": \"go\"}", NULL, 0)) < 0) {
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
    c.drain_after_exit_ms = CELLS_DRAIN_MS;
    struct eb_outcome oc;
    r = eb_supervise(&c, req, pol, start_ns, res, &oc, serr);
    c.pidfd = -1; /* still cell_pidfd's */
    eb_child_close(&c);
    if (r == -ENOMEM)
        return eb_error_set(err, -ENOMEM, "out of memory");
    if (atomic_load(&cb->killed)) {
        oc.cancelled = true; /* ended by a cancel (eb_cellbox_end) while it ran */
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
    if (cell_result(cb, req, pol, &oc, &before, res_fd, res) < 0)
        return eb_error_set(err, -ENOMEM, "out of memory");
    res->rolled_back = !oc.kept;
    if (oc.kept)
        keep_new_state(cb, &cell_pidfd, cell_procdir);
    if (broken)
        eb_cellbox_end(cb, false);
    return 0;

sandbox_error:
    for (int i = 0; i < 6; i++)
        eb_close(&fds[i]);
    if (broken)
        eb_cellbox_end(cb, false);
    res->rolled_back = true;
    if (!serr->msg[0])
        eb_error_set(serr, r, "the session failed: %s", execbox_strerror(r));
    return r == -ENOMEM ? -EIO : r; /* the session's failure, not the caller's memory */
}

/* The kernel gives a process's memory back before its pidfd turns readable. The wait is on a
 * dup, outside the lock, as a cell that ends meanwhile may replace the fd. */
void eb_cellbox_wait_old_state(struct eb_cellbox *cb)
{
    pthread_mutex_lock(&cb->lock);
    int fd = cb->old_state_pidfd >= 0 ? fcntl(cb->old_state_pidfd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_mutex_unlock(&cb->lock);
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
    pthread_mutex_lock(&cb->lock);
    struct pollfd q = {.fd = cb->old_state_pidfd, .events = POLLIN};
    if (cb->old_state_pidfd >= 0 && poll(&q, 1, 0) > 0)
        eb_close(&cb->old_state_pidfd); /* gone: later calls need not wait */
    pthread_mutex_unlock(&cb->lock);
}

void eb_cellbox_end(struct eb_cellbox *cb, bool killed)
{
    if (killed)
        atomic_store(&cb->killed, true);
    pthread_mutex_lock(&cb->lock);
    bool was = cb->ended;
    cb->ended = true;
    pthread_mutex_unlock(&cb->lock);
    if (!was && cb->sbx.box)
        cb->lc->ops->session_kill(cb->sbx.box);
}

bool eb_cellbox_ended(struct eb_cellbox *cb)
{
    pthread_mutex_lock(&cb->lock);
    bool ended = cb->ended;
    pthread_mutex_unlock(&cb->lock);
    return ended;
}

bool eb_cellbox_state_alive(struct eb_cellbox *cb)
{
    pthread_mutex_lock(&cb->lock);
    struct pollfd p = {.fd = cb->state_pidfd, .events = POLLIN};
    bool alive = cb->state_pidfd >= 0 && poll(&p, 1, 0) == 0;
    pthread_mutex_unlock(&cb->lock);
    return alive;
}

int eb_cellbox_start(const struct eb_lifecycle *lc, const struct execbox_policy *policy,
                     const struct eb_language *lang, bool rollback, struct eb_cellbox *ret,
                     struct execbox_error *err)
{
    struct eb_cellbox *cb = ret;
    memset(cb, 0, sizeof(*cb));
    cb->lc = lc;
    cb->rollback = rollback;
    cb->state_pidfd = -1;
    cb->old_state_pidfd = -1;
    cb->link.sock = -1;
    cb->link.ws_fd = -1;
    cb->oom_adj = geteuid() == 0;
    atomic_init(&cb->killed, false);
    pthread_mutex_init(&cb->lock, NULL);
    if (!lc->ops->session_stats || !lc->ops->warm)
        return eb_error_set(err, -ENOTSUP, "the %s backend has no sessions (the jail has)",
                            lc->ops->name);
    struct eb_start st = {
        .policy = policy, .lang = lang, .preload = lc->preload, .session = &cb->link};
    int r = eb_lease_start(lc, &st, &cb->sbx, err);
    if (r < 0)
        return r;
    char buf[CELLS_MSG_MAX];
    struct sender who = {.pidfd = -1, .procdir = -1};
    r = recv_from_member(cb, -1, eb_now_ns() + (uint64_t)CELLS_READY_MS * 1000000ULL, buf,
                         sizeof(buf), &who, err);
    if (r == 0 && !msg_is(buf, "ready"))
        r = eb_error_set(err, -EBADMSG, "the session did not start as it should (pid %d: %.80s)",
                         (int)who.pid, buf);
    if (r < 0) {
        sender_close(&who);
        return eb_error_prefix(err, r, "start a session");
    }
    set_oom_adj(cb, who.procdir, -999);
    cb->state_pidfd = TAKE_FD(who.pidfd);
    sender_close(&who);
    return 0;
}

void eb_cellbox_close(struct eb_cellbox *cb)
{
    eb_lease_end(cb->lc, &cb->sbx);
    eb_close(&cb->link.sock);
    eb_close(&cb->state_pidfd);
    eb_close(&cb->old_state_pidfd);
    pthread_mutex_destroy(&cb->lock);
}
