/* SPDX-License-Identifier: MIT */
/* cgroup.c - per-run cgroups, v1 and v2, and the spares kept for reuse (see cgroup.h; where
 * they go is cgroup_detect.c's). Only directories this file creates (named with our prefix) are
 * ever written to or removed; the rest of the hierarchy is left alone. */
#include "jail/cgroup.h"
#include "jail/cgroup_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"

int eb_cg_write(const char *dir, const char *file, const char *val)
{
    char p[EXECBOX_PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    /* O_CREAT is a no-op on cgroupfs (its files exist or cannot be made) and lets the unit
     * tests run the same code on a fake tree. */
    _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, val, strlen(val));
    return n < 0 ? -errno : 0;
}

int eb_cg_read(const char *dir, const char *file, char *buf, size_t len)
{
    char p[EXECBOX_PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n = eb_read_full(fd, buf, len - 1);
    if (n < 0)
        return (int)n;
    buf[n] = '\0';
    return 0;
}

/* "key value" lines (memory.events, memory.oom_control, cpu.stat): the value of key. */
bool eb_cg_keyed(const char *text, const char *key, uint64_t *v)
{
    size_t k = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ') {
            *v = strtoull(l + k + 1, NULL, 10);
            return true;
        }
    return false;
}

void eb_cgroup_init(struct eb_cgroup *cg)
{
    memset(cg, 0, sizeof(*cg));
    for (int c = 0; c < EB_CG_N; c++)
        cg->procs_fd[c] = cg->leave_fd[c] = -1;
    for (int f = 0; f < EB_CGF_N; f++)
        cg->file_fd[f] = -1;
}

/* Where each enum eb_cg_file is: v1's hierarchy (v2: the one directory), its name in v2 and in
 * v1, and how it is opened. */
static const struct {
    enum eb_cg_ctrl ctrl;
    const char *v2, *v1;
    int mode;
} cg_files[EB_CGF_N] = {
    [EB_CGF_OOM] = {EB_CG_MEMORY, "memory.events", "memory.oom_control", O_RDONLY},
    [EB_CGF_CHARGED] = {EB_CG_MEMORY, "memory.current", "memory.usage_in_bytes", O_RDONLY},
    [EB_CGF_PEAK] = {EB_CG_MEMORY, "memory.peak", "memory.max_usage_in_bytes", O_RDWR},
    [EB_CGF_STAT] = {EB_CG_MEMORY, "memory.stat", "memory.stat", O_RDONLY},
    [EB_CGF_CPU] = {EB_CG_CPUACCT, "cpu.stat", "cpuacct.usage", O_RDONLY},
    [EB_CGF_QUOTA] = {EB_CG_CPU, "cpu.max", "cpu.cfs_quota_us", O_WRONLY},
};

static const char *file_dir(const struct eb_cgroup *cg, enum eb_cg_file f)
{
    return cg->root->version == 2 ? cg->dir[0] : cg->dir[cg_files[f].ctrl];
}

static const char *file_name(const struct eb_cgroup *cg, enum eb_cg_file f)
{
    return cg->root->version == 2 ? cg_files[f].v2 : cg_files[f].v1;
}

/* Opens the files of a cgroup just made (those it has). A peak that cannot be opened for
 * writing (v2 before Linux 6.12) is opened for reading: it cannot be reset then. */
static void open_files(struct eb_cgroup *cg)
{
    for (int f = 0; f < EB_CGF_N; f++) {
        const char *d = file_dir(cg, f);
        char p[EXECBOX_PATH_MAX + 64];
        if (!d[0] || snprintf(p, sizeof(p), "%s/%s", d, file_name(cg, f)) >= (int)sizeof(p))
            continue;
        cg->file_fd[f] = open(p, cg_files[f].mode | O_CLOEXEC | O_NOFOLLOW);
        if (cg->file_fd[f] < 0 && cg_files[f].mode == O_RDWR)
            cg->file_fd[f] = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
}

/* Reads file f of cg into buf (NUL-terminated, at most len - 1 bytes): from its start through
 * its fd, else by its path. 0 or -errno. */
static int file_read(const struct eb_cgroup *cg, enum eb_cg_file f, char *buf, size_t len)
{
    int fd = cg->file_fd[f];
    if (fd < 0)
        return eb_cg_read(file_dir(cg, f), file_name(cg, f), buf, len);
    /* One read from offset 0: a cgroup file shows its whole text, made afresh, in one. */
    ssize_t n;
    do
        n = pread(fd, buf, len - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

/* Writes val to file f of cg: through its fd, else by its path. 0 or -errno. */
static int file_write(const struct eb_cgroup *cg, enum eb_cg_file f, const char *val)
{
    int fd = cg->file_fd[f];
    if (fd < 0)
        return eb_cg_write(file_dir(cg, f), file_name(cg, f), val);
    return pwrite(fd, val, strlen(val), 0) < 0 ? -errno : 0;
}

/* Writes cg's CFS quota (per 100 ms period), which also refills the period's bandwidth and
 * unthrottles the cgroup. 0 or -errno. */
static int write_quota(const struct eb_cgroup *cg, uint64_t quota)
{
    char val[48];
    snprintf(val, sizeof(val), cg->root->version == 2 ? "%" PRIu64 " 100000" : "%" PRIu64, quota);
    return file_write(cg, EB_CGF_QUOTA, val);
}

/* Writes the limits into cg's directories: all of them, or (changed) those that differ from
 * the ones it has. 0 or -errno (err set). */
static int set_limits(struct eb_cgroup *cg, uint64_t memory, uint32_t pids, uint64_t quota,
                      bool changed, struct execbox_error *err)
{
    const struct eb_cgroup_root *root = cg->root;
    bool mem = !changed || memory != cg->memory, pid = !changed || pids != cg->pids,
         cpu = !changed || quota != cg->quota;
    char val[64];
    int r = 0;
    const char *d;
    if (root->version == 2) {
        d = cg->dir[0];
        snprintf(val, sizeof(val), "%" PRIu64, memory);
        if (root->have[EB_CG_MEMORY] && mem &&
            ((r = eb_cg_write(d, "memory.max", val)) < 0 ||
             /* No memory.oom.group: as on v1, an OOM kill takes the process the kernel
              * chooses (a session's cell before its state: lib/core/cells.c), and the init,
              * which outlives it, ends the rest and reports the kill as the run's. With it,
              * the init would die too and a session would lose its state. */
             (!changed && (r = eb_cg_write(d, "memory.swap.max", "0")) < 0)))
            return eb_error_set(err, r, "set the cgroup memory limit: %s", execbox_strerror(r));
        snprintf(val, sizeof(val), "%" PRIu32, pids);
        if (root->have[EB_CG_PIDS] && pid && (r = eb_cg_write(d, "pids.max", val)) < 0)
            return eb_error_set(err, r, "set pids.max: %s", execbox_strerror(r));
        if (root->have[EB_CG_CPU] && cpu && (r = write_quota(cg, quota)) < 0)
            return eb_error_set(err, r, "set cpu.max: %s", execbox_strerror(r));
    } else {
        if (root->have[EB_CG_MEMORY] && mem) {
            d = cg->dir[EB_CG_MEMORY];
            snprintf(val, sizeof(val), "%" PRIu64, memory);
            /* memsw (RAM + swap) equal to the RAM limit: no swap at all. v1 refuses a memsw
             * below the RAM limit at every step: a kept cgroup's higher limit goes into memsw
             * first, a lower one (and a new cgroup's, unlimited before) into RAM first. */
            bool up = changed && memory > cg->memory;
            if ((root->memsw && up &&
                 (r = eb_cg_write(d, "memory.memsw.limit_in_bytes", val)) < 0) ||
                (r = eb_cg_write(d, "memory.limit_in_bytes", val)) < 0 ||
                (root->memsw && !up &&
                 (r = eb_cg_write(d, "memory.memsw.limit_in_bytes", val)) < 0))
                return eb_error_set(err, r, "set the cgroup memory limit: %s", execbox_strerror(r));
            if (!root->memsw && !changed)
                (void)eb_cg_write(d, "memory.swappiness", "0");
        }
        if (root->have[EB_CG_PIDS] && pid) {
            snprintf(val, sizeof(val), "%" PRIu32, pids);
            if ((r = eb_cg_write(cg->dir[EB_CG_PIDS], "pids.max", val)) < 0)
                return eb_error_set(err, r, "set pids.max: %s", execbox_strerror(r));
        }
        if (root->have[EB_CG_CPU] && cpu) {
            if ((!changed &&
                 (r = eb_cg_write(cg->dir[EB_CG_CPU], "cpu.cfs_period_us", "100000")) < 0) ||
                (r = write_quota(cg, quota)) < 0)
                return eb_error_set(err, r, "set the cpu quota: %s", execbox_strerror(r));
        }
    }
    cg->memory = memory;
    cg->pids = pids;
    cg->quota = quota;
    return 0;
}

static bool spare_take(struct eb_cgroup_spares *sp, struct eb_cgroup *cg);
static void spare_adopt(struct eb_cgroup_spares *sp, struct eb_cgroup *cg);
static const int *spare_leave_fds(const struct eb_cgroup_spares *sp);

/* Opens the host side's procs file of controller c, by which a run's init leaves the run's
 * cgroup once the sandbox is empty (eb_init_loop_leave). Opened by us, so that the kernel checks
 * our credentials and cgroup namespace (5.16+) when the unprivileged init writes to it. Best
 * effort (-1): without it the run's cgroup is removed only after init's exit. */
static int open_leave(const struct eb_cgroup_root *root, int c)
{
    char p[EXECBOX_PATH_MAX + 32];
    if (root->version == 2 && root->leaf[0]) /* base has controllers: no processes */
        snprintf(p, sizeof(p), "%s/cgroup.procs", root->leaf);
    else
        snprintf(p, sizeof(p), "%s/%s", root->base[root->version == 1 ? c : 0],
                 root->version == 1 ? "tasks" : "cgroup.procs");
    return open(p, O_WRONLY | O_CLOEXEC);
}

int eb_cgroup_create(const struct eb_cgroup_root *root, struct eb_cgroup_spares *spares,
                     const char *name, uint64_t memory, uint32_t pids, double cpus,
                     struct eb_cgroup *cg, struct execbox_error *err)
{
    eb_cgroup_init(cg);
    cg->root = root;
    if (root->version == 0)
        return 0;
    uint64_t quota = (uint64_t)(cpus * 100000.0);
    if (quota < 1000)
        quota = 1000;
    int r = 0;
    if (spares && spare_take(spares, cg)) {
        if ((r = set_limits(cg, memory, pids, quota, true, err)) < 0)
            goto fail;
        return 0;
    }
    int ndirs = root->version == 2 ? 1 : EB_CG_N;
    for (int c = 0; c < ndirs; c++) {
        if (root->version == 1 && !root->have[c])
            continue;
        if (snprintf(cg->dir[c], sizeof(cg->dir[c]), "%s/%s", root->base[c], name) >=
            (int)sizeof(cg->dir[c])) {
            r = eb_error_set(err, -ENAMETOOLONG, "cgroup path too long");
            goto fail;
        }
        if (mkdir(cg->dir[c], 0755) < 0) {
            r = eb_error_set(err, -errno, "create cgroup %s: %s", cg->dir[c],
                             execbox_strerror(-errno));
            cg->dir[c][0] = '\0';
            goto fail;
        }
    }
    open_files(cg); /* (the quota's first write goes through its fd too) */
    if ((r = set_limits(cg, memory, pids, quota, false, err)) < 0)
        goto fail;
    const int *shared = spare_leave_fds(spares);
    cg->leave_shared = shared != NULL;
    for (int c = 0; c < EB_CG_N; c++) {
        if (!cg->dir[c][0])
            continue;
        char p[EXECBOX_PATH_MAX + 32];
        /* v1: the child joins by writing "0" to "tasks", which moves only the writing thread
         * (the child has one) and lets the kernel skip the global threadgroup lock, whose
         * RCU grace period otherwise costs ~15 ms on every run. */
        snprintf(p, sizeof(p), "%s/%s", cg->dir[c], root->version == 1 ? "tasks" : "cgroup.procs");
        cg->procs_fd[c] = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (cg->procs_fd[c] < 0) {
            r = eb_error_set(err, -errno, "open %s: %s", p, execbox_strerror(-errno));
            goto fail;
        }
        cg->leave_fd[c] = shared ? shared[c] : open_leave(root, c);
    }
    spare_adopt(spares, cg);
    return 0;
fail:
    eb_cgroup_destroy(cg);
    return r < 0 ? r : -EIO;
}

int eb_cgroup_join(struct eb_cgroup *cg)
{
    int r = 0;
    for (int c = 0; c < EB_CG_N; c++) {
        if (cg->procs_fd[c] < 0)
            continue;
        /* "0" is the writing process itself. */
        if (write(cg->procs_fd[c], "0", 1) < 0)
            r = -errno;
        close(cg->procs_fd[c]);
        cg->procs_fd[c] = -1;
    }
    return r;
}

struct kill_member {
    const char *name; /* "/<the run's cgroup name>" */
};

/* SIGKILLs pid if it is still in our cgroup: pinned by a pidfd first, then checked, then
 * signalled through the pidfd, so that a pid that exited and was reused by a host process
 * after the list was read is never killed. */
static int kill_member(pid_t pid, void *arg)
{
    const struct kill_member *km = arg;
    if (pid <= 1)
        return 0;
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0)
        return 0; /* gone already */
    char p[64], *text = NULL;
    snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
    if (eb_read_file(p, 1U << 16, &text, NULL) < 0)
        return 0;
    size_t n = strlen(km->name);
    bool member = false;
    for (const char *h = strstr(text, km->name); h && !member; h = strstr(h + 1, km->name))
        member = h[n] == '\n' || h[n] == '/' || h[n] == '\0';
    free(text);
    if (member)
        syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
    return 0;
}

void eb_cgroup_kill(const struct eb_cgroup *cg)
{
    if (!cg->root || cg->root->version == 0)
        return;
    if (cg->root->version == 2) {
        if (cg->dir[0][0] && eb_cg_write(cg->dir[0], "cgroup.kill", "1") == 0)
            return;
    }
    /* v1 (or v2 before 5.14): kill each listed task; repeat, since a fork may race us. */
    for (int c = 0; c < EB_CG_N; c++) {
        if (!cg->dir[c][0])
            continue;
        struct kill_member km = {.name = strrchr(cg->dir[c], '/')};
        if (!km.name)
            continue;
        for (int round = 0; round < 8; round++) {
            char p[EXECBOX_PATH_MAX + 32];
            snprintf(p, sizeof(p), "%s/cgroup.procs", cg->dir[c]);
            _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            /* The whole list, to EOF: a pids cap may allow up to EB_PIDS_MAX tasks. */
            if (fd < 0 || eb_read_pids(fd, EB_PIDS_MAX, kill_member, &km) <= 0)
                break;
        }
        return;
    }
}

/* The memory directory and its counters' files (v2 and v1 name them differently). */
static const char *mem_dir(const struct eb_cgroup *cg)
{
    return cg->root->version == 2 ? cg->dir[0] : cg->dir[EB_CG_MEMORY];
}

/* The kernel's count of OOM kills in the cgroup since it was made; 0 unknown. */
static uint64_t raw_oom_kills(const struct eb_cgroup *cg)
{
    char buf[2048];
    uint64_t v = 0;
    if (mem_dir(cg)[0])
        (void)(file_read(cg, EB_CGF_OOM, buf, sizeof(buf)) == 0 &&
               eb_cg_keyed(buf, "oom_kill", &v));
    return v;
}

/* Its processes' CPU time since it was made, in ns; -1 unknown. */
static int64_t raw_cpu_ns(const struct eb_cgroup *cg)
{
    char buf[2048];
    uint64_t v;
    if (!file_dir(cg, EB_CGF_CPU)[0] || file_read(cg, EB_CGF_CPU, buf, sizeof(buf)) < 0)
        return -1;
    if (cg->root->version == 1)
        return (int64_t)strtoull(buf, NULL, 10);
    return eb_cg_keyed(buf, "usage_usec", &v) ? (int64_t)v * 1000 : -1;
}

/* Memory still charged to cg (page cache, kernel objects of its lookups); UINT64_MAX unknown. */
static uint64_t charged(const struct eb_cgroup *cg)
{
    char buf[64];
    if (file_read(cg, EB_CGF_CHARGED, buf, sizeof(buf)) < 0)
        return UINT64_MAX;
    return strtoull(buf, NULL, 10);
}

void eb_cgroup_stats(const struct eb_cgroup *cg, struct eb_cgroup_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->cpu_ns = -1;
    if (!cg->root || cg->root->version == 0)
        return;
    char buf[8192]; /* v1 memory.stat: its shmem line comes after the per-cgroup block */
    uint64_t v;
    const char *d = mem_dir(cg);
    if (d[0]) {
        v = raw_oom_kills(cg);
        st->oom_kills = v > cg->oom_base ? v - cg->oom_base : 0;
        uint64_t now = charged(cg);
        st->memory = now == UINT64_MAX ? 0 : now;
        /* (v2: a kept cgroup's peak was reset through its fd, and only it reads the reset.) */
        if (file_read(cg, EB_CGF_PEAK, buf, 64) == 0)
            st->peak_memory = strtoull(buf, NULL, 10);
        if (file_read(cg, EB_CGF_STAT, buf, sizeof(buf)) == 0 && eb_cg_keyed(buf, "shmem", &v))
            st->shmem = v;
    }
    st->cpu_ns = eb_cgroup_cpu_ns(cg);
}

struct has_pid {
    pid_t want;
    bool found;
};

static int has_pid(pid_t pid, void *arg)
{
    struct has_pid *h = arg;
    if (pid == h->want)
        h->found = true;
    return 0;
}

int eb_cgroup_has(const struct eb_cgroup *cg, pid_t pid)
{
    if (!cg->root || cg->root->version == 0)
        return -ENOENT;
    /* One hierarchy is enough: the cgroup is the run's own, and every process of the run joins
     * all of its hierarchies before it can run anything. */
    const char *d = NULL;
    if (cg->root->version == 2)
        d = cg->dir[0];
    else if (cg->dir[EB_CG_PIDS][0])
        d = cg->dir[EB_CG_PIDS];
    else if (cg->dir[EB_CG_MEMORY][0])
        d = cg->dir[EB_CG_MEMORY];
    if (!d || !d[0])
        return -ENOENT;
    char p[EXECBOX_PATH_MAX + 16];
    if (snprintf(p, sizeof(p), "%s/%s", d, cg->root->version == 1 ? "tasks" : "cgroup.procs") >=
        (int)sizeof(p))
        return -ENAMETOOLONG;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct has_pid h = {.want = pid};
    int r = eb_read_pids(fd, EB_PIDS_MAX, has_pid, &h);
    close(fd);
    if (r < 0)
        return r;
    return h.found ? 1 : 0;
}

int64_t eb_cgroup_cpu_ns(const struct eb_cgroup *cg)
{
    if (!cg->root || cg->root->version == 0)
        return -1;
    int64_t v = raw_cpu_ns(cg);
    return v < 0 ? -1 : v > cg->cpu_base_ns ? v - cg->cpu_base_ns : 0;
}

static void remove_dir(const char *dir)
{
    /* rmdir fails with EBUSY while the kernel still counts an exiting task: retry for up to
     * about 200 ms, killing again in between. */
    for (int i = 0; i < 100; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return;
        if (errno != EBUSY)
            return;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

void eb_cgroup_destroy(struct eb_cgroup *cg)
{
    bool any = false;
    for (int c = 0; c < EB_CG_N; c++)
        any |= cg->dir[c][0] != '\0';
    if (any)
        eb_cgroup_kill(cg);
    for (int c = 0; c < EB_CG_N; c++) {
        if (cg->procs_fd[c] >= 0)
            close(cg->procs_fd[c]);
        cg->procs_fd[c] = -1;
        if (cg->leave_fd[c] >= 0 && !cg->leave_shared)
            close(cg->leave_fd[c]);
        cg->leave_fd[c] = -1;
        if (cg->dir[c][0])
            remove_dir(cg->dir[c]);
        cg->dir[c][0] = '\0';
    }
    for (int f = 0; f < EB_CGF_N; f++)
        eb_close(&cg->file_fd[f]);
    cg->leave_shared = false;
    cg->spares = NULL;
    cg->oom_base = 0;
    cg->cpu_base_ns = 0;
}

int eb_cgroup_remove_stale(const struct eb_cgroup_root *root, const char *prefix)
{
    int removed = 0;
    size_t plen = strlen(prefix);
    int ndirs = root->version == 2 ? 1 : root->version == 1 ? EB_CG_N : 0;
    for (int c = 0; c < ndirs; c++) {
        if (root->version == 1 && !root->have[c])
            continue;
        DIR *d = opendir(root->base[c]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, prefix, plen) != 0)
                continue;
            char *end;
            long pid = strtol(e->d_name + plen, &end, 10);
            if (pid <= 0 || *end != '-' || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
                continue; /* its execbox is alive: not ours to touch */
            struct eb_cgroup cg;
            eb_cgroup_init(&cg);
            cg.root = root;
            snprintf(cg.dir[c], sizeof(cg.dir[c]), "%s/%s", root->base[c], e->d_name);
            eb_cgroup_destroy(&cg);
            removed++;
        }
        closedir(d);
    }
    return removed;
}

/* ---- spare cgroups (cgroup.h) --------------------------------------------------------------- */

struct eb_cgroup_spares {
    const struct eb_cgroup_root *root;
    pthread_mutex_t mu; /* what follows */
    struct eb_cgroup *kept[EB_CG_SPARES_MAX];
    unsigned n;
    uint64_t reused;
    bool off; /* v2 whose memory.peak cannot be reset (before 6.12): nothing is kept */
    /* The host side's procs files (open_leave), the same for every run's cgroup: opened once
     * here and lent to each cgroup made; all -1 when any could not be (each opens its own). */
    int leave_fd[EB_CG_N];
};

struct eb_cgroup_spares *eb_cgroup_spares_new(const struct eb_cgroup_root *root)
{
    struct eb_cgroup_spares *sp = calloc(1, sizeof(*sp));
    if (!sp)
        return NULL;
    sp->root = root;
    pthread_mutex_init(&sp->mu, NULL);
    bool all = true;
    for (int c = 0; c < EB_CG_N; c++) {
        sp->leave_fd[c] = -1;
        if (root->version == 2 ? c == 0 : root->have[c])
            all &= (sp->leave_fd[c] = open_leave(root, c)) >= 0;
    }
    for (int c = 0; c < EB_CG_N && !all; c++)
        eb_close(&sp->leave_fd[c]);
    return sp;
}

/* The set's procs files for cgroups made with it to lend, or NULL (none, or not all open). */
static const int *spare_leave_fds(const struct eb_cgroup_spares *sp)
{
    if (!sp)
        return NULL;
    for (int c = 0; c < EB_CG_N; c++)
        if (sp->leave_fd[c] >= 0)
            return sp->leave_fd;
    return NULL;
}

void eb_cgroup_spares_free(struct eb_cgroup_spares *sp)
{
    if (!sp)
        return;
    for (unsigned i = 0; i < sp->n; i++) {
        eb_cgroup_destroy(sp->kept[i]);
        free(sp->kept[i]);
    }
    for (int c = 0; c < EB_CG_N; c++)
        eb_close(&sp->leave_fd[c]);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
}

void eb_cgroup_spares_count(struct eb_cgroup_spares *sp, unsigned *kept, uint64_t *reused)
{
    pthread_mutex_lock(&sp->mu);
    *kept = sp->n;
    *reused = sp->reused;
    pthread_mutex_unlock(&sp->mu);
}

static bool spare_take(struct eb_cgroup_spares *sp, struct eb_cgroup *cg)
{
    struct eb_cgroup *k = NULL;
    pthread_mutex_lock(&sp->mu);
    if (sp->n) {
        k = sp->kept[--sp->n];
        sp->reused++;
    }
    pthread_mutex_unlock(&sp->mu);
    if (!k)
        return false;
    *cg = *k;
    free(k);
    return true;
}

/* Resets the peak: v2 through memory.peak's own fd (6.12+: the reset holds for reads through
 * that fd only, so never by path), v1 by writing 0 (the peak is then what is charged now). */
static int reset_peak(struct eb_cgroup *cg)
{
    if (cg->root->version == 1)
        return file_write(cg, EB_CGF_PEAK, "0");
    if (cg->file_fd[EB_CGF_PEAK] < 0)
        return -EBADF;
    return pwrite(cg->file_fd[EB_CGF_PEAK], "reset\n", 6, 0) < 0 ? -errno : 0;
}

/* A cgroup just made: kept later when its kind can be (v1, or v2 with a writable memory.peak,
 * tried once per set on the first one made). */
static void spare_adopt(struct eb_cgroup_spares *sp, struct eb_cgroup *cg)
{
    if (!sp)
        return;
    pthread_mutex_lock(&sp->mu);
    bool off = sp->off;
    pthread_mutex_unlock(&sp->mu);
    if (off)
        return;
    if (cg->root->version == 2 && cg->root->have[EB_CG_MEMORY] && reset_peak(cg) < 0) {
        pthread_mutex_lock(&sp->mu);
        sp->off = true;
        pthread_mutex_unlock(&sp->mu);
        return;
    }
    cg->spares = sp;
}

/* Whether the run that had cg is wholly gone from it: no process, no child cgroup. */
static bool vacated(const struct eb_cgroup *cg)
{
    char buf[256];
    uint64_t v = 1;
    for (int c = 0; c < EB_CG_N; c++) {
        if (!cg->dir[c][0])
            continue;
        struct stat st; /* cgroupfs counts a directory's child directories in its links */
        if (stat(cg->dir[c], &st) < 0 || st.st_nlink != 2)
            return false;
        if (cg->root->version == 1 &&
            (eb_cg_read(cg->dir[c], "tasks", buf, sizeof(buf)) < 0 || buf[0] != '\0'))
            return false;
    }
    return cg->root->version == 1 ||
           (eb_cg_read(cg->dir[0], "cgroup.events", buf, sizeof(buf)) == 0 &&
            eb_cg_keyed(buf, "populated", &v) && v == 0);
}

/* Makes the vacated cg a fresh run's: at most EB_CG_REUSE_LEFT bytes still charged to it, its
 * peak reset, its CPU bandwidth refilled, its other counters' baselines taken. 0 or -errno.
 * Nothing is reclaimed to get there: the pages charged to it may be mapped by others now (a
 * template's successor maps the same libraries), whose reclaim would fault them in again from
 * disk. */
static int renew_counters(struct eb_cgroup *cg)
{
    int r;
    const char *d = mem_dir(cg);
    if (d[0]) {
        if (charged(cg) > EB_CG_REUSE_LEFT)
            return -EBUSY;
        if ((r = reset_peak(cg)) < 0)
            return r;
    }
    /* The quota written again, so that a run that used it up does not leave the next one
     * throttled (or able to tell) for the rest of the period. */
    if (cg->root->have[EB_CG_CPU] && (r = write_quota(cg, cg->quota)) < 0)
        return r;
    cg->oom_base = raw_oom_kills(cg);
    int64_t cpu = raw_cpu_ns(cg);
    cg->cpu_base_ns = cpu > 0 ? cpu : 0;
    return 0;
}

void eb_cgroup_release(struct eb_cgroup *cg)
{
    struct eb_cgroup_spares *sp = cg->spares;
    struct eb_cgroup *k;
    if (sp && vacated(cg) && renew_counters(cg) == 0 && (k = malloc(sizeof(*k)))) {
        *k = *cg;
        pthread_mutex_lock(&sp->mu);
        bool room = sp->n < EB_CG_SPARES_MAX;
        if (room)
            sp->kept[sp->n++] = k;
        pthread_mutex_unlock(&sp->mu);
        if (room) {
            eb_cgroup_init(cg);
            return;
        }
        free(k);
    }
    eb_cgroup_destroy(cg);
}
