/* SPDX-License-Identifier: MIT */
/* childlib.c - the sandbox processes' own code: init loop, fd sweep, rlimits (see childlib.h). */
#include "proc/childlib.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"

#ifndef W_EXITCODE /* glibc's; musl, which the templates' init is built with, has none */
#define W_EXITCODE(ret, sig) ((ret) << 8 | (sig))
#endif

void eb_child_send_err(int fd, const struct execbox_error *e)
{
    struct eb_msg m;
    memset(&m, 0, sizeof(m));
    m.type = EB_MSG_ERROR;
    m.err = *e;
    (void)eb_write_all(fd, &m, sizeof(m));
}

void eb_child_send_error(int fd, int code, const char *msg)
{
    struct execbox_error e;
    memset(&e, 0, sizeof(e));
    eb_error_set_raw(&e, code, msg);
    eb_child_send_err(fd, &e);
}

int eb_child_sigchld_fd(void)
{
    /* An ignored SIGCHLD (a template ignores it, and that survives exec) would have the kernel
     * reap children we must see. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    return sfd < 0 ? -errno : sfd;
}

static int set_limit(int res, uint64_t v)
{
    struct rlimit rl = {.rlim_cur = (rlim_t)v, .rlim_max = (rlim_t)v};
    return setrlimit(res, &rl) < 0 ? -errno : 0;
}

int eb_child_rlimits(uint64_t file_size, uint64_t cpu_seconds, int memory_rlimit, uint64_t memory)
{
    /* A second layer under the cgroup (or the only one for subprocess). No core dumps: a crash
     * must not write the guest's memory anywhere. */
    int r = set_limit(RLIMIT_CORE, 0);
    if (r == 0)
        r = set_limit(RLIMIT_FSIZE, file_size);
    if (r == 0)
        r = set_limit(RLIMIT_NOFILE, EB_NOFILE);
    if (r == 0 && cpu_seconds)
        r = set_limit(RLIMIT_CPU, cpu_seconds);
    if (r == 0 && memory_rlimit >= 0)
        r = set_limit(memory_rlimit, memory);
    return r;
}

/* SIGKILLs one direct child of ours and its process group, where it leads one. The pid is
 * pinned by a pidfd first; a child of ours cannot be reused before we reap it anyway, so its
 * group id (the same number) names only its group. */
static int kill_child(pid_t kid, void *arg)
{
    (void)arg;
    kill(-kid, SIGKILL);
    int pfd = (int)syscall(SYS_pidfd_open, kid, 0);
    if (pfd >= 0) {
        syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
        close(pfd);
    }
    return 0;
}

/* SIGKILLs every direct child of this process, read from /proc (CONFIG_PROC_CHILDREN) to
 * EOF: the whole list, never a cut-off last number. */
static void kill_children(void)
{
    char path[64] = "/proc/self/task/";
    /* Format our pid by hand: snprintf is not async-signal-safe. */
    char num[16];
    int k = 0;
    for (pid_t p = getpid(); p > 0 && k < 15; p /= 10)
        num[k++] = (char)('0' + p % 10);
    size_t n = strlen(path);
    while (k > 0)
        path[n++] = num[--k];
    memcpy(path + n, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    (void)eb_read_pids(fd, EB_PIDS_MAX, kill_child, NULL);
    close(fd);
}

/* Kills every descendant and reaps until none is left, recording the guest's status. */
static void kill_everything(pid_t guest, int *guest_status, bool *guest_done)
{
    for (;;) {
        if (getpid() == 1) {
            /* pid 1 of our own pid namespace: -1 reaches exactly the sandbox's processes. */
            kill(-1, SIGKILL);
        } else {
            kill_children();
        }
        int st;
        pid_t w = waitpid(-1, &st, __WALL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break; /* ECHILD: nothing left */
        }
        if (w == guest && !*guest_done) {
            *guest_status = st;
            *guest_done = true;
        }
    }
}

int eb_close_all_except(const int *keep, int n)
{
    int sorted[EB_KEEP_FDS_MAX];
    if (n < 0 || n > EB_KEEP_FDS_MAX)
        return -E2BIG; /* never drop an fd the caller needs: closing nothing, say so */
    memcpy(sorted, keep, (size_t)n * sizeof(int));
    /* insertion sort: qsort is not on the async-signal-safe list */
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && sorted[k - 1] > sorted[k]; k--) {
            int t = sorted[k];
            sorted[k] = sorted[k - 1];
            sorted[k - 1] = t;
        }
    unsigned lo = 0;
    for (int i = 0; i < n; i++) {
        if (sorted[i] < (int)lo)
            continue; /* negative, or a duplicate */
        if ((unsigned)sorted[i] > lo)
            syscall(SYS_close_range, lo, (unsigned)sorted[i] - 1, 0U);
        lo = (unsigned)sorted[i] + 1;
    }
    if (syscall(SYS_close_range, lo, ~0U, 0U) < 0)
        return -errno;
    return 0;
}

void eb_init_loop(pid_t guest, int sfd, int status_fd, int ctl_fd)
{
    eb_init_loop_leave(guest, sfd, status_fd, ctl_fd, NULL, 0);
}

static void send_exit(int status_fd, int type, int status)
{
    struct eb_msg m;
    memset(&m, 0, sizeof(m));
    m.type = type;
    m.status = status;
    struct rusage ru;
    if (type == EB_MSG_EXIT && getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        m.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
        m.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
        m.maxrss_kb = ru.ru_maxrss;
    }
    /* What the files of the in-memory file systems hold now, the program and every other
     * process of the sandbox gone: their share of an OOM kill. Measured here, by the init in
     * the sandbox's mount namespace, because that namespace (and with it these tmpfs and the
     * pages charged to the run's cgroup) is torn down when we exit, before the parent could
     * look. Only as pid 1 of a pid namespace (the jail's init: its /tmp and /dev/shm are the
     * sandbox's own tmpfs, never the host's). */
    static const char *const in_memory[] = {"/tmp", "/dev/shm"};
    struct statfs fs;
    for (size_t i = 0; getpid() == 1 && i < sizeof(in_memory) / sizeof(in_memory[0]); i++)
        if (statfs(in_memory[i], &fs) == 0 && fs.f_type == TMPFS_MAGIC)
            m.tmp_bytes += (uint64_t)(fs.f_blocks - fs.f_bfree) * (uint64_t)fs.f_bsize;
    (void)eb_write_all(status_fd, &m, sizeof(m));
}

/* Whether the guest is the only process of our pid namespace but us: the entries of /proc (the
 * namespace's own, mounted by the run) are 1 and the guest, nothing else. */
static bool guest_alone(pid_t guest)
{
    int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool alone = true;
    char buf[4096];
    long n;
    while (alone && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
        for (long off = 0; off < n;) {
            const struct eb_dirent {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (const void *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9')
                continue;
            long pid = 0;
            for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
                pid = pid * 10 + (*c - '0');
            if (pid != 1 && pid != guest)
                alone = false;
        }
    if (n < 0)
        alone = false;
    close(fd);
    return alone;
}

void eb_init_loop_leave(pid_t guest, int sfd, int status_fd, int ctl_fd, const int *leave_fds,
                        int n)
{
    eb_init_loop_done(guest, sfd, status_fd, ctl_fd, leave_fds, n, false);
}

/* Reads /proc/<pid>/<file> into buf (NUL-terminated); its length, or -1. No snprintf: this runs
 * where only async-signal-safe calls may be made. */
static ssize_t read_proc(pid_t pid, const char *file, char *buf, size_t len)
{
    char path[64] = "/proc/";
    size_t k = strlen(path);
    char num[16];
    int d = 0;
    for (pid_t p = pid; p > 0 && d < 15; p /= 10)
        num[d++] = (char)('0' + p % 10);
    while (d > 0)
        path[k++] = num[--d];
    path[k++] = '/';
    size_t f = strlen(file);
    if (k + f >= sizeof(path))
        return -1;
    memcpy(path + k, file, f + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* Whether pid is stopped now ('T' in its stat), with the CPU time it has had (schedstat, ns). */
static bool stopped_now(pid_t pid, unsigned long long *ret_runtime)
{
    char buf[1024];
    if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
        return false;
    const char *paren = strrchr(buf, ')');
    if (!paren || paren[1] != ' ' || paren[2] != 'T')
        return false;
    if (read_proc(pid, "schedstat", buf, sizeof(buf)) < 0 || buf[0] < '0' || buf[0] > '9')
        return false;
    unsigned long long v = 0;
    for (const char *c = buf; *c >= '0' && *c <= '9'; c++)
        v = v * 10 + (unsigned long long)(*c - '0');
    *ret_runtime = v;
    return true;
}

/* The guest, stopped, and nothing else in the sandbox (ours is pid 1 of its pid namespace): it
 * was stopped before the look at /proc and is still stopped after it, not having run at all in
 * between (its CPU time unchanged), so no process was made meanwhile; and none but a process of
 * the sandbox could continue it. From then on nothing of the run can do anything. */
static bool guest_frozen_alone(pid_t guest)
{
    unsigned long long before, after;
    return stopped_now(guest, &before) && guest_alone(guest) && stopped_now(guest, &after) &&
           before == after;
}

/* The status a stopped guest reports in its name (EB_DONE_COMM and a number), or -1. */
static int done_status(pid_t guest)
{
    char name[32];
    if (read_proc(guest, "comm", name, sizeof(name)) < 0)
        return -1;
    size_t pre = strlen(EB_DONE_COMM);
    if (strncmp(name, EB_DONE_COMM, pre) != 0)
        return -1;
    int v = 0, digits = 0;
    const char *c = name + pre;
    for (; *c >= '0' && *c <= '9' && digits < 3; c++, digits++)
        v = v * 10 + (*c - '0');
    if (!digits || (*c != '\n' && *c != '\0') || v > 255)
        return -1;
    return v;
}

void eb_init_loop_done(pid_t guest, int sfd, int status_fd, int ctl_fd, const int *leave_fds, int n,
                       bool done_guest)
{
    int guest_status = 0;
    bool guest_done = false, session = false;
    /* done_guest: the guest stopped with its report (EB_DONE_COMM). */
    bool done = false, reported = false;
    struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl_fd, .events = POLLIN}};
    /* done_guest: look at the guest once before the first wait, in case it stopped before we
     * were ready for its SIGCHLD. */
    bool look = done_guest;
    while (!guest_done) {
        if (look) {
            pfd[0].revents = POLLIN;
            pfd[1].revents = 0;
            look = false;
        } else if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[1].revents) {
            /* 'S' (once, before any cell): a session, whose state moves from process to process
             * (each cell's fork may become it), so no single guest's exit ends the sandbox;
             * the last process's does. Anything else, or EOF: the parent asks us to kill
             * everything (deadline, cancel) or is gone. */
            char c = 0;
            ssize_t got = read(ctl_fd, &c, 1);
            if (got == 1 && c == 'S' && !session) {
                session = true;
                continue;
            }
            if (got < 0 && errno == EINTR)
                continue;
            break;
        }
        if (pfd[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) > 0)
                ;
            int st;
            pid_t w;
            int opts = WNOHANG | __WALL | (done_guest && !session ? WUNTRACED : 0);
            while ((w = waitpid(-1, &st, opts)) > 0)
                if (w == guest && !session && WIFSTOPPED(st)) {
                    int v = done_status(guest);
                    if (v >= 0 && !done) {
                        done = true;
                        guest_status = W_EXITCODE(v, 0);
                    }
                } else if (w == guest || session) {
                    if (!done)
                        guest_status = st;
                    guest_done = !session;
                }
            if (session && w < 0 && errno == ECHILD)
                break; /* the session's last process is gone */
            if (done && !guest_done) {
                /* The program is over and its process stopped, every thread of it: when nothing
                 * else lives in the sandbox, nothing can write to its output or its workspace any
                 * more. Killed, it only exits now (the teardown of its copy of the template's
                 * memory is the costly part): the report need not wait for that. */
                if (guest_frozen_alone(guest)) {
                    kill(guest, SIGKILL);
                    send_exit(status_fd, EB_MSG_DONE, guest_status);
                    reported = true;
                }
                break;
            }
        }
    }
    /* The guest ended (or must end): like a container, nothing outlives the main process. */
    int reaped_status = guest_status;
    bool reaped = guest_done;
    kill_everything(guest, &reaped_status, &reaped);
    if (!done)
        guest_status = reaped_status; /* else the program's own status, not our kill's */
    /* Nothing of the sandbox is left but us: leave its cgroup (see childlib.h). */
    for (int i = 0; i < n; i++)
        if (leave_fds[i] >= 0)
            (void)!write(leave_fds[i], "0", 1);
    if (!reported)
        send_exit(status_fd, EB_MSG_EXIT, guest_status);
    _exit(0);
}

int eb_attach_mount(int fd, const char *dst, bool cover_ro)
{
    if (syscall(SYS_move_mount, fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return -errno;
    if (!cover_ro)
        return 0;
    /* Attached in our mount namespace now, it may be cloned on every kernel. */
    int ro = (int)syscall(SYS_open_tree, AT_FDCWD, dst, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (ro < 0)
        return -errno;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       MOUNT_ATTR_NOEXEC};
    int r = 0;
    if (syscall(SYS_mount_setattr, ro, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0 ||
        syscall(SYS_move_mount, ro, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        r = -errno;
    close(ro);
    return r;
}
