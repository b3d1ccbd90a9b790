/* SPDX-License-Identifier: MIT */
/* ns.c - clone3 into new namespaces, the user namespace's id maps, dropping privileges (see
 * ns.h). */
#include "jail/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "proc/childlib.h"

void eb_userns_prepare(struct eb_userns *u, uint32_t root_host_id)
{
    memset(u, 0, sizeof(*u));
    u->root_mode = geteuid() == 0;
    u->host_uid = u->root_mode ? (uid_t)root_host_id : geteuid();
    u->host_gid = u->root_mode ? (gid_t)root_host_id : getegid();
    snprintf(u->uid_map, sizeof(u->uid_map), "%d %u 1\n", EB_JAIL_UID, (unsigned)u->host_uid);
    snprintf(u->gid_map, sizeof(u->gid_map), "%d %u 1\n", EB_JAIL_GID, (unsigned)u->host_gid);
}

pid_t eb_clone_ns(unsigned long ns_flags, int *ret_pidfd)
{
    int pidfd = -1;
    struct clone_args a;
    memset(&a, 0, sizeof(a));
    a.flags = ns_flags | CLONE_PIDFD;
    a.pidfd = (uint64_t)(uintptr_t)&pidfd;
    a.exit_signal = SIGCHLD;
    /* Raw clone3 behaves like fork(): the child runs on a copy of our stack. */
    long pid = syscall(SYS_clone3, &a, sizeof(a));
    if (pid > 0)
        *ret_pidfd = pidfd;
    return (pid_t)pid;
}

static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = eb_write_all(fd, s, strlen(s));
    close(fd);
    return r;
}

static int write_maps(const struct eb_userns *u)
{
    int r;
    /* setgroups must be denied before an unprivileged gid_map write; the guest could not
     * call it anyway (no CAP_SETGID), and denying it keeps it that way. */
    if ((r = write_file("/proc/self/setgroups", "deny")) < 0 ||
        (r = write_file("/proc/self/uid_map", u->uid_map)) < 0 ||
        (r = write_file("/proc/self/gid_map", u->gid_map)) < 0)
        return r;
    return 0;
}

int eb_userns_map_self(const struct eb_userns *u)
{
    return write_maps(u);
}

/* Raw id syscalls, never glibc's wrappers: in a process that had other threads, glibc's
 * setresuid/setgroups broadcast the change to every thread it knows of and wait for each; after
 * a raw clone3 those threads do not exist in the child, and the wait never ends. The child has
 * one thread, so the per-thread syscall is exactly right. */
static int raw_setresgid(gid_t g)
{
    return syscall(SYS_setresgid, g, g, g) < 0 ? -errno : 0;
}

static int raw_setresuid(uid_t u)
{
    return syscall(SYS_setresuid, u, u, u) < 0 ? -errno : 0;
}

int eb_become_guest_ids(void)
{
    int r = raw_setresgid(EB_JAIL_GID);
    return r < 0 ? r : raw_setresuid(EB_JAIL_UID);
}

static int capset_raw(uint64_t eff, uint64_t perm, uint64_t inh)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2] = {
        {(uint32_t)eff, (uint32_t)perm, (uint32_t)inh},
        {(uint32_t)(eff >> 32), (uint32_t)(perm >> 32), (uint32_t)(inh >> 32)},
    };
    return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int eb_userns_enter(const struct eb_userns *u)
{
    const uint64_t admin = 1ULL << CAP_SYS_ADMIN;
    /* The guest is never root outside: a sandbox without a uid of its own is a bug. */
    if (u->host_uid == 0 || u->host_gid == 0)
        return -EPERM;
    /* Drop the host's supplementary groups (root's gid 0) while we still may. */
    if (syscall(SYS_setgroups, 0, NULL) < 0)
        return -errno;
    /* Keep the permitted set across the uid change, then keep only CAP_SYS_ADMIN in it. */
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        return -errno;
    int r = raw_setresgid(u->host_gid);
    if (r < 0 || (r = raw_setresuid(u->host_uid)) < 0)
        return r;
    r = capset_raw(admin, admin, 0);
    if (r < 0)
        return r;
    /* A fresh user namespace, owned by the sandbox's uid; it owns no other namespace of ours. */
    if (unshare(CLONE_NEWUSER) < 0)
        return -errno;
    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        return -errno;
    /* The uid change made us non-dumpable, which makes /proc/self/uid_map root's: become
     * dumpable for the map writes (init turns it off again before any guest exists). */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        return -errno;
    if ((r = write_maps(u)) < 0)
        return r;
    return eb_become_guest_ids();
}

int eb_drop_privileges(void)
{
    /* Bounding set first (needs CAP_SETPCAP, which we may still hold), then ambient, then the
     * three process sets. */
    for (int c = 0; c <= 63; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break; /* past the last capability this kernel knows */
            /* EPERM: no CAP_SETPCAP to drop it, so a capability would stay in the bounding
             * set: fail, unless the kernel says it is not there anyway. */
            int e = errno;
            if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 0)
                return -e;
        }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno; /* EINVAL: a kernel before ambient capabilities (4.3) */
    int r = capset_raw(0, 0, 0);
    if (r < 0)
        return r;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    return 0;
}

int eb_idmap_userns(uid_t uid_in, uid_t uid_out, gid_t gid_in, gid_t gid_out, int *ret_fd,
                    struct execbox_error *err)
{
    int pidfd = -1;
    /* A child in a new user namespace, which only holds it alive until we have its fd. It
     * dies with the thread that made it, should that thread die first. */
    pid_t pid = eb_clone_ns(CLONE_NEWUSER, &pidfd);
    if (pid < 0)
        return eb_error_set(err, -errno, "clone a user namespace for the workspace's id map: %s",
                            execbox_strerror(-errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    char path[64], map[64];
    int r = 0;
    snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid_in, (unsigned)uid_out);
    if ((r = write_file(path, map)) < 0) {
        eb_error_set(err, r, "write the workspace's uid map: %s", execbox_strerror(r));
        goto out;
    }
    snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid_in, (unsigned)gid_out);
    if ((r = write_file(path, map)) < 0) {
        eb_error_set(err, r, "write the workspace's gid map: %s", execbox_strerror(r));
        goto out;
    }
    snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r = eb_error_set(err, -errno, "open the workspace's user namespace: %s",
                         execbox_strerror(-errno));
        goto out;
    }
    *ret_fd = fd;
out:
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    siginfo_t si;
    /* Bounded: a SIGKILLed child in pause() exits at once. */
    (void)syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL);
    close(pidfd);
    return r;
}

static int probe_rlimits(void)
{
    int r = eb_child_rlimits(EXECBOX_DEFAULT_FILE_SIZE, 10, -1, 0);
    if (r < 0)
        return r;
    static const struct {
        int res;
        rlim_t want;
    } check[] = {{RLIMIT_CORE, 0},
                 {RLIMIT_FSIZE, EXECBOX_DEFAULT_FILE_SIZE},
                 {RLIMIT_NOFILE, EB_NOFILE},
                 {RLIMIT_CPU, 10}};
    for (size_t i = 0; i < ARRAY_SIZE(check); i++) {
        struct rlimit rl;
        if (getrlimit(check[i].res, &rl) < 0)
            return -errno;
        if (rl.rlim_cur != check[i].want || rl.rlim_max != check[i].want)
            return -EPERM;
    }
    return 0;
}

static int probe_caps(void)
{
    for (int c = 0; c <= 63; c++) {
        int v = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
        if (v < 0 && errno == EINVAL)
            break;
        if (v != 0)
            return -EPERM; /* still in the bounding set */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) > 0)
            return -EPERM;
    }
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) < 0)
        return -errno;
    for (int i = 0; i < 2; i++)
        if (d[i].effective || d[i].permitted || d[i].inheritable)
            return -EPERM;
    return 0;
}

void eb_privs_probe(struct eb_privs_probe *ret)
{
    int fds[2];
    ret->no_new_privs = ret->capabilities = ret->rlimits = -ECHILD;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        ret->no_new_privs = ret->capabilities = ret->rlimits = -errno;
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        ret->no_new_privs = ret->capabilities = ret->rlimits = -errno;
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        /* Raw syscalls and our own async-signal-safe helpers only: forked from a possibly
         * threaded host. */
        struct eb_privs_probe p;
        p.rlimits = probe_rlimits();
        /* As an ordinary user a sandbox holds its capabilities in its own user namespace. */
        int r = geteuid() == 0 ? 0 : (unshare(CLONE_NEWUSER) < 0 ? -errno : 0);
        if (r == 0)
            r = eb_drop_privileges();
        p.capabilities = r < 0 ? r : probe_caps();
        /* On its own too: a failed drop above must not hide whether this works. */
        p.no_new_privs = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0    ? -errno
                         : prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0
                                                                       : -EPERM;
        (void)eb_write_all(fds[1], &p, sizeof(p));
        _exit(0);
    }
    close(fds[1]);
    int st;
    if (eb_wait_child(pid, 2000, &st) == 0) {
        struct eb_privs_probe p;
        if (eb_read_full(fds[0], &p, sizeof(p)) == (ssize_t)sizeof(p))
            *ret = p;
    }
    close(fds[0]);
}
