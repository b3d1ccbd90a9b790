/* SPDX-License-Identifier: MIT */
/* hostws.c - a caller's host directory as a run's /workspace (hostws.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/hostws.h"
#include "jail/stage.h"
#include "ws/workspace.h"

void eb_host_ws_init(struct eb_host_ws *w)
{
    w->path[0] = '\0';
    w->root_fd = -1;
    w->journal[0] = '\0';
}

/* The directory is pinned by an fd, and its owner and mode are kept to be put back after the
 * run (the code may change what is inside, not the directory it was handed). */
int eb_host_ws_open(struct eb_host_ws *w, const char *path, const struct eb_userns *u,
                    const char *cache, unsigned id, int *ret_mount, struct execbox_error *err)
{
    if (!realpath(path, w->path))
        return eb_error_set(err, -errno, "workspace '%s': %s", path, execbox_strerror(-errno));
    int r = eb_workspace_check_host(w->path, err);
    if (r < 0)
        return r;
    w->root_fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (w->root_fd < 0)
        return eb_error_set(err, errno == ENOTDIR ? -ENOTDIR : -errno,
                            "workspace '%s' is not a directory we can open: %s", path,
                            execbox_strerror(-errno));
    if (fstat(w->root_fd, &w->st) < 0)
        return eb_error_set(err, -errno, "stat the workspace: %s", execbox_strerror(-errno));
    if (!u->root_mode)
        return 0;
    if ((r = eb_ws_journal_write(cache, id, w->path, &w->st, w->journal, sizeof(w->journal), err)) <
        0)
        return r;
    _cleanup_close_ int tree = (int)syscall(SYS_open_tree, w->root_fd, "",
                                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        return eb_error_set(err, -errno, "clone the workspace mount: %s", execbox_strerror(-errno));
    _cleanup_close_ int userns = -1;
    if ((r = eb_idmap_userns(w->st.st_uid, u->host_uid, w->st.st_gid, u->host_gid, &userns, err)) <
        0)
        return r;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                           .userns_fd = (uint64_t)userns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
        int e = errno;
        /* The common case on distribution kernels: a workspace under /tmp or /dev/shm, whose
         * tmpfs supports id-mapped mounts from Linux 6.3 only. Said so, with the way out. */
        struct statfs fs;
        bool tmpfs = fstatfs(w->root_fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
        return eb_error_set(err, -e,
                            "id-map the workspace '%s' (its filesystem must support id-mapped "
                            "mounts%s): %s",
                            path,
                            tmpfs ? "; tmpfs does from Linux 6.3: use a directory on ext4, xfs "
                                    "or btrfs, or no --workspace (a fresh one)"
                                  : "",
                            execbox_strerror(-e));
    }
    *ret_mount = TAKE_FD(tree);
    return 0;
}

void eb_host_ws_close(struct eb_host_ws *w)
{
    if (w->root_fd >= 0)
        eb_ws_root_restore(w->root_fd, &w->st);
    eb_close(&w->root_fd);
    if (w->journal[0])
        (void)unlink(w->journal);
    w->journal[0] = '\0';
}
