/* SPDX-License-Identifier: MIT */
/* stage.h - the jail's stage directory: the staged /etc and the mount point of new roots, kept
 * between execbox processes (root's /run/execbox/jail, an ordinary user's in $TMPDIR); the
 * sweep of what killed execbox processes left behind; and the journal of a caller's workspace
 * root in flight, which the sweep replays. */
#ifndef EB_JAIL_STAGE_H
#define EB_JAIL_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "execbox/execbox.h"
#include "jail/cgroup.h"

/* The stage directory's path (staged /etc, the root's mount point, the probe cache): root's
 * under /run/execbox, an ordinary user's in $TMPDIR. eb_stage_prepare makes it. */
void eb_stage_path(char *buf, size_t n);

/* Makes the stage directory at eb_stage_path (into cache, n bytes), or checks that the one there
 * is a private directory of ours with a staged /etc newer than its sources; re-stages when it is
 * not (a new stage built aside, then swapped in atomically). 0 or -errno with err set. */
int eb_stage_prepare(char *cache, size_t n, struct execbox_error *err);

/* Removes what execbox processes killed before their teardown left behind (run cgroups named
 * cg_prefix-<pid>-..., unprivileged workspaces, /etc stages no sandbox holds, the mount-namespace
 * pins' stale entries as root), and, as root, replays the workspace-root journals of dead runs.
 * At most once per EB_SWEEP_INTERVAL seconds per sweep scope, unless force. */
void eb_stage_sweep(const struct eb_cgroup_root *cg, const char *cg_prefix, const char *cache,
                    bool root_mode, bool force);

/* Writes the journal of a caller's workspace root (root mode): the directory host, whose owner
 * and mode before the run are *st, next to the stage cache; id names the executor. Its path goes
 * into ret_path (n bytes), for the caller to unlink after the run. 0 or -errno with err set. */
int eb_ws_journal_write(const char *cache, unsigned id, const char *host, const struct stat *st,
                        char *ret_path, size_t n, struct execbox_error *err);

/* Puts the owner and mode of the directory fd back to those of *before. */
void eb_ws_root_restore(int fd, const struct stat *before);

#endif
