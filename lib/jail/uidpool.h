/* SPDX-License-Identifier: MIT */
/* uidpool.h - the host uids execbox owns (root mode): each sandbox gets one of its own for its
 * life, so that no per-user kernel count (inotify instances and watches, RLIMIT_NPROC,
 * RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, keys) is shared between two sandboxes, as podman's
 * --userns=auto and systemd's DynamicUser= do. One uid (and the gid of the same number) a slot.
 *
 * Allocation across every execbox process of the host: one lock file, one byte of it a slot,
 * each held slot an open-file-description lock (F_OFD_SETLK) on its byte by the pool that took
 * it. The kernel drops a process's OFD locks when its last fd of the description closes, so a
 * crashed or SIGKILLed owner's slots free themselves: no leak, no stale state to sweep, and no
 * two live owners ever hold one slot. Within one pool a bitmap says which slots are its own (a
 * description never conflicts with its own locks). */
#ifndef EB_JAIL_UIDPOOL_H
#define EB_JAIL_UIDPOOL_H

#include <stdint.h>
#include <sys/types.h>

struct execbox_error;

/* The default range: 65536 ids from 0x7e000000, in the block that systemd's UIDS-GIDS.md leaves
 * unallocated (above the container range that /etc/subuid-style allocation and nspawn use, below
 * the "foreign" range 0x7ffe0000), far from any real user's uid. */
#define EB_UIDS_DEFAULT_BASE 0x7e000000U
#define EB_UIDS_DEFAULT_COUNT 65536U
#define EB_UIDS_MAX_COUNT (1U << 20)
/* Root's lock file of the slots. */
#define EB_UIDS_LOCK_FILE "/run/execbox/uids.lock"

struct eb_uid_range {
    uint32_t base, count;
    char source[64]; /* where it came from: "EXECBOX_JAIL_UIDS", "/etc/subuid", "default" */
};

/* The range this host gives execbox: EXECBOX_JAIL_UIDS="BASE:COUNT" when set, else the
 * "execbox:BASE:COUNT" line of /etc/subuid (and, when present, the same in /etc/subgid), else
 * the default. Refused (-EINVAL, err saying what overlaps) when it holds uid or gid 0,
 * 65534 (nobody), (uid_t)-1 or wraps, or overlaps a user of /etc/passwd, a group of /etc/group,
 * or another owner's line of /etc/subuid or /etc/subgid. */
int eb_uid_range_load(struct eb_uid_range *ret, struct execbox_error *err);

/* Same checks on a given range; the files are read from etc_dir ("/etc" on a host). */
int eb_uid_range_check(const struct eb_uid_range *r, const char *etc_dir,
                       struct execbox_error *err);

struct eb_uid_pool;

/* Opens (creating, mode 0600) the lock file at path for range r. The file must be a regular
 * file of ours with one link. */
int eb_uid_pool_open(const char *path, const struct eb_uid_range *r, struct eb_uid_pool **ret,
                     struct execbox_error *err);
void eb_uid_pool_free(struct eb_uid_pool *p);

/* Takes a free slot: *ret_slot its index (for eb_uid_pool_put), *ret_id its uid and gid.
 * Slots are tried from just past the last one this pool took, so a slot just put back is the
 * last this pool takes again. -EAGAIN (err set) when every slot is held. One fcntl a slot
 * tried. Thread-safe. */
int eb_uid_pool_take(struct eb_uid_pool *p, uint32_t *ret_slot, uint32_t *ret_id,
                     struct execbox_error *err);

/* Puts a slot back: its processes must all be gone. A slot this pool does not hold is ignored. */
void eb_uid_pool_put(struct eb_uid_pool *p, uint32_t slot);

#endif
