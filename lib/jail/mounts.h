/* SPDX-License-Identifier: MIT */
/* mounts.h - the sandbox's filesystem as a plan of mount operations: built in the parent
 * (strings formatted, host paths checked), run in the child with raw syscalls only. The new
 * root is a small tmpfs; the host's system directories are bound read-only, nosuid, nodev;
 * /etc holds only the files interpreters need (staged once per executor); /dev is minimal;
 * /proc is fresh; /tmp is a tmpfs of the policy's size; then pivot_root. */
#ifndef EB_JAIL_MOUNTS_H
#define EB_JAIL_MOUNTS_H

#include <stddef.h>

#include "execbox/execbox.h"

enum eb_mop_type {
    EB_MOP_DIR,          /* mkdir dst */
    EB_MOP_SYMLINK,      /* symlink src -> dst */
    EB_MOP_FILE,         /* create dst with data (mode 0444) */
    EB_MOP_BIND_RO,      /* bind src (recursively) on dst: read-only, nosuid, nodev */
    EB_MOP_BIND_RW,      /* bind src on dst: nosuid, nodev */
    EB_MOP_BIND_DEV,     /* bind the device node src on the empty file dst: nosuid, noexec */
    EB_MOP_TMPFS,        /* tmpfs on dst with options data: nosuid, nodev */
    EB_MOP_ATTACH,       /* move the detached mount fd onto dst */
    EB_MOP_ATTACH_COVER, /* fd onto dst, covered by a read-only clone (eb_attach_mount) */
    EB_MOP_PROC,         /* a fresh proc for our pid namespace on dst */
    EB_MOP_CHOWN,        /* give dst (not following links) to uid:gid */
    EB_MOP_RDONLY,       /* make the mount on dst read-only, nosuid, nodev, noexec */
};

struct eb_mop {
    int type;
    const char *src, *dst, *data;
    size_t len;
    int fd;
    unsigned uid, gid; /* EB_MOP_CHOWN */
};

#define EB_MOPS_MAX 64

struct eb_mount_plan {
    struct eb_mop ops[EB_MOPS_MAX];
    size_t n;
    char strings[8192];
    size_t used;
    int overflow; /* set when ops or strings did not fit */
};

void eb_plan_init(struct eb_mount_plan *p);
/* Appends one op; strings are copied into the plan. dst is relative to the new root. */
void eb_plan_add(struct eb_mount_plan *p, int type, const char *src, const char *dst,
                 const char *data, size_t len, int fd);

/* Copies the /etc subset interpreters need to stage_dir/etc (users, groups and hosts are
 * generated, never copied). */
int eb_stage_etc(const char *stage_dir, struct execbox_error *err);

/* Per executor: appends to p what every run shares (/etc from stage_dir/etc): system directories
 * (from rootfs, or the host when rootfs is ""), /etc, /dev, and the empty mount points. With
 * rootfs "" and stage_dir NULL, /etc is left for the caller to bind per run. */
int eb_plan_system(struct eb_mount_plan *p, const char *stage_dir, const char *rootfs,
                   struct execbox_error *err);

/* Child: mounts a tmpfs on root_dir (a directory private to us), runs the plans inside it,
 * makes the root read-only, pivot_roots into it and detaches the old root. Returns 0 or
 * -errno, with *ret_step the dst of the failing op. */
int eb_mount_run(const char *root_dir, const struct eb_mount_plan *const *plans, size_t nplans,
                 const char **ret_step);

/* A prepared mount namespace: the new root of eb_mount_run (tmpfs, the plans, read-only,
 * pivot_root) made once, in a namespace of its own, so that each run copies a table of a few
 * mounts instead of the host's (CLONE_NEWNS copies every mount of the caller's namespace, ~2.4 us
 * each: milliseconds on a host with thousands) and mounts only what is its own.
 *
 * eb_mount_ns_prepare (parent, root: the helper must be able to mount): clones a helper into a
 * new mount namespace, runs the plans there as eb_mount_run does but for their EB_MOP_PROC ops
 * (a proc belongs to a pid namespace: each run mounts its own), and returns an fd of that
 * namespace in *ret_fd (O_CLOEXEC); the helper is gone when it returns. 0, or -errno with err
 * set. Every mount in it is private: nothing propagates in or out.
 *
 * eb_mount_ns_enter (child, async-signal-safe, with CAP_SYS_ADMIN and CAP_SYS_CHROOT over the
 * namespace's owner): joins the prepared namespace, unshares a private copy of it (the
 * prepared one is never changed), and runs the per-run plans from its root, whose paths are
 * relative to it. Returns 0 or -errno, with *ret_step the dst of the failing op. */
int eb_mount_ns_prepare(const char *root_dir, const struct eb_mount_plan *const *plans,
                        size_t nplans, int *ret_fd, struct execbox_error *err);
int eb_mount_ns_enter(int ns_fd, const struct eb_mount_plan *const *plans, size_t nplans,
                      const char **ret_step);

#endif
