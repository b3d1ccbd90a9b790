/* SPDX-License-Identifier: MIT */
/* hostws.h - a caller's host directory as a run's /workspace. As root: an id-mapped clone of its
 * mount (MOUNT_ATTR_IDMAP), so that the host inode is never chowned: through it the guest (its
 * own host uid) is seen as the directory's owner, and what it creates belongs on the host to the
 * directory's owner and group. Unprivileged: the guest is the user outside already, and the
 * sandbox's init binds the path. Either way the directory is pinned by an fd and its owner and
 * mode are put back after the run; as root a journal (stage.h) puts them back should execbox be
 * killed in between. */
#ifndef EB_JAIL_HOSTWS_H
#define EB_JAIL_HOSTWS_H

#include <sys/stat.h>

#include "base/limits.h"
#include "execbox/execbox.h"
#include "jail/ns.h"

struct eb_host_ws {
    /* The host directory that is the run's /workspace: a caller's, or (unprivileged, no caller's)
     * a fresh private one the run removes; "" when none. */
    char path[EXECBOX_PATH_MAX];
    int root_fd;      /* a caller's directory, pinned, or -1 */
    struct stat st;   /* its owner and mode before the run, restored after it */
    char journal[64]; /* root mode: its journal entry (stage.h), or "" */
};

/* An empty one: no directory. */
void eb_host_ws_init(struct eb_host_ws *w);

/* Opens the caller's directory path as w: refused when it is a system directory. As root
 * (u->root_mode; u the sandbox's maps), writes its journal next to the stage cache (id names
 * the executor) and returns in *ret_mount the detached id-mapped mount for the sandbox to
 * attach; unprivileged *ret_mount is left alone. 0 or -errno with err set; what was opened stays
 * in w for eb_host_ws_close. */
int eb_host_ws_open(struct eb_host_ws *w, const char *path, const struct eb_userns *u,
                    const char *cache, unsigned id, int *ret_mount, struct execbox_error *err);

/* After the run: puts the directory's owner and mode back, unpins it and removes its journal.
 * w->path stays (the caller removes a fresh directory). */
void eb_host_ws_close(struct eb_host_ws *w);

#endif
