/* SPDX-License-Identifier: MIT */
/* jail_probe.c - the jail backend's walls asked of the kernel (jail_probe.h): namespaces,
 * cgroups, the newer kernel interfaces, seccomp, Landlock, the privilege drop, and network
 * "allow". */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/jail_probe.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/cache.h"
#include "jail/landlock.h"
#include "jail/netns.h"
#include "jail/netproxy.h"
#include "jail/ns.h"
#include "jail/sdscope.h"
#include "jail/seccomp.h"
#include "jail/stage.h"
#include "jail/tmpfs.h"

static long read_long(const char *path, long dflt)
{
    char *buf = NULL;
    if (eb_read_file(path, 64, &buf, NULL) < 0)
        return dflt;
    long v = strtol(buf, NULL, 10);
    free(buf);
    return v;
}

static void detect_cgroup(struct eb_cgroup_root *r)
{
    char *self = NULL;
    if (eb_read_file("/proc/self/cgroup", 1U << 16, &self, NULL) < 0) {
        memset(r, 0, sizeof(*r));
        snprintf(r->why, sizeof(r->why), "cannot read /proc/self/cgroup");
        return;
    }
    struct eb_cgroup_host host = {.systemd = eb_systemd_running(), .self = getpid()};
    eb_cgroup_detect("/sys/fs/cgroup", self, &host, r);
    free(self);
}

void eb_jail_probe_cgroup(struct eb_cgroup_root *r)
{
    detect_cgroup(r);
    if (r->version == 2 || !r->need_scope)
        return;
    char unit[64], why[sizeof(r->why)];
    struct execbox_error e = {0};
    snprintf(why, sizeof(why), "%s", r->why);
    if (eb_systemd_scope(r->slice, unit, sizeof(unit), &e) < 0) {
        snprintf(r->why, sizeof(r->why), "%.90s; a delegated systemd scope: %.100s", why, e.msg);
        return;
    }
    detect_cgroup(r);
    char place[sizeof(r->place)];
    snprintf(place, sizeof(place), "%s", r->place);
    if (r->version == 2)
        snprintf(r->place, sizeof(r->place), "%.100s, a scope systemd made for execbox (%.60s)",
                 place, why);
}

static int probe_live(struct execbox_check *c);
static void check_kernel(struct execbox_check *c);

/* Storing the report is best effort, only into a stage directory that exists and is ours (see
 * cache.h). */
int eb_jail_probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    (void)o;
    int r = probe_live(c);
    char dir[EXECBOX_PATH_MAX];
    eb_stage_path(dir, sizeof(dir));
    (void)eb_probe_cache_store(dir, c);
    return r;
}

/* An executor's open (`execbox run`): the cached report when it is ours, under the same key
 * and younger than EB_PROBE_CACHE_TTL; else a live probe (which refreshes it). Forking the
 * privilege probe's child and reading a dozen kernel files cost ~0.2 ms a start. */
int eb_jail_probe_open(const struct execbox_executor_options *o, struct execbox_check *c)
{
    char dir[EXECBOX_PATH_MAX];
    eb_stage_path(dir, sizeof(dir));
    if (eb_probe_cache_load(dir, EB_PROBE_CACHE_TTL, c) == 0)
        return c->usable ? 0 : -ENOTSUP;
    return eb_jail_probe(o, c);
}

static int probe_live(struct execbox_check *c)
{
    bool root = geteuid() == 0;
    bool userns = access("/proc/self/ns/user", F_OK) == 0 &&
                  read_long("/proc/sys/user/max_user_namespaces", 1) > 0;
    const char *userns_why = "a fresh user namespace; the guest is uid 1000 inside, a host uid "
                             "of its own outside";
    if (userns && !root) {
        userns_why = "a fresh user namespace; the guest is uid 1000 inside, you outside";
        if (read_long("/proc/sys/kernel/unprivileged_userns_clone", 1) == 0) {
            userns = false;
            userns_why = "restricted: kernel.unprivileged_userns_clone=0 (run as root)";
        } else if (read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 1) {
            userns = false;
            userns_why = "restricted by AppArmor (apparmor_restrict_unprivileged_userns=1)";
        }
    } else if (!userns) {
        userns_why = "missing: no user namespaces (CONFIG_USER_NS or max_user_namespaces=0)";
    }
    eb_check_add(c, "user namespace", userns, true, "%s", userns_why);
    static const struct {
        const char *name, *file, *what;
    } ns[] = {
        {"pid namespace", "pid", "own pid 1; host processes invisible, unkillable"},
        {"mount namespace", "mnt", "tmpfs root, read-only system dirs, pivot_root"},
        {"network namespace", "net", "empty: no interfaces but a down loopback"},
        {"ipc namespace", "ipc", "no host SysV IPC or POSIX queues"},
        {"uts namespace", "uts", "own hostname"},
        {"cgroup namespace", "cgroup", "host cgroup paths hidden"},
    };
    bool all_ns = userns;
    for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/ns/%s", ns[i].file);
        bool ok = access(p, F_OK) == 0;
        all_ns &= ok;
        eb_check_add(c, ns[i].name, ok, true, ok ? "%s" : "missing: kernel built without it (%s)",
                     ns[i].what);
    }
    struct eb_cgroup_root cg;
    eb_jail_probe_cgroup(&cg);
    const char *v = cg.version == 2 ? "v2" : "v1";
    static const char *const cgw[] = {"memory", "pids", "cpu"};
    static const char *const cgd[] = {"RAM cap, no swap, OOM read from the cgroup",
                                      "process and thread cap", "CPU quota from cpus"};
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "cgroup %s", cgw[i]);
        bool ok = cg.version && cg.have[i];
        eb_check_add(c, name, ok, true, ok ? "%s: %s" : "%s%s", ok ? v : "", ok ? cgd[i] : cg.why);
    }
    /* Which case of the host's cgroups this is, and what to do where none works. */
    if (cg.version == 2)
        eb_check_add(c, "cgroup placement", true, false, "v2: runs' cgroups below %s", cg.place);
    else if (cg.version == 1)
        eb_check_add(c, "cgroup placement", true, false,
                     "v1: runs' cgroups below execbox's own cgroup in each hierarchy");
    else
        eb_check_add(c, "cgroup placement", false, false,
                     "none usable (%s): run execbox as root in a systemd unit with Delegate=yes "
                     "(or `systemd-run -p Delegate=yes --scope execbox ...`), in the root cgroup, "
                     "or in a container with a cgroup namespace of its own (docs/hosts.md)",
                     cg.why);
    check_kernel(c);
    char detail[200];
    bool sc = eb_seccomp_probe(detail, sizeof(detail)) == 0;
    eb_check_add(c, "seccomp", sc, true, "%s", detail);
    bool ll = eb_landlock_probe(detail, sizeof(detail)) == 0;
    eb_check_add(c, "landlock", ll, true, "%s", detail);
    /* Each proven in a child that does what a sandbox does and reads the result back. */
    struct eb_privs_probe pp;
    eb_privs_probe(&pp);
    eb_check_add(c, "no_new_privs", pp.no_new_privs == 0, true,
                 pp.no_new_privs == 0 ? "%s" : "failed: %s",
                 pp.no_new_privs == 0 ? "set before exec: setuid bits and file caps inert"
                                      : execbox_strerror(pp.no_new_privs));
    eb_check_add(c, "capabilities", pp.capabilities == 0, true,
                 pp.capabilities == 0 ? "%s" : "cannot be emptied: %s",
                 pp.capabilities == 0
                     ? "bounding, ambient, permitted, effective and inheritable sets emptied"
                     : execbox_strerror(pp.capabilities));
    eb_check_add(c, "rlimits", pp.rlimits == 0, true, pp.rlimits == 0 ? "%s" : "cannot be set: %s",
                 pp.rlimits == 0 ? "file size, open files, CPU seconds, no core dumps"
                                 : execbox_strerror(pp.rlimits));
    /* A run would fail at these steps: not usable. */
    bool privs = pp.no_new_privs == 0 && pp.capabilities == 0 && pp.rlimits == 0;
    c->usable = all_ns && privs;
    bool full = all_ns && cg.version && cg.have[0] && cg.have[1] && cg.have[2] && sc && ll;
    snprintf(c->tier, sizeof(c->tier), "%s",
             !all_ns  ? "unusable: namespaces missing"
             : !privs ? "unusable: privileges cannot be dropped or limits set (see above)"
             : full   ? "full: namespaces + cgroup + seccomp + landlock (container grade)"
                      : "degraded: namespaces, but walls missing (see above)");
    return c->usable ? 0 : -ENOTSUP;
}

/* A namespace with loopback up and the proxy's listening socket in it, the proxy on it. */
void eb_jail_check_network(struct execbox_check *c)
{
    const char *name = "network allow-list";
    if (geteuid() != 0) {
        eb_check_add(c, name, false, false,
                     "not available without root: the proxy's socket is made in the sandbox's "
                     "network namespace from the host side");
        return;
    }
    char why[160];
    int ns = -1, lfd = -1;
    int r = eb_netns_proxy_listen(-1, EB_PROXY_PORT, &ns, &lfd, why, sizeof(why));
    if (r < 0) {
        eb_check_add(c, name, false, false, "not available: %s", why);
        return;
    }
    close(ns);
    struct execbox_policy pol;
    execbox_policy_init(&pol);
    struct eb_proxy *p = NULL;
    struct execbox_error err = {0};
    if (eb_proxy_start(&pol, lfd, &p, &err) < 0) {
        eb_check_add(c, name, false, false, "not available: %s", err.msg);
        return;
    }
    eb_proxy_stop(p, NULL);
    eb_check_add(c, name, true, false,
                 "network allow: a proxy at 127.0.0.1:%d inside the sandbox's own namespace is "
                 "its only way out; listed hosts and ports only",
                 EB_PROXY_PORT);
}

/* `execbox check`: the newer kernel interfaces the jail relies on, and which mechanism it takes
 * where a newer one is missing (docs/hosts.md lists them by kernel version). */
static void check_kernel(struct execbox_check *c)
{
    struct utsname u;
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "?");
    int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    bool pidfd = pfd >= 0;
    if (pfd >= 0)
        close(pfd);
    if (geteuid() != 0) {
        eb_check_add(c, "kernel interfaces", pidfd, false, "Linux %s: pidfds %s", u.release,
                     pidfd ? "yes" : "missing (Linux 5.3+)");
        return;
    }
    /* As root the jail makes detached tmpfs (fsopen/fsmount, 5.2), sets their flags
     * (mount_setattr, 5.12), and clones /code's read-only view: of the detached mount where
     * the kernel allows it (6.15+), else once the child has attached it. */
    struct execbox_error e = {0};
    const char *const opts[] = {"size=4096", "nr_inodes=4"};
    int m = eb_tmpfs_detached(opts, ARRAY_SIZE(opts), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "probe",
                              &e);
    bool setattr = false, clone = false;
    if (m >= 0) {
        struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
        setattr = syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0;
        int ro =
            (int)syscall(SYS_open_tree, m, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        clone = ro >= 0;
        if (ro >= 0)
            close(ro);
        close(m);
    }
    bool ok = pidfd && m >= 0 && setattr;
    eb_check_add(c, "kernel interfaces", ok, false, "Linux %s: %s; /code's read-only view %s",
                 u.release,
                 ok         ? "mount API, mount_setattr, pidfds"
                 : m < 0    ? e.msg
                 : !setattr ? "mount_setattr missing (Linux 5.12+)"
                            : "pidfds missing (Linux 5.3+)",
                 clone && !eb_compat_forced("detached-clone")
                     ? "cloned from the detached mount"
                     : "cloned once attached (the kernel cannot clone a detached mount before "
                       "6.15, or EXECBOX_JAIL_COMPAT says so)");
}
