/* SPDX-License-Identifier: MIT */
/* mounts.c - building and running the sandbox's mount plan (see mounts.h). */
#include "jail/mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/ns.h"
#include "proc/childlib.h"

void eb_plan_init(struct eb_mount_plan *p)
{
    /* The ops and strings past n and used are never read: left as they are, a fresh plan's
     * 12 KiB are not all written (and faulted in) for the few entries a run uses. */
    p->n = 0;
    p->used = 0;
    p->overflow = 0;
}

static const char *plan_str(struct eb_mount_plan *p, const char *s, size_t len)
{
    if (!s)
        return NULL;
    if (p->used + len + 1 > sizeof(p->strings)) {
        p->overflow = 1;
        return "";
    }
    char *d = p->strings + p->used;
    memcpy(d, s, len);
    d[len] = '\0';
    p->used += len + 1;
    return d;
}

void eb_plan_add(struct eb_mount_plan *p, int type, const char *src, const char *dst,
                 const char *data, size_t len, int fd)
{
    if (p->n >= EB_MOPS_MAX) {
        p->overflow = 1;
        return;
    }
    struct eb_mop *o = &p->ops[p->n++];
    o->type = type;
    o->src = plan_str(p, src, src ? strlen(src) : 0);
    o->dst = plan_str(p, dst, strlen(dst));
    if (data && !len)
        len = strlen(data);
    o->data = plan_str(p, data, len);
    o->len = len;
    o->fd = fd;
    o->uid = o->gid = 0;
}

/* ---- staging /etc (parent, once per executor) ---------------------------------------------- */

/* Copies a regular file, keeping its modification time: Python validates a module's cached
 * bytecode by the source's mtime and size (sitecustomize.py in /usr/lib links into /etc), so a
 * staged copy with a new mtime would make every run recompile it, and fail to write the cache
 * into the read-only /usr. */
static int copy_file(const char *src, const struct stat *st, const char *dst)
{
    char *buf = NULL;
    size_t len = 0;
    int r = eb_read_file(src, 4U << 20, &buf, &len);
    if (r < 0)
        return r;
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        free(buf);
        return -errno;
    }
    r = eb_write_all(fd, buf, len);
    if (r == 0 && fchmod(fd, 0644) < 0) /* whatever our umask: the guest must read it */
        r = -errno;
    const struct timespec times[2] = {st->st_atim, st->st_mtim};
    if (r == 0 && futimens(fd, times) < 0)
        r = -errno;
    close(fd);
    free(buf);
    return r;
}

/* Copies src to dst: regular files, symlinks (as links) and directories up to depth levels. */
static int copy_tree(const char *src, const char *dst, int depth)
{
    struct stat st;
    if (lstat(src, &st) < 0)
        return -errno;
    if (S_ISLNK(st.st_mode)) {
        char t[EXECBOX_PATH_MAX];
        ssize_t n = readlink(src, t, sizeof(t) - 1);
        if (n < 0)
            return -errno;
        t[n] = '\0';
        return symlink(t, dst) < 0 ? -errno : 0;
    }
    if (S_ISREG(st.st_mode))
        return copy_file(src, &st, dst);
    if (!S_ISDIR(st.st_mode) || depth <= 0)
        return 0;
    if (mkdir(dst, 0755) < 0 && errno != EEXIST)
        return -errno;
    if (chmod(dst, 0755) < 0)
        return -errno;
    DIR *d = opendir(src);
    if (!d)
        return -errno;
    struct dirent *e;
    int r = 0;
    while ((e = readdir(d)) && r == 0) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char s[EXECBOX_PATH_MAX], t[EXECBOX_PATH_MAX];
        if (snprintf(s, sizeof(s), "%s/%s", src, e->d_name) >= (int)sizeof(s) ||
            snprintf(t, sizeof(t), "%s/%s", dst, e->d_name) >= (int)sizeof(t))
            continue;
        r = copy_tree(s, t, depth - 1);
        if (r == -EACCES || r == -ENOENT || r == -EFBIG)
            r = 0; /* best effort: an unreadable or huge file is simply left out */
    }
    closedir(d);
    return r;
}

/* What interpreters read from /etc: the dynamic linker's cache, BLAS/LAPACK alternatives
 * (numpy), Python's site configuration, matplotlib's rc, MIME types, the time zone, and
 * OpenSSL's config (node). Users and hosts are generated, not copied: no host account leaks. */
static const char *const etc_copy[] = {
    "ld.so.cache",    "ld.so.conf",  "ld.so.conf.d",    "alternatives",  "localtime",
    "timezone",       "python3",     "python3.11",      "python3.12",    "python3.13",
    "matplotlibrc",   "mime.types",  "ssl/openssl.cnf", "nsswitch.conf", "os-release",
    "debian_version", "bash.bashrc", "inputrc",         "fonts",
};

int eb_stage_etc(const char *stage_dir, struct execbox_error *err)
{
    char etc[EXECBOX_PATH_MAX], p[EXECBOX_PATH_MAX + 64], s[EXECBOX_PATH_MAX];
    snprintf(etc, sizeof(etc), "%s/etc", stage_dir);
    if (mkdir(etc, 0755) < 0)
        return eb_error_set(err, -errno, "mkdir %s: %s", etc, execbox_strerror(-errno));
    snprintf(p, sizeof(p), "%s/ssl", etc);
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return eb_error_set(err, -errno, "mkdir %s: %s", p, execbox_strerror(-errno));
    for (size_t i = 0; i < ARRAY_SIZE(etc_copy); i++) {
        snprintf(s, sizeof(s), "/etc/%s", etc_copy[i]);
        snprintf(p, sizeof(p), "%s/%s", etc, etc_copy[i]);
        int r = copy_tree(s, p, 4);
        if (r < 0 && r != -ENOENT && r != -EACCES)
            return eb_error_set(err, r, "stage %s: %s", s, execbox_strerror(r));
    }
    static const struct {
        const char *name, *text;
    } gen[] = {
        {"passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                   "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
                   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
        {"group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
        {"hosts", "127.0.0.1 localhost\n::1 localhost\n"},
        {"hostname", "execbox\n"},
        {"resolv.conf", ""},
    };
    for (size_t i = 0; i < ARRAY_SIZE(gen); i++) {
        snprintf(p, sizeof(p), "%s/%s", etc, gen[i].name);
        unlink(p);
        int r = eb_write_file(p, gen[i].text, strlen(gen[i].text), 0644);
        if (r < 0)
            return eb_error_set(err, r, "write %s: %s", p, execbox_strerror(r));
        if (chmod(p, 0644) < 0)
            return eb_error_set(err, -errno, "chmod %s: %s", p, execbox_strerror(-errno));
    }
    return 0;
}

int eb_plan_system(struct eb_mount_plan *p, const char *stage_dir, const char *rootfs,
                   struct execbox_error *err)
{
    char src[EXECBOX_PATH_MAX];
    /* System directories: on merged-/usr systems /bin, /lib... are symlinks into /usr, and
     * recreating the link costs nothing while a bind costs a mount. */
    static const char *const sys[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
    for (size_t i = 0; i < ARRAY_SIZE(sys); i++) {
        if (snprintf(src, sizeof(src), "%s/%s", rootfs, sys[i]) >= (int)sizeof(src))
            return eb_error_set(err, -ENAMETOOLONG, "rootfs path too long");
        struct stat st;
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char t[EXECBOX_PATH_MAX];
            ssize_t n = readlink(src, t, sizeof(t) - 1);
            if (n < 0)
                continue;
            t[n] = '\0';
            eb_plan_add(p, EB_MOP_SYMLINK, t, sys[i], NULL, 0, -1);
        } else if (S_ISDIR(st.st_mode)) {
            eb_plan_add(p, EB_MOP_DIR, NULL, sys[i], NULL, 0, -1);
            eb_plan_add(p, EB_MOP_BIND_RO, src, sys[i], NULL, 0, -1);
        }
    }
    eb_plan_add(p, EB_MOP_DIR, NULL, "etc", NULL, 0, -1);
    if (rootfs[0]) {
        /* A caller's root image brings its own /etc. */
        snprintf(src, sizeof(src), "%s/etc", rootfs);
        eb_plan_add(p, EB_MOP_BIND_RO, src, "etc", NULL, 0, -1);
    } else if (stage_dir) {
        snprintf(src, sizeof(src), "%s/etc", stage_dir);
        eb_plan_add(p, EB_MOP_BIND_RO, src, "etc", NULL, 0, -1);
    } /* else: the caller binds /etc per run */
    /* A minimal /dev: the five harmless character devices, bound from the host because a
     * user namespace cannot create device nodes; a small shared-memory tmpfs for Python's
     * multiprocessing; the usual fd links. No tty, no block device, no mem, no kmsg. */
    eb_plan_add(p, EB_MOP_DIR, NULL, "dev", NULL, 0, -1);
    static const char *const devs[] = {"null", "zero", "full", "random", "urandom"};
    for (size_t i = 0; i < ARRAY_SIZE(devs); i++) {
        char d[32];
        snprintf(src, sizeof(src), "/dev/%s", devs[i]);
        snprintf(d, sizeof(d), "dev/%s", devs[i]);
        eb_plan_add(p, EB_MOP_FILE, NULL, d, "", 0, -1);
        eb_plan_add(p, EB_MOP_BIND_DEV, src, d, NULL, 0, -1);
    }
    eb_plan_add(p, EB_MOP_SYMLINK, "/proc/self/fd", "dev/fd", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_SYMLINK, "/proc/self/fd/0", "dev/stdin", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_SYMLINK, "/proc/self/fd/1", "dev/stdout", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_SYMLINK, "/proc/self/fd/2", "dev/stderr", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_DIR, NULL, "dev/shm", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_DIR, NULL, "proc", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_PROC, NULL, "proc", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_DIR, NULL, "tmp", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_DIR, NULL, "workspace", NULL, 0, -1);
    eb_plan_add(p, EB_MOP_DIR, NULL, "code", NULL, 0, -1);
    if (p->overflow)
        return eb_error_set(err, -E2BIG, "mount plan too large");
    return 0;
}

/* ---- child side: raw syscalls only --------------------------------------------------------- */

static int setattr(const char *path, unsigned flags, uint64_t set)
{
    struct mount_attr a;
    memset(&a, 0, sizeof(a));
    a.attr_set = set;
    return syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, sizeof(a)) < 0 ? -errno : 0;
}

static int run_op(const struct eb_mop *o)
{
    switch (o->type) {
    case EB_MOP_DIR: return mkdir(o->dst, 0755) < 0 && errno != EEXIST ? -errno : 0;
    case EB_MOP_SYMLINK: return symlink(o->src, o->dst) < 0 ? -errno : 0;
    case EB_MOP_FILE: {
        int fd = open(o->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
            return -errno;
        int r = o->len ? eb_write_all(fd, o->data, o->len) : 0;
        close(fd);
        return r;
    }
    case EB_MOP_BIND_RO:
        if (mount(o->src, o->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
            return -errno;
        /* Read-only, no setuid, no devices, on every submount too. */
        return setattr(o->dst, AT_RECURSIVE,
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case EB_MOP_BIND_RW:
        if (mount(o->src, o->dst, NULL, MS_BIND, NULL) < 0)
            return -errno;
        return setattr(o->dst, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case EB_MOP_BIND_DEV:
        if (mount(o->src, o->dst, NULL, MS_BIND, NULL) < 0)
            return -errno;
        return setattr(o->dst, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    case EB_MOP_TMPFS:
        return mount("tmpfs", o->dst, "tmpfs", MS_NOSUID | MS_NODEV, o->data) < 0 ? -errno : 0;
    case EB_MOP_ATTACH:
    case EB_MOP_ATTACH_COVER: return eb_attach_mount(o->fd, o->dst, o->type == EB_MOP_ATTACH_COVER);
    case EB_MOP_CHOWN:
        return syscall(SYS_fchownat, AT_FDCWD, o->dst, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0
                   ? -errno
                   : 0;
    case EB_MOP_RDONLY:
        return setattr(o->dst, 0,
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                           MOUNT_ATTR_NOEXEC);
    case EB_MOP_PROC:
        /* Shows only our pid namespace's processes. */
        return mount("proc", o->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? -errno
                                                                                         : 0;
    }
    return -EINVAL;
}

static int run_plans(const struct eb_mount_plan *const *plans, size_t nplans, bool skip_proc,
                     const char **ret_step)
{
    for (size_t k = 0; k < nplans; k++)
        for (size_t i = 0; i < plans[k]->n; i++) {
            if (skip_proc && plans[k]->ops[i].type == EB_MOP_PROC)
                continue;
            int r = run_op(&plans[k]->ops[i]);
            if (r < 0) {
                *ret_step = plans[k]->ops[i].dst;
                return r;
            }
        }
    return 0;
}

static int mount_root(const char *root_dir, const struct eb_mount_plan *const *plans, size_t nplans,
                      bool skip_proc, const char **ret_step)
{
    *ret_step = "/";
    /* Nothing we mount may propagate back to the host, and host mount events must not reach
     * us: everything private, recursively. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -errno;
    /* The new root: a tmpfs only big enough for mount points and links, attached on root_dir
     * through an fd and entered through the mount's own fd: root_dir is looked up once, so a
     * concurrent re-stage that renames the directory above it cannot leave us in another
     * directory than the one we mounted on (pivot_root then failed with EBUSY). */
    int pin = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pin < 0)
        return -errno;
    int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0) {
        close(pin);
        return -errno;
    }
    static const char *const opts[][2] = {{"size", "1m"}, {"nr_inodes", "512"}, {"mode", "0755"}};
    int r = 0;
    for (size_t i = 0; i < ARRAY_SIZE(opts) && r == 0; i++)
        if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, opts[i][0], opts[i][1], 0) < 0)
            r = -errno;
    if (r == 0 && syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        r = -errno;
    int m = r == 0 ? (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                                  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
                   : -1;
    if (r == 0 && m < 0)
        r = -errno;
    close(fs);
    if (r == 0 && syscall(SYS_move_mount, m, "", pin, "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        r = -errno;
    close(pin);
    if (r == 0 && fchdir(m) < 0)
        r = -errno;
    if (m >= 0)
        close(m);
    if (r < 0)
        return r;
    r = run_plans(plans, nplans, skip_proc, ret_step);
    if (r < 0)
        return r;
    *ret_step = "pivot_root";
    /* pivot_root(".", "."): the old root ends up stacked under the new one; detaching it
     * leaves no path to any host directory we did not bind. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return -errno;
    if (umount2(".", MNT_DETACH) < 0)
        return -errno;
    if (chdir("/") < 0)
        return -errno;
    /* The root itself read-only: no new top-level files or directories. */
    *ret_step = "read-only root";
    return setattr("/", 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

int eb_mount_run(const char *root_dir, const struct eb_mount_plan *const *plans, size_t nplans,
                 const char **ret_step)
{
    return mount_root(root_dir, plans, nplans, false, ret_step);
}

#define PREPARE_TIMEOUT_MS 10000

int eb_mount_ns_prepare(const char *root_dir, const struct eb_mount_plan *const *plans,
                        size_t nplans, int *ret_fd, struct execbox_error *err)
{
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
    int pidfd = -1;
    /* A helper in a new mount namespace (a copy of ours, once): it builds the root there and
     * waits to be killed; the namespace lives on in the fd we open. */
    pid_t pid = eb_clone_ns(CLONE_NEWNS, &pidfd);
    if (pid < 0) {
        int e = -errno;
        close(ready[0]);
        close(ready[1]);
        return eb_error_set(err, e, "clone3 into a new mount namespace: %s", execbox_strerror(e));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        const char *step = "";
        int r = mount_root(root_dir, plans, nplans, true, &step);
        struct execbox_error e = {0, ""};
        if (r < 0)
            eb_error_set_raw(&e, r, step);
        (void)eb_write_all(ready[1], &e, sizeof(e));
        for (;;)
            pause();
    }
    close(ready[1]);
    struct execbox_error e = {-EIO, "the helper died"};
    struct pollfd p = {.fd = ready[0], .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, PREPARE_TIMEOUT_MS)) < 0 && errno == EINTR)
        ;
    int r;
    if (n <= 0)
        r = eb_error_set(err, -ETIMEDOUT, "preparing the mount namespace timed out");
    else if (eb_read_full(ready[0], &e, sizeof(e)) != (ssize_t)sizeof(e) || e.code < 0)
        r = eb_error_set(err, e.code < 0 ? e.code : -EIO, "prepare the sandbox's root: %.200s: %s",
                         e.msg, execbox_strerror(e.code < 0 ? e.code : -EIO));
    else {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        r = fd < 0 ? eb_error_set(err, -errno, "open %s: %s", path, execbox_strerror(-errno)) : 0;
        if (fd >= 0)
            *ret_fd = fd;
    }
    close(ready[0]);
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    siginfo_t si;
    while (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL) < 0 && errno == EINTR)
        ;
    close(pidfd);
    return r;
}

int eb_mount_ns_enter(int ns_fd, const struct eb_mount_plan *const *plans, size_t nplans,
                      const char **ret_step)
{
    *ret_step = "join the prepared mount namespace";
    if (setns(ns_fd, CLONE_NEWNS) < 0)
        return -errno;
    /* Our own copy: the runs' mounts never reach the prepared namespace or each other. */
    *ret_step = "unshare the mount namespace";
    if (unshare(CLONE_NEWNS) < 0)
        return -errno;
    if (chdir("/") < 0)
        return -errno;
    int r = run_plans(plans, nplans, false, ret_step);
    if (r < 0)
        return r;
    return chdir("/") < 0 ? -errno : 0;
}
