/* SPDX-License-Identifier: MIT */
/*
 * tpl_helper.c - the template's own half, a module that the template's Python loads with
 * ctypes.PyDLL (from a sealed memfd the library hands it) once its imports are done. It turns each
 * request of the library (tpl_proto.h) into one run: a child with namespaces, cgroup and mounts of
 * its own, every privilege dropped, Landlock and seccomp on, waiting for its code. Built as its
 * own shared object, without sanitizers, from this file and the library's libc-only parts.
 *
 * One run, all of it ahead of the request:
 *   template T (Python; uid 1000 of the template's user namespace, CAP_SYS_ADMIN and CAP_SETPCAP
 *   there and nowhere else)
 *     --clone(CLONE_VM|CLONE_VFORK, a new user namespace, child of T's, and new pid/mount/ipc/
 *             uts/net namespaces owned by it)--> R
 *   R shares T's memory and T waits: it maps T's ids into its user namespace and caps the
 *   run's inotify counts there (r_userns), joins the run's cgroup (fds the library opened), takes a
 *   cgroup namespace, mounts the run's own /tmp, /dev/shm, /workspace, /code and /proc, forks G
 *   (the only copy of T's memory a run costs), drops every privilege and execs the init program
 *   (pid 1 of the run), which ends the vfork.
 *   G (pid 2; T itself is pid 3 of its sandbox, see r_main) jumps back into T's frame of
 *   eb_tpl_serve, lets Python finish the fork, places its
 *   fds, sets rlimits, drops every capability, applies Landlock and seccomp and returns 0: the
 *   bootstrap then waits on fd 3 for the code.
 * Nothing of a run ever reaches T: R writes only its error into T's memory before it execs.
 */
#undef _FORTIFY_SOURCE /* longjmp from R's stack back to T's frame is what we mean */
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/landlock.h"
#include "jail/ns.h"
#include "jail/tpl_proto.h"
#include "proc/childlib.h"

#define EXPORT __attribute__((visibility("default")))
#define R_STACK_SIZE (256U << 10)
#define BPF_MAX_BYTES (4096U * 8U)
#define MPL_MAX_BYTES (8U << 20)
/* Each run gets this fraction of the template's per-user inotify budget (see tpl_limits). */
#define FORK_SHARE 8

/* CPython's fork hooks, found in the running interpreter (we are loaded into it). */
typedef void (*py_fork_fn)(void);

struct tpl {
    py_fork_fn before, after_parent, after_child;
    int init_fd;
    bool landlock;
    struct sock_fprog bpf;
    char *mpl_data;
    size_t mpl_len;
    char mpl_dir[64], mpl_file[160];
    /* the request being served */
    struct eb_tpl_req req;
    int fds[EB_TPL_FDS_MAX];
    int n_fds;
    char tmp_opts[160], shm_opts[96];
    char guest_pid[16], n_leave[16];
    /* the run's own user namespace: T's ids mapped to themselves, and its inotify shares */
    char uid_map[32], gid_map[32], inotify_instances[24], inotify_watches[24];
    /* each run's share of the per-user rlimits its namespace counts first (tpl_limits) */
    struct rlimit sigpending, msgqueue;
    pid_t self_pid, guest; /* T's pid (in T's pid namespace); the pid G must get in the run's */
    sigset_t saved_mask;
    jmp_buf jb;
    /* written by R before it execs or exits: 0, or why the run could not be set up */
    int r_err;
    char r_msg[160];
};

static struct tpl tpl; /* one template per process; the stacks below are R's and the spare's */
static char r_stack[R_STACK_SIZE] __attribute__((aligned(16)));
static char spare_stack[4096] __attribute__((aligned(16)));

/* ---- R: the run's init-to-be, sharing T's memory (raw syscalls, no allocation) ------------ */

/* A child that only takes a pid and exits (see r_main, before G). */
static int spare_main(void *arg)
{
    (void)arg;
    return 0;
}

__attribute__((noreturn)) static void r_fail(struct tpl *t, int code, const char *what)
{
    t->r_err = code < 0 ? code : -EIO;
    size_t n = strlen(what);
    if (n >= sizeof(t->r_msg))
        n = sizeof(t->r_msg) - 1;
    memcpy(t->r_msg, what, n);
    t->r_msg[n] = '\0';
    eb_child_send_error(t->fds[EB_TPL_FD_STATUS], t->r_err, what);
    _exit(127);
}

static int attach(int fd, const char *dst)
{
    return syscall(SYS_move_mount, fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno : 0;
}

static int write_file_at(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0)
        return -errno;
    int r = eb_write_all(fd, data, len);
    close(fd);
    return r;
}

/* Writes s to a /proc file that exists (no O_CREAT); 0 or -errno. */
static int write_proc(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    int r = eb_write_all(fd, s, strlen(s));
    close(fd);
    return r;
}

/* The run's user namespace, a child of the template's, exists so that the kernel's per-user
 * counts have a level of the run's own: inotify instances and watches are charged to (the
 * run's namespace, uid) before (the template's, uid) and the host's, and the run's level is
 * capped at a share of the template's (tpl_limits); pending signals, message-queue bytes and
 * processes likewise count at the run's level against its own rlimits. Without it every fork
 * of one template shared one count, and one run holding every inotify instance made
 * inotify_init1 fail in its siblings. T's own uid and gid map to themselves (a process may map
 * its own ids into a namespace it made without any privilege outside it); setgroups stays
 * denied, as the guest could not call it anyway. */
static int r_userns(struct tpl *t)
{
    int r;
    /* R shares T's memory, and with it the dumpable flag an earlier run's R cleared before it
     * execed (r_main's end): a process that is not dumpable has its /proc/self files owned by
     * root, which R may not write. Dumpable again until this R clears it at its end; T is
     * stopped meanwhile (CLONE_VFORK) and no guest can see T's pid. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        return -errno;
    if ((r = write_proc("/proc/self/setgroups", "deny")) < 0 ||
        (r = write_proc("/proc/self/uid_map", t->uid_map)) < 0 ||
        (r = write_proc("/proc/self/gid_map", t->gid_map)) < 0)
        return r;
    return 0;
}

/* The run's inotify shares, set in its own namespace's table (/proc/sys/user/ shows the
 * reader's user namespace) while R still holds CAP_SYS_RESOURCE there; the guest, with no
 * capability, cannot raise them. A kernel without inotify has no such files. */
static int r_limits(struct tpl *t)
{
    int r = write_proc("/proc/sys/user/max_inotify_instances", t->inotify_instances);
    if (r == 0 || r == -ENOENT)
        r = write_proc("/proc/sys/user/max_inotify_watches", t->inotify_watches);
    return r == -ENOENT ? 0 : r;
}

static int r_main(void *arg)
{
    struct tpl *t = arg;
    int *fd = t->fds;
    int r;
    if ((r = r_userns(t)) < 0)
        r_fail(t, r, "map the run's user namespace");
    /* Limits before anything can allocate in the run's name: the run's own cgroup. The fds were
     * opened by the library (root), and the kernel checks the opener's rights. */
    int n_cg = t->n_fds - (int)t->req.n_leave;
    for (int i = EB_TPL_FD_CG0; i < n_cg; i++)
        if (write(fd[i], "0", 1) < 0)
            r_fail(t, -errno, "join the run's cgroup");
    /* Host cgroup paths hidden, rooted at the run's cgroup. */
    if (unshare(CLONE_NEWCGROUP) < 0)
        r_fail(t, -errno, "unshare the cgroup namespace");
    /* The template's mounts came along locked (a less privileged mount namespace may not undo
     * them); on top of them, the run's own writable places. */
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, t->tmp_opts) < 0)
        r_fail(t, -errno, "mount /tmp");
    if (t->mpl_data) {
        /* MPLCONFIGDIR with the prebuilt font list, as a cold run has it. */
        if (mkdir(t->mpl_dir, 0755) < 0)
            r_fail(t, -errno, t->mpl_dir);
        if ((r = write_file_at(t->mpl_file, t->mpl_data, t->mpl_len)) < 0)
            r_fail(t, r, t->mpl_file);
    }
    if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, t->shm_opts) < 0)
        r_fail(t, -errno, "mount /dev/shm");
    if ((r = attach(fd[EB_TPL_FD_WS], "/workspace")) < 0)
        r_fail(t, r, "attach /workspace");
    if ((r = eb_attach_mount(fd[EB_TPL_FD_CODE], "/code", t->req.code_cover != 0)) < 0)
        r_fail(t, r, "attach /code");
    /* Shows only the run's own pid namespace. */
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        r_fail(t, -errno, "mount /proc");
    if ((r = r_limits(t)) < 0)
        r_fail(t, r, "set the run's inotify limits");
    if (sethostname("execbox", 7) < 0)
        r_fail(t, -errno, "sethostname");
    /* A new session: no controlling terminal to inject into or signal. */
    setsid();
    /* The guest's SIGCHLD (its stop at the end of its run, or its exit) must reach us from its
     * first moment: T ignores SIGCHLD, which would drop a stop's notification and reap an exit
     * before the init had put it back. R's signal handlers are its own (no CLONE_SIGHAND), and
     * every signal stays blocked until the init reads them. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    if (sigaction(SIGCHLD, &dfl, NULL) < 0)
        r_fail(t, -errno, "reset SIGCHLD");
    /* G must not have T's pid. A library that keeps state it must not share with a fork tells a
     * fork by its pid (OpenSSL 3 reseeds its generators when getpid() is not the pid of their
     * last use), and G's raw fork runs no atfork handler: with T's pid, G would go on from T's
     * generator state, and every sibling would draw the same bytes and make the same keys. In
     * the run's new pid namespace R is 1 and pids go up from there. T's sandbox made T pid 3
     * (eb_init.spare_pid), so G is 2 as a cold guest is; should T still be 2, a spare child
     * (sharing our memory, R waiting: it costs no copy) takes 2 and exits first. */
    if (t->guest != 2) {
        long s = clone(spare_main, spare_stack + sizeof(spare_stack),
                       CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
        if (s < 0 || waitpid((pid_t)s, NULL, 0) != s)
            r_fail(t, -errno, "take the template's pid in the run's pid namespace");
    }
    /* The guest: a raw fork, so no libc atfork handler runs in memory we share with T. */
    long g = syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, 0UL);
    if (g < 0)
        r_fail(t, -errno, "fork the guest");
    if (g == 0)
        longjmp(t->jb, 1); /* G: on our copy of T's memory, back into eb_tpl_serve */
    if (g != t->guest || g == t->self_pid) {
        kill((pid_t)g, SIGKILL);
        r_fail(t, -EAGAIN, "the guest did not get the pid planned for it");
    }
    /* R becomes the run's init: its status and kill pipes at 3 and 4, the program at 5, the
     * host side's cgroup.procs (its way out of the run's cgroup once the run is over) from 6. */
    int status = fcntl(fd[EB_TPL_FD_STATUS], F_DUPFD_CLOEXEC, 16);
    int ctl = fcntl(fd[EB_TPL_FD_CTL], F_DUPFD_CLOEXEC, 16);
    int prog = fcntl(t->init_fd, F_DUPFD_CLOEXEC, 16);
    int leave[4], keep[3 + 4] = {3, 4, 5};
    int n_leave = (int)t->req.n_leave;
    bool ok = status >= 0 && ctl >= 0 && prog >= 0;
    for (int i = 0; i < n_leave; i++)
        ok &= (leave[i] = fcntl(fd[n_cg + i], F_DUPFD_CLOEXEC, 16)) >= 0;
    if (!ok || dup2(status, 3) < 0 || dup2(ctl, 4) < 0 || dup2(prog, 5) < 0) {
        kill((pid_t)g, SIGKILL);
        r_fail(t, -errno, "place the init's fds");
    }
    for (int i = 0; i < n_leave; i++)
        if (dup2(leave[i], 6 + i) < 0) {
            kill((pid_t)g, SIGKILL);
            r_fail(t, -errno, "place the init's fds");
        }
    for (int i = 0; i < n_leave; i++)
        keep[3 + i] = 6 + i;
    eb_close_all_except(keep, 3 + n_leave);
    /* The init needs no privilege: it only waits, kills inside its own pid namespace and
     * reports. Not dumpable, so the guest (same uid) cannot ptrace it. */
    if ((r = eb_drop_privileges()) < 0) {
        kill((pid_t)g, SIGKILL);
        r_fail(t, r, "drop the init's privileges");
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
        kill((pid_t)g, SIGKILL);
        r_fail(t, -errno, "make the init undumpable");
    }
    char *argv[] = {(char *)"execbox-init", t->guest_pid, t->n_leave, NULL};
    char *envp[] = {NULL};
    syscall(SYS_execveat, 5, "", argv, envp, AT_EMPTY_PATH);
    r = -errno;
    kill((pid_t)g, SIGKILL);
    t->r_err = r;
    snprintf(t->r_msg, sizeof(t->r_msg), "exec the run's init");
    eb_child_send_error(3, r, "exec the run's init");
    _exit(127);
}

/* ---- G: the guest, on its own copy of T's memory ------------------------------------------ */

/* Runs right after the longjmp: Python's after-fork work, then every wall. Returns 0 (the caller
 * returns to Python) or does not return. */
static int guest_setup(struct tpl *t)
{
    int *fd = t->fds;
    t->after_child(); /* locks, thread state, os.register_at_fork hooks (random reseeds) */
    signal(SIGCHLD, SIG_DFL);
    /* Our parent is the run's init; without it we must not live on. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != 1)
        _exit(1);
    int status = fcntl(fd[EB_TPL_FD_STATUS], F_DUPFD_CLOEXEC, 16);
    int out = fcntl(fd[EB_TPL_FD_OUT], F_DUPFD_CLOEXEC, 16);
    int err = fcntl(fd[EB_TPL_FD_ERR], F_DUPFD_CLOEXEC, 16);
    int go = fcntl(fd[EB_TPL_FD_GO], F_DUPFD_CLOEXEC, 16);
    if (status < 0)
        _exit(127);
    struct execbox_error e = {0, ""};
    int r = 0;
    const char *what = "place the guest's fds";
    if (out < 0 || err < 0 || go < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || dup2(go, 3) < 0) {
        r = -errno;
        goto fail;
    }
    /* stdin stays the template's /dev/null until the bootstrap opens the run's /code/stdin. */
    int keep[] = {0, 1, 2, 3, status};
    eb_close_all_except(keep, 5);
    what = "chdir to the workspace"; /* the mount R attached, not the template's directory */
    if (chdir("/workspace") < 0) {
        r = -errno;
        goto fail;
    }
    what = "setrlimit";
    if ((r = eb_child_rlimits(t->req.file_size, t->req.cpu_seconds, t->req.memory_rlimit,
                              t->req.memory)) < 0)
        goto fail;
    /* Pending signals and message-queue bytes are counted per user at the run's own level
     * (r_userns) against these, hard and soft alike: the guest may not raise them. */
    if (setrlimit(RLIMIT_SIGPENDING, &t->sigpending) < 0 ||
        setrlimit(RLIMIT_MSGQUEUE, &t->msgqueue) < 0) {
        r = -errno;
        goto fail;
    }
    what = "drop capabilities";
    if ((r = eb_drop_privileges()) < 0)
        goto fail;
    if (t->landlock) {
        static const char *const writable[] = {"/tmp", "/workspace", "/dev/shm", NULL};
        r = eb_landlock_apply(writable, &e);
        if (r < 0 && r != -EOPNOTSUPP) {
            eb_child_send_error(status, r, e.msg);
            _exit(127);
        }
    }
    /* The syscall filter last, as a cold guest has it just before exec. no_new_privs is set. */
    what = "install the seccomp filter";
    if (t->bpf.len && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &t->bpf) < 0) {
        r = -errno;
        goto fail;
    }
    close(status);
    sigprocmask(SIG_SETMASK, &t->saved_mask, NULL);
    return 0;
fail:
    eb_child_send_error(status, r, what);
    _exit(127);
}

/* ---- T: the serving loop ------------------------------------------------------------------- */

static int read_blob(int fd, size_t max, char **ret, size_t *ret_len)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if ((size_t)st.st_size > max)
        return -E2BIG;
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return -ENOMEM;
    ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
    if (n != st.st_size) {
        free(buf);
        return n < 0 ? -errno : -EIO;
    }
    buf[n] = '\0';
    *ret = buf;
    *ret_len = (size_t)n;
    return 0;
}

static int send_resp(int sock, int code, int pid, const char *msg, int pidfd)
{
    struct eb_tpl_resp resp;
    memset(&resp, 0, sizeof(resp));
    resp.magic = EB_TPL_MAGIC;
    resp.code = code;
    resp.pid = pid;
    snprintf(resp.msg, sizeof(resp.msg), "%s", msg ? msg : "");
    struct iovec iov = {.iov_base = &resp, .iov_len = sizeof(resp)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (pidfd >= 0) {
        memset(&u, 0, sizeof(u));
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof(u.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
    }
    for (;;) {
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) >= 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

/* Receives one request; 0, -ECONNRESET at the library's end, or another -errno for garbage
 * (whose fds are closed). */
static int recv_req(int sock, struct tpl *t)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * EB_TPL_FDS_MAX)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = &t->req, .iov_len = sizeof(t->req)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return -ECONNRESET;
    if (n < 0)
        return -errno;
    t->n_fds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + (size_t)i * sizeof(int), sizeof(int));
                if (t->n_fds < EB_TPL_FDS_MAX)
                    t->fds[t->n_fds++] = f;
                else
                    close(f);
            }
        }
    if ((size_t)n != sizeof(t->req) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        t->req.magic != EB_TPL_MAGIC || t->req.n_fds != (uint32_t)t->n_fds ||
        t->n_fds < EB_TPL_FD_CG0 || t->req.n_leave > 4 ||
        t->req.n_leave > (uint32_t)(t->n_fds - EB_TPL_FD_CG0) ||
        t->n_fds - (int)t->req.n_leave - EB_TPL_FD_CG0 > 4) {
        for (int i = 0; i < t->n_fds; i++)
            close(t->fds[i]);
        t->n_fds = 0;
        return -EBADMSG;
    }
    return 0;
}

/* Reads a number from a sysctl file; def when it cannot. */
static long read_sysctl(const char *path, long def)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return def;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return def;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf || v <= 0 ? def : v;
}

/* 1/FORK_SHARE of T's own soft limit of res, hard and soft; T's own limits when it has no
 * finite one (nothing above the run bounds it then either). */
static void share_rlimit(int res, struct rlimit *ret)
{
    if (getrlimit(res, ret) < 0) {
        ret->rlim_cur = ret->rlim_max = 0; /* not seen to happen; the guest then queues none */
        return;
    }
    if (ret->rlim_cur == RLIM_INFINITY)
        return;
    rlim_t v = ret->rlim_cur / FORK_SHARE;
    ret->rlim_cur = ret->rlim_max = v > 0 ? v : 1;
}

/* What r_userns and r_limits write, formatted once: T's ids, and each run's share of the host's
 * per-user inotify limits (the template's uid is charged for all of its runs at the host's
 * level): 1/FORK_SHARE each, so that one run can take no more than that from its siblings. */
static void tpl_limits(struct tpl *t)
{
    snprintf(t->uid_map, sizeof(t->uid_map), "%u %u 1", (unsigned)geteuid(), (unsigned)geteuid());
    snprintf(t->gid_map, sizeof(t->gid_map), "%u %u 1", (unsigned)getegid(), (unsigned)getegid());
    long inst = read_sysctl("/proc/sys/fs/inotify/max_user_instances", 128) / FORK_SHARE;
    long watch = read_sysctl("/proc/sys/fs/inotify/max_user_watches", 8192) / FORK_SHARE;
    snprintf(t->inotify_instances, sizeof(t->inotify_instances), "%ld", inst > 0 ? inst : 1);
    snprintf(t->inotify_watches, sizeof(t->inotify_watches), "%ld", watch > 0 ? watch : 1);
    share_rlimit(RLIMIT_SIGPENDING, &t->sigpending);
    share_rlimit(RLIMIT_MSGQUEUE, &t->msgqueue);
}

/* Entry point, called from the template's bootstrap with the GIL held (ctypes.PyDLL). sock: the
 * library's socket; init_fd: the run init program; bpf_fd: the seccomp program (struct
 * sock_filter array, may be empty); mpl_fd, mpl_name: matplotlib's font list for each run's
 * MPLCONFIGDIR (-1 when none); landlock: apply Landlock in each run. Serves requests until the
 * library closes the socket. Returns 0 in a run's guest, walled, with its fds in place; in the
 * template, a negative errno when it must end. */
EXPORT int eb_tpl_serve(int sock, int init_fd, int bpf_fd, int mpl_fd, const char *mpl_name,
                        int landlock);
int eb_tpl_serve(int sock, int init_fd, int bpf_fd, int mpl_fd, const char *mpl_name, int landlock)
{
    struct tpl *t = &tpl;
    memset(t, 0, sizeof(*t));
    t->init_fd = init_fd;
    t->landlock = landlock != 0;
    t->self_pid = getpid();
    char msg[200] = "";
    int r = 0;
    t->before = (py_fork_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PyOS_BeforeFork");
    t->after_parent = (py_fork_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent");
    t->after_child = (py_fork_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child");
    if (!t->before || !t->after_parent || !t->after_child) {
        r = -ENOSYS;
        snprintf(msg, sizeof(msg), "the interpreter exports no PyOS_*Fork* hooks");
        goto fail;
    }
    char *bpf = NULL;
    size_t bpf_len = 0;
    if ((r = read_blob(bpf_fd, BPF_MAX_BYTES, &bpf, &bpf_len)) < 0 ||
        bpf_len % sizeof(struct sock_filter)) {
        r = r < 0 ? r : -EINVAL;
        snprintf(msg, sizeof(msg), "read the seccomp program");
        goto fail;
    }
    t->bpf.len = (unsigned short)(bpf_len / sizeof(struct sock_filter));
    t->bpf.filter = (struct sock_filter *)bpf;
    close(bpf_fd);
    if (mpl_fd >= 0 && mpl_name && *mpl_name && !strchr(mpl_name, '/')) {
        if ((r = read_blob(mpl_fd, MPL_MAX_BYTES, &t->mpl_data, &t->mpl_len)) < 0) {
            snprintf(msg, sizeof(msg), "read the matplotlib font list");
            goto fail;
        }
        close(mpl_fd);
        snprintf(t->mpl_dir, sizeof(t->mpl_dir), "/tmp/.matplotlib");
        snprintf(t->mpl_file, sizeof(t->mpl_file), "/tmp/.matplotlib/%s", mpl_name);
    }
    tpl_limits(t);
    /* Runs' inits are ours to reap, and we never wait for one: the kernel reaps them. Each
     * guest puts SIGCHLD back to the default. */
    signal(SIGCHLD, SIG_IGN);
    if ((r = send_resp(sock, 0, 0, "ready", -1)) < 0)
        return r;

    for (;;) {
        r = recv_req(sock, t);
        if (r == -ECONNRESET)
            return r;
        if (r < 0) {
            if (send_resp(sock, r, 0, "a malformed request", -1) < 0)
                return r;
            continue;
        }
        /* Everything R needs is formatted here, where allocation and stdio are safe. */
        snprintf(t->tmp_opts, sizeof(t->tmp_opts),
                 "size=%llu,nr_inodes=16384,mode=1777,uid=%d,gid=%d",
                 (unsigned long long)t->req.tmpfs, EB_JAIL_UID, EB_JAIL_GID);
        snprintf(t->shm_opts, sizeof(t->shm_opts),
                 "size=%llu,nr_inodes=1024,mode=1777,uid=%d,gid=%d", (unsigned long long)t->req.shm,
                 EB_JAIL_UID, EB_JAIL_GID);
        t->guest = t->self_pid == 2 ? 3 : 2; /* never T's pid (see r_main) */
        snprintf(t->guest_pid, sizeof(t->guest_pid), "%d", (int)t->guest);
        snprintf(t->n_leave, sizeof(t->n_leave), "%u", (unsigned)t->req.n_leave);
        t->r_err = 0;
        t->r_msg[0] = '\0';
        if (setjmp(t->jb) != 0)
            return guest_setup(t); /* G */
        sigset_t all;
        sigfillset(&all);
        /* No signal handler of T may run in R (it would write T's memory) or in G before
         * Python is ready for it. */
        sigprocmask(SIG_BLOCK, &all, &t->saved_mask);
        t->before();
        int pidfd = -1;
        /* A user namespace of the run's own, a child of the template's (r_userns says why),
         * and new pid, mount, ipc, uts and network namespaces owned by it: R holds every
         * capability there and none in the template's namespace or above. CLONE_VM|CLONE_VFORK:
         * no copy of T's memory for R, and T waits until R has execed the init. */
        int pid = clone(r_main, r_stack + sizeof(r_stack),
                        CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWUSER | CLONE_NEWPID |
                            CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | SIGCHLD,
                        t, &pidfd);
        int cerr = errno;
        t->after_parent();
        sigprocmask(SIG_SETMASK, &t->saved_mask, NULL);
        for (int i = 0; i < t->n_fds; i++)
            close(t->fds[i]);
        t->n_fds = 0;
        if (pid < 0)
            r = send_resp(sock, -cerr, 0, "clone the run", -1);
        else if (t->r_err)
            r = send_resp(sock, t->r_err, pid, t->r_msg, -1);
        else
            r = send_resp(sock, 0, pid, "", pidfd);
        if (pidfd >= 0)
            close(pidfd);
        if (r < 0)
            return r;
    }
fail:
    send_resp(sock, r, 0, msg, -1);
    return r;
}
