/* SPDX-License-Identifier: MIT */
/* cache.h - what the jail's cold path keeps between execbox processes, and how it decides that
 * a kept answer still holds: the wall probe's report, keyed to everything the probe's answer
 * depends on (this build, the kernel and boot, the caller's ids, capabilities, limits, cgroup and
 * the user-namespace sysctls), valid for a short time, and trusted only from a file of ours. */
#ifndef EB_JAIL_CACHE_H
#define EB_JAIL_CACHE_H

#include <stddef.h>

#include "execbox/execbox.h"

/* The GNU build id of the object this code is linked into (the library or a program linking it
 * statically), as hex in buf; EXECBOX_VERSION when it has none. Always NUL-terminated. */
void eb_build_id(char *buf, size_t n);

/* The probe cache files in dir (the jail's stage directory): ".probe-<hash of the key>", one per
 * key, so that builds or users sharing a stage keep a report each.
 *
 * eb_probe_cache_load fills *ret with the cached report when all of this holds: dir is a
 * directory (not a symlink) owned by us and writable by nobody else; the key's file in it is a
 * regular file, opened without following a symlink, owned by us, mode 0600, one link, of the exact
 * size; its key equals the caller's key now; it was written at most max_age seconds ago
 * (CLOCK_BOOTTIME; the key holds the boot id). 0, or a negative errno (-ENOENT none, -EPERM not
 * ours, -ESTALE another key or too old, -EINVAL malformed); *ret is written only on success.
 *
 * eb_probe_cache_store writes c under the caller's key now, if dir passes the same checks (it is
 * never created here): an unnamed file linked in place of the old one, so a reader sees the old
 * file, none, or the new one, never a half-written one, and a kill leaves no temporary name. */
int eb_probe_cache_load(const char *dir, double max_age, struct execbox_check *ret);
int eb_probe_cache_store(const char *dir, const struct execbox_check *c);

/* Removes the probe cache files in dir that are ours, regular files and last written more than
 * max_age seconds ago (no key trusts them any more; an old ".probe" too). Returns how many, or
 * a negative errno when dir fails eb_probe_cache_load's checks. */
int eb_probe_cache_sweep(const char *dir, double max_age);

#endif
