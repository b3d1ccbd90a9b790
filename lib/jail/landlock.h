/* SPDX-License-Identifier: MIT */
/* landlock.h - the jail's second filesystem wall: after pivot_root, the guest may read and
 * execute everywhere it can see but write, create, remove and rename only beneath a few
 * directories (and write to the harmless character devices). Raw syscalls, no library, so the
 * apply step is async-signal-safe. Where the kernel lacks Landlock, the read-only mounts remain
 * the only wall and `execbox check` says so. */
#ifndef EB_JAIL_LANDLOCK_H
#define EB_JAIL_LANDLOCK_H

#include <stddef.h>

#include "execbox/execbox.h"

/* Most writable directories eb_landlock_apply() takes. */
#define EB_LANDLOCK_MAX_DIRS 16

/* The kernel's Landlock ABI version (1 for 5.13, 2 adds REFER, 3 TRUNCATE, ...), 0 when the
 * kernel has none or it is disabled at boot. Async-signal-safe. */
int eb_landlock_abi(void);

/* Restricts the calling thread and its future children: write access (write, truncate, create,
 * remove, rename, link) only beneath each directory of the NULL-terminated writable_dirs (each
 * must exist; at most EB_LANDLOCK_MAX_DIRS), plus opening /dev/null, /dev/zero, /dev/full,
 * /dev/random and /dev/urandom for writing where they exist. Reading and executing stay
 * unrestricted. Sets PR_SET_NO_NEW_PRIVS, which the kernel requires. Only the rights the
 * running kernel's ABI knows are requested, so newer code never fails on an older kernel.
 * Async-signal-safe (raw syscalls, no allocation): call it in the child after pivot_root, with
 * paths as the guest sees them. 0; -EOPNOTSUPP when the kernel has no Landlock (the caller
 * decides whether that is fatal); other -errno with err set through eb_error_set_raw(). */
int eb_landlock_apply(const char *const *writable_dirs, struct execbox_error *err);

/* `execbox check` line: the ABI version and what it covers, or why Landlock is missing.
 * 0 when usable, -EOPNOTSUPP otherwise. */
int eb_landlock_probe(char *detail, size_t n);

#endif
