/* SPDX-License-Identifier: MIT */
/* ns.h - namespaces, the user namespace's id maps and dropping every privilege. The child-side
 * calls here are async-signal-safe (raw syscalls on strings the parent prepared): they run
 * between clone and exec in a process cloned from a possibly threaded host. */
#ifndef EB_JAIL_NS_H
#define EB_JAIL_NS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The guest's ids inside its user namespace: not 0, so nothing in the sandbox is "root". */
#define EB_JAIL_UID 1000
#define EB_JAIL_GID 1000
/* Where those ids land outside when execbox runs as root: a uid and gid of the sandbox's own
 * from the range execbox owns (uidpool.h), never a real user's, so even a full escape from every
 * namespace holds no privilege on the host and shares no per-user kernel count (inotify
 * instances, RLIMIT_NPROC, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE) with any other sandbox. */

/* The user namespace setup of a run, prepared by the parent. */
struct eb_userns {
    bool root_mode; /* execbox is real root: the other namespaces are made first, the user
                     * namespace last (see eb_userns_enter) */
    char uid_map[64], gid_map[64];
    uid_t host_uid; /* the outside id of the guest */
    gid_t host_gid;
};

/* Fills u for this process: root mode maps 1000 -> root_host_id (uid and gid of that number:
 * the sandbox's slot, uidpool.h), else 1000 -> our own uid/gid (root_host_id unused). */
void eb_userns_prepare(struct eb_userns *u, uint32_t root_host_id);

/* clone3 with CLONE_PIDFD and the given namespace flags: like fork(), 0 in the child. The
 * child's exit signal is SIGCHLD. */
pid_t eb_clone_ns(unsigned long ns_flags, int *ret_pidfd);

/* Child, non-root mode, right after clone3(CLONE_NEWUSER): writes our own one-line maps
 * (setgroups denied first, as the kernel requires of an unprivileged writer). */
int eb_userns_map_self(const struct eb_userns *u);

/* Child, root mode, after the mounts: gives up host root for the sandbox's uid while keeping just
 * CAP_SYS_ADMIN for one unshare(CLONE_NEWUSER) (so a distribution's sysctl that restricts
 * unprivileged user namespaces does not apply to us), maps 1000 -> that uid, becomes 1000.
 * The new user namespace owns none of the other namespaces: the guest can never mount,
 * even with capabilities inside it. */
int eb_userns_enter(const struct eb_userns *u);

/* Parent, root only: a user namespace fd whose maps are "uid_in uid_out 1" and
 * "gid_in gid_out 1", to describe an id-mapped mount (MOUNT_ATTR_IDMAP): through such a mount an
 * inode owned by uid_in on disk is seen as uid_out, and a file that uid_out creates is written
 * as uid_in. Made by a short-lived child that only waits to be killed; nothing else joins the
 * namespace. 0 with *ret_fd (O_CLOEXEC), or -errno with err set. */
struct execbox_error;
int eb_idmap_userns(uid_t uid_in, uid_t uid_out, gid_t gid_in, gid_t gid_out, int *ret_fd,
                    struct execbox_error *err);

/* Child: becomes EB_JAIL_UID/GID inside (non-root mode). */
int eb_become_guest_ids(void);

/* Child: empties the bounding, ambient, inheritable, permitted and effective capability sets
 * and sets no_new_privs, so no exec can gain privileges (setuid bits, file caps). */
int eb_drop_privileges(void);

/* What eb_privs_probe found: 0 where the wall works, else the -errno that stopped it (or
 * -EPERM when a value read back was not the one set). */
struct eb_privs_probe {
    int no_new_privs, capabilities, rlimits;
};

/* Proves, in a forked child (whose changes die with it), that a sandbox's own steps work here:
 * eb_child_rlimits with the default file size, read back with getrlimit; eb_drop_privileges,
 * then every capability set read back empty (bounding set, ambient, capget) and no_new_privs
 * read back set. Unprivileged, the child first enters a new user namespace, as a sandbox
 * does. Waits at most 2 s. */
void eb_privs_probe(struct eb_privs_probe *ret);

#endif
