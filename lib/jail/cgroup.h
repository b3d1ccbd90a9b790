/* SPDX-License-Identifier: MIT */
/* cgroup.h - one cgroup per run, below the cgroup this process already runs in: cgroup v2 when
 * a delegated v2 tree with the memory and pids controllers is usable, else v1 (memory, pids,
 * cpu, cpuacct). Limits, the run's own OOM/CPU/memory counters, kill, removal, and removal of
 * what a killed execbox left behind. The cgroupfs root is a parameter so tests can point the
 * code at a fake tree.
 *
 * On v2 a cgroup that holds processes cannot give controllers to children (the "no internal
 * processes" rule), and the cgroup execbox starts in always holds execbox. Where that cgroup is
 * execbox's to divide (delegated by systemd, a container's cgroup namespace root, or one that
 * only execbox is in on a host without systemd), its processes move into the leaf EB_CG_LEAF
 * below it first and runs' cgroups are made beside the leaf. Where it is systemd's (a login
 * session's scope, a service without Delegate=yes), detection says so (need_scope) and the
 * caller asks systemd for a delegated scope (sdscope.h), then detects again. Where no systemd
 * manages the tree and the cgroup cannot be divided (other processes share it), runs' cgroups
 * go below EB_CG_TOP, a cgroup execbox makes at the hierarchy's top, as container runtimes'
 * cgroupfs drivers do. */
#ifndef EB_JAIL_CGROUP_H
#define EB_JAIL_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "execbox/execbox.h"

enum eb_cg_ctrl { EB_CG_MEMORY, EB_CG_PIDS, EB_CG_CPU, EB_CG_CPUACCT, EB_CG_N };

/* Where runs' cgroups go: detected once per executor. */
struct eb_cgroup_root {
    int version;                          /* 1 or 2; 0: no usable cgroup */
    char base[EB_CG_N][EXECBOX_PATH_MAX]; /* v1: per controller; v2: base[0] only */
    bool have[EB_CG_N];                   /* controller usable */
    bool memsw;                           /* v1: memory.memsw.* exists (swap accounting) */
    char why[200];                        /* why v2 / v1 / none was chosen */
    /* v2: the leaf that execbox's own processes were moved into (runs' inits leave their
     * cgroups into it), "" when they stay in base (the root cgroup, which may hold processes). */
    char leaf[EXECBOX_PATH_MAX];
    /* v2: how base was found, for `execbox check` (root cgroup, leaf move, systemd scope). */
    char place[240];
    bool need_scope; /* v2, unusable: the cgroup is systemd's; ask it for a delegated scope */
    char slice[128]; /* with need_scope: the slice the process is in now ("" for default) */
};

/* The leaf execbox's own processes live in below a v2 cgroup it divides. Not named with the run
 * prefix: the stale sweep never removes it (a container's other processes may share it). */
#define EB_CG_LEAF "execbox.main"

/* The cgroup execbox makes at the top of a v2 hierarchy that no systemd manages, when the one
 * it was started in cannot be divided (see detect_top in cgroup.c); runs' cgroups go below it,
 * beside its EB_CG_LEAF. */
#define EB_CG_TOP "execbox"

/* What eb_cgroup_detect may assume of the host. */
struct eb_cgroup_host {
    bool systemd; /* systemd manages the host: a cgroup it did not delegate is not ours */
    pid_t self;   /* this process (a fake tree's test names its own) */
};

/* Detects the cgroup setup under fs_root ("/sys/fs/cgroup") for a process whose
 * /proc/self/cgroup text is self_cgroup. Prefers v2 when its tree at our own cgroup has (or can
 * be given) memory and pids in cgroup.subtree_control and is writable, moving this process (and
 * the cgroup's other processes, where the cgroup is ours) into EB_CG_LEAF to make that possible
 * (see above). Never fails: version 0 with why set (and need_scope where systemd could help)
 * when nothing is usable. */
void eb_cgroup_detect(const char *fs_root, const char *self_cgroup,
                      const struct eb_cgroup_host *host, struct eb_cgroup_root *r);

/* Spare run cgroups of one executor: a run's cgroup, once all its processes are gone, is reset
 * and kept for a later run instead of removed (eb_cgroup_release), which takes the mkdir and
 * rmdir in every hierarchy, the kernel's work behind them and the opens of its files off the
 * runs. A cgroup is kept only when it holds no process and no child cgroup, at most
 * EB_CG_REUSE_LEFT bytes are still charged to it, and its peak can be reset
 * (v1: memory.max_usage_in_bytes; v2: memory.peak, writable from Linux 6.12: before that, on v2,
 * nothing is kept). Its other counters (OOM kills, CPU) count from a baseline taken then. */
struct eb_cgroup_spares;

#define EB_CG_SPARES_MAX 32         /* kept at most; more are removed */
#define EB_CG_REUSE_LEFT (1U << 20) /* bytes a kept cgroup may still have charged */

/* A new empty set for cgroups under root (which must outlive it); NULL when out of memory (the
 * runs then make their own). */
struct eb_cgroup_spares *eb_cgroup_spares_new(const struct eb_cgroup_root *root);
/* Removes every kept cgroup and frees the set. NULL is a no-op. */
void eb_cgroup_spares_free(struct eb_cgroup_spares *sp);
/* How many are kept now, and how many runs were given a kept one (for tests and metrics). */
void eb_cgroup_spares_count(struct eb_cgroup_spares *sp, unsigned *kept, uint64_t *reused);

/* The files of a run's cgroup that every run reads or writes (its counters at the end, its CPU
 * base at the start, the reset when it is kept): opened once with the cgroup and then read with
 * pread, which shows the value now, so that a run looks up no path. */
enum eb_cg_file {
    EB_CGF_OOM,     /* v2 memory.events, v1 memory.oom_control */
    EB_CGF_CHARGED, /* memory.current, memory.usage_in_bytes */
    EB_CGF_PEAK,    /* memory.peak, memory.max_usage_in_bytes: read-write where it can be reset */
    EB_CGF_STAT,    /* memory.stat */
    EB_CGF_CPU,     /* cpu.stat, cpuacct.usage */
    EB_CGF_QUOTA,   /* cpu.max, cpu.cfs_quota_us: write-only */
    EB_CGF_N
};

/* One run's cgroup. */
struct eb_cgroup {
    const struct eb_cgroup_root *root;
    struct eb_cgroup_spares *spares;     /* where eb_cgroup_release keeps it; NULL: never */
    char dir[EB_CG_N][EXECBOX_PATH_MAX]; /* "" where not created */
    int procs_fd[EB_CG_N];               /* cgroup.procs, open for writing "0" in the child */
    /* The host side's (base's) procs file, open for init to leave the run's cgroup once the
     * sandbox is empty (see eb_init_loop_leave); -1 where it could not be opened. The same files
     * for every run: with spares, the set's own (leave_shared), never closed with the cgroup. */
    int leave_fd[EB_CG_N];
    bool leave_shared;
    /* enum eb_cg_file, -1 where not open (read by path then). v2's memory.peak is reset through
     * its fd when the cgroup is kept, and only reads through that fd see the reset. */
    int file_fd[EB_CGF_N];
    /* The limits written, and the counters' values when it was kept (0 when made). */
    uint64_t memory, quota;
    uint32_t pids;
    uint64_t oom_base;
    int64_t cpu_base_ns;
};

/* An empty cgroup (no directory, every fd -1): what eb_cgroup_destroy and release accept. */
void eb_cgroup_init(struct eb_cgroup *cg);

/* The run's cgroup: a kept one from spares (its limits rewritten where they differ) when there
 * is one, else one named name made in every usable controller with memory (no swap), pids and
 * cpu quota set; its cgroup.procs open for the child to join. spares may be NULL. 0 or -errno
 * (err set); on failure nothing is left behind. */
int eb_cgroup_create(const struct eb_cgroup_root *root, struct eb_cgroup_spares *spares,
                     const char *name, uint64_t memory, uint32_t pids, double cpus,
                     struct eb_cgroup *cg, struct execbox_error *err);

/* Once the run is over and its init has exited: kept in cg->spares when it may be (see above),
 * else as eb_cgroup_destroy. cg is left empty either way. */
void eb_cgroup_release(struct eb_cgroup *cg);

/* In the child (async-signal-safe): joins every controller's cgroup, closes the fds. */
int eb_cgroup_join(struct eb_cgroup *cg);

/* SIGKILLs every process in the cgroup (v2: cgroup.kill; v1: the pids/memory task list). */
void eb_cgroup_kill(const struct eb_cgroup *cg);

/* Counters since the cgroup was made or last kept. */
struct eb_cgroup_stats {
    uint64_t oom_kills;   /* kernel OOM kills inside the cgroup */
    int64_t cpu_ns;       /* -1 unknown */
    uint64_t memory;      /* charged to it now (v2 memory.current, v1 memory.usage_in_bytes) */
    uint64_t peak_memory; /* the most ever charged to it (memory.peak, max_usage_in_bytes) */
    uint64_t shmem; /* tmpfs and shared memory charged to it now (files in /tmp, /dev/shm...) */
};

/* Reads the run's own counters. */
void eb_cgroup_stats(const struct eb_cgroup *cg, struct eb_cgroup_stats *st);

/* Whether pid (as this process sees it) is in the run's cgroup now: 1, 0, or -errno (no
 * cgroup, or it could not be read). The caller pins pid first (a pidfd still alive). */
int eb_cgroup_has(const struct eb_cgroup *cg, pid_t pid);
/* Only the CPU time its processes had since it was made or kept, in ns (one file); -1
 * unknown. */
int64_t eb_cgroup_cpu_ns(const struct eb_cgroup *cg);

/* Kills what is left, removes the cgroup directories (retrying briefly while the kernel lets
 * go of exited tasks) and closes the fds. Safe on a zeroed/partly created cg. */
void eb_cgroup_destroy(struct eb_cgroup *cg);

/* Removes cgroups named "<prefix><pid>-..." whose pid is no longer alive (an execbox killed
 * before its teardown). Returns how many were removed. */
int eb_cgroup_remove_stale(const struct eb_cgroup_root *root, const char *prefix);

#endif
