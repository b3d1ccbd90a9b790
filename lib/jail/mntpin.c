/* SPDX-License-Identifier: MIT */
/* mntpin.c - the prepared mount namespace pinned on the host (see mntpin.h): found by a readdir
 * of a few entries and one open, made under a lock by the first run that finds none. */
#include "jail/mntpin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/cache.h"

#define LOCK_WAIT_MS 5000 /* another process preparing: ~1 ms, 10 s at worst (its own limit) */

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t fnv_str(const char *s, uint64_t h)
{
    return fnv(s ? s : "", s ? strlen(s) + 1 : 1, h);
}

/* What the prepared namespace is made of: the plans' ops, the root's mount point, and the code
 * that made it (our build id). */
static void pin_key(const char *root_dir, const struct eb_mount_plan *const *plans, size_t nplans,
                    char key[17])
{
    char bid[80];
    eb_build_id(bid, sizeof(bid));
    uint64_t h = fnv_str(bid, 1469598103934665603ULL);
    h = fnv_str(root_dir, h);
    for (size_t k = 0; k < nplans; k++)
        for (size_t i = 0; i < plans[k]->n; i++) {
            const struct eb_mop *op = &plans[k]->ops[i];
            h = fnv(&op->type, sizeof(op->type), h);
            h = fnv_str(op->src, h);
            h = fnv_str(op->dst, h);
            h = op->type == EB_MOP_FILE ? fnv(op->data, op->len, h) : fnv_str(op->data, h);
            h = fnv(&op->uid, sizeof(op->uid), h);
            h = fnv(&op->gid, sizeof(op->gid), h);
        }
    snprintf(key, 17, "%016llx", (unsigned long long)h);
}

static long boot_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* "<16 hex>.<ms>": the key and when it was made (CLOCK_BOOTTIME); 0, or -1 for any other
 * name. */
static int parse_name(const char *name, char key[17], long *ret_made)
{
    size_t n = strspn(name, "0123456789abcdef");
    if (n != 16 || name[16] != '.' || name[17] < '0' || name[17] > '9')
        return -1;
    char *end;
    long made = strtol(name + 17, &end, 10);
    if (*end || made < 0)
        return -1;
    memcpy(key, name, 16);
    key[16] = '\0';
    *ret_made = made;
    return 0;
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8: never reused */
#endif

/* The id of the mount dfd is the root of (the unique one where the kernel has it), or 0 when
 * dfd is not a mount's root. */
static unsigned long long mount_root_id(int dfd, struct statx *stx)
{
    if (statx(dfd, "", AT_EMPTY_PATH, STATX_MODE | STATX_UID | STATX_MNT_ID | STATX_MNT_ID_UNIQUE,
              stx) < 0 ||
        !(stx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
        !(stx->stx_attributes & STATX_ATTR_MOUNT_ROOT) ||
        !(stx->stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE)))
        return 0;
    return (unsigned long long)stx->stx_mnt_id;
}

/* The marker naming the mount the pins were made in: ".mnt-<id>". A new mount namespace gets
 * a copy of our tmpfs (same files, another mount id) but none of the pins (the kernel copies
 * no mount-namespace file into a new namespace, and refuses to bind one on the copy): there
 * the pins' mount points are empty files of another namespace, neither to use nor to remove
 * (removing a file removes the mounts on it in every namespace). */
static void marker_name(unsigned long long id, char *buf, size_t n)
{
    snprintf(buf, n, ".mnt-%llu", id);
}

/* dir itself, ours in this mount namespace: the root of a tmpfs mount (not a directory in some
 * other file system), root's, mode 0700, with the marker of this very mount. -EPERM: something
 * we must not use; -ENOTDIR: not a mount of ours here (yet). */
static int open_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct statx stx;
    struct statfs fs;
    char marker[48];
    unsigned long long id = mount_root_id(fd, &stx);
    int r = 0;
    if (id == 0 || fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC)
        r = -ENOTDIR;
    else if (stx.stx_uid != 0 || (stx.stx_mode & 07777) != 0700)
        r = -EPERM;
    else {
        struct stat st;
        marker_name(id, marker, sizeof(marker));
        if (fstatat(fd, marker, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            r = -ENOTDIR;
    }
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* An entry's fd if it is a pin: an nsfs file of a mount namespace. */
static int open_pin(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct statfs fs;
    if (fstatfs(fd, &fs) < 0 || fs.f_type != NSFS_MAGIC ||
        ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNS) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

/* The newest valid pin of key in dfd, or -ENOENT. */
static int find_pin(int dfd, const char *key, double max_age)
{
    int dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return -errno;
    }
    long now = boot_ms(), best_made = -1;
    char best[64] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        char k[17];
        long made;
        if (parse_name(e->d_name, k, &made) < 0 || strcmp(k, key) != 0 || made > now ||
            (double)(now - made) > max_age * 1e3 || made <= best_made)
            continue;
        best_made = made;
        snprintf(best, sizeof(best), "%s", e->d_name);
    }
    closedir(d);
    return best[0] ? open_pin(dfd, best) : -ENOENT;
}

/* Detaches the pin at name (if it is one) and removes its mount point. */
static void drop_entry(const char *dir, int dfd, const char *name)
{
    char p[EXECBOX_PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open_pin(dfd, name);
    if (fd >= 0) {
        close(fd);
        /* Lazily: a process that opened it keeps the namespace alive through its fd; the
         * runs that joined it have their own copies already. */
        (void)umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
    (void)unlinkat(dfd, name, 0);
}

/* Under the lock: drops every non-pin, every stale pin and every pin of key (about to be
 * replaced), and the oldest others beyond EB_MNTNS_PINS_MAX - keep. */
static void sweep_locked(const char *dir, int dfd, const char *key, double max_age, int keep)
{
    int dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return;
    }
    long now = boot_ms();
    char live[16][64];
    long made_of[16];
    int n_live = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strncmp(e->d_name, ".mnt-", 5) == 0)
            continue;
        char k[17];
        long made;
        int fd = -1;
        bool keep_it = parse_name(e->d_name, k, &made) == 0 && made <= now &&
                       (double)(now - made) <= max_age * 1e3 && (!key || strcmp(k, key) != 0) &&
                       (fd = open_pin(dfd, e->d_name)) >= 0;
        if (fd >= 0)
            close(fd);
        if (keep_it && n_live < 16) {
            snprintf(live[n_live], sizeof(live[n_live]), "%s", e->d_name);
            made_of[n_live++] = made;
        } else {
            drop_entry(dir, dfd, e->d_name);
        }
    }
    closedir(d);
    /* Bounded: the oldest go first. */
    while (n_live > EB_MNTNS_PINS_MAX - keep) {
        int oldest = 0;
        for (int i = 1; i < n_live; i++)
            if (made_of[i] < made_of[oldest])
                oldest = i;
        drop_entry(dir, dfd, live[oldest]);
        live[oldest][0] = '\0';
        made_of[oldest] = made_of[--n_live];
        memcpy(live[oldest], live[n_live], sizeof(live[oldest]));
    }
}

/* The lock on dir's parent (it exists before dir's tmpfs does), within LOCK_WAIT_MS; or with
 * block false, only if free now. */
static int lock_parent(const char *dir, bool block)
{
    char parent[EXECBOX_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return -EINVAL;
    *slash = '\0';
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    uint64_t end = eb_now_ns() + (uint64_t)LOCK_WAIT_MS * 1000000ULL;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || !block || eb_now_ns() >= end) {
            int e = errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
            close(fd);
            return e;
        }
        usleep(500);
    }
    return fd;
}

/* dir as our tmpfs: mounted now if it is not yet. */
static int make_dir(const char *dir)
{
    int dfd = open_dir(dir);
    if (dfd >= 0 || (dfd != -ENOENT && dfd != -ENOTDIR))
        return dfd; /* ours, or something we must not use */
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
        return -EPERM;
    /* (On top of a copy of another namespace's pins tmpfs, if there is one: ours is private to
     * this namespace and dies with it.) */
    /* A tmpfs of our own for the pins: a mount namespace file may be bound only on a mount
     * that does not propagate (the bind would otherwise reach namespaces that must not hold
     * it, and the kernel refuses that), and this keeps them off /run's own propagation and out
     * of any other process's way. Private at once: nothing we bind here propagates anywhere. */
    if (mount("execbox-mntns", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0700,size=64k,nr_inodes=64") < 0)
        return -errno;
    int e = 0;
    if (mount(NULL, dir, NULL, MS_PRIVATE, NULL) < 0)
        e = -errno;
    int fd = e < 0 ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct statx stx;
    unsigned long long id = fd < 0 ? 0 : mount_root_id(fd, &stx);
    if (e == 0 && id == 0)
        e = fd < 0 ? -errno : -EIO;
    if (e == 0) {
        char marker[48];
        marker_name(id, marker, sizeof(marker));
        int m = openat(fd, marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (m < 0)
            e = -errno;
        else
            close(m);
    }
    if (fd >= 0)
        close(fd);
    if (e < 0) {
        (void)umount2(dir, MNT_DETACH);
        return e;
    }
    return open_dir(dir);
}

int eb_mntns_pin_open(const char *dir, const char *root_dir,
                      const struct eb_mount_plan *const *plans, size_t nplans, double max_age,
                      int *ret_fd, bool *ret_pinned, struct execbox_error *err)
{
    char key[17];
    pin_key(root_dir, plans, nplans, key);
    *ret_pinned = false;
    /* The common case: a valid pin, no lock. */
    {
        _cleanup_close_ int dfd = open_dir(dir);
        int fd = dfd >= 0 ? find_pin(dfd, key, max_age) : -ENOENT;
        if (fd >= 0) {
            *ret_fd = fd;
            *ret_pinned = true;
            return 0;
        }
    }
    _cleanup_close_ int lk = lock_parent(dir, true);
    _cleanup_close_ int dfd = lk >= 0 ? make_dir(dir) : -1;
    if (dfd >= 0) {
        /* Someone else may have made it while we waited. */
        int fd = find_pin(dfd, key, max_age);
        if (fd >= 0) {
            *ret_fd = fd;
            *ret_pinned = true;
            return 0;
        }
        sweep_locked(dir, dfd, key, max_age, 1);
    }
    int ns = -1;
    int r = eb_mount_ns_prepare(root_dir, plans, nplans, &ns, err);
    if (r < 0)
        return r;
    if (dfd >= 0) {
        char name[64], p[EXECBOX_PATH_MAX + 64], src[64];
        snprintf(name, sizeof(name), "%s.%ld", key, boot_ms());
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        snprintf(src, sizeof(src), "/proc/self/fd/%d", ns);
        int m = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (m >= 0) {
            close(m);
            /* The pin: a bind of the namespace's file keeps the namespace (and the few mounts
             * of the sandbox's root in it) alive without a process, so that the next execbox
             * processes join it instead of copying the host's table. */
            if (mount(src, p, NULL, MS_BIND, NULL) == 0)
                *ret_pinned = true;
            else
                (void)unlinkat(dfd, name, 0);
        }
    }
    *ret_fd = ns;
    return 0;
}

void eb_mntns_pin_sweep(const char *dir, double max_age)
{
    _cleanup_close_ int dfd = open_dir(dir);
    if (dfd < 0)
        return;
    _cleanup_close_ int lk = lock_parent(dir, false);
    if (lk >= 0)
        sweep_locked(dir, dfd, NULL, max_age, 0);
}

int eb_mntns_pin_remove_all(const char *dir)
{
    _cleanup_close_ int lk = lock_parent(dir, true);
    if (lk < 0)
        return lk;
    {
        _cleanup_close_ int dfd = open_dir(dir);
        if (dfd < 0)
            return dfd == -ENOENT || dfd == -ENOTDIR ? 0 : dfd;
        sweep_locked(dir, dfd, NULL, -1, EB_MNTNS_PINS_MAX);
    }
    if (umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
        return -errno;
    (void)rmdir(dir);
    return 0;
}
