/* SPDX-License-Identifier: MIT */
/* proc.c - sandbox init, guest exec and the parent's supervision loop (see proc.h); the
 * mapping of how a run ended into the result is outcome.c. */
#include "proc/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "proc/childlib.h"

/* ---- child side (async-signal-safe only: we may have been forked from a threaded host) ---- */

/* The value of the hexadecimal field `name` (e.g. "SigIgn:") in a /proc status text; false when
 * it is missing or malformed. */
static bool status_hex(const char *text, const char *name, uint64_t *ret)
{
    const char *p = eb_status_line(text, name);
    if (!p)
        return false;
    p += strlen(name);
    while (*p == ' ' || *p == '\t')
        p++;
    uint64_t v = 0;
    int digits = 0;
    for (; digits < 16; p++, digits++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v << 4 | (uint64_t)d;
    }
    if (!digits || *p != '\n')
        return false;
    *ret = v;
    return true;
}

/* Sets every signal that is ignored or caught back to its default action (the kernel resets
 * the caught ones at execve, not the ignored ones, which a program would inherit). The two sets
 * come from one read of /proc/thread-self/status; where it cannot be read, every signal is set. */
static void default_signals(void)
{
    char text[4096];
    uint64_t ign = 0, cgt = 0;
    bool known = false;
    int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = eb_read_full(fd, text, sizeof(text) - 1);
        close(fd);
        if (n > 0) {
            text[n] = '\0';
            known = status_hex(text, "SigIgn:", &ign) && status_hex(text, "SigCgt:", &cgt);
        }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP && (!known || (s <= 64 && ((ign | cgt) >> (s - 1)) & 1)))
            sigaction(s, &dfl, NULL);
}

void eb_guest_exec(const struct eb_guest *g)
{
    /* Our parent is init; if it dies we must not live on unsupervised. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
        eb_child_send_error(g->status_fd, -errno, "set the parent-death signal");
        _exit(127);
    }
    /* Default actions first, then nothing blocked: no handler of the host's copied into us can
     * run in between (we may share init's memory, itself a copy of the host's). */
    default_signals();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* Move every fd we need above the low numbers first, so that placing one on 0..3 cannot
     * clobber another that happens to sit there. The copies are close-on-exec. */
    int in = fcntl(g->stdin_fd, F_DUPFD_CLOEXEC, 16);
    int out = fcntl(g->stdout_fd, F_DUPFD_CLOEXEC, 16);
    int errfd = fcntl(g->stderr_fd, F_DUPFD_CLOEXEC, 16);
    int pass[EB_PASS_FDS_MAX];
    int n_pass = g->n_pass < EB_PASS_FDS_MAX ? g->n_pass : EB_PASS_FDS_MAX;
    bool pass_ok = true;
    for (int i = 0; i < n_pass; i++)
        pass_ok &= (pass[i] = fcntl(g->pass_fds[i], F_DUPFD_CLOEXEC, 16)) >= 0;
    int status = fcntl(g->status_fd, F_DUPFD_CLOEXEC, 16);
    if (status < 0)
        _exit(127);
    if (in < 0 || out < 0 || errfd < 0 || !pass_ok || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
        dup2(errfd, 2) < 0) {
        eb_child_send_error(status, -errno, "set up stdio");
        _exit(127);
    }
    for (int i = 0; i < n_pass; i++)
        if (dup2(pass[i], 3 + i) < 0) {
            eb_child_send_error(status, -errno, "pass fds to the guest");
            _exit(127);
        }
    /* Every other inherited fd is closed by exec (the status pipe stays open until then). */
    unsigned first = 3U + (unsigned)n_pass;
    if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        for (int fd = (int)first; fd < 65536; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (g->cwd && chdir(g->cwd) < 0) {
        eb_child_send_error(status, -errno, "chdir to the workspace");
        _exit(127);
    }
    int r = eb_child_rlimits(g->file_size, g->cpu_seconds, g->memory_rlimit, g->memory);
    if (r < 0) {
        eb_child_send_error(status, r, "setrlimit");
        _exit(127);
    }
    if (g->pre_exec) {
        struct execbox_error e = {0, ""};
        if (g->pre_exec(g->pre_exec_arg, &e) < 0) {
            eb_child_send_err(status, &e);
            _exit(127);
        }
    }
    execve(g->path, g->argv, g->envp);
    int e = errno;
    char msg[EXECBOX_PATH_MAX + 32] = "cannot execute interpreter '";
    size_t n = strlen(msg);
    for (const char *p = g->path; *p && n < sizeof(msg) - 2; p++)
        msg[n++] = *p;
    msg[n++] = '\'';
    msg[n] = '\0';
    eb_child_send_error(status, -e, msg);
    _exit(127);
}

/* The guest's side of eb_init_main, from the clone until its execve. It runs in init's memory
 * (CLONE_VM): it writes nothing there but its own stack (and errno), every call it makes acts on
 * the guest itself (its copy of the fd table, its signal handlers, its limits, credentials,
 * Landlock domain and filter), and init is suspended until the execve has replaced the memory
 * the guest runs in (CLONE_VFORK), or until the guest exits. */
struct guest_start {
    const struct eb_init *in;
    int sfd;
};

static int guest_main(void *arg)
{
    const struct guest_start *gs = arg;
    const struct eb_init *in = gs->in;
    close(gs->sfd);
    /* The guest must never hold a way out of its cgroup. */
    for (int i = 0; i < in->n_leave; i++)
        close(in->leave_fds[i]);
    if (in->guest_setup) {
        struct execbox_error e = {0, ""};
        if (in->guest_setup(in->guest_setup_arg, &e) < 0) {
            eb_child_send_err(in->status_fd, &e);
            _exit(127);
        }
    }
    eb_guest_exec(in->guest);
    return 127; /* not reached: eb_guest_exec execs or exits */
}

/* A child that only takes a pid and exits (eb_init.spare_pid). */
static int spare_main(void *arg)
{
    (void)arg;
    return 0;
}

/* The guest's stack until its execve (the rest of init never touches it), with a guard page
 * below it. */
#define GUEST_STACK_SIZE (256U << 10)

void eb_init_main(const struct eb_init *in)
{
    /* We were forked from a possibly threaded host without exec: drop every fd it had open,
     * its stdio included (other sandboxes' pipes among them, whose EOF must not wait for us,
     * and a server's sockets, which must close when the server closes them). */
    const struct eb_guest *g = in->guest;
    int keep[6 + EB_PASS_FDS_MAX + EB_LEAVE_FDS_MAX] = {in->status_fd, in->ctl_fd,   g->stdin_fd,
                                                        g->stdout_fd,  g->stderr_fd, g->status_fd};
    int nkeep = 6;
    for (int i = 0; i < g->n_pass && i < EB_PASS_FDS_MAX; i++)
        keep[nkeep++] = g->pass_fds[i];
    for (int i = 0; i < in->n_leave && i < EB_LEAVE_FDS_MAX; i++)
        keep[nkeep++] = in->leave_fds[i];
    int cr = eb_close_all_except(keep, nkeep);
    if (cr < 0) {
        eb_child_send_error(in->status_fd, cr, "close the host's fds");
        _exit(1);
    }

    /* SIGCHLD through a signalfd so that one poll() waits for the guest and for the parent's
     * kill request at once. */
    int sfd = eb_child_sigchld_fd();
    if (sfd < 0) {
        eb_child_send_error(in->status_fd, sfd, "signalfd");
        _exit(1);
    }
    /* The guest is started as posix_spawn starts a program (CLONE_VM | CLONE_VFORK, on a stack
     * of its own), not forked: a fork copied init's page tables (init is itself a copy of the
     * host process's) only for the execve to throw the copy away, and both processes then took
     * copy-on-write faults on every page they wrote. glibc's clone() runs no atfork handler and
     * takes no lock: init may come from a raw clone3 of a threaded host (the jail), where
     * glibc's fork() could wait for malloc and stdio locks another thread of the host held at
     * clone time. */
    char *stack = mmap(NULL, GUEST_STACK_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED || mprotect(stack, 4096, PROT_NONE) < 0) {
        eb_child_send_error(in->status_fd, -errno, "map the guest's stack");
        _exit(1);
    }
    if (in->spare_pid) {
        /* A template's forks are guests in pid namespaces of their own, where the first child
         * of their init is pid 2, as a cold guest is. OpenSSL 3 (like any library that compares
         * getpid() with the pid of its last use) tells a fork only by a pid that changed: if the
         * template's interpreter were pid 2 too, each fork would go on from the template's
         * random generator state and siblings would draw the same bytes. The spare takes pid 2
         * here (sharing our memory and stack, init waiting: it costs no copy), so the
         * interpreter is pid 3. */
        pid_t s =
            clone(spare_main, stack + GUEST_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
        if (s < 0 || waitpid(s, NULL, 0) != s) {
            eb_child_send_error(in->status_fd, -errno, "take the template's spare pid");
            _exit(1);
        }
    }
    struct guest_start gs = {.in = in, .sfd = sfd};
    pid_t guest =
        clone(guest_main, stack + GUEST_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, &gs);
    if (guest < 0) {
        eb_child_send_error(in->status_fd, -errno, "start the guest");
        _exit(1);
    }
    munmap(stack, GUEST_STACK_SIZE);
    /* init keeps no copy of the guest's stdio: EOF must mean "every writer is dead". */
    close(in->guest->stdin_fd);
    close(in->guest->stdout_fd);
    close(in->guest->stderr_fd);

    eb_init_loop_leave(guest, sfd, in->status_fd, in->ctl_fd, in->leave_fds,
                       in->n_leave < EB_LEAVE_FDS_MAX ? in->n_leave : EB_LEAVE_FDS_MAX);
}

pid_t eb_fork_subreaper_init(const struct eb_init *in, int nice, int *ret_pidfd,
                             struct execbox_error *err)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return eb_error_set(err, -errno, "fork: %s", execbox_strerror(-errno));
    if (pid == 0) {
        if (setsid() < 0) {
            eb_child_send_error(in->status_fd, -errno, "start a new session");
            _exit(1);
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
            eb_child_send_error(in->status_fd, -errno, "set the parent-death signal or subreaper");
            _exit(1);
        }
        if (getppid() != parent)
            _exit(1); /* we already lost the parent the death signal stands for */
        if (nice > 0)
            setpriority(PRIO_PROCESS, 0, nice);
        eb_init_main(in);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        int e = -errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return eb_error_set(err, e, "pidfd_open: %s", execbox_strerror(e));
    }
    *ret_pidfd = pidfd;
    return pid;
}

/* ---- parent side -------------------------------------------------------------------------- */

void eb_child_init(struct eb_child *c)
{
    memset(c, 0, sizeof(*c));
    c->pid = -1;
    c->pidfd = c->out_fd = c->err_fd = c->status_fd = c->ctl_fd = -1;
}

void eb_child_close(struct eb_child *c)
{
    eb_close(&c->pidfd);
    eb_close(&c->out_fd);
    eb_close(&c->err_fd);
    eb_close(&c->status_fd);
    eb_close(&c->ctl_fd);
}

static int write_at(int dirfd, const char *name, const char *data, size_t len)
{
    _cleanup_close_ int fd =
        openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0)
        return -errno;
    return eb_write_all(fd, data, len);
}

int eb_warm_deliver(int dirfd, const char *name, const char *code, size_t code_len, const char *in,
                    size_t in_len, struct execbox_error *err)
{
    int r = write_at(dirfd, name, code, code_len);
    if (r == 0)
        r = in                                           ? write_at(dirfd, "stdin", in, in_len)
            : symlinkat("/dev/null", dirfd, "stdin") < 0 ? -errno
                                                         : 0;
    if (r < 0)
        return eb_error_set(err, r, "hand the program to the sandbox: %s", execbox_strerror(r));
    return 0;
}

int eb_warm_go(int *go_fd, struct execbox_error *err)
{
    int r = eb_write_all(*go_fd, "g", 1);
    eb_close(go_fd);
    return r < 0 ? eb_error_set(err, -EPIPE, "the warm sandbox died before the run") : 0;
}

int eb_stdin_fd(const char *data, size_t len, struct execbox_error *err)
{
    if (!data) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return fd < 0 ? eb_error_set(err, -errno, "open /dev/null") : fd;
    }
    /* A memfd rather than a pipe: no writer thread, no SIGPIPE, no deadlock on a guest that
     * never reads. */
    int fd = memfd_create("execbox-stdin", MFD_CLOEXEC);
    if (fd < 0)
        return eb_error_set(err, -errno, "memfd_create: %s", execbox_strerror(-errno));
    int r = eb_write_all(fd, data, len);
    if (r < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        close(fd);
        return eb_error_set(err, r < 0 ? r : -errno, "write stdin");
    }
    return fd;
}

static void request_kill(struct eb_child *c)
{
    if (c->ctl_fd >= 0) {
        (void)!write(c->ctl_fd, "k", 1);
        eb_close(&c->ctl_fd);
    }
    if (c->kill_all)
        c->kill_all(c->ctx);
}

static void hard_kill(struct eb_child *c)
{
    if (c->kill_all)
        c->kill_all(c->ctx);
    if (c->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
    if (c->kill_pgid > 0)
        kill(-c->kill_pgid, SIGKILL);
}

struct stream {
    int *fd;
    struct eb_capbuf buf;
    enum execbox_stream which;
};

/* n bytes read from s: to the caller's on_output within the output_limit, and into the capped
 * buffer. */
static int take_chunk(struct stream *s, const struct execbox_request *req, const char *chunk,
                      size_t n)
{
    return eb_capbuf_take(&s->buf, req->on_output, req->userdata, s->which, chunk, n);
}

static int read_stream(struct stream *s, const struct execbox_request *req, char *chunk)
{
    ssize_t n = read(*s->fd, chunk, EB_READ_CHUNK);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return 0;
        eb_close(s->fd);
        return 0;
    }
    if (n == 0) {
        eb_close(s->fd);
        return 0;
    }
    return take_chunk(s, req, chunk, (size_t)n);
}

/* After EB_MSG_DONE: nothing can be written to the stream any more, so what the pipe holds is
 * the rest of it; read that and close it as at EOF (its writers may still be exiting). Bounded
 * all the same: by until (the run's deadline) and by what one pipe can hold (EB_DRAIN_MAX) per
 * call, after which the supervision loop looks at the deadline and the cancel again and calls
 * us once more; a stream still full then is read on as any other. */
static int drain_stream(struct stream *s, const struct execbox_request *req, char *chunk,
                        uint64_t until)
{
    int r = 0;
    size_t got = 0;
    while (*s->fd >= 0 && got < EB_DRAIN_MAX && eb_now_ns() < until) {
        ssize_t n = read(*s->fd, chunk, EB_READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eb_close(s->fd);
            break;
        }
        got += (size_t)n;
        if (take_chunk(s, req, chunk, (size_t)n) < 0)
            r = -ENOMEM;
    }
    return r;
}

static int read_status(struct eb_child *c, struct eb_outcome *out)
{
    struct eb_msg m;
    ssize_t n = read(c->status_fd, &m, sizeof(m));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (n <= 0) {
        eb_close(&c->status_fd);
        return 0;
    }
    if ((size_t)n != sizeof(m))
        return 0; /* messages are atomic; a short one is garbage */
    if (m.type == EB_MSG_ERROR && !out->setup_failed) {
        out->setup_failed = true;
        out->setup_err = m.err;
        out->setup_err.msg[sizeof(out->setup_err.msg) - 1] = '\0';
    } else if ((m.type == EB_MSG_EXIT || m.type == EB_MSG_KEPT ||
                (m.type == EB_MSG_DONE && c->done_ok)) &&
               !out->got_exit) {
        out->got_exit = true;
        out->kept = m.type == EB_MSG_KEPT;
        out->done = m.type == EB_MSG_DONE;
        out->status = m.status;
        out->utime_us = m.utime_us;
        out->stime_us = m.stime_us;
        out->maxrss_kb = m.maxrss_kb;
        out->tmp_bytes = m.tmp_bytes;
    }
    return 0;
}

/* One supervision's state, from eb_supervise's start to the reaping of init. */
struct supervision {
    struct eb_child *c;
    const struct execbox_request *req;
    struct eb_outcome *out;
    struct execbox_error *err;
    struct stream st[2];
    char *chunk;          /* the read buffer, EB_READ_CHUNK bytes (NULL: out of memory) */
    uint64_t deadline;    /* start_ns + the policy's timeout */
    uint64_t kill_at;     /* when the polite kill request escalates to SIGKILL */
    uint64_t drain_until; /* after init exits, how long we still wait for output EOF */
    bool init_exited, killing, early;
    int cancel_fd;
    int rc; /* the supervisor's own failure, 0 none */
};

/* Whether the loop is over before anything else is looked at: init exited and every fd is at
 * EOF, or a session's cell (drain_after_exit_ms) was reported, killed or not (the process that
 * reported it lives on as the session; s->early). */
static bool all_ended(struct supervision *s)
{
    struct eb_child *c = s->c;
    bool streams_open = c->out_fd >= 0 || c->err_fd >= 0;
    if (s->init_exited && c->status_fd < 0 && !streams_open)
        return true;
    if (c->exit_msg_ends && s->out->got_exit && !streams_open &&
        (!s->killing || c->drain_after_exit_ms)) {
        s->early = true;
        return true;
    }
    return false;
}

/* Starts the drain clock of a reported cell (drain_after_exit_ms); true once the drain time
 * ran out: something we cannot see still holds a pipe, and the loop gives up on it. */
static bool drain_expired(struct supervision *s, uint64_t now)
{
    struct eb_child *c = s->c;
    if (c->exit_msg_ends && c->drain_after_exit_ms && s->out->got_exit && !s->drain_until)
        s->drain_until = now + (uint64_t)c->drain_after_exit_ms * 1000000ULL;
    return (s->init_exited || (c->drain_after_exit_ms && s->out->got_exit)) && s->drain_until &&
           now >= s->drain_until;
}

/* The deadline (a polite kill: init is asked to kill everything) and the end of the grace
 * after a kill request (SIGKILL). */
static void enforce_deadline(struct supervision *s, uint64_t now)
{
    if (!s->killing && now >= s->deadline) {
        s->out->timed_out = true;
        s->killing = true;
        request_kill(s->c);
        s->kill_at = now + EB_KILL_GRACE_MS * 1000000ULL;
    }
    if (s->killing && s->kill_at && now >= s->kill_at) {
        hard_kill(s->c);
        s->kill_at = 0;
    }
}

/* poll()'s timeout in ms until the next of the deadline, the kill grace and the drain time;
 * -1 for none. */
static int poll_timeout(const struct supervision *s, uint64_t now)
{
    uint64_t wake = UINT64_MAX;
    if (!s->killing)
        wake = s->deadline;
    if (s->kill_at)
        wake = s->kill_at < wake ? s->kill_at : wake;
    if (s->drain_until)
        wake = s->drain_until < wake ? s->drain_until : wake;
    if (wake == UINT64_MAX)
        return -1;
    return wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
}

/* Where each watched fd sits in the poll set, -1 when it is not watched. */
struct poll_slots {
    int out, err, status, pid, cancel;
};

/* The fds to watch now: the open streams and status pipe, init's pidfd until it exited, the
 * cancel fd until a kill began. Returns how many are in pfd (at most 5). */
static int poll_set(const struct supervision *s, struct pollfd *pfd, struct poll_slots *ix)
{
    const struct eb_child *c = s->c;
    int n = 0;
    *ix = (struct poll_slots){-1, -1, -1, -1, -1};
    if (c->out_fd >= 0) {
        ix->out = n;
        pfd[n++] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
    }
    if (c->err_fd >= 0) {
        ix->err = n;
        pfd[n++] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
    }
    if (c->status_fd >= 0) {
        ix->status = n;
        pfd[n++] = (struct pollfd){.fd = c->status_fd, .events = POLLIN};
    }
    if (!s->init_exited && c->pidfd >= 0) {
        ix->pid = n;
        pfd[n++] = (struct pollfd){.fd = c->pidfd, .events = POLLIN};
    }
    if (!s->killing && s->cancel_fd >= 0) {
        ix->cancel = n;
        pfd[n++] = (struct pollfd){.fd = s->cancel_fd, .events = POLLIN};
    }
    return n;
}

/* Records an out-of-memory of the output buffers as the supervisor's failure (the first one
 * only). */
static void output_nomem(struct supervision *s)
{
    if (!s->rc)
        s->rc = eb_error_set(s->err, -ENOMEM, "out of memory buffering output");
}

/* What poll() reported: output read into the buffers, init's report, the rest of the output
 * after EB_MSG_DONE, a cancel (a polite kill) and init's exit. */
static void handle_events(struct supervision *s, const struct pollfd *pfd,
                          const struct poll_slots *ix)
{
    struct eb_child *c = s->c;
    if (ix->out >= 0 && pfd[ix->out].revents)
        if (read_stream(&s->st[0], s->req, s->chunk) < 0)
            output_nomem(s);
    if (ix->err >= 0 && pfd[ix->err].revents)
        if (read_stream(&s->st[1], s->req, s->chunk) < 0)
            output_nomem(s);
    if (ix->status >= 0 && pfd[ix->status].revents)
        read_status(c, s->out);
    if (s->out->done && s->chunk && !s->killing)
        for (int i = 0; i < 2; i++)
            if (*s->st[i].fd >= 0 && drain_stream(&s->st[i], s->req, s->chunk, s->deadline) < 0)
                output_nomem(s);
    if (ix->cancel >= 0 && pfd[ix->cancel].revents) {
        s->out->cancelled = true;
        s->killing = true;
        request_kill(c);
        s->kill_at = eb_now_ns() + EB_KILL_GRACE_MS * 1000000ULL;
    }
    if (ix->pid >= 0 && pfd[ix->pid].revents) {
        s->init_exited = true;
        s->drain_until = eb_now_ns() + EB_DRAIN_GRACE_MS * 1000000ULL;
        /* init has exited: every process it knew of is dead. Anything still holding a pipe
         * escaped it, so the backend's own kill (cgroup) gets a go as well. */
        if (c->kill_all)
            c->kill_all(c->ctx);
    }
}

/* The loop: output, init's report, the deadline, a cancel and init's exit, until everything
 * ended (or the poll itself failed: then everything is killed). */
static void supervise_loop(struct supervision *s)
{
    for (;;) {
        if (all_ended(s))
            break;
        uint64_t now = eb_now_ns();
        if (drain_expired(s, now))
            break;
        enforce_deadline(s, now);
        int timeout_ms = poll_timeout(s, now);
        struct pollfd pfd[5];
        struct poll_slots ix;
        int n = poll_set(s, pfd, &ix);
        int pr = poll(pfd, (nfds_t)n, timeout_ms);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            s->rc = eb_error_set(s->err, -errno, "poll: %s", execbox_strerror(-errno));
            hard_kill(s->c);
            break;
        }
        handle_events(s, pfd, &ix);
    }
}

/* Reaps init; it is dead or dying (SIGKILL as a last resort). After an early end (a session's
 * cell) a live init is left to the caller (out->init_running). Sets out->init_status. */
static void reap_init(struct eb_child *c, bool early, struct eb_outcome *out)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    for (int tries = 0; !c->not_ours; tries++) {
        int w =
            (int)syscall(SYS_waitid, P_PIDFD, c->pidfd, &si, WEXITED | (tries ? 0 : WNOHANG), NULL);
        if (w == 0 && si.si_pid != 0)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (tries == 0 && early) {
            out->init_running = true; /* its exit is the caller's to reap */
            break;
        }
        if (tries == 0)
            hard_kill(c);
    }
    if (si.si_code == CLD_EXITED)
        out->init_status = W_EXITCODE(si.si_status, 0);
    else
        out->init_status = si.si_status & 0x7f;
}

/* Finishes the captured streams into res; a live view cut at the limit gets its note. rc is
 * the supervision's status so far; returns the final one. */
static int finish_streams(struct stream *st, const struct execbox_request *req,
                          struct execbox_result *res, int rc, struct execbox_error *err)
{
    for (int i = 0; i < 2; i++)
        eb_capbuf_take_end(&st[i].buf, req->on_output, req->userdata, st[i].which);
    res->stdout_truncated = eb_capbuf_truncated(&st[0].buf);
    res->stderr_truncated = eb_capbuf_truncated(&st[1].buf);
    res->stdout_bytes = st[0].buf.total;
    res->stderr_bytes = st[1].buf.total;
    if (eb_capbuf_finish(&st[0].buf, &res->stdout_data, &res->stdout_len) < 0 ||
        eb_capbuf_finish(&st[1].buf, &res->stderr_data, &res->stderr_len) < 0) {
        eb_capbuf_free(&st[0].buf);
        eb_capbuf_free(&st[1].buf);
        if (!rc)
            rc = eb_error_set(err, -ENOMEM, "out of memory");
    }
    return rc;
}

int eb_supervise(struct eb_child *c, const struct execbox_request *req,
                 const struct execbox_policy *p, uint64_t start_ns, struct execbox_result *res,
                 struct eb_outcome *out, struct execbox_error *err)
{
    memset(out, 0, sizeof(*out));
    struct supervision s = {
        .c = c,
        .req = req,
        .out = out,
        .err = err,
        .st = {{.fd = &c->out_fd, .which = EXECBOX_STREAM_STDOUT},
               {.fd = &c->err_fd, .which = EXECBOX_STREAM_STDERR}},
        .deadline = start_ns + (uint64_t)(p->timeout * 1e9),
        .cancel_fd = eb_cancel_fd(req->cancel),
    };
    eb_capbuf_init(&s.st[0].buf, p->output_limit);
    eb_capbuf_init(&s.st[1].buf, p->output_limit);
    for (int i = 0; i < 2; i++)
        if (*s.st[i].fd >= 0)
            fcntl(*s.st[i].fd, F_SETFL, O_NONBLOCK);
    if (c->status_fd >= 0)
        fcntl(c->status_fd, F_SETFL, O_NONBLOCK);
    _cleanup_free_ char *chunk = malloc(EB_READ_CHUNK);
    s.chunk = chunk;
    if (!chunk) {
        s.rc = eb_error_set(err, -ENOMEM, "out of memory");
        hard_kill(c);
        s.killing = true;
    }
    supervise_loop(&s);
    if (s.init_exited && (c->out_fd >= 0 || c->err_fd >= 0))
        hard_kill(c);
    reap_init(c, s.early, out);
    int rc = finish_streams(s.st, req, res, s.rc, err);
    res->execution_time = (double)(eb_now_ns() - start_ns) / 1e9;
    return rc;
}
