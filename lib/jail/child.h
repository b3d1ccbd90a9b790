/* SPDX-License-Identifier: MIT */
/* child.h - the sandbox's init (pid 1 of its new pid namespace, cloned by the parent with
 * eb_clone_ns) and the guest's set-up after init forks it: the child joins the run's cgroup and
 * namespaces, builds its root from the mount plans, takes its ids, drops its privileges and runs
 * eb_init_main; the guest then gets Landlock and, last before exec, the syscall filter. Everything
 * is prepared by the parent in struct eb_jail_child: the child formats nothing and makes only
 * async-signal-safe calls. */
#ifndef EB_JAIL_CHILD_H
#define EB_JAIL_CHILD_H

#include <stdbool.h>
#include <stddef.h>

#include "execbox/execbox.h"
#include "jail/cgroup.h"
#include "jail/mounts.h"
#include "jail/ns.h"
#include "jail/seccomp.h"
#include "proc/proc.h"

struct eb_jail_child {
    bool root_mode;                   /* execbox is root (the user namespace comes last) */
    bool landlock;                    /* the guest gets Landlock (writable paths below) */
    const struct eb_seccomp *seccomp; /* the guest's syscall filter, or NULL */
    const char *rootdir;              /* the mount point of the new root (no mntns_fd) */
    const struct eb_userns *userns;   /* the sandbox's own maps (its host uid) */
    int alive_fd;                     /* read end: POLLHUP once the parent is gone */
    int keep_fds[EB_KEEP_FDS_MAX];    /* every fd the child needs; all others are closed at once */
    int n_keep;
    int netns_fd; /* from the pool, or -1 (then clone3 made a new one) */
    int mntns_fd; /* the prepared mount namespace to copy, or -1 (then clone3 copied ours) */
    int ws_fd;    /* the fresh workspace's detached mount, or -1 */
    int etc_fd;   /* root: the locked stage's etc, a detached read-only clone to attach, or -1 */
    struct eb_cgroup *cg;
    const struct eb_mount_plan *plans[3];
    size_t nplans;
    struct eb_init init;
    const char *writable[4];
    bool tpl; /* the sandbox of a template: its interpreter keeps CAP_SYS_ADMIN in its userns */
    /* The host's command line (its argv strings, eb_host_cmdline), which the clone copied with
     * the rest of our memory: blanked before init runs, since any process of the sandbox may
     * read /proc/1/cmdline (it is not guarded by ptrace rules as environ is) and the host's
     * may hold a secret (`serve --token`), paths and the code of `run -c`. NULL: none known. */
    char *host_cmdline;
    size_t host_cmdline_len;
};

/* Finds this process's command line in its memory (arg_start and arg_end of /proc/self/stat),
 * in the parent, once: 0, or -errno when it cannot be read (then *ret is NULL). */
int eb_host_cmdline(char **ret, size_t *ret_len);

/* Adds fd (if >= 0) to c's keep list; past EB_KEEP_FDS_MAX only counts (n_keep), so that the
 * parent fails before the clone instead of the list overflowing or an fd being dropped. */
void eb_jail_child_keep(struct eb_jail_child *c, int fd);

/* The init's guest_setup (arg: the struct eb_jail_child), in the guest after fork from init:
 * Landlock, paths as the guest sees them. */
int eb_jail_guest_setup(void *arg, struct execbox_error *err);

/* A template's guest_setup instead, in its interpreter after fork from init: keeps
 * CAP_SYS_ADMIN and CAP_SETPCAP, in the template's own user namespace only, across the exec
 * (ambient), so that it can make each run's namespaces and mounts and drop the run's bounding
 * set (see tpl_helper.c). No Landlock and no seccomp: each run gets both before its code. */
int eb_jail_tpl_guest_setup(void *arg, struct execbox_error *err);

/* The guest's pre_exec (arg: the struct eb_jail_child), its very last step before execve: the
 * syscall filter. */
int eb_jail_guest_pre_exec(void *arg, struct execbox_error *err);

/* The sandbox's init, in the child of eb_clone_ns: never returns (an error goes to the status
 * pipe as an EB_MSG_ERROR message, then _exit). */
__attribute__((noreturn)) void eb_jail_child_main(struct eb_jail_child *c);

#endif
