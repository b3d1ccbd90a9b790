/* SPDX-License-Identifier: MIT */
/* cgroup.c - per-run cgroups, v1 and v2 (see cgroup.h). Only directories this file creates
 * (named with our prefix) are ever written to or removed; the rest of the hierarchy is left
 * alone. */
#include "jail/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"

static const char *const ctrl_name[EB_CG_N] = {"memory", "pids", "cpu", "cpuacct"};

static int write_str(const char *dir, const char *file, const char *val)
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

static int read_small(const char *dir, const char *file, char *buf, size_t len)
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
static bool keyed_u64(const char *text, const char *key, uint64_t *v)
{
    size_t k = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ') {
            *v = strtoull(l + k + 1, NULL, 10);
            return true;
        }
    return false;
}

static bool word_in(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, seps);
        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len;
        if (*p)
            p++;
    }
    return false;
}

static bool is_dir_writable(const char *d)
{
    struct stat st;
    return stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK) == 0;
}

/* The controllers runs need, as subtree_control words (cpu where the cgroup has it). */
static bool has_ctrls(const char *list, bool cpu)
{
    return word_in(list, "memory", " \n") && word_in(list, "pids", " \n") &&
           (!cpu || word_in(list, "cpu", " \n"));
}

/* systemd marks the cgroups it delegates (Delegate=yes; v251+) with this extended attribute. */
static bool delegated_by_systemd(const char *dir)
{
    static const char *const names[] = {"trusted.delegate", "user.delegate"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        char v[8];
        ssize_t n = getxattr(dir, names[i], v, sizeof(v) - 1);
        if (n > 0) {
            v[n] = '\0';
            if (v[0] == '1')
                return true;
        }
    }
    return false;
}

struct procs_scan {
    pid_t self;
    bool others;
    int n;
};

static int scan_pid(pid_t pid, void *arg)
{
    struct procs_scan *s = arg;
    s->n++;
    if (pid != s->self)
        s->others = true;
    return 0;
}

/* Whether dir's cgroup.procs names a process other than self. */
static bool holds_others(const char *dir, pid_t self)
{
    char p[EXECBOX_PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct procs_scan s = {.self = self};
    if (fd < 0 || eb_read_pids(fd, EB_PIDS_MAX, scan_pid, &s) < 0)
        return true; /* unknown: not ours to take */
    return s.others;
}

static int move_pid(pid_t pid, void *arg)
{
    const char *leaf = arg;
    char v[24];
    snprintf(v, sizeof(v), "%d", (int)pid);
    /* A process that exited meanwhile is ESRCH: nothing to move. */
    int r = write_str(leaf, "cgroup.procs", v);
    return r == -ESRCH ? 0 : r;
}

/* Moves every process of dir into dir/EB_CG_LEAF and enables ctl in dir's subtree_control:
 * the v2 way to divide a cgroup that holds processes. A few rounds, since a process may fork
 * while the list is read. */
static int leaf_move(const char *dir, const char *ctl, char *leaf, size_t leaf_len)
{
    if (snprintf(leaf, leaf_len, "%s/" EB_CG_LEAF, dir) >= (int)leaf_len)
        return -ENAMETOOLONG;
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
        return -errno;
    int r = -EBUSY;
    for (int round = 0; round < 8 && r == -EBUSY; round++) {
        char p[EXECBOX_PATH_MAX + 32];
        snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return -errno;
        int m = eb_read_pids(fd, EB_PIDS_MAX, move_pid, leaf);
        if (m < 0)
            return m;
        r = write_str(dir, "cgroup.subtree_control", ctl);
    }
    return r;
}

/* The cgroupfs way, as container runtimes' cgroupfs drivers do where no systemd manages the
 * tree: runs' cgroups below a cgroup execbox makes at the hierarchy's top, mnt/EB_CG_TOP, when
 * the cgroup execbox was started in cannot be divided (a login session, a service manager's
 * cgroup with other processes). execbox itself stays where it is; the leaf below EB_CG_TOP
 * holds no process of ours, only inits leaving their run's cgroup. Needs write access to the
 * top (root in the initial cgroup namespace, or a container's writable namespace root) whose
 * subtree_control takes memory and pids: the root cgroup does with processes in it, a
 * namespace root only when it holds none. Never under systemd: a cgroup it did not make for
 * us is not ours to write (it is asked for a scope instead). */
static bool detect_top(const char *mnt, const char *ctl_avail, const char *failed,
                       struct eb_cgroup_root *r)
{
    char top[EXECBOX_PATH_MAX], buf[512];
    if (!is_dir_writable(mnt) || !has_ctrls(ctl_avail, false) ||
        snprintf(top, sizeof(top), "%s/" EB_CG_TOP, mnt) >= (int)sizeof(top))
        return false;
    bool cpu_avail = word_in(ctl_avail, "cpu", " \n");
    const char *want = cpu_avail ? "+memory +pids +cpu" : "+memory +pids";
    int w = 0;
    if (read_small(mnt, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
        return false;
    if (!has_ctrls(buf, cpu_avail))
        w = write_str(mnt, "cgroup.subtree_control", want);
    if (w == 0 && mkdir(top, 0755) < 0 && errno != EEXIST)
        w = -errno;
    char ctl[512] = "";
    if (w == 0)
        (void)read_small(top, "cgroup.subtree_control", ctl, sizeof(ctl));
    if (w == 0 && !has_ctrls(ctl, cpu_avail))
        w = write_str(top, "cgroup.subtree_control", want);
    if (w == 0 &&
        (snprintf(r->leaf, sizeof(r->leaf), "%s/" EB_CG_LEAF, top) >= (int)sizeof(r->leaf) ||
         (mkdir(r->leaf, 0755) < 0 && errno != EEXIST)))
        w = -ENAMETOOLONG;
    if (w < 0 || read_small(top, "cgroup.subtree_control", buf, sizeof(buf)) < 0) {
        r->leaf[0] = '\0';
        snprintf(r->why, sizeof(r->why), "%.90s; /" EB_CG_TOP " at the top: %s", failed,
                 execbox_strerror(w < 0 ? w : -EIO));
        return false;
    }
    r->version = 2;
    snprintf(r->base[0], sizeof(r->base[0]), "%s", top);
    r->have[EB_CG_MEMORY] = word_in(buf, "memory", " \n");
    r->have[EB_CG_PIDS] = word_in(buf, "pids", " \n");
    r->have[EB_CG_CPU] = word_in(buf, "cpu", " \n");
    r->have[EB_CG_CPUACCT] = true;
    snprintf(r->place, sizeof(r->place),
             "/" EB_CG_TOP " (made at the top: no systemd to delegate a cgroup, and %.120s)",
             failed + 3);
    snprintf(r->why, sizeof(r->why), "cgroup v2 at %s", top);
    return true;
}

/* v2: usable when our own cgroup's subtree_control already delegates memory and pids, or
 * they can be enabled there: the root cgroup, or a cgroup of ours once its processes are in
 * EB_CG_LEAF (see cgroup.h). */
static bool detect_v2(const char *mnt, const char *path, const struct eb_cgroup_host *host,
                      struct eb_cgroup_root *r)
{
    char base[EXECBOX_PATH_MAX], buf[512];
    snprintf(base, sizeof(base), "%s%s", mnt, strcmp(path, "/") == 0 ? "" : path);
    /* Already in our leaf (an earlier executor of this process, or the execbox that started
     * us): runs go beside it. */
    char *last = strrchr(base, '/');
    bool in_leaf = last && strcmp(last + 1, EB_CG_LEAF) == 0 && last >= base + strlen(mnt);
    if (in_leaf) {
        snprintf(r->leaf, sizeof(r->leaf), "%s", base);
        *last = '\0';
    }
    if (read_small(mnt, "cgroup.controllers", buf, sizeof(buf)) < 0)
        return false;
    buf[strcspn(buf, "\n")] = '\0';
    if (!word_in(buf, "memory", " \n") || !word_in(buf, "pids", " \n")) {
        snprintf(r->why, sizeof(r->why), "v2 lacks memory/pids (has: %.40s)",
                 buf[0] ? buf : "none");
        return false;
    }
    char ctl[512] = "";
    (void)read_small(base, "cgroup.controllers", ctl, sizeof(ctl));
    bool cpu_avail = word_in(ctl, "cpu", " \n");
    const char *want = cpu_avail ? "+memory +pids +cpu" : "+memory +pids";
    bool root_cg = strcmp(base, mnt) == 0 && strcmp(path, "/") == 0;
    if (!is_dir_writable(base) || !has_ctrls(ctl, false)) {
        /* Not ours (no write access), or the controllers stop above us: under systemd, a
         * delegated scope of our own gets both. */
        r->need_scope = host->systemd && !in_leaf;
        snprintf(r->why, sizeof(r->why), "v2 %.80s %s", base,
                 !is_dir_writable(base) ? "is not delegated to us"
                                        : "is not given the memory and pids controllers");
        if (!host->systemd && !in_leaf && !root_cg) {
            char failed[sizeof(r->why)];
            snprintf(failed, sizeof(failed), "%s", r->why);
            (void)read_small(mnt, "cgroup.controllers", ctl, sizeof(ctl));
            return detect_top(mnt, ctl, failed, r);
        }
        return false;
    }
    if (read_small(base, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
        return false;
    if (root_cg)
        snprintf(r->place, sizeof(r->place), "the root cgroup");
    else if (in_leaf)
        snprintf(r->place, sizeof(r->place), "%s (execbox is in its leaf " EB_CG_LEAF ")",
                 base + strlen(mnt));
    else
        snprintf(r->place, sizeof(r->place), "%s", base + strlen(mnt));
    if (!has_ctrls(buf, cpu_avail)) {
        int w = write_str(base, "cgroup.subtree_control", want);
        if (w == -EBUSY && !in_leaf) {
            /* Our cgroup holds processes (always us): divide it only where it is ours. */
            bool delegated = delegated_by_systemd(base);
            bool ns_root = strcmp(path, "/") == 0; /* not the real root: that one takes it */
            bool alone = !holds_others(base, host->self);
            if (delegated || ns_root || (alone && !host->systemd)) {
                w = leaf_move(base, want, r->leaf, sizeof(r->leaf));
                snprintf(r->place, sizeof(r->place),
                         "%s (%s; execbox moved %s into its leaf " EB_CG_LEAF ")",
                         ns_root ? "/" : base + strlen(mnt),
                         delegated ? "delegated by systemd"
                         : ns_root ? "the root of this cgroup namespace, as in a container"
                                   : "a cgroup only execbox was in",
                         alone ? "itself" : "its processes");
                if (w < 0)
                    r->leaf[0] = '\0';
            } else {
                r->need_scope = host->systemd;
                snprintf(r->why, sizeof(r->why),
                         "v2 %.80s holds other processes and is not delegated to execbox",
                         base + strlen(mnt));
                if (host->systemd)
                    return false;
                char failed[sizeof(r->why)], top_ctl[512] = "";
                snprintf(failed, sizeof(failed), "%s", r->why);
                (void)read_small(mnt, "cgroup.controllers", top_ctl, sizeof(top_ctl));
                return detect_top(mnt, top_ctl, failed, r);
            }
        }
        if (w < 0) {
            snprintf(r->why, sizeof(r->why), "v2 %.80s: cannot enable memory/pids: %s",
                     base + strlen(mnt), execbox_strerror(w));
            return false;
        }
        if (read_small(base, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
            return false;
    }
    r->version = 2;
    snprintf(r->base[0], sizeof(r->base[0]), "%s", base);
    r->have[EB_CG_MEMORY] = word_in(buf, "memory", " \n");
    r->have[EB_CG_PIDS] = word_in(buf, "pids", " \n");
    r->have[EB_CG_CPU] = word_in(buf, "cpu", " \n");
    r->have[EB_CG_CPUACCT] = true; /* cpu.stat usage_usec exists in every v2 cgroup */
    snprintf(r->why, sizeof(r->why), "cgroup v2 at %s", base);
    return true;
}

void eb_cgroup_detect(const char *fs_root, const char *self_cgroup,
                      const struct eb_cgroup_host *host, struct eb_cgroup_root *r)
{
    memset(r, 0, sizeof(*r));
    char v2why[200] = "";
    /* v2 first: the unified line "0::/path", at fs_root (pure v2) or fs_root/unified (hybrid). */
    for (const char *l = self_cgroup; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, "0::", 3) != 0)
            continue;
        char path[EXECBOX_PATH_MAX];
        size_t n = strcspn(l + 3, "\n");
        if (n >= sizeof(path))
            break;
        memcpy(path, l + 3, n);
        path[n] = '\0';
        char mnt[EXECBOX_PATH_MAX];
        const char *cands[] = {"", "/unified"};
        for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
            snprintf(mnt, sizeof(mnt), "%s%s", fs_root, cands[i]);
            char probe[EXECBOX_PATH_MAX + 32];
            snprintf(probe, sizeof(probe), "%s/cgroup.controllers", mnt);
            if (access(probe, F_OK) != 0)
                continue;
            if (detect_v2(mnt, path, host, r))
                return;
            if (r->need_scope) {
                /* The slice we are in now, where the scope goes too ("" for the default). */
                char *sl = strrchr(path, '/');
                if (sl && sl != path) {
                    *sl = '\0';
                    char *p = strrchr(path, '/');
                    p = p ? p + 1 : path;
                    size_t pl = strlen(p);
                    if (pl > 6 && strcmp(p + pl - 6, ".slice") == 0)
                        snprintf(r->slice, sizeof(r->slice), "%s", p);
                    *sl = '/';
                }
            }
            snprintf(v2why, sizeof(v2why), "%s", r->why);
        }
    }
    /* v1: "N:ctrl[,ctrl]:path" per hierarchy. */
    int found = 0;
    for (int c = 0; c < EB_CG_N; c++) {
        for (const char *l = self_cgroup; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
            const char *a = strchr(l, ':');
            const char *b = a ? strchr(a + 1, ':') : NULL;
            const char *e = strchr(l, '\n');
            if (!b || (e && b > e))
                continue;
            char ctrls[128], path[EXECBOX_PATH_MAX];
            size_t cn = (size_t)(b - a - 1), pn = e ? (size_t)(e - b - 1) : strlen(b + 1);
            if (cn == 0 || cn >= sizeof(ctrls) || pn >= sizeof(path))
                continue;
            memcpy(ctrls, a + 1, cn);
            ctrls[cn] = '\0';
            memcpy(path, b + 1, pn);
            path[pn] = '\0';
            if (!word_in(ctrls, ctrl_name[c], ","))
                continue;
            const char *mounts[] = {ctrls, ctrl_name[c]};
            for (size_t m = 0; m < 2 && !r->have[c]; m++) {
                char base[EXECBOX_PATH_MAX];
                if (snprintf(base, sizeof(base), "%s/%s%s", fs_root, mounts[m],
                             strcmp(path, "/") == 0 ? "" : path) >= (int)sizeof(base))
                    continue;
                if (is_dir_writable(base)) {
                    memcpy(r->base[c], base, sizeof(base));
                    r->have[c] = true;
                    found++;
                }
            }
            break;
        }
    }
    if (r->have[EB_CG_MEMORY]) {
        char p[EXECBOX_PATH_MAX + 64];
        snprintf(p, sizeof(p), "%s/memory.memsw.limit_in_bytes", r->base[EB_CG_MEMORY]);
        r->memsw = access(p, F_OK) == 0;
    }
    if (found) {
        r->version = 1;
        snprintf(r->why, sizeof(r->why), "cgroup v1%s%s", v2why[0] ? " (" : "",
                 v2why[0] ? v2why : "");
        if (v2why[0])
            strncat(r->why, ")", sizeof(r->why) - strlen(r->why) - 1);
    } else {
        snprintf(r->why, sizeof(r->why), "no writable v1 cgroup (not root, not delegated)%s%s",
                 v2why[0] ? "; " : "", v2why);
    }
}

int eb_cgroup_create(const struct eb_cgroup_root *root, const char *name, uint64_t memory,
                     uint32_t pids, double cpus, struct eb_cgroup *cg, struct execbox_error *err)
{
    memset(cg, 0, sizeof(*cg));
    cg->root = root;
    for (int c = 0; c < EB_CG_N; c++)
        cg->procs_fd[c] = cg->leave_fd[c] = -1;
    if (root->version == 0)
        return 0;
    int ndirs = root->version == 2 ? 1 : EB_CG_N;
    char val[64];
    int r = 0;
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
    const char *d;
    uint64_t quota = (uint64_t)(cpus * 100000.0);
    if (quota < 1000)
        quota = 1000;
    if (root->version == 2) {
        d = cg->dir[0];
        snprintf(val, sizeof(val), "%" PRIu64, memory);
        if (root->have[EB_CG_MEMORY] &&
            ((r = write_str(d, "memory.max", val)) < 0 ||
             /* No memory.oom.group: as on v1, an OOM kill takes the process the kernel
              * chooses (a session's cell before its state: lib/core/cells.c), and the init,
              * which outlives it, ends the rest and reports the kill as the run's. With it,
              * the init would die too and a session would lose its state. */
             (r = write_str(d, "memory.swap.max", "0")) < 0)) {
            eb_error_set(err, r, "set the cgroup memory limit: %s", execbox_strerror(r));
            goto fail;
        }
        snprintf(val, sizeof(val), "%" PRIu32, pids);
        if (root->have[EB_CG_PIDS] && (r = write_str(d, "pids.max", val)) < 0) {
            eb_error_set(err, r, "set pids.max: %s", execbox_strerror(r));
            goto fail;
        }
        snprintf(val, sizeof(val), "%" PRIu64 " 100000", quota);
        if (root->have[EB_CG_CPU] && (r = write_str(d, "cpu.max", val)) < 0) {
            eb_error_set(err, r, "set cpu.max: %s", execbox_strerror(r));
            goto fail;
        }
    } else {
        if (root->have[EB_CG_MEMORY]) {
            d = cg->dir[EB_CG_MEMORY];
            snprintf(val, sizeof(val), "%" PRIu64, memory);
            /* memsw (RAM + swap) equal to the RAM limit: no swap at all. */
            if ((r = write_str(d, "memory.limit_in_bytes", val)) < 0 ||
                (root->memsw && (r = write_str(d, "memory.memsw.limit_in_bytes", val)) < 0)) {
                eb_error_set(err, r, "set the cgroup memory limit: %s", execbox_strerror(r));
                goto fail;
            }
            if (!root->memsw)
                (void)write_str(d, "memory.swappiness", "0");
        }
        if (root->have[EB_CG_PIDS]) {
            snprintf(val, sizeof(val), "%" PRIu32, pids);
            if ((r = write_str(cg->dir[EB_CG_PIDS], "pids.max", val)) < 0) {
                eb_error_set(err, r, "set pids.max: %s", execbox_strerror(r));
                goto fail;
            }
        }
        if (root->have[EB_CG_CPU]) {
            snprintf(val, sizeof(val), "%" PRIu64, quota);
            if ((r = write_str(cg->dir[EB_CG_CPU], "cpu.cfs_period_us", "100000")) < 0 ||
                (r = write_str(cg->dir[EB_CG_CPU], "cpu.cfs_quota_us", val)) < 0) {
                eb_error_set(err, r, "set the cpu quota: %s", execbox_strerror(r));
                goto fail;
            }
        }
    }
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
        /* Opened by us, so that the kernel checks our credentials and cgroup namespace (5.16+)
         * when the unprivileged init writes to it. Best effort: without it the run's cgroup
         * is removed only after init's exit. */
        if (root->version == 2 && root->leaf[0]) /* base has controllers: no processes */
            snprintf(p, sizeof(p), "%s/cgroup.procs", root->leaf);
        else
            snprintf(p, sizeof(p), "%s/%s", root->base[root->version == 1 ? c : 0],
                     root->version == 1 ? "tasks" : "cgroup.procs");
        cg->leave_fd[c] = open(p, O_WRONLY | O_CLOEXEC);
    }
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
        if (cg->dir[0][0] && write_str(cg->dir[0], "cgroup.kill", "1") == 0)
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

void eb_cgroup_stats(const struct eb_cgroup *cg, struct eb_cgroup_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->cpu_ns = -1;
    if (!cg->root || cg->root->version == 0)
        return;
    char buf[2048];
    uint64_t v;
    if (cg->root->version == 2) {
        const char *d = cg->dir[0];
        if (read_small(d, "memory.events", buf, sizeof(buf)) == 0 && keyed_u64(buf, "oom_kill", &v))
            st->oom_kills = v;
        if (read_small(d, "memory.current", buf, sizeof(buf)) == 0)
            st->memory = strtoull(buf, NULL, 10);
        if (read_small(d, "memory.peak", buf, sizeof(buf)) == 0)
            st->peak_memory = strtoull(buf, NULL, 10);
        if (read_small(d, "memory.stat", buf, sizeof(buf)) == 0 && keyed_u64(buf, "shmem", &v))
            st->shmem = v;
        st->cpu_ns = eb_cgroup_cpu_ns(cg);
        return;
    }
    if (cg->dir[EB_CG_MEMORY][0]) {
        if (read_small(cg->dir[EB_CG_MEMORY], "memory.oom_control", buf, sizeof(buf)) == 0 &&
            keyed_u64(buf, "oom_kill", &v))
            st->oom_kills = v;
        if (read_small(cg->dir[EB_CG_MEMORY], "memory.usage_in_bytes", buf, sizeof(buf)) == 0)
            st->memory = strtoull(buf, NULL, 10);
        if (read_small(cg->dir[EB_CG_MEMORY], "memory.max_usage_in_bytes", buf, sizeof(buf)) == 0)
            st->peak_memory = strtoull(buf, NULL, 10);
        char big[8192]; /* memory.stat: its shmem line comes after the per-cgroup block */
        if (read_small(cg->dir[EB_CG_MEMORY], "memory.stat", big, sizeof(big)) == 0 &&
            keyed_u64(big, "shmem", &v))
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
    char buf[2048];
    uint64_t v;
    if (!cg->root || cg->root->version == 0)
        return -1;
    if (cg->root->version == 2)
        return read_small(cg->dir[0], "cpu.stat", buf, sizeof(buf)) == 0 &&
                       keyed_u64(buf, "usage_usec", &v)
                   ? (int64_t)v * 1000
                   : -1;
    if (cg->dir[EB_CG_CPUACCT][0] &&
        read_small(cg->dir[EB_CG_CPUACCT], "cpuacct.usage", buf, sizeof(buf)) == 0)
        return (int64_t)strtoull(buf, NULL, 10);
    return -1;
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
        if (cg->leave_fd[c] >= 0)
            close(cg->leave_fd[c]);
        cg->leave_fd[c] = -1;
        if (cg->dir[c][0])
            remove_dir(cg->dir[c]);
        cg->dir[c][0] = '\0';
    }
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
            memset(&cg, 0, sizeof(cg));
            cg.root = root;
            for (int k = 0; k < EB_CG_N; k++)
                cg.procs_fd[k] = cg.leave_fd[k] = -1;
            snprintf(cg.dir[c], sizeof(cg.dir[c]), "%s/%s", root->base[c], e->d_name);
            eb_cgroup_destroy(&cg);
            removed++;
        }
        closedir(d);
    }
    return removed;
}
