/* SPDX-License-Identifier: MIT */
/* cgroup_detect.c - where runs' cgroups go: v2 (delegated, divided into a leaf, or made at the
 * top) or v1, and why (eb_cgroup_detect in cgroup.h). Writes only what it needs to divide a
 * cgroup that is execbox's own: controllers into subtree_control and processes into the leaf. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/cgroup.h"
#include "jail/cgroup_int.h"

static const char *const ctrl_name[EB_CG_N] = {"memory", "pids", "cpu", "cpuacct"};

static bool is_dir_writable(const char *d)
{
    struct stat st;
    return stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK) == 0;
}

/* The controllers runs need, as subtree_control words (cpu where the cgroup has it). */
static bool has_ctrls(const char *list, bool cpu)
{
    return eb_word_in(list, "memory", " \n") && eb_word_in(list, "pids", " \n") &&
           (!cpu || eb_word_in(list, "cpu", " \n"));
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
    int r = eb_cg_write(leaf, "cgroup.procs", v);
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
        r = eb_cg_write(dir, "cgroup.subtree_control", ctl);
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
    bool cpu_avail = eb_word_in(ctl_avail, "cpu", " \n");
    const char *want = cpu_avail ? "+memory +pids +cpu" : "+memory +pids";
    int w = 0;
    if (eb_cg_read(mnt, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
        return false;
    if (!has_ctrls(buf, cpu_avail))
        w = eb_cg_write(mnt, "cgroup.subtree_control", want);
    if (w == 0 && mkdir(top, 0755) < 0 && errno != EEXIST)
        w = -errno;
    char ctl[512] = "";
    if (w == 0)
        (void)eb_cg_read(top, "cgroup.subtree_control", ctl, sizeof(ctl));
    if (w == 0 && !has_ctrls(ctl, cpu_avail))
        w = eb_cg_write(top, "cgroup.subtree_control", want);
    if (w == 0 &&
        (snprintf(r->leaf, sizeof(r->leaf), "%s/" EB_CG_LEAF, top) >= (int)sizeof(r->leaf) ||
         (mkdir(r->leaf, 0755) < 0 && errno != EEXIST)))
        w = -ENAMETOOLONG;
    if (w < 0 || eb_cg_read(top, "cgroup.subtree_control", buf, sizeof(buf)) < 0) {
        r->leaf[0] = '\0';
        snprintf(r->why, sizeof(r->why), "%.90s; /" EB_CG_TOP " at the top: %s", failed,
                 execbox_strerror(w < 0 ? w : -EIO));
        return false;
    }
    r->version = 2;
    snprintf(r->base[0], sizeof(r->base[0]), "%s", top);
    r->have[EB_CG_MEMORY] = eb_word_in(buf, "memory", " \n");
    r->have[EB_CG_PIDS] = eb_word_in(buf, "pids", " \n");
    r->have[EB_CG_CPU] = eb_word_in(buf, "cpu", " \n");
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
    if (eb_cg_read(mnt, "cgroup.controllers", buf, sizeof(buf)) < 0)
        return false;
    buf[strcspn(buf, "\n")] = '\0';
    if (!eb_word_in(buf, "memory", " \n") || !eb_word_in(buf, "pids", " \n")) {
        snprintf(r->why, sizeof(r->why), "v2 lacks memory/pids (has: %.40s)",
                 buf[0] ? buf : "none");
        return false;
    }
    char ctl[512] = "";
    (void)eb_cg_read(base, "cgroup.controllers", ctl, sizeof(ctl));
    bool cpu_avail = eb_word_in(ctl, "cpu", " \n");
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
            (void)eb_cg_read(mnt, "cgroup.controllers", ctl, sizeof(ctl));
            return detect_top(mnt, ctl, failed, r);
        }
        return false;
    }
    if (eb_cg_read(base, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
        return false;
    if (root_cg)
        snprintf(r->place, sizeof(r->place), "the root cgroup");
    else if (in_leaf)
        snprintf(r->place, sizeof(r->place), "%s (execbox is in its leaf " EB_CG_LEAF ")",
                 base + strlen(mnt));
    else
        snprintf(r->place, sizeof(r->place), "%s", base + strlen(mnt));
    if (!has_ctrls(buf, cpu_avail)) {
        int w = eb_cg_write(base, "cgroup.subtree_control", want);
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
                (void)eb_cg_read(mnt, "cgroup.controllers", top_ctl, sizeof(top_ctl));
                return detect_top(mnt, top_ctl, failed, r);
            }
        }
        if (w < 0) {
            snprintf(r->why, sizeof(r->why), "v2 %.80s: cannot enable memory/pids: %s",
                     base + strlen(mnt), execbox_strerror(w));
            return false;
        }
        if (eb_cg_read(base, "cgroup.subtree_control", buf, sizeof(buf)) < 0)
            return false;
    }
    r->version = 2;
    snprintf(r->base[0], sizeof(r->base[0]), "%s", base);
    r->have[EB_CG_MEMORY] = eb_word_in(buf, "memory", " \n");
    r->have[EB_CG_PIDS] = eb_word_in(buf, "pids", " \n");
    r->have[EB_CG_CPU] = eb_word_in(buf, "cpu", " \n");
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
            if (!eb_word_in(ctrls, ctrl_name[c], ","))
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
