/* SPDX-License-Identifier: MIT */
/* tmpfs.h - the detached tmpfs mounts a run is handed (fsopen/fsmount in the host's mount
 * namespace, attached nowhere there; the sandbox's init attaches them): a fresh /workspace, and
 * a warm sandbox's /code with its read-only view. Root only (the mount API needs CAP_SYS_ADMIN
 * over the host's mount namespace). */
#ifndef EB_JAIL_TMPFS_H
#define EB_JAIL_TMPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"
#include "jail/ns.h"

/* A detached tmpfs with the given "key=value" options and mount attributes (MOUNT_ATTR_*):
 * each option is set on its own, so an error names the one the kernel refused and its errno.
 * what names the mount in messages. Its fd (O_CLOEXEC), or -errno with err set. */
int eb_tmpfs_detached(const char *const *opts, size_t n, unsigned attrs, const char *what,
                      struct execbox_error *err);

/* A fresh /workspace of size bytes, owned by u's host uid and gid, nosuid and nodev: the
 * caller's fd keeps it readable after the sandbox is gone, and closing it frees it. Its fd, or
 * -errno with err set. */
int eb_tmpfs_workspace(const struct eb_userns *u, uint64_t size, struct execbox_error *err);

/* A warm sandbox's /code: *ret_rw, the writable mount, to write the program and its stdin into
 * at run time; *ret_ro, what the sandbox attaches: a read-only clone of it, or (*ret_cover set,
 * a kernel that cannot clone a detached mount) a second fd of the writable mount, to attach
 * covered by a read-only clone (eb_attach_mount). 0 or -errno with err set. */
int eb_tmpfs_code(int *ret_rw, int *ret_ro, bool *ret_cover, struct execbox_error *err);

#endif
