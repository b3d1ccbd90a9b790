/* SPDX-License-Identifier: MIT */
/* tmpfs.c - detached tmpfs mounts for a run (tmpfs.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/mounts.h"
#include "jail/tmpfs.h"

/* A detached tmpfs (fsopen/fsmount) with the given "key=value" options and mount attributes:
 * each option is checked on its own, so an error names the one the kernel refused and its own
 * errno (never several calls' results merged). what names the mount in messages. */
int eb_tmpfs_detached(const char *const *opts, size_t n, unsigned attrs, const char *what,
                      struct execbox_error *err)
{
    _cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return eb_error_set(err, -errno, "fsopen the %s tmpfs: %s", what, execbox_strerror(-errno));
    for (size_t i = 0; i < n; i++) {
        char key[32];
        const char *eq = strchr(opts[i], '=');
        if (!eq || (size_t)(eq - opts[i]) >= sizeof(key))
            return eb_error_set(err, -EINVAL, "the %s tmpfs: bad option '%s'", what, opts[i]);
        memcpy(key, opts[i], (size_t)(eq - opts[i]));
        key[eq - opts[i]] = '\0';
        if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, key, eq + 1, 0) < 0)
            return eb_error_set(err, -errno, "the %s tmpfs: option '%s': %s", what, opts[i],
                                execbox_strerror(-errno));
    }
    if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return eb_error_set(err, -errno, "create the %s tmpfs: %s", what, execbox_strerror(-errno));
    int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
    if (m < 0)
        return eb_error_set(err, -errno, "fsmount the %s tmpfs: %s", what,
                            execbox_strerror(-errno));
    return m;
}

/* A fresh /workspace: a tmpfs of workspace_size made in the host's mount namespace but
 * attached nowhere there (fsopen/fsmount), handed to the child to attach; our fd keeps it
 * readable after the sandbox is gone, so its files can be listed, and closing it frees it. */
int eb_tmpfs_workspace(const struct eb_userns *u, uint64_t size, struct execbox_error *err)
{
    char sz[40], uid[24], gid[24];
    snprintf(sz, sizeof(sz), "size=%" PRIu64, size);
    snprintf(uid, sizeof(uid), "uid=%u", (unsigned)u->host_uid);
    snprintf(gid, sizeof(gid), "gid=%u", (unsigned)u->host_gid);
    const char *const opts[] = {sz, "mode=0755", "nr_inodes=65536", uid, gid};
    return eb_tmpfs_detached(opts, ARRAY_SIZE(opts), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                             "workspace", err);
}

/* Whether open_tree(OPEN_TREE_CLONE) takes a detached mount (Linux 6.15+): 0 not yet known, 1
 * yes, -1 no (then the child covers the writable mount itself: eb_attach_mount). */
static atomic_int detached_clone;

/* A detached tmpfs for a warm sandbox's /code: *ret_rw stays with us to write the program
 * and its stdin into at run time; *ret_ro, a read-only clone of the same mount, is what the
 * child attaches. The guest sees the files, read-only, and cannot make the mount writable
 * (no capability over its mount namespace; seccomp denies the mount calls). Where the kernel
 * cannot clone a detached mount, *ret_ro is a second fd of the writable mount and *ret_cover
 * is set: the child attaches it covered by a read-only clone made once it is attached, which
 * gives the guest the same view (eb_attach_mount). */
int eb_tmpfs_code(int *ret_rw, int *ret_ro, bool *ret_cover, struct execbox_error *err)
{
    char sz[40];
    snprintf(sz, sizeof(sz), "size=%u", EXECBOX_CODE_MAX + EXECBOX_STDIN_MAX + (1U << 20));
    const char *const opts[] = {sz, "mode=0755", "nr_inodes=16"};
    int r, rw = eb_tmpfs_detached(opts, ARRAY_SIZE(opts),
                                  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "code",
                                  err);
    if (rw < 0)
        return rw;
    *ret_cover = false;
    int ro = -1;
    if (atomic_load(&detached_clone) == 0 && eb_compat_forced("detached-clone"))
        atomic_store(&detached_clone, -1);
    if (atomic_load(&detached_clone) >= 0) {
        ro = (int)syscall(SYS_open_tree, rw, "",
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (ro < 0 && errno == EINVAL)
            atomic_store(&detached_clone, -1);
        else if (ro >= 0)
            atomic_store(&detached_clone, 1);
    }
    if (ro < 0 && atomic_load(&detached_clone) < 0) {
        ro = fcntl(rw, F_DUPFD_CLOEXEC, 3);
        *ret_cover = ro >= 0;
    }
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       MOUNT_ATTR_NOEXEC};
    if (ro < 0 ||
        (!*ret_cover && syscall(SYS_mount_setattr, ro, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)) {
        r = -errno;
        if (ro >= 0)
            close(ro);
        close(rw);
        return eb_error_set(err, r, "a read-only view of the code tmpfs: %s", execbox_strerror(r));
    }
    *ret_rw = rw;
    *ret_ro = ro;
    return 0;
}
