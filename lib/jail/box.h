/* SPDX-License-Identifier: MIT */
/* box.h - private to the jail backend (lib/backends/jail.c) and the parts of lib/jail/ that build
 * or take apart one of its sandboxes (box.c, tplclient.c): the executor's state (struct jail) and
 * a started sandbox (struct eb_box), with their life cycle short of the sandbox's assembly
 * (sandbox_start in lib/backends/jail.c). */
#ifndef EB_JAIL_BOX_H
#define EB_JAIL_BOX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/limits.h"
#include "execbox/execbox.h"
#include "jail/cgroup.h"
#include "jail/hostws.h"
#include "jail/mounts.h"
#include "jail/netns.h"
#include "jail/netproxy.h"
#include "jail/ns.h"
#include "jail/seccomp.h"
#include "jail/uidpool.h"
#include "model/lang.h"
#include "proc/proc.h"

#define EB_JAIL_CG_PREFIX "execbox-" /* runs' cgroups: "execbox-<pid>-<executor>-<n>" */
#define EB_JAIL_SHM_SIZE (16U << 20) /* /dev/shm: POSIX semaphores and shared memory */

/* The jail backend's state, one an executor (its open to its close). */
struct jail {
    struct eb_userns userns; /* root_mode and, unprivileged, every sandbox's maps */
    /* Root: the host uids execbox owns, one a sandbox (uidpool.h); NULL unprivileged. */
    struct eb_uid_pool *uids;
    struct eb_uid_range uid_range;
    struct eb_cgroup_root cg;
    struct eb_cgroup_spares *cg_spares; /* runs' cgroups kept for reuse (cgroup.h); may be NULL */
    struct eb_seccomp seccomp;
    bool seccomp_ok, landlock_ok;
    char cache[EXECBOX_PATH_MAX]; /* staged /etc and the mount point of new roots */
    char rootdir[EXECBOX_PATH_MAX];
    struct eb_mount_plan sys; /* shared by every run without a rootfs */
    /* Root: the prepared mount namespace holding sys's root (see mounts.h), the host's pin
     * (mntpin.h) or one made for this executor, opened at its first run (run_mntns in
     * lib/backends/jail.c); -1 before, or when it cannot be made (then each run builds its root
     * in a copy of the host's table). Its runs mount their own proc (proc_plan) and dyn. Set
     * once under mntns_lock, closed at close. */
    pthread_mutex_t mntns_lock;
    int mntns_fd;
    bool mntns_failed;
    struct eb_mount_plan proc_plan;
    unsigned id; /* random per executor: two executors in one process never share a name */
    atomic_uint seq;
    struct eb_netns_pool *pool; /* fresh network namespaces, made ahead (root only) */
    char mpl_file[96];          /* "tmp/.matplotlib/fontlist-vNNN.json", "" when none */
    char *mpl_data;             /* its prebuilt contents, copied into each run's /tmp */
    size_t mpl_len;
    /* Templates (tplclient.h; lib/core/template.c keeps them): what every one is handed, made
     * once under tpl_start_lock (tplclient.c). */
    pthread_mutex_t tpl_start_lock;
    int tpl_blob_fds[4]; /* sealed memfds: helper module, init program, seccomp, font list */
    char *host_cmdline;  /* ours in memory, for each run's init to blank (child.h) */
    size_t host_cmdline_len;
};

/* What the child's kill_all needs (eb_box_kill_all). */
struct killer {
    struct eb_cgroup *cg;
    int pidfd;
};

struct eb_tplproc;

/* A started sandbox: cold (its program already in /code) or warm (waiting on fd 3). */
struct eb_box {
    struct jail *j;
    struct execbox_policy policy;
    const struct eb_language *lang;
    struct eb_cgroup cg;
    struct eb_child child;
    struct killer k;
    int ws_fd;              /* fresh workspace (detached tmpfs), or -1 */
    int alive_w;            /* write end of the alive pipe: the child sees POLLHUP if we vanish */
    int code_fd;            /* warm: our writable handle on the sandbox's /code */
    int go_fd;              /* warm: write end of the guest's fd 3 */
    int64_t cpu_base_ns;    /* warm: the cgroup's CPU time when the run began */
    int stage_fd;           /* the /etc stage bound into the sandbox, locked shared, or -1 */
    struct eb_host_ws host; /* a caller's workspace, or unprivileged a fresh host directory */
    struct eb_proxy *proxy; /* network "allow": the run's proxy, or NULL */
    struct eb_tplproc *tpl; /* forked from this template (the executor keeps it alive), or NULL */
    bool cold;              /* started with its run: the program is in place and running */
    bool session; /* a session's sandbox: go_fd is a SOCK_SEQPACKET socket (lib/core/cells.c) */
    struct stat pidns;    /* a session's: its pid namespace (nsfs st_dev and st_ino) */
    uint64_t guest_bytes; /* what the guest wrote, all streams */
    /* Its user namespace's maps: as root, 1000 -> a host uid and gid of its own (uid_slot of
     * j->uids, put back once its processes are gone); a template's fork has its template's. */
    struct eb_userns userns;
    int64_t uid_slot; /* -1: none of its own */
};

/* sb, empty, for a sandbox of j with policy pol (copied) and lang: no fd, no process. */
void eb_box_init(struct eb_box *sb, struct jail *j, const struct execbox_policy *pol,
                 const struct eb_language *lang);

/* Root: a host uid and gid of the sandbox's own for its whole life (uidpool.h), so that no
 * per-user kernel count is shared with another sandbox; never a shared fallback (with every
 * slot held the sandbox is not made). Unprivileged: nothing (the guest is the user outside).
 * 0 or -errno with err set. */
int eb_box_take_uid(struct eb_box *sb, struct execbox_error *err);

/* The sandbox's own cgroup (where the host has one), in sb->cg: its policy's pids, CPU and
 * memory. The memory cap is policy.memory exactly, and it covers everything the run holds in
 * RAM: the kernel charges the pages of its tmpfs (/tmp, /dev/shm, a fresh /workspace, /code) to
 * this cgroup, so its files count against it, as in Docker and Kubernetes. Each tmpfs's own size
 * still gives ENOSPC below the cap; a size above it lets the cap win (an OOM kill). 0 or -errno
 * with err set. */
int eb_box_cgroup(struct eb_box *sb, struct execbox_error *err);

/* The guest's fd 3 and our end of it: a pipe for the go byte of a warm run, a SOCK_SEQPACKET
 * socket for a session, whose cells and their fds travel over it (lib/core/cells.c). fds[0] is
 * the guest's end. 0 or -errno. */
int eb_go_channel(int fds[2], bool session);

/* The child's kill_all (ctx: a struct killer): SIGKILL to the init, then the cgroup's kill. */
void eb_box_kill_all(void *ctx);

/* Kills whatever still runs (a warm sandbox never given a run), and removes everything the
 * sandbox had: processes, cgroup, mounts, temp dirs, its uid. A template run whose result is out
 * leaves its cgroup to the grave thread (reaper.h): its processes may still be exiting. sb itself
 * is not freed. */
void eb_box_destroy(struct eb_box *sb);

/* What the sandbox's tmpfs hold (charged to its memory cgroup), for a MemoryLimit message:
 * *ret_ws a fresh /workspace, *ret_tmp /tmp and /dev/shm (the larger of tmp_seen, what the run's
 * init measured when the program ended, and the rest of the cgroup's shmem now). */
void eb_box_files(const struct eb_box *sb, const struct eb_cgroup_stats *st, uint64_t tmp_seen,
                  uint64_t *ret_tmp, uint64_t *ret_ws);

#endif
