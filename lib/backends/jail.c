/* SPDX-License-Identifier: MIT */
/*
 * jail.c - the `jail` backend: execbox's own Linux sandbox, the default. Each run gets new
 * pid, mount, ipc, uts, cgroup, network and user namespaces, a cgroup with memory (no swap),
 * pids and CPU limits, a fresh root (tmpfs + read-only system binds + pivot_root), no
 * capabilities, no_new_privs, Landlock and a seccomp filter; destroy() tears everything down.
 * The executor drives each sandbox through start/deliver/wait/destroy (lib/backends/backend.h). See
 * docs/threat-model.md for what each wall stops.
 *
 * Shape: parent --clone3(namespaces)--> init (pid 1: mounts, ids, privileges, eb_init_main)
 *        --fork--> guest (Landlock, rlimits, seccomp, exec).
 * As root, the pid/mount/ipc/uts/cgroup(/net) namespaces are made by clone3 while the child is
 * still host root (so it can mount and join cgroups with no round trip to the parent), and the
 * user namespace comes last, made by a process that is already nobody: the guest's user
 * namespace then owns nothing it could mount or reconfigure. As an ordinary user the user
 * namespace comes first (it is what grants the right to make the others).
 *
 * A caller-given workspace (root mode): an id-mapped mount of the directory, so the host inode
 * is never chowned: through it the guest (nobody outside) is seen as the directory's owner,
 * and the files it creates belong on the host to the directory's owner and group. The syscall
 * filter refuses setuid and setgid modes (the guest acts as that owner, possibly root, there),
 * system directories are refused as workspaces, and the directory's own owner and mode are
 * put back after the run. As an ordinary user the guest is the user outside.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/cache.h"
#include "jail/cgroup.h"
#include "jail/landlock.h"
#include "jail/mntpin.h"
#include "jail/mounts.h"
#include "jail/netns.h"
#include "jail/netproxy.h"
#include "jail/ns.h"
#include "jail/prewarm.h"
#include "jail/sdscope.h"
#include "jail/seccomp.h"
#include "jail/tpl_blobs.h"
#include "jail/tpl_proto.h"
#include "jail/uidpool.h"
#include "model/lang.h"
#include "model/result.h"
#include "proc/proc.h"
#include "ws/workspace.h"
#include "ws/wsfile.h"

#define CG_PREFIX "execbox-"
#define SHM_SIZE (16U << 20) /* /dev/shm: POSIX semaphores and shared memory */
#define NETNS_POOL 2
#define EXITING_MAX 64
#define STAGE_VERSION "execbox-stage-3\n" /* bump when the staged files change */
/* Root: the pinned prepared mount namespaces (mntpin.h). */
#define MNTNS_PIN_DIR "/run/execbox/mntns"

struct jail {
    struct eb_userns userns; /* root_mode and, unprivileged, every sandbox's maps */
    /* Root: the host uids execbox owns, one a sandbox (uidpool.h); NULL unprivileged. */
    struct eb_uid_pool *uids;
    struct eb_uid_range uid_range;
    struct eb_cgroup_root cg;
    struct eb_seccomp seccomp;
    bool seccomp_ok, landlock_ok;
    char cache[EXECBOX_PATH_MAX]; /* staged /etc and the mount point of new roots */
    char rootdir[EXECBOX_PATH_MAX];
    struct eb_mount_plan sys; /* shared by every run without a rootfs */
    /* Root: the prepared mount namespace holding sys's root (see mounts.h), the host's pin
     * (mntpin.h) or one made for this executor, opened at its first run (see run_mntns); -1
     * before, or when it cannot be made (then each run builds its root in a copy of the host's
     * table). Its runs mount their own proc (proc_plan) and dyn. Set once under mntns_lock,
     * closed at close. */
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
    /* Templates (see "templates" below; lib/core/template.c keeps them): what every one is handed,
     * made once (under tpl_start_lock). */
    pthread_mutex_t tpl_start_lock;
    int tpl_blob_fds[4]; /* sealed memfds: helper module, init program, seccomp, font list */
};

/* ---- probe ---------------------------------------------------------------------------------- */

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

/* Where runs' cgroups go (cgroup.h). On a v2 host whose cgroup here is systemd's (a login
 * session, a service without Delegate=yes), systemd is asked for a delegated scope of our own
 * first (sdscope.h): it moves this process, once, and the detection is made again there. */
static void probe_cgroup(struct eb_cgroup_root *r)
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

/* The jail's stage directory (staged /etc, the root's mount point, the probe cache): root's
 * under /run/execbox, an ordinary user's in $TMPDIR. prepare_cache makes it and checks it is
 * ours. */
static void stage_path(char *buf, size_t n)
{
    if (geteuid() == 0)
        snprintf(buf, n, "/run/execbox/jail");
    else
        snprintf(buf, n, "%s/execbox-jail-%u", eb_tmp_dir(), (unsigned)geteuid());
}

static int probe_live(struct execbox_check *c);
static void check_kernel(struct execbox_check *c);

/* `execbox check`: every wall asked of the kernel now; the report is kept for the next runs
 * (best effort, only into a stage directory that exists and is ours: see cache.h). */
static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    (void)o;
    int r = probe_live(c);
    char dir[EXECBOX_PATH_MAX];
    stage_path(dir, sizeof(dir));
    (void)eb_probe_cache_store(dir, c);
    return r;
}

/* An executor's open (`execbox run`): the cached report when it is ours, under the same key
 * and younger than EB_PROBE_CACHE_TTL; else a live probe (which refreshes it). Forking the
 * privilege probe's child and reading a dozen kernel files cost ~0.2 ms a start. */
static int probe_open(const struct execbox_executor_options *o, struct execbox_check *c)
{
    char dir[EXECBOX_PATH_MAX];
    stage_path(dir, sizeof(dir));
    if (eb_probe_cache_load(dir, EB_PROBE_CACHE_TTL, c) == 0)
        return c->usable ? 0 : -ENOTSUP;
    return probe(o, c);
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
    probe_cgroup(&cg);
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

/* `execbox check`: make what a run with network "allow" makes (a namespace with loopback up and
 * the proxy's listening socket in it, the proxy on it), and take it down again. */
static void check_network(struct execbox_check *c)
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

/* ---- open / close ---------------------------------------------------------------------------- */

/* Is "<pid>-..." the name of something made by an execbox that is gone? */
static bool owner_dead(const char *s)
{
    char *end;
    long pid = strtol(s, &end, 10);
    return pid > 0 && *end == '-' && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* A directory entry of ours: a real directory (not a symlink), owned by us, with exactly the
 * mode we make it with. In a world-writable $TMPDIR a name proves nothing; this does (no other
 * user can make a directory owned by us). */
static bool our_dir(int dfd, const char *name, mode_t mode)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && (st.st_mode & 07777) == mode;
}

/* The journal of a caller's workspace root in flight (root mode): "<dev> <ino> <mode> <uid>
 * <gid>\n<path>", written before the run and removed after it. If execbox is killed in
 * between, the sweep puts the directory's owner and mode back, by inode: a path that now names
 * another directory is left alone. */
#define WS_JOURNAL "wsroot."

static void restore_workspace_root(int fd, const struct stat *before);

static void replay_journal(int dfd, const char *name)
{
    _cleanup_close_ int jfd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char text[EXECBOX_PATH_MAX + 128];
    ssize_t n = jfd < 0 ? -1 : eb_read_full(jfd, text, sizeof(text) - 1);
    if (n > 0) {
        text[n] = '\0';
        unsigned long long dev, ino;
        unsigned mode, uid, gid;
        int used = 0;
        if (sscanf(text, "%llu %llu %o %u %u\n%n", &dev, &ino, &mode, &uid, &gid, &used) == 5 &&
            used > 0 && text[used] == '/') {
            _cleanup_close_ int wfd =
                open(text + used, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            struct stat now;
            if (wfd >= 0 && fstat(wfd, &now) == 0 && now.st_dev == (dev_t)dev &&
                now.st_ino == (ino_t)ino) {
                struct stat before = now;
                before.st_mode = (now.st_mode & ~07777U) | (mode & 07777U);
                before.st_uid = uid;
                before.st_gid = gid;
                restore_workspace_root(wfd, &before);
            }
        }
    }
    (void)unlinkat(dfd, name, 0);
}

/* At most once per EB_SWEEP_INTERVAL seconds per host and sweep scope: the stamp's mtime says
 * when the last sweep began. A sweep sees only the cgroups below its process's own cgroup and
 * its own $TMPDIR, so processes with other ones keep other stamps (named by a hash of both): a
 * sweep elsewhere must not stand in for ours. */
static bool sweep_due(const struct jail *j)
{
    uint32_t h = 2166136261U; /* FNV-1a */
    const char *parts[EB_CG_N + 1];
    for (int c = 0; c < EB_CG_N; c++)
        parts[c] = j->cg.base[c];
    parts[EB_CG_N] = eb_tmp_dir();
    for (int i = 0; i <= EB_CG_N; i++)
        for (const char *q = parts[i]; q && *q; q++)
            h = (h ^ (uint8_t)*q) * 16777619U;
    char p[EXECBOX_PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/.swept-%08x", j->cache, h);
    _cleanup_close_ int fd =
        open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return true;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (st.st_size > 0 && now.tv_sec >= st.st_mtim.tv_sec &&
        now.tv_sec - st.st_mtim.tv_sec < EB_SWEEP_INTERVAL)
        return false;
    (void)!write(fd, "x", st.st_size > 0 ? 0 : 1);
    (void)futimens(fd, NULL);
    return true;
}

/* Removes what execbox processes killed before their teardown left behind: run cgroups
 * "execbox-<pid>-<executor>-<n>", unprivileged workspaces "<tmp>/execbox-ws-<pid>-*" that are
 * our own 0700 directories, /etc stages "<cache>.<pid>-*" (swapped out or half-built) that are
 * ours and that no sandbox holds (each run keeps a shared lock on the stage its /etc is bound
 * from), and it replays the workspace-root journals of dead runs. Only names whose pid is
 * dead; every delete relative to a directory fd, never following a symlink (eb_rm_rf_at).
 * (Mounts and processes need no sweep: they live in namespaces that died with the run.) */
static void remove_stale(struct jail *j, bool force)
{
    bool due = sweep_due(j); /* restamps when due */
    if (!due && !force)
        return;
    eb_cgroup_remove_stale(&j->cg, CG_PREFIX);
    (void)eb_probe_cache_sweep(j->cache, 2 * EB_PROBE_CACHE_TTL);
    if (j->userns.root_mode)
        eb_mntns_pin_sweep(MNTNS_PIN_DIR, EB_MNTNS_PIN_MAX_AGE);
    DIR *d = opendir(eb_tmp_dir());
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strncmp(e->d_name, "execbox-ws-", 11) == 0 && owner_dead(e->d_name + 11) &&
                our_dir(dirfd(d), e->d_name, 0700))
                (void)eb_rm_rf_at(dirfd(d), e->d_name);
        closedir(d);
    }
    char parent[EXECBOX_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", j->cache);
    char *slash = strrchr(parent, '/');
    if (!slash)
        return;
    char base[256];
    snprintf(base, sizeof(base), "%s", slash + 1);
    size_t blen = strlen(base);
    *slash = '\0';
    d = opendir(parent[0] ? parent : "/");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (j->userns.root_mode && strncmp(e->d_name, WS_JOURNAL, strlen(WS_JOURNAL)) == 0 &&
            owner_dead(e->d_name + strlen(WS_JOURNAL))) {
            replay_journal(dirfd(d), e->d_name);
            continue;
        }
        if (strncmp(e->d_name, base, blen) != 0 || e->d_name[blen] != '.' ||
            !owner_dead(e->d_name + blen + 1) || !our_dir(dirfd(d), e->d_name, 0755))
            continue;
        /* In use as some live run's /etc? Its lock says so. */
        _cleanup_close_ int sfd =
            openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd >= 0 && flock(sfd, LOCK_EX | LOCK_NB) == 0)
            (void)eb_rm_rf_at(dirfd(d), e->d_name);
    }
    closedir(d);
}

/* The /etc staging and root mount point live in a directory of ours that persists between
 * execbox processes (re-staged when its marker is older than a staged source), so a cold run
 * does not copy /etc each time. It must be owned by us and writable by nobody else. */
static int prepare_cache(struct jail *j, struct execbox_error *err)
{
    if (geteuid() == 0 && mkdir("/run/execbox", 0755) < 0 && errno != EEXIST)
        return eb_error_set(err, -errno, "mkdir /run/execbox: %s", execbox_strerror(-errno));
    stage_path(j->cache, sizeof(j->cache));
    struct stat st;
    char marker[EXECBOX_PATH_MAX + 16];
    snprintf(marker, sizeof(marker), "%s/.staged", j->cache);
    snprintf(j->rootdir, sizeof(j->rootdir), "%s/root", j->cache);
    bool fresh = false;
    if (lstat(j->cache, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
            return eb_error_set(err, -EPERM, "%s is not a private directory of ours", j->cache);
        struct stat ms;
        /* The marker names the stage's layout: a newer execbox re-stages. */
        char *v = NULL;
        fresh = stat(marker, &ms) == 0 && eb_read_file(marker, 64, &v, NULL) == 0 &&
                strcmp(v, STAGE_VERSION) == 0;
        free(v);
        static const char *const src[] = {"/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime",
                                          "/etc/python3", "/etc/matplotlibrc"};
        for (size_t i = 0; fresh && i < ARRAY_SIZE(src); i++) {
            struct stat s2;
            if (lstat(src[i], &s2) == 0 && (s2.st_mtim.tv_sec > ms.st_mtim.tv_sec ||
                                            (s2.st_mtim.tv_sec == ms.st_mtim.tv_sec &&
                                             s2.st_mtim.tv_nsec > ms.st_mtim.tv_nsec)))
                fresh = false;
        }
    }
    if (!fresh) {
        /* Build in a new directory and rename it over the old one: concurrent execbox
         * processes never see a half-staged /etc. */
        char build[EXECBOX_PATH_MAX + 16], p[EXECBOX_PATH_MAX + 32];
        snprintf(build, sizeof(build), "%s.%d-XXXXXX", j->cache, (int)getpid());
        if (!mkdtemp(build))
            return eb_error_set(err, -errno, "mkdtemp %s: %s", build, execbox_strerror(-errno));
        if (chmod(build, 0755) < 0) {
            int e = eb_error_set(err, -errno, "chmod %s: %s", build, execbox_strerror(-errno));
            eb_rm_rf(build);
            return e;
        }
        int r = eb_stage_etc(build, err);
        if (r == 0)
            (void)eb_prewarm_stage(build); /* best effort: without it matplotlib builds its own */
        snprintf(p, sizeof(p), "%s/root", build);
        if (r == 0 && mkdir(p, 0755) < 0)
            r = eb_error_set(err, -errno, "mkdir %s", p);
        snprintf(p, sizeof(p), "%s/.staged", build);
        if (r == 0 && (r = eb_write_file(p, STAGE_VERSION, strlen(STAGE_VERSION), 0644)) < 0)
            eb_error_set(err, r, "write %s", p);
        if (r == 0) {
            /* Swap the new stage in atomically: the path never disappears, so runs of other
             * execbox processes starting now find either stage. The old one is left under our
             * build name (with our pid) and swept by a later open once we are gone, since a
             * run in flight may still have it mounted as its /etc. */
            if (syscall(SYS_renameat2, AT_FDCWD, build, AT_FDCWD, j->cache, RENAME_EXCHANGE) < 0) {
                if (errno != ENOENT || (syscall(SYS_renameat2, AT_FDCWD, build, AT_FDCWD, j->cache,
                                                RENAME_NOREPLACE) < 0 &&
                                        errno != EEXIST))
                    r = eb_error_set(err, -errno, "install %s: %s", j->cache,
                                     execbox_strerror(-errno));
                else
                    build[0] = '\0';
            }
        }
        if (r < 0 && build[0])
            eb_rm_rf(build);
        if (r < 0)
            return r;
    }
    char name[64];
    if (eb_prewarm_load(j->cache, name, &j->mpl_data, &j->mpl_len) == 0)
        snprintf(j->mpl_file, sizeof(j->mpl_file), "tmp/.matplotlib/%s", name);
    eb_plan_init(&j->sys);
    /* /etc is bound per run, from the stage the run holds locked (sandbox_start). */
    return eb_plan_system(&j->sys, NULL, "", err);
}

static void reap_exiting(bool block_oldest);
static void grave_flush(void);

static void jail_close(void *state)
{
    struct jail *j = state;
    if (!j)
        return;
    for (int i = 0; i < 4; i++)
        eb_close(&j->tpl_blob_fds[i]);
    grave_flush(); /* the cgroups in it point at j->cg */
    pthread_mutex_destroy(&j->tpl_start_lock);
    eb_netns_pool_free(j->pool);
    eb_close(&j->mntns_fd);
    pthread_mutex_destroy(&j->mntns_lock);
    reap_exiting(false);
    eb_seccomp_release(&j->seccomp);
    eb_uid_pool_free(j->uids);
    free(j->mpl_data);
    free(j);
}

static int jail_open(const struct execbox_executor_options *o, const struct execbox_check *report,
                     void **ret_state, struct execbox_error *err)
{
    struct jail *j = calloc(1, sizeof(*j));
    if (!j)
        return eb_error_set(err, -ENOMEM, "out of memory");
    eb_userns_prepare(&j->userns, 0);
    pthread_mutex_init(&j->mntns_lock, NULL);
    j->mntns_fd = -1;
    pthread_mutex_init(&j->tpl_start_lock, NULL);
    for (int i = 0; i < 4; i++)
        j->tpl_blob_fds[i] = -1;
    if (getrandom(&j->id, sizeof(j->id), 0) != sizeof(j->id))
        j->id = (unsigned)(uintptr_t)j ^ (unsigned)eb_now_ns();
    /* Root only (see netns.h). Started first, so that even a one-shot run finds a namespace
     * made on another core while this thread builds the filter and the run's cgroup. */
    if (j->userns.root_mode)
        j->pool = eb_netns_pool_new(NETNS_POOL);
    probe_cgroup(&j->cg);
    for (size_t i = 0; i < report->n_walls; i++) {
        if (strcmp(report->walls[i].name, "seccomp") == 0)
            j->seccomp_ok = report->walls[i].ok;
        if (strcmp(report->walls[i].name, "landlock") == 0)
            j->landlock_ok = report->walls[i].ok;
    }
    int r = 0;
    if (j->seccomp_ok && (r = eb_seccomp_prepare(&j->seccomp, err)) < 0) {
        jail_close(j);
        return r;
    }
    if ((r = prepare_cache(j, err)) < 0) {
        jail_close(j);
        return r;
    }
    /* Root: each sandbox's host uid comes from execbox's own range (uidpool.h), one lock file
     * under /run/execbox (made by prepare_cache) for every execbox process of the host. A range
     * that overlaps a real user or group is refused here, before any run. */
    if (j->userns.root_mode &&
        ((r = eb_uid_range_load(&j->uid_range, err)) < 0 ||
         (r = eb_uid_pool_open(EB_UIDS_LOCK_FILE, &j->uid_range, &j->uids, err)) < 0)) {
        jail_close(j);
        return r;
    }
    eb_plan_init(&j->proc_plan);
    eb_plan_add(&j->proc_plan, EB_MOP_PROC, NULL, "proc", NULL, 0, -1);
    remove_stale(j, o && o->sweep_now);
    *ret_state = j;
    return 0;
}

/* ---- one run ------------------------------------------------------------------------------- */

/* The prepared mount namespace for a run (root, host system directories), or -1: the one
 * pinned on the host for every execbox process (mntpin.h), made by the first run that finds
 * none. So even a one-shot `execbox run` copies a table of a dozen mounts, whatever the host's
 * count; only the run that makes the pin copies the host's table (once, in the helper). This
 * executor keeps its fd until it closes, as it did the namespace it made itself before pins. */
static int run_mntns(struct jail *j)
{
    if (!j->userns.root_mode)
        return -1;
    pthread_mutex_lock(&j->mntns_lock);
    if (j->mntns_fd < 0 && !j->mntns_failed) {
        const struct eb_mount_plan *plans[] = {&j->sys};
        bool pinned;
        if (eb_mntns_pin_open(MNTNS_PIN_DIR, j->rootdir, plans, 1, EB_MNTNS_PIN_MAX_AGE,
                              &j->mntns_fd, &pinned, NULL) < 0)
            j->mntns_failed = true;
    }
    int fd = j->mntns_fd;
    pthread_mutex_unlock(&j->mntns_lock);
    return fd;
}

/* Inits that sent their result and left the run's cgroup are still exiting (the kernel tears
 * down the sandbox's namespaces in their exit): nothing waits for that. Their pidfds wait here,
 * one list for the process (an executor closed with one still exiting hands it to the next
 * runs of any executor, so a process that makes many executors does not gather zombies), and
 * are reaped without blocking at each run's start and at each close; one still exiting when
 * the process exits is reaped by the system. Only when the list is full does a run wait for
 * the oldest. */
static pthread_mutex_t exiting_lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting[EXITING_MAX];
static int n_exiting;

static void reap_exiting(bool block_oldest)
{
    pthread_mutex_lock(&exiting_lock);
    int k = 0;
    for (int i = 0; i < n_exiting; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        int opts = WEXITED | (block_oldest && i == 0 ? 0 : WNOHANG);
        long w = syscall(SYS_waitid, P_PIDFD, exiting[i], &si, opts, NULL);
        if (w < 0 ? errno != EINTR : si.si_pid != 0)
            close(exiting[i]); /* reaped (or not ours to reap any more) */
        else
            exiting[k++] = exiting[i];
    }
    n_exiting = k;
    pthread_mutex_unlock(&exiting_lock);
}

static void defer_reap(int *pidfd)
{
    if (*pidfd < 0)
        return;
    pthread_mutex_lock(&exiting_lock);
    bool full = n_exiting >= EXITING_MAX;
    pthread_mutex_unlock(&exiting_lock);
    if (full)
        reap_exiting(true);
    pthread_mutex_lock(&exiting_lock);
    if (n_exiting < EXITING_MAX) {
        exiting[n_exiting++] = *pidfd;
        *pidfd = -1;
    }
    pthread_mutex_unlock(&exiting_lock);
    if (*pidfd >= 0) { /* still full: another thread filled it; wait for this one */
        siginfo_t si;
        syscall(SYS_waitid, P_PIDFD, *pidfd, &si, WEXITED, NULL);
        eb_close(pidfd);
    }
}

/* Everything the child needs, prepared by the parent (the child formats nothing). */
struct child_ctx {
    struct jail *j;
    const struct eb_userns *userns; /* the sandbox's own maps (its host uid) */
    int alive_fd;                   /* read end: POLLHUP once the parent is gone */
    int keep_fds[EB_KEEP_FDS_MAX];  /* every fd the child needs; all others are closed at once */
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
};

/* Adds fd (if >= 0) to the child's keep list; past EB_KEEP_FDS_MAX only counts, so that the
 * parent fails before the clone instead of the list overflowing or an fd being dropped. */
static void keep_fd(struct child_ctx *c, int fd)
{
    if (fd < 0)
        return;
    if (c->n_keep < EB_KEEP_FDS_MAX)
        c->keep_fds[c->n_keep] = fd;
    c->n_keep++;
}

__attribute__((noreturn)) static void child_fail(const struct child_ctx *c, int code,
                                                 const char *what)
{
    struct eb_msg m;
    memset(&m, 0, sizeof(m));
    m.type = EB_MSG_ERROR;
    eb_error_set_raw(&m.err, code, what);
    (void)eb_write_all(c->init.status_fd, &m, sizeof(m));
    _exit(127);
}

static bool parent_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

/* In the guest after fork from init: Landlock (paths as the guest sees them). */
static int guest_setup(void *arg, struct execbox_error *err)
{
    const struct child_ctx *c = arg;
    if (!c->j->landlock_ok)
        return 0;
    int r = eb_landlock_apply(c->writable, err);
    return r == -EOPNOTSUPP ? 0 : r;
}

/* In a template's interpreter, after fork from init: keep CAP_SYS_ADMIN and CAP_SETPCAP, in the
 * template's own user namespace only, across the exec (ambient), so that it can make each run's
 * namespaces and mounts and drop the run's bounding set (see tpl_helper.c). No Landlock and no
 * seccomp here: they would forbid exactly that; each run gets both before its code. */
static int tpl_guest_setup(void *arg, struct execbox_error *err)
{
    (void)arg;
    const int caps[] = {CAP_SYS_ADMIN, CAP_SETPCAP};
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof(d));
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
        d[caps[i] / 32].effective |= 1U << (caps[i] % 32);
        d[caps[i] / 32].permitted |= 1U << (caps[i] % 32);
        d[caps[i] / 32].inheritable |= 1U << (caps[i] % 32);
    }
    if (syscall(SYS_capset, &h, d) < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "capset for the template");
        return e;
    }
    for (size_t i = 0; i < ARRAY_SIZE(caps); i++)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, caps[i], 0, 0) < 0) {
            int e = -errno;
            eb_error_set_raw(err, e, "raise the template's ambient capabilities");
            return e;
        }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        int e = -errno;
        eb_error_set_raw(err, e, "no_new_privs for the template");
        return e;
    }
    return 0;
}

/* The very last step before execve: the syscall filter. */
static int guest_pre_exec(void *arg, struct execbox_error *err)
{
    const struct child_ctx *c = arg;
    if (!c->j->seccomp_ok)
        return 0;
    return eb_seccomp_apply(&c->j->seccomp, err);
}

/* The sandbox's init: pid 1 of the new pid namespace. Async-signal-safe calls only. */
__attribute__((noreturn)) static void child_main(struct child_ctx *c)
{
    struct jail *j = c->j;
    /* Die with the thread that cloned us; if it is already gone, stop here. Without the
     * death signal a sandbox could outlive us: fail rather than run so. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(c, -errno, "set the parent-death signal");
    if (parent_gone(c->alive_fd))
        _exit(1);
    /* Close every fd but ours: in a threaded host the table holds the host's sockets and other
     * runs' pipes too; an init that kept another run's pipe (cloned while that run was between
     * pipe2 and its own clone) would delay that run's EOF until this one ends. */
    int r = eb_close_all_except(c->keep_fds, c->n_keep);
    if (r < 0)
        child_fail(c, r, "close the host's fds");
    if (!j->userns.root_mode) {
        /* Unprivileged: the user namespace came with clone3; map ourselves to 1000 first so
         * that the files we create in the new root have an owner. */
        if ((r = eb_userns_map_self(c->userns)) < 0)
            child_fail(c, r, "write the user namespace maps");
    }
    /* Limits before anything else can allocate or fork. */
    if (c->cg && (r = eb_cgroup_join(c->cg)) < 0)
        child_fail(c, r, "join the run's cgroup");
    if (unshare(CLONE_NEWCGROUP) < 0)
        child_fail(c, -errno, "unshare the cgroup namespace");
    if (c->netns_fd >= 0) {
        /* A pre-made empty network namespace, used by this run only. */
        if (setns(c->netns_fd, CLONE_NEWNET) < 0)
            child_fail(c, -errno, "join the network namespace");
        close(c->netns_fd);
    }
    const char *step = "";
    if (c->mntns_fd >= 0) {
        if ((r = eb_mount_ns_enter(c->mntns_fd, c->plans, c->nplans, &step)) < 0)
            child_fail(c, r, step);
        close(c->mntns_fd);
    } else if ((r = eb_mount_run(j->rootdir, c->plans, c->nplans, &step)) < 0) {
        child_fail(c, r, step);
    }
    if (c->etc_fd >= 0)
        close(c->etc_fd); /* attached now */
    if (c->ws_fd >= 0)
        close(c->ws_fd); /* attached now; init keeps no handle on it */
    if (sethostname("execbox", 7) < 0)
        child_fail(c, -errno, "sethostname");
    if (j->userns.root_mode && (r = eb_userns_enter(c->userns)) < 0)
        child_fail(c, r, "enter the user namespace");
    /* Changing ids cleared the parent-death signal: set it again, and check again. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(c, -errno, "set the parent-death signal again");
    if (parent_gone(c->alive_fd))
        _exit(1);
    close(c->alive_fd);
    /* A template's init keeps its capabilities in the template's user namespace (which owns
     * nothing yet): its only child, the interpreter, needs them to make runs. */
    if (!c->tpl && (r = eb_drop_privileges()) < 0)
        child_fail(c, r, "drop capabilities");
    /* Not ptrace-able or dumpable by the guest, even at the same uid. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        child_fail(c, -errno, "make the sandbox non-dumpable");
    /* A new session: no controlling terminal to inject into (TIOCSTI) or signal. */
    if (setsid() < 0)
        child_fail(c, -errno, "start a new session");
    eb_init_main(&c->init);
}

struct killer {
    struct eb_cgroup *cg;
    int pidfd;
};

static void kill_all(void *ctx)
{
    struct killer *k = ctx;
    /* SIGKILL of a pid namespace's init kills every process in it; the cgroup kill is the
     * belt to those braces (and the only way to reach a task mid-exit of the namespace). */
    if (k->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
    if (k->cg)
        eb_cgroup_kill(k->cg);
}

/* A detached tmpfs (fsopen/fsmount) with the given "key=value" options and mount attributes:
 * each option is checked on its own, so an error names the one the kernel refused and its own
 * errno (never several calls' results merged). what names the mount in messages. */
static int detached_tmpfs(const char *const *opts, size_t n, unsigned attrs, const char *what,
                          struct execbox_error *err)
{
    _cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return eb_error_set(err, -errno, "fsopen the %s tmpfs: %s", what, execbox_strerror(-errno));
    for (size_t i = 0; i < n; i++) {
        char key[32];
        const char *eq = strchr(opts[i], '=');
        if (!eq || (size_t)(eq - opts[i]) >= sizeof(key))
            return eb_error_set(err, -EINVAL, "the %s tmpfs: bad option '%s'", what, opts[i]);
        memcpy(key, opts[i], (size_t)(eq - opts[i]));
        key[eq - opts[i]] = '\0';
        if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, key, eq + 1, 0) < 0)
            return eb_error_set(err, -errno, "the %s tmpfs: option '%s': %s", what, opts[i],
                                execbox_strerror(-errno));
    }
    if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return eb_error_set(err, -errno, "create the %s tmpfs: %s", what, execbox_strerror(-errno));
    int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
    if (m < 0)
        return eb_error_set(err, -errno, "fsmount the %s tmpfs: %s", what,
                            execbox_strerror(-errno));
    return m;
}

/* A fresh /workspace: a tmpfs of workspace_size made in the host's mount namespace but
 * attached nowhere there (fsopen/fsmount), handed to the child to attach; our fd keeps it
 * readable after the sandbox is gone, so its files can be listed, and closing it frees it. */
static int fresh_workspace_fd(const struct eb_userns *u, uint64_t size, struct execbox_error *err)
{
    char sz[40], uid[24], gid[24];
    snprintf(sz, sizeof(sz), "size=%" PRIu64, size);
    snprintf(uid, sizeof(uid), "uid=%u", (unsigned)u->host_uid);
    snprintf(gid, sizeof(gid), "gid=%u", (unsigned)u->host_gid);
    const char *const opts[] = {sz, "mode=0755", "nr_inodes=65536", uid, gid};
    return detached_tmpfs(opts, ARRAY_SIZE(opts), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "workspace",
                          err);
}

/* Whether open_tree(OPEN_TREE_CLONE) takes a detached mount (Linux 6.15+): 0 not yet known, 1
 * yes, -1 no (then the child covers the writable mount itself: eb_attach_mount). */
static atomic_int detached_clone;

/* A detached tmpfs for a warm sandbox's /code: *ret_rw stays with us to write the program
 * and its stdin into at run time; *ret_ro, a read-only clone of the same mount, is what the
 * child attaches. The guest sees the files, read-only, and cannot make the mount writable
 * (no capability over its mount namespace; seccomp denies the mount calls). Where the kernel
 * cannot clone a detached mount, *ret_ro is a second fd of the writable mount and *ret_cover
 * is set: the child attaches it covered by a read-only clone made once it is attached, which
 * gives the guest the same view (eb_attach_mount). */
static int code_mount_fds(int *ret_rw, int *ret_ro, bool *ret_cover, struct execbox_error *err)
{
    char sz[40];
    snprintf(sz, sizeof(sz), "size=%u", EXECBOX_CODE_MAX + EXECBOX_STDIN_MAX + (1U << 20));
    const char *const opts[] = {sz, "mode=0755", "nr_inodes=16"};
    int r,
        rw = detached_tmpfs(opts, ARRAY_SIZE(opts),
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "code", err);
    if (rw < 0)
        return rw;
    *ret_cover = false;
    int ro = -1;
    if (atomic_load(&detached_clone) == 0 && eb_compat_forced("detached-clone"))
        atomic_store(&detached_clone, -1);
    if (atomic_load(&detached_clone) >= 0) {
        ro = (int)syscall(SYS_open_tree, rw, "",
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (ro < 0 && errno == EINVAL)
            atomic_store(&detached_clone, -1);
        else if (ro >= 0)
            atomic_store(&detached_clone, 1);
    }
    if (ro < 0 && atomic_load(&detached_clone) < 0) {
        ro = fcntl(rw, F_DUPFD_CLOEXEC, 3);
        *ret_cover = ro >= 0;
    }
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       MOUNT_ATTR_NOEXEC};
    if (ro < 0 ||
        (!*ret_cover && syscall(SYS_mount_setattr, ro, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)) {
        r = -errno;
        if (ro >= 0)
            close(ro);
        close(rw);
        return eb_error_set(err, r, "a read-only view of the code tmpfs: %s", execbox_strerror(r));
    }
    *ret_rw = rw;
    *ret_ro = ro;
    return 0;
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
    int m =
        detached_tmpfs(opts, ARRAY_SIZE(opts), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "probe", &e);
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

/* A started sandbox: cold (its program already in /code) or warm (waiting on fd 3). */
struct eb_box {
    struct jail *j;
    struct execbox_policy policy;
    const struct eb_language *lang;
    struct eb_cgroup cg;
    struct eb_child child;
    struct killer k;
    int ws_fd;           /* fresh workspace (detached tmpfs), or -1 */
    int alive_w;         /* write end of the alive pipe: the child sees POLLHUP if we vanish */
    int code_fd;         /* warm: our writable handle on the sandbox's /code */
    int go_fd;           /* warm: write end of the guest's fd 3 */
    int64_t cpu_base_ns; /* warm: the cgroup's CPU time when the run began */
    int ws_root;         /* a caller's workspace: the host directory, pinned, or -1 */
    int stage_fd;        /* the /etc stage bound into the sandbox, locked shared, or -1 */
    char ws_journal[64]; /* the workspace root's journal entry (root mode), or "" */
    struct stat ws_st;   /* its owner and mode before the run, restored after it */
    char ws_host[EXECBOX_PATH_MAX];
    struct eb_proxy *proxy; /* network "allow": the run's proxy, or NULL */
    struct eb_tplbox *tpl;  /* forked from this template (the executor keeps it alive), or NULL */
    bool cold;              /* started with its run: the program is in place and running */
    bool session; /* a session's sandbox: go_fd is a SOCK_SEQPACKET socket (lib/core/session.c) */
    struct stat pidns;    /* a session's: its pid namespace (nsfs st_dev and st_ino) */
    uint64_t guest_bytes; /* what the guest wrote, all streams */
    /* Its user namespace's maps: as root, 1000 -> a host uid and gid of its own (uid_slot of
     * j->uids, put back once its processes are gone); a template's fork has its template's. */
    struct eb_userns userns;
    int64_t uid_slot; /* -1: none of its own */
};

/* Writes the workspace root's journal (see replay_journal) next to the stage: if we are killed
 * during the run, the next start puts the directory's owner and mode back. */
static int write_journal(struct eb_box *sb, struct execbox_error *err)
{
    static atomic_uint seq;
    char dir[EXECBOX_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", sb->j->cache);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    char text[EXECBOX_PATH_MAX + 128];
    int n =
        snprintf(text, sizeof(text), "%llu %llu %o %u %u\n%s", (unsigned long long)sb->ws_st.st_dev,
                 (unsigned long long)sb->ws_st.st_ino, (unsigned)(sb->ws_st.st_mode & 07777),
                 (unsigned)sb->ws_st.st_uid, (unsigned)sb->ws_st.st_gid, sb->ws_host);
    if (n < 0 || n >= (int)sizeof(text))
        return eb_error_set(err, -ENAMETOOLONG, "workspace path too long");
    char p[EXECBOX_PATH_MAX + 64];
    if (snprintf(p, sizeof(p), "%s/" WS_JOURNAL "%d-%08x-%u", dir, (int)getpid(), sb->j->id,
                 atomic_fetch_add(&seq, 1)) >= (int)sizeof(p) ||
        strlen(p) >= sizeof(sb->ws_journal))
        return eb_error_set(err, -ENAMETOOLONG, "journal path too long");
    int r = eb_write_file(p, text, (size_t)n, 0600);
    if (r < 0)
        return eb_error_set(err, r, "write %s: %s", p, execbox_strerror(r));
    snprintf(sb->ws_journal, sizeof(sb->ws_journal), "%s", p);
    return 0;
}

/* A caller's host directory as the run's /workspace. Refused when it is a system directory.
 * The directory is pinned by an fd, and its owner and mode are kept to be put back after the
 * run (the code may change what is inside, not the directory it was handed; see
 * restore_workspace_root). As root: an id-mapped clone of it (MOUNT_ATTR_IDMAP), so the host
 * inode's owner is never changed: the guest (its own uid outside) is seen as the directory's owner
 * through this mount only, and what it creates is owned on disk by the directory's owner and
 * group. Unprivileged: the guest is the user outside already; the child binds the path. */
static int host_workspace(struct eb_box *sb, const char *path, struct execbox_error *err)
{
    const struct jail *j = sb->j;
    if (!realpath(path, sb->ws_host))
        return eb_error_set(err, -errno, "workspace '%s': %s", path, execbox_strerror(-errno));
    int r = eb_workspace_check_host(sb->ws_host, err);
    if (r < 0)
        return r;
    sb->ws_root = open(sb->ws_host, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (sb->ws_root < 0)
        return eb_error_set(err, errno == ENOTDIR ? -ENOTDIR : -errno,
                            "workspace '%s' is not a directory we can open: %s", path,
                            execbox_strerror(-errno));
    if (fstat(sb->ws_root, &sb->ws_st) < 0)
        return eb_error_set(err, -errno, "stat the workspace: %s", execbox_strerror(-errno));
    if (!j->userns.root_mode)
        return 0;
    if ((r = write_journal(sb, err)) < 0)
        return r;
    _cleanup_close_ int tree = (int)syscall(SYS_open_tree, sb->ws_root, "",
                                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        return eb_error_set(err, -errno, "clone the workspace mount: %s", execbox_strerror(-errno));
    _cleanup_close_ int userns = -1;
    if ((r = eb_idmap_userns(sb->ws_st.st_uid, sb->userns.host_uid, sb->ws_st.st_gid,
                             sb->userns.host_gid, &userns, err)) < 0)
        return r;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                           .userns_fd = (uint64_t)userns};
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
        int e = errno;
        /* The common case on distribution kernels: a workspace under /tmp or /dev/shm, whose
         * tmpfs supports id-mapped mounts from Linux 6.3 only. Said so, with the way out. */
        struct statfs fs;
        bool tmpfs = fstatfs(sb->ws_root, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
        return eb_error_set(err, -e,
                            "id-map the workspace '%s' (its filesystem must support id-mapped "
                            "mounts%s): %s",
                            path,
                            tmpfs ? "; tmpfs does from Linux 6.3: use a directory on ext4, xfs "
                                    "or btrfs, or no --workspace (a fresh one)"
                                  : "",
                            execbox_strerror(-e));
    }
    sb->ws_fd = TAKE_FD(tree);
    return 0;
}

/* Puts the workspace directory's owner and mode back as they were before the run, through the
 * fd that pinned it: the code, seen as its owner through the mount, may have changed its mode.
 * (Never a setuid or setgid bit: the syscall filter refuses those modes.) */
static void restore_workspace_root(int fd, const struct stat *before)
{
    struct stat now;
    if (fstat(fd, &now) < 0)
        return;
    if ((now.st_uid != before->st_uid || now.st_gid != before->st_gid) &&
        fchown(fd, before->st_uid, before->st_gid) < 0)
        return;
    if ((now.st_mode & 07777) != (before->st_mode & 07777))
        (void)fchmod(fd, before->st_mode & 07777);
}

/* The guest's fd 3 and our end of it: a pipe for the go byte of a warm run, a SOCK_SEQPACKET
 * socket for a session, whose cells and their fds travel over it (lib/core/session.c). fds[0] is
 * the guest's end. */
static int go_channel(int fds[2], bool session)
{
    if (session)
        return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0 ? -errno : 0;
    return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
}

static void sandbox_init(struct eb_box *sb, struct jail *j, const struct execbox_policy *pol,
                         const struct eb_language *lang)
{
    memset(sb, 0, sizeof(*sb));
    sb->j = j;
    sb->policy = *pol;
    sb->lang = lang;
    for (int i = 0; i < EB_CG_N; i++)
        sb->cg.procs_fd[i] = sb->cg.leave_fd[i] = -1;
    eb_child_init(&sb->child);
    sb->k.pidfd = -1;
    sb->ws_fd = sb->ws_root = sb->stage_fd = sb->alive_w = sb->code_fd = sb->go_fd = -1;
    sb->userns = j->userns;
    sb->uid_slot = -1;
}

/* Root: a host uid and gid of the sandbox's own for its whole life (uidpool.h), so that no
 * per-user kernel count is shared with another sandbox. Never a shared fallback: with every
 * slot held the sandbox is not made. Unprivileged: the guest is the user outside, as before. */
static int sandbox_take_uid(struct eb_box *sb, struct execbox_error *err)
{
    if (!sb->j->uids)
        return 0;
    uint32_t slot, id;
    int r = eb_uid_pool_take(sb->j->uids, &slot, &id, err);
    if (r < 0)
        return r;
    sb->uid_slot = slot;
    eb_userns_prepare(&sb->userns, id);
    return 0;
}

/* The sandbox's own cgroup (where the host has one): its policy's pids, CPU and memory. The
 * memory cap is policy.memory exactly, and it covers everything the run holds in RAM: the kernel
 * charges the pages of its tmpfs (/tmp, /dev/shm, a fresh /workspace, /code) to this cgroup, so
 * its files count against it, as in Docker and Kubernetes. Each tmpfs's own size still gives
 * ENOSPC below the cap; a size above it lets the cap win (an OOM kill). 0 or -errno with err
 * set. */
static int run_cgroup(struct eb_box *sb, struct execbox_error *err)
{
    struct jail *j = sb->j;
    if (!j->cg.version)
        return 0;
    char name[64];
    snprintf(name, sizeof(name), CG_PREFIX "%d-%08x-%u", (int)getpid(), j->id,
             atomic_fetch_add(&j->seq, 1));
    return eb_cgroup_create(&j->cg, name, sb->policy.memory, sb->policy.pids, sb->policy.cpus,
                            &sb->cg, err);
}

/* The cgroups of template runs whose result is out but whose processes may still be exiting
 * (the guest after EB_MSG_DONE, the init after it left): removed by one thread of the process,
 * after the answer, once the run's init (a pidfd) has exited; at most GRAVE_MAX wait, beyond
 * that a run removes its own. jail_close waits until the list is empty. */
#define GRAVE_MAX 64
struct grave {
    struct eb_cgroup cg;
    int pidfd;
};
static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t grave_cv = PTHREAD_COND_INITIALIZER, grave_idle_cv = PTHREAD_COND_INITIALIZER;
static struct grave *graves[GRAVE_MAX];
static size_t n_graves;
static bool grave_thread, grave_busy;

static void grave_bury(struct grave *g)
{
    struct pollfd p = {.fd = g->pidfd, .events = POLLIN};
    while (poll(&p, 1, EB_KILL_WAIT_MS) < 0 && errno == EINTR)
        ;
    eb_cgroup_destroy(&g->cg);
    close(g->pidfd);
    free(g);
}

static void *grave_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&grave_lock);
    for (;;) {
        while (!n_graves)
            pthread_cond_wait(&grave_cv, &grave_lock);
        struct grave *g = graves[0];
        memmove(graves, graves + 1, (n_graves - 1) * sizeof(graves[0]));
        n_graves--;
        grave_busy = true;
        pthread_mutex_unlock(&grave_lock);
        grave_bury(g);
        pthread_mutex_lock(&grave_lock);
        grave_busy = false;
        if (!n_graves)
            pthread_cond_broadcast(&grave_idle_cv);
    }
    return NULL;
}

/* Hands sb's cgroup and its init's pidfd to the grave thread (or removes them now when it cannot
 * take them); sb keeps neither. */
static void grave_add(struct eb_box *sb)
{
    struct grave *g = malloc(sizeof(*g));
    if (g) {
        g->cg = sb->cg;
        g->pidfd = sb->child.pidfd;
    }
    bool queued = false;
    pthread_mutex_lock(&grave_lock);
    if (g && !grave_thread) {
        pthread_t th;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64U << 10);
        grave_thread = pthread_create(&th, &a, grave_main, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    if (g && grave_thread && n_graves < GRAVE_MAX) {
        graves[n_graves++] = g;
        pthread_cond_signal(&grave_cv);
        queued = true;
    }
    pthread_mutex_unlock(&grave_lock);
    if (!queued) {
        free(g);
        return; /* sandbox_destroy removes them itself */
    }
    for (int i = 0; i < EB_CG_N; i++) {
        sb->cg.dir[i][0] = '\0';
        sb->cg.procs_fd[i] = sb->cg.leave_fd[i] = -1;
    }
    sb->child.pidfd = -1;
}

/* Waits until every cgroup handed to the grave thread is removed. */
static void grave_flush(void)
{
    pthread_mutex_lock(&grave_lock);
    while (n_graves || grave_busy)
        pthread_cond_wait(&grave_idle_cv, &grave_lock);
    pthread_mutex_unlock(&grave_lock);
}

/* Kills whatever still runs (a warm sandbox never given a run), and removes everything the
 * sandbox had: processes, cgroup, mounts, temp dirs. A template run whose result is out leaves
 * its cgroup to the grave thread: its processes may still be exiting (see grave_add). */
static void sandbox_destroy(struct eb_box *sb)
{
    bool cg = false;
    for (int i = 0; i < EB_CG_N; i++)
        cg |= sb->cg.dir[i][0] != '\0';
    if (sb->tpl && sb->child.pid < 0 && sb->child.pidfd >= 0 && cg)
        grave_add(sb);
    if (sb->child.pid > 0) {
        kill_all(&sb->k);
        if (sb->child.not_ours) {
            /* A template's run: its init is the template's child. Its exit (the pidfd turns
             * readable) comes after every process of its pid namespace is gone. */
            struct pollfd p = {.fd = sb->child.pidfd, .events = POLLIN};
            while (poll(&p, 1, EB_KILL_WAIT_MS) < 0 && errno == EINTR)
                ;
        } else {
            siginfo_t si;
            syscall(SYS_waitid, P_PIDFD, sb->child.pidfd, &si, WEXITED, NULL);
        }
        sb->child.pid = -1;
    }
    eb_proxy_stop(sb->proxy, NULL);
    sb->proxy = NULL;
    eb_cgroup_destroy(&sb->cg);
    eb_close(&sb->go_fd);
    eb_close(&sb->code_fd);
    eb_close(&sb->alive_w);
    eb_close(&sb->ws_fd);
    eb_child_close(&sb->child);
    if (sb->ws_root >= 0)
        restore_workspace_root(sb->ws_root, &sb->ws_st);
    eb_close(&sb->ws_root);
    if (sb->ws_journal[0])
        (void)unlink(sb->ws_journal);
    sb->ws_journal[0] = '\0';
    eb_close(&sb->stage_fd);
    if (!sb->policy.workspace[0] && sb->ws_host[0])
        eb_rm_rf(sb->ws_host);
    sb->ws_host[0] = '\0';
    /* Its processes are gone (killed and reaped above, or, a run whose init left its empty
     * cgroup, only that init is still exiting): its uid may serve another sandbox. */
    if (sb->uid_slot >= 0)
        eb_uid_pool_put(sb->j->uids, (uint32_t)sb->uid_slot);
    sb->uid_slot = -1;
}

/* The proxy's address, as the guest's HTTP clients look for it (curl, pip, requests, node's
 * undici with a global agent read one case or the other). NO_PROXY empty: loopback inside is
 * the sandbox's own and needs no exception. */
static int proxy_env(struct eb_env *env)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", EB_PROXY_PORT);
    static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    int r = 0;
    for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(names); i++)
        r = eb_env_add(env, names[i], url);
    if (r >= 0)
        r = eb_env_add(env, "NO_PROXY", "");
    if (r >= 0)
        r = eb_env_add(env, "no_proxy", "");
    /* Node's own fetch() reads the variables above only when told to (Node 24 on). */
    if (r >= 0)
        r = eb_env_add(env, "NODE_USE_ENV_PROXY", "1");
    return r;
}

/* network "allow": the listening socket inside the run's namespace (netns_fd, or a new one
 * returned in *ret_ns) and the proxy that accepts on it, held by sb until the run ends. */
static int run_proxy(struct eb_box *sb, int netns_fd, int *ret_ns, struct execbox_error *err)
{
    if (!sb->j->userns.root_mode)
        return eb_error_set(err, -ENOTSUP,
                            "network 'allow' needs the jail to run as root (the proxy's socket "
                            "is made in the sandbox's network namespace from the host side)");
    char why[160];
    int lfd = -1;
    int r = eb_netns_proxy_listen(netns_fd, EB_PROXY_PORT, ret_ns, &lfd, why, sizeof(why));
    if (r < 0)
        return eb_error_set(err, r, "network proxy: %s", why);
    r = eb_proxy_start(&sb->policy, lfd, &sb->proxy, err);
    if (r < 0 && *ret_ns != netns_fd)
        close(*ret_ns);
    return r;
}

/* Builds the whole sandbox and starts init and the guest. Cold (preload NULL): run's program
 * goes into /code and its stdin is the guest's. Warm: the interpreter runs the language's
 * bootstrap, which imports preload and waits on fd 3; /code is ours to fill at run time. */
static int sandbox_start(struct eb_box *sb, const char *preload, const struct eb_run *run,
                         const int *tpl_fds, struct execbox_error *err)
{
    struct jail *j = sb->j;
    const struct execbox_policy *pol = &sb->policy;
    const struct eb_language *lang = sb->lang;
    bool warm = preload != NULL;
    bool tpl = tpl_fds != NULL; /* a template (warm too): its runs bring their own mounts */
    int fds[12] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    /* out, err, status, ctl, alive, go */
    _cleanup_close_ int in_fd = -1, netns_fd = -1, pidfd = -1, code_ro = -1, etc_fd = -1;
    int r = 0;

    /* Per-run mounts: /tmp, /dev/shm, /workspace and the program. On the heap, where only the
     * few entries used are ever touched (they were two thread-local plans, 24 KiB that every
     * thread of the host process had zeroed at its start); the child reads its own copy. */
    _cleanup_free_ struct eb_mount_plan *dyn = malloc(sizeof(*dyn)), *rootfs_plan = NULL;
    if (!dyn)
        return eb_error_set(err, -ENOMEM, "out of memory");
    eb_plan_init(dyn);
    if ((r = sandbox_take_uid(sb, err)) < 0)
        return r;
    char opts[128];
    unsigned gu = j->userns.root_mode ? (unsigned)sb->userns.host_uid : EB_JAIL_UID;
    unsigned gg = j->userns.root_mode ? (unsigned)sb->userns.host_gid : EB_JAIL_GID;
    snprintf(opts, sizeof(opts), "size=%" PRIu64 ",nr_inodes=16384,mode=1777,uid=%u,gid=%u",
             pol->tmpfs, gu, gg);
    eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "tmp", opts, 0, -1);
    if (j->mpl_file[0]) {
        /* MPLCONFIGDIR, the guest's own, with the prebuilt font list in it. */
        eb_plan_add(dyn, EB_MOP_DIR, NULL, "tmp/.matplotlib", NULL, 0, -1);
        eb_plan_add(dyn, EB_MOP_CHOWN, NULL, "tmp/.matplotlib", NULL, 0, -1);
        dyn->ops[dyn->n - 1].uid = gu;
        dyn->ops[dyn->n - 1].gid = gg;
        eb_plan_add(dyn, EB_MOP_FILE, NULL, j->mpl_file, NULL, 0, -1);
        dyn->ops[dyn->n - 1].data = j->mpl_data; /* not copied: the child reads our memory */
        dyn->ops[dyn->n - 1].len = j->mpl_len;
    }
    snprintf(opts, sizeof(opts), "size=%u,nr_inodes=1024,mode=1777,uid=%u,gid=%u", SHM_SIZE, gu,
             gg);
    eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "dev/shm", opts, 0, -1);
    if (tpl) {
        /* /workspace and /code stay empty directories: each run attaches its own. */
    } else if (pol->workspace[0]) {
        if ((r = host_workspace(sb, pol->workspace, err)) < 0)
            return r;
        if (sb->ws_fd >= 0)
            eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "workspace", NULL, 0, sb->ws_fd);
        else
            eb_plan_add(dyn, EB_MOP_BIND_RW, sb->ws_host, "workspace", NULL, 0, -1);
    } else if (j->userns.root_mode) {
        sb->ws_fd = fresh_workspace_fd(&sb->userns, pol->workspace_size, err);
        if (sb->ws_fd < 0)
            return sb->ws_fd;
        eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "workspace", NULL, 0, sb->ws_fd);
    } else {
        /* Unprivileged: no tmpfs outside our namespaces; a private host directory. */
        char what[32];
        snprintf(what, sizeof(what), "ws-%d", (int)getpid());
        if ((r = eb_mkdtemp(what, sb->ws_host, err)) < 0)
            return r;
        eb_plan_add(dyn, EB_MOP_BIND_RW, sb->ws_host, "workspace", NULL, 0, -1);
    }
    if (run && run->req->n_files) {
        /* The caller's input files, before the guest exists: through the fresh workspace's
         * mount, or into the host directory (pinned), owned as its root is. */
        if (sb->ws_root >= 0)
            r = eb_ws_place(sb->ws_root, run->req, pol, err);
        else if (sb->ws_fd >= 0)
            r = eb_ws_place(sb->ws_fd, run->req, pol, err);
        else
            r = eb_input_files_place_at(sb->ws_host, run->req, pol, err);
        if (r < 0)
            return r;
    }
    char guest_code[80], guest_stdin[80];
    snprintf(guest_code, sizeof(guest_code), "/code/%s", lang->filename);
    snprintf(guest_stdin, sizeof(guest_stdin), "/code/stdin");
    if (tpl) {
    } else if (warm) {
        bool cover;
        if ((r = code_mount_fds(&sb->code_fd, &code_ro, &cover, err)) < 0)
            return r;
        eb_plan_add(dyn, cover ? EB_MOP_ATTACH_COVER : EB_MOP_ATTACH, NULL, "code", NULL, 0,
                    code_ro);
    } else {
        /* The program gets a tmpfs of its own, sized for it (the root is too small for a
         * program of up to EXECBOX_CODE_MAX), read-only once written. */
        snprintf(opts, sizeof(opts), "size=%zu,nr_inodes=16,mode=0755",
                 run->code_len + (64U << 10));
        eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "code", opts, 0, -1);
        eb_plan_add(dyn, EB_MOP_FILE, NULL, guest_code + 1, NULL, 0, -1);
        /* The program text is not copied into the plan: the child reads it from its copy of
         * our memory. */
        dyn->ops[dyn->n - 1].data = run->code;
        dyn->ops[dyn->n - 1].len = run->code_len;
        eb_plan_add(dyn, EB_MOP_RDONLY, NULL, "code", NULL, 0, -1);
    }
    const struct eb_mount_plan *sysplan = &j->sys;
    if (!pol->rootfs[0]) {
        /* Hold the /etc stage this sandbox binds (shared lock, until it is destroyed): the
         * start-up sweep removes only stages no sandbox holds. As root the child attaches a
         * read-only clone of exactly the locked stage's etc (made here: a re-stage swapping
         * the path meanwhile cannot make it bind another one); unprivileged, it binds the
         * path (we may not clone mounts here). */
        sb->stage_fd = open(j->cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sb->stage_fd < 0 || flock(sb->stage_fd, LOCK_SH) < 0)
            return eb_error_set(err, -errno, "lock the /etc stage %s: %s", j->cache,
                                execbox_strerror(-errno));
        if (j->userns.root_mode) {
            etc_fd = (int)syscall(SYS_open_tree, sb->stage_fd, "etc",
                                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
            struct mount_attr a = {.attr_set =
                                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
            if (etc_fd < 0 || syscall(SYS_mount_setattr, etc_fd, "", AT_EMPTY_PATH | AT_RECURSIVE,
                                      &a, sizeof(a)) < 0)
                return eb_error_set(err, -errno, "a read-only clone of the /etc stage: %s",
                                    execbox_strerror(-errno));
            eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "etc", NULL, 0, etc_fd);
        } else {
            char src[EXECBOX_PATH_MAX + 8];
            snprintf(src, sizeof(src), "%s/etc", j->cache);
            eb_plan_add(dyn, EB_MOP_BIND_RO, src, "etc", NULL, 0, -1);
        }
    }
    if (dyn->overflow)
        return eb_error_set(err, -E2BIG, "mount plan too large");
    if (pol->rootfs[0]) {
        if (!(rootfs_plan = malloc(sizeof(*rootfs_plan))))
            return eb_error_set(err, -ENOMEM, "out of memory");
        eb_plan_init(rootfs_plan);
        if ((r = eb_plan_system(rootfs_plan, j->cache, pol->rootfs, err)) < 0)
            return r;
        sysplan = rootfs_plan;
    }

    struct eb_env env;
    if ((r = eb_env_build(&env, "/workspace", "/tmp", pol->cpus)) < 0)
        return eb_error_set(err, r, "environment too large");
    if (pol->network == EXECBOX_NETWORK_ALLOW && (r = proxy_env(&env)) < 0)
        return eb_error_set(err, r, "environment too large");
    char *argv[20];
    size_t argc = 0;
    argv[argc++] = (char *)lang->interpreter;
    for (size_t i = 0; lang->args[i] && argc < 6; i++)
        argv[argc++] = (char *)lang->args[i];
    char *targv[8];
    if (tpl) {
        /* fds 3..7 of the interpreter: tpl_fds in order (socket, helper, init, bpf, mpl). */
        static const char *const nums[] = {"3", "4", "5", "6", "7"};
        argv[argc++] = (char *)"-c";
        argv[argc++] = (char *)lang->template_bootstrap;
        argv[argc++] = guest_code;
        argv[argc++] = guest_stdin;
        argv[argc++] = (char *)preload;
        for (int i = 0; i < 5; i++)
            targv[i] = (char *)nums[i];
        /* helper, sock, init, bpf, mpl: the bootstrap's order */
        argv[argc++] = targv[1];
        argv[argc++] = targv[0];
        argv[argc++] = targv[2];
        argv[argc++] = targv[3];
        argv[argc++] = targv[4];
        argv[argc++] = (char *)(j->mpl_file[0] ? strrchr(j->mpl_file, '/') + 1 : "");
        argv[argc++] = (char *)(j->landlock_ok ? "1" : "0");
    } else if (warm) {
        argv[argc++] = (char *)"-c";
        argv[argc++] = (char *)lang->warm_bootstrap;
        argv[argc++] = guest_code;
        argv[argc++] = guest_stdin;
        argv[argc++] = (char *)preload;
    } else {
        argv[argc++] = guest_code;
    }
    argv[argc] = NULL;

    /* Also where v1 has cpuacct in a hierarchy of its own: a run that is killed (timeout,
     * cancel) sends no exit message with its processes' rusage, and the cgroup's count is then
     * the only one of its CPU time. A warm run's counts from the cgroup's CPU at its start (the
     * imports before it are not the run's). */
    if ((r = run_cgroup(sb, err)) < 0)
        return r;
    if (tpl)
        in_fd = open("/dev/null", O_RDWR | O_CLOEXEC); /* the template's stdio */
    else
        in_fd =
            eb_stdin_fd(warm ? NULL : run->req->stdin_data, warm ? 0 : run->req->stdin_len, err);
    if (in_fd < 0)
        return tpl ? eb_error_set(err, -errno, "open /dev/null") : in_fd;
    for (int i = 0; i < (warm ? 12 : 10); i += 2)
        if ((i == 10 ? go_channel(&fds[i], sb->session) : pipe2(&fds[i], O_CLOEXEC)) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    bool have_cg_mem = j->cg.version && j->cg.have[EB_CG_MEMORY];
    struct eb_guest guest = {
        .stdin_fd = in_fd,
        .stdout_fd = tpl ? in_fd : fds[1],
        .stderr_fd = tpl ? in_fd : fds[3],
        .status_fd = fds[5],
        .pass_fds = {fds[10]},
        .n_pass = warm && !tpl ? 1 : 0,
        .cwd = "/workspace",
        .path = lang->interpreter,
        .argv = argv,
        .envp = env.envp,
        /* With a cgroup the memory cap is the cgroup's (an OOM kill we can report); without,
         * the rlimit is the only one. */
        .memory_rlimit = have_cg_mem || tpl ? -1 : lang->memory_rlimit,
        .memory = pol->memory,
        .file_size = pol->file_size,
        /* A warm interpreter spent CPU on its imports before the run: give that back. */
        .cpu_seconds = tpl ? 0 : (uint64_t)ceil(pol->timeout * pol->cpus) + (warm ? 10 : 1),
        .pre_exec = tpl ? NULL : guest_pre_exec,
    };
    struct child_ctx ctx = {
        .j = j,
        .userns = &sb->userns,
        .alive_fd = fds[8],
        .netns_fd = -1,
        .mntns_fd = -1,
        .ws_fd = sb->ws_fd,
        .etc_fd = etc_fd,
        .cg = j->cg.version ? &sb->cg : NULL,
        .plans = {sysplan, dyn},
        .nplans = 2,
        .init = {.status_fd = fds[5], .ctl_fd = fds[6], .guest = &guest, .spare_pid = tpl},
        /* /dev/shm: POSIX semaphores and shared memory (multiprocessing). */
        .writable = {"/tmp", "/workspace", "/dev/shm", NULL},
        .tpl = tpl,
    };
    if (tpl)
        for (int i = 0; i < 5; i++)
            guest.pass_fds[guest.n_pass++] = tpl_fds[i];
    guest.pre_exec_arg = &ctx;
    int keep[] = {in_fd,  fds[1],  fds[3],    fds[5],  fds[6],
                  fds[8], fds[10], sb->ws_fd, code_ro, etc_fd};
    for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
        keep_fd(&ctx, keep[i]);
    for (int i = 0; i < EB_CG_N; i++)
        keep_fd(&ctx, sb->cg.procs_fd[i]);
    /* init leaves the run's cgroup once the sandbox is empty, so that the parent can remove
     * it and return without waiting for init's exit (see eb_init_loop_leave). */
    int leave[EB_LEAVE_FDS_MAX];
    for (int i = 0; i < EB_CG_N; i++)
        if (sb->cg.leave_fd[i] >= 0 && ctx.init.n_leave < EB_LEAVE_FDS_MAX) {
            leave[ctx.init.n_leave++] = sb->cg.leave_fd[i];
            keep_fd(&ctx, sb->cg.leave_fd[i]);
        }
    ctx.init.leave_fds = leave;
    if (tpl)
        for (int i = 0; i < 5; i++)
            keep_fd(&ctx, tpl_fds[i]);
    ctx.init.guest_setup = tpl ? tpl_guest_setup : guest_setup;
    ctx.init.guest_setup_arg = &ctx;

    unsigned long flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    if (!j->userns.root_mode)
        flags |= CLONE_NEWUSER;
    int mntns_fd = sysplan == &j->sys ? run_mntns(j) : -1;
    if (mntns_fd >= 0) {
        /* The system part is prepared: the child copies that small namespace (not ours) and
         * mounts its proc and its own mounts there. */
        ctx.mntns_fd = mntns_fd;
        ctx.plans[0] = dyn;
        ctx.plans[1] = &j->proc_plan;
        keep_fd(&ctx, mntns_fd);
    } else {
        flags |= CLONE_NEWNS;
    }
    netns_fd = eb_netns_take(j->pool);
    /* A template serves no run itself: its forks get their proxies (jail_start). */
    if (pol->network == EXECBOX_NETWORK_ALLOW && !tpl) {
        int ns = -1;
        if ((r = run_proxy(sb, netns_fd, &ns, err)) < 0)
            goto out;
        if (ns != netns_fd) {
            eb_close(&netns_fd);
            netns_fd = ns;
        }
    }
    if (netns_fd >= 0) {
        ctx.netns_fd = netns_fd;
        keep_fd(&ctx, netns_fd);
    } else
        flags |= CLONE_NEWNET;
    if (ctx.n_keep > EB_KEEP_FDS_MAX) {
        r = eb_error_set(err, -E2BIG, "the sandbox's init needs %d fds, more than %d", ctx.n_keep,
                         EB_KEEP_FDS_MAX);
        goto out;
    }
    pid_t pid = eb_clone_ns(flags, &pidfd);
    if (pid < 0) {
        r = eb_error_set(err, -errno, "clone3 into new namespaces: %s", execbox_strerror(-errno));
        goto out;
    }
    if (pid == 0)
        child_main(&ctx);
    sb->k.cg = j->cg.version ? &sb->cg : NULL;
    sb->child.pid = pid;
    sb->child.pidfd = TAKE_FD(pidfd);
    sb->k.pidfd = sb->child.pidfd;
    sb->child.out_fd = TAKE_FD(fds[0]);
    sb->child.err_fd = TAKE_FD(fds[2]);
    sb->child.status_fd = TAKE_FD(fds[4]);
    sb->child.ctl_fd = TAKE_FD(fds[7]);
    sb->child.kill_all = kill_all;
    sb->child.ctx = &sb->k;
    sb->child.exit_msg_ends = true;
    sb->alive_w = TAKE_FD(fds[9]); /* kept until the end */
    sb->go_fd = TAKE_FD(fds[11]);
out:
    for (int i = 0; i < 12; i++)
        eb_close(&fds[i]);
    return r;
}

/* What the sandbox's tmpfs hold (charged to its memory cgroup), for a MemoryLimit message:
 * ret_ws what a fresh /workspace holds (statfs of our own fd of it: exact, and alive as long as
 * the box is, whatever the sandbox's processes did); ret_tmp /tmp and /dev/shm, mounted in the
 * sandbox's namespace where the host holds no fd: the larger of what the run's init measured
 * when the program ended (tmp_seen, its exit message: a one-shot run's namespace, and with it
 * those pages, is gone soon after, so the cgroup's shmem read now may already miss them) and
 * the rest of the cgroup's shmem now (a session's or a live box's, its namespace alive). */
static void sandbox_files(const struct eb_box *sb, const struct eb_cgroup_stats *st,
                          uint64_t tmp_seen, uint64_t *ret_tmp, uint64_t *ret_ws)
{
    uint64_t ws = 0;
    struct statfs fs;
    if (sb->ws_fd >= 0 && !sb->policy.workspace[0] && fstatfs(sb->ws_fd, &fs) == 0)
        ws = (uint64_t)(fs.f_blocks - fs.f_bfree) * (uint64_t)fs.f_bsize;
    *ret_ws = ws;
    uint64_t tmp = st->shmem > ws ? st->shmem - ws : 0;
    *ret_tmp = tmp_seen > tmp ? tmp_seen : tmp;
}

/* Supervises a started sandbox to the end: the output into res, then how it ended with the
 * cgroup's CPU, peak memory and OOM count, and the workspace to list. */
static int jail_wait(void *state, struct eb_box *sb, const struct eb_run *run,
                     struct execbox_result *res, struct eb_wait *w, struct execbox_error *err)
{
    (void)state;
    const struct execbox_policy *pol = run->policy;
    int r = eb_supervise(&sb->child, run->req, pol, run->start_ns, res, &w->oc, err);
    sb->guest_bytes = res->stdout_bytes + res->stderr_bytes; /* before any message of ours */
    sb->child.pid = -1; /* reaped, or left its cgroup and is exiting: */
    if (w->oc.init_running)
        defer_reap(&sb->child.pidfd);
    sb->k.pidfd = sb->child.pidfd;
    /* The run is over: so is its way out; what it did goes into the result. */
    eb_proxy_stop(sb->proxy, res);
    sb->proxy = NULL;
    if (sb->j->cg.version) {
        struct eb_cgroup_stats st;
        eb_cgroup_stats(&sb->cg, &st);
        if (st.cpu_ns >= 0)
            w->cpu_ns = st.cpu_ns - sb->cpu_base_ns;
        if (st.peak_memory)
            w->peak_memory = (int64_t)st.peak_memory;
        w->oom_kills = st.oom_kills;
        /* Files in /tmp, /dev/shm and a fresh /workspace are memory too (tmpfs, within the
         * cap): when an OOM kill came while they held some, say how much and where, so the
         * cause is not misread. */
        uint64_t in_tmp, in_ws;
        sandbox_files(sb, &st, w->oc.tmp_bytes, &in_tmp, &in_ws);
        if (!eb_oom_files_detail(w->oom_files, sizeof(w->oom_files), in_tmp, in_ws))
            w->oom_files[0] = '\0';
    }
    if (sb->ws_fd >= 0)
        w->ws_fd = openat(sb->ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (sb->ws_host[0])
        w->ws_fd = open(sb->ws_host, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    /* A fork whose init vanished without a report, before anything was seen of the run, was
     * lost with its template (the guest cannot kill its init): nothing ran as far as anyone can
     * tell, so the executor may run it cold, as when the go byte finds no reader. */
    if (r == 0 && sb->tpl && !w->oc.got_exit && !w->oc.setup_failed && !w->oc.timed_out &&
        !w->oc.cancelled && sb->guest_bytes == 0)
        w->lost = true;
    return r;
}

/* ---- templates ------------------------------------------------------------------------------ */
/*
 * A template is a sandbox like a warm one, except that its interpreter, after importing the
 * preload, serves requests instead of waiting for code: it runs lib/lang/python_template.py with
 * the helper module (lib/jail/tpl_helper.c), and keeps CAP_SYS_ADMIN and CAP_SETPCAP in its own
 * user namespace (which owns none of the template's other namespaces). Each warm sandbox the pool
 * asks for is then one run forked from it: the library makes the run's cgroup, workspace, /code
 * and pipes, sends them over the template's socket, and gets back the pidfd of the run's init;
 * the run waits, walled, for its code. A run is not the library's child: its pidfd says when it
 * ends, and the template's kernel-side reaping does the rest.
 *
 * Generations: what a fork cannot make unique (CPython's string-hash secret, the address-space
 * layout) is shared by the runs of one template. A template is therefore retired after
 * tpl_max_runs runs or tpl_max_age seconds, whichever comes first; it lives on, unlisted, until
 * the last of its runs is destroyed, since killing it would kill them.
 */

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#define EB_TPL_START_TIMEOUT_MS 60000 /* the interpreter imports the preload */
#define EB_TPL_FORK_TIMEOUT_MS 10000

struct eb_tplbox {
    struct eb_box sb;   /* the template's own sandbox: init (pid 1) and the interpreter */
    int sock;           /* our end of its request socket */
    pthread_mutex_t io; /* one request and its answer at a time */
    struct execbox_policy policy;
    const struct eb_language *lang;
    char preload[256];
    atomic_bool broken; /* gone, or no longer in step with us: forks no more */
};

/* A sealed memfd holding len bytes of data. */
static int sealed_memfd(const char *name, const void *data, size_t len, struct execbox_error *err)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) /* a kernel older than 6.3 knows no MFD_EXEC */
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return eb_error_set(err, -errno, "memfd_create %s: %s", name, execbox_strerror(-errno));
    int r = len ? eb_write_all(fd, data, len) : 0;
    if (r == 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        r = -errno;
    if (r < 0) {
        close(fd);
        return eb_error_set(err, r, "fill memfd %s: %s", name, execbox_strerror(r));
    }
    return fd;
}

/* Under tpl_start_lock: the four memfds every template is handed, made once per executor. */
static int tpl_blobs(struct jail *j, struct execbox_error *err)
{
    if (j->tpl_blob_fds[0] >= 0)
        return 0;
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } b[4] = {
        {"execbox-tpl-helper", eb_tpl_helper_blob,
         (size_t)(eb_tpl_helper_blob_end - eb_tpl_helper_blob)},
        {"execbox-init", eb_tpl_init_blob, (size_t)(eb_tpl_init_blob_end - eb_tpl_init_blob)},
        {"execbox-seccomp", j->seccomp_ok ? (const void *)j->seccomp.insns : "",
         j->seccomp_ok ? j->seccomp.prog.len * sizeof(struct sock_filter) : 0},
        {"execbox-fontlist", j->mpl_data ? j->mpl_data : "", j->mpl_data ? j->mpl_len : 0},
    };
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = sealed_memfd(b[i].name, b[i].data, b[i].len, err);
        if (fds[i] < 0) {
            for (int k = 0; k < i; k++)
                close(fds[k]);
            return fds[i];
        }
    }
    memcpy(j->tpl_blob_fds, fds, sizeof(fds));
    return 0;
}

/* Waits up to timeout_ms for one answer from t (and its pidfd when ret_fd), 0 or -errno. */
static int tpl_recv(struct eb_tplbox *t, struct eb_tpl_resp *resp, int *ret_fd, int timeout_ms,
                    struct execbox_error *err)
{
    struct pollfd p = {.fd = t->sock, .events = POLLIN};
    uint64_t end = eb_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    for (;;) {
        uint64_t now = eb_now_ns();
        if (now >= end)
            return eb_error_set(err, -ETIMEDOUT, "the template did not answer in %d ms",
                                timeout_ms);
        int n = poll(&p, 1, (int)((end - now) / 1000000ULL) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return eb_error_set(err, -errno, "poll the template: %s", execbox_strerror(-errno));
        if (n > 0)
            break;
    }
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = resp, .iov_len = sizeof(*resp)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(t->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n <= 0)
        return eb_error_set(err, n == 0 ? -EPIPE : -errno, "the template is gone");
    int fd = -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if ((size_t)n != sizeof(*resp) || resp->magic != EB_TPL_MAGIC ||
        (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (fd >= 0)
            close(fd);
        return eb_error_set(err, -EBADMSG, "a malformed answer from the template");
    }
    resp->msg[sizeof(resp->msg) - 1] = '\0';
    if (ret_fd)
        *ret_fd = fd;
    else if (fd >= 0)
        close(fd);
    return 0;
}

static void tpl_free(struct eb_tplbox *t)
{
    sandbox_destroy(&t->sb); /* its init's death ends its pid namespace, the interpreter too */
    eb_close(&t->sock);
    pthread_mutex_destroy(&t->io);
    free(t);
}

/* Starts a template for (policy, lang, preload): its sandbox, then its interpreter's imports,
 * until it says it is ready. */
static int tpl_start(struct jail *j, const struct execbox_policy *policy,
                     const struct eb_language *lang, const char *preload, struct eb_tplbox **ret,
                     struct execbox_error *err)
{
    int r = tpl_blobs(j, err);
    if (r < 0)
        return r;
    struct eb_tplbox *t = calloc(1, sizeof(*t));
    if (!t)
        return eb_error_set(err, -ENOMEM, "out of memory");
    pthread_mutex_init(&t->io, NULL);
    t->sock = -1;
    t->policy = *policy;
    t->lang = lang;
    snprintf(t->preload, sizeof(t->preload), "%s", preload ? preload : "");
    sandbox_init(&t->sb, j, policy, lang);
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
        r = eb_error_set(err, -errno, "socketpair: %s", execbox_strerror(-errno));
        tpl_free(t);
        return r;
    }
    t->sock = sp[0];
    int fds[5] = {sp[1], j->tpl_blob_fds[0], j->tpl_blob_fds[1], j->tpl_blob_fds[2],
                  j->tpl_blob_fds[3]};
    r = sandbox_start(&t->sb, t->preload, NULL, fds, err);
    close(sp[1]);
    struct eb_tpl_resp resp;
    if (r == 0)
        r = tpl_recv(t, &resp, NULL, EB_TPL_START_TIMEOUT_MS, err);
    if (r == -EPIPE && t->sb.child.status_fd >= 0) {
        /* It died before it was ready: its init may have said why. */
        struct eb_msg m;
        if (read(t->sb.child.status_fd, &m, sizeof(m)) == (ssize_t)sizeof(m) &&
            m.type == EB_MSG_ERROR) {
            m.err.msg[sizeof(m.err.msg) - 1] = '\0';
            r = eb_error_set(err, m.err.code ? m.err.code : -EIO, "template: %s", m.err.msg);
        }
    }
    if (r == 0 && resp.code != 0)
        r = eb_error_set(err, resp.code, "template: %s", resp.msg);
    if (r < 0) {
        tpl_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

/* Forks one run from t for policy (the same as t's), walled and waiting for its code. */
static int tpl_fork(struct jail *j, struct eb_tplbox *t, const struct execbox_policy *pol,
                    bool session, struct eb_box **ret, struct execbox_error *err)
{
    struct eb_box *sb = malloc(sizeof(*sb));
    if (!sb)
        return eb_error_set(err, -ENOMEM, "out of memory");
    sandbox_init(sb, j, pol, t->lang);
    sb->tpl = t;
    sb->session = session;
    /* A fork runs in its template's user namespace: its guest is the template's host uid (see
     * docs/threat-model.md, "Per-user kernel counts"). */
    sb->userns = t->sb.userns;
    int fds[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}; /* out, err, status, ctl, go */
    _cleanup_close_ int code_ro = -1;
    int pidfd = -1, r = 0;
    sb->ws_fd = fresh_workspace_fd(&sb->userns, pol->workspace_size, err);
    if (sb->ws_fd < 0) {
        r = sb->ws_fd;
        goto out;
    }
    /* As a cold run: the files its tmpfs hold count against its memory cap. */
    if ((r = run_cgroup(sb, err)) < 0)
        goto out;
    bool cover;
    if ((r = code_mount_fds(&sb->code_fd, &code_ro, &cover, err)) < 0)
        goto out;
    for (int i = 0; i < 10; i += 2)
        if ((i == 8 ? go_channel(&fds[i], session) : pipe2(&fds[i], O_CLOEXEC)) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    struct eb_tpl_req req = {
        .magic = EB_TPL_MAGIC,
        .tmpfs = pol->tmpfs,
        .shm = SHM_SIZE,
        .file_size = pol->file_size,
        .memory = pol->memory,
        .cpu_seconds = (uint64_t)ceil(pol->timeout * pol->cpus) + 1,
        .memory_rlimit = j->cg.version && j->cg.have[EB_CG_MEMORY] ? -1 : t->lang->memory_rlimit,
        .code_cover = cover,
    };
    int send_fds[EB_TPL_FDS_MAX] = {fds[1], fds[3], fds[5], fds[6], fds[8], sb->ws_fd, code_ro};
    int n = EB_TPL_FD_CG0;
    for (int i = 0; i < EB_CG_N && n < EB_TPL_FD_CG0 + 4; i++)
        if (sb->cg.procs_fd[i] >= 0)
            send_fds[n++] = sb->cg.procs_fd[i];
    /* The init's way out of the run's cgroup once the run is over (as a cold init has it): the
     * result then waits neither for its exit nor for its namespaces' teardown. */
    for (int i = 0; i < EB_CG_N && n < EB_TPL_FDS_MAX; i++)
        if (sb->cg.leave_fd[i] >= 0) {
            send_fds[n++] = sb->cg.leave_fd[i];
            req.n_leave++;
        }
    req.n_fds = (uint32_t)n;
    union {
        char buf[CMSG_SPACE(sizeof(int) * EB_TPL_FDS_MAX)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct iovec iov = {.iov_base = &req, .iov_len = sizeof(req)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), send_fds, sizeof(int) * (size_t)n);
    struct eb_tpl_resp resp;
    pthread_mutex_lock(&t->io);
    ssize_t sent;
    do
        sent = sendmsg(t->sock, &mh, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        r = eb_error_set(err, errno == EPIPE || errno == ECONNRESET ? -EPIPE : -errno,
                         "hand a run to the template: %s", execbox_strerror(-errno));
    else
        r = tpl_recv(t, &resp, &pidfd, EB_TPL_FORK_TIMEOUT_MS, err);
    pthread_mutex_unlock(&t->io);
    if (r < 0) {
        atomic_store(&t->broken, true); /* gone, or no longer in step with us */
        goto out;
    }
    if (resp.code != 0 || pidfd < 0) {
        r = eb_error_set(err, resp.code ? resp.code : -EIO, "fork a run from the template: %s",
                         resp.msg);
        goto out;
    }
    sb->k.cg = j->cg.version ? &sb->cg : NULL;
    sb->child.pid = resp.pid > 0 ? resp.pid : 1;
    sb->child.pidfd = TAKE_FD(pidfd);
    sb->child.not_ours = true;
    sb->k.pidfd = sb->child.pidfd;
    sb->child.out_fd = TAKE_FD(fds[0]);
    sb->child.err_fd = TAKE_FD(fds[2]);
    sb->child.status_fd = TAKE_FD(fds[4]);
    sb->child.ctl_fd = TAKE_FD(fds[7]);
    sb->child.kill_all = kill_all;
    sb->child.ctx = &sb->k;
    sb->child.exit_msg_ends = req.n_leave > 0;
    /* A run's init reports EB_MSG_DONE, and its guest holds no copy of the status pipe
     * (tpl_helper.c closes it before the guest's code); a session's cells hold theirs. */
    sb->child.done_ok = !session;
    sb->go_fd = TAKE_FD(fds[9]);
out:
    for (int i = 0; i < 10; i++)
        eb_close(&fds[i]);
    if (pidfd >= 0)
        close(pidfd);
    if (r < 0) {
        sandbox_destroy(sb);
        free(sb);
        return r;
    }
    *ret = sb;
    return 0;
}

static void jail_template_stop(void *state, struct eb_tplbox *t)
{
    (void)state;
    tpl_free(t);
}

static bool jail_template_alive(struct eb_tplbox *t)
{
    if (atomic_load(&t->broken))
        return false;
    struct pollfd p = {.fd = t->sb.child.pidfd, .events = POLLIN};
    return t->sb.child.pidfd >= 0 && poll(&p, 1, 0) == 0; /* its init still runs */
}

static uint64_t jail_template_memory(struct eb_tplbox *t)
{
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&t->sb.cg, &st);
    return st.peak_memory;
}

/* Why a warm start (a session's too) cannot be made for policy here, or 0. */
static int warm_refuse(const struct jail *j, const struct execbox_policy *policy,
                       const struct eb_language *lang, bool session, struct execbox_error *err)
{
    if (!lang->warm_bootstrap)
        return eb_error_set(err, -ENOTSUP, session ? "%s has no sessions" : "%s cannot start warm",
                            lang->name);
    if (session && !j->userns.root_mode)
        return eb_error_set(err, -ENOTSUP,
                            "sessions need execbox to run as root (a private "
                            "tmpfs workspace and the session's own cgroup)");
    if (session && policy->workspace[0])
        return eb_error_set(err, -ENOTSUP,
                            "sessions have a fresh workspace of their own: a host "
                            "workspace cannot be used");
    if (session && policy->network == EXECBOX_NETWORK_ALLOW)
        return eb_error_set(err, -ENOTSUP,
                            "sessions have no network: network 'allow' is for "
                            "one-shot runs");
    /* A caller's workspace would stay handed to the sandbox while it waits, and without root
     * there is no private tmpfs for /code: both run cold. */
    if (policy->workspace[0] || !j->userns.root_mode)
        return eb_error_set(err, -ENOTSUP,
                            "runs with a host workspace, or without root, are "
                            "not kept warm");
    return 0;
}

static int jail_template_start(void *state, const struct execbox_policy *policy,
                               const struct eb_language *lang, const char *preload,
                               struct eb_tplbox **ret, struct execbox_error *err)
{
    struct jail *j = state;
    int r = warm_refuse(j, policy, lang, false, err);
    if (r == 0 && !lang->template_bootstrap)
        r = eb_error_set(err, -ENOTSUP, "%s has no template", lang->name);
    return r < 0 ? r : tpl_start(j, policy, lang, preload, ret, err);
}

/* SO_PASSPIDFD and SCM_PIDFD (asm-generic/socket.h, linux/socket.h) for older headers. */
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif

/* A session's sandbox: the init told first that the state moves from process to process, the
 * interpreter then that it serves cells (lib/core/session.c). */
static int session_begin(struct eb_box *sb, struct eb_session_box *ret, struct execbox_error *err)
{
    /* The session's pid namespace, which its init (pid 1 there) is in: lib/core/session.c acts on
     * no process the session names that is not in it (session_member). */
    pid_t init_pid = 0;
    _cleanup_close_ int init_dir = eb_pidfd_procdir(sb->child.pidfd, &init_pid);
    if (init_dir < 0)
        return eb_error_set(err, init_dir, "the session's init: %s", execbox_strerror(init_dir));
    if (fstatat(init_dir, "ns/pid", &sb->pidns, 0) < 0)
        return eb_error_set(err, -errno, "the session's pid namespace: %s",
                            execbox_strerror(-errno));
    /* The kernel names the sender of each message we receive (lib/core/session.c learns the state's
     * and the cells' pids so): on before the interpreter may send its first one. */
    int one = 1;
    if (setsockopt(sb->go_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
        return eb_error_set(err, -errno, "SO_PASSCRED: %s", execbox_strerror(-errno));
    /* Better, where the kernel has it (6.5+): the sender itself, as a pidfd, which no other
     * process can ever stand for. EXECBOX_TEST_NO_SCM_PIDFD=1 leaves it off, for the tests of
     * the fallback (kernels before 6.5); the fallback is as safe, only less direct. */
    const char *no = secure_getenv("EXECBOX_TEST_NO_SCM_PIDFD");
    ret->pidfd_cmsg = !(no && strcmp(no, "1") == 0) &&
                      setsockopt(sb->go_fd, SOL_SOCKET, SO_PASSPIDFD, &one, sizeof(one)) == 0;
    /* The init first, so that it knows before the interpreter could hand its state on. */
    if (eb_write_all(sb->child.ctl_fd, "S", 1) < 0 || send(sb->go_fd, "s", 1, MSG_NOSIGNAL) != 1)
        return eb_error_set(err, -EPIPE, "the session's sandbox died before it started");
    /* The interpreter's own stdout and stderr are not read: it points them at /dev/null. */
    eb_close(&sb->child.out_fd);
    eb_close(&sb->child.err_fd);
    ret->sock = TAKE_FD(sb->go_fd);
    ret->ws_fd = sb->ws_fd;
    return 0;
}

static void jail_destroy(void *state, struct eb_box *sb)
{
    (void)state;
    if (sb) {
        sandbox_destroy(sb);
        free(sb);
    }
}

/* A cold start builds the sandbox around its run (the program in its own /code, the input
 * files in the workspace) and it runs at once; a warm one is forked from the template given,
 * or started from nothing, and waits for its code (a session's: for cells, its fd 3 a socket). */
static int jail_start(void *state, const struct eb_start *s, struct eb_box **ret,
                      struct execbox_error *err)
{
    struct jail *j = state;
    /* The inits of runs that ended (they exit after handing back their result) are reaped at
     * the next start of any kind, so a server that only runs warm keeps no zombies either. */
    reap_exiting(false);
    int r = s->run ? 0 : warm_refuse(j, s->policy, s->lang, s->session != NULL, err);
    if (r < 0)
        return r;
    struct eb_box *sb = NULL;
    if (s->tpl) {
        r = tpl_fork(j, s->tpl, s->policy, s->session != NULL, &sb, err);
    } else {
        sb = malloc(sizeof(*sb));
        if (!sb)
            return eb_error_set(err, -ENOMEM, "out of memory");
        sandbox_init(sb, j, s->policy, s->lang);
        sb->session = s->session != NULL;
        sb->cold = s->run != NULL;
        r = sandbox_start(sb, s->run ? NULL : s->preload, s->run, NULL, err);
    }
    if (r == 0 && s->tpl && s->policy->network == EXECBOX_NETWORK_ALLOW)
        /* network "allow": the proxy's listener is made in the fork's own network namespace
         * (the helper made it; joined through its init's pidfd) before the guest can get its
         * code; the proxy enforces this run's policy. (A sandbox started from nothing gets its
         * proxy in sandbox_start.) */
        r = run_proxy(sb, sb->child.pidfd, &(int){-1}, err);
    if (r == 0 && s->session)
        r = session_begin(sb, s->session, err);
    if (r < 0) {
        jail_destroy(state, sb);
        return r;
    }
    *ret = sb;
    return 0;
}

/* Warm: writes the program and stdin into the waiting sandbox's /code, places the input
 * files, and sends the go byte; cold: it is running already. */
static int jail_deliver(void *state, struct eb_box *sb, const struct eb_run *run,
                        struct execbox_error *err)
{
    (void)state;
    if (sb->cold)
        return 0;
    int r = eb_warm_deliver(sb->code_fd, run->lang->filename, run->code, run->code_len,
                            run->req->stdin_data, run->req->stdin_len, err);
    if (r == 0 && run->req->n_files)
        r = eb_ws_place(sb->ws_fd, run->req, run->policy, err);
    if (r == 0) {
        /* The CPU the warm sandbox spent before its run is not the run's (one file read, on
         * the request's path). */
        int64_t cpu = eb_cgroup_cpu_ns(&sb->cg);
        sb->cpu_base_ns = cpu > 0 ? cpu : 0;
        eb_close(&sb->code_fd);
        r = eb_warm_go(&sb->go_fd, err);
    }
    return r;
}

/* ---- sessions ------------------------------------------------------------------------------ */

static void jail_session_stats(struct eb_box *sb, struct eb_box_stats *ret)
{
    struct eb_cgroup_stats st;
    eb_cgroup_stats(&sb->cg, &st);
    ret->cpu_ns = st.cpu_ns;
    ret->memory = st.memory;
    ret->peak_memory = st.peak_memory;
    ret->oom_kills = st.oom_kills;
    sandbox_files(sb, &st, 0, &ret->files_tmp, &ret->files_ws);
    ret->cap = sb->policy.memory;
}

static void jail_session_kill(struct eb_box *sb)
{
    kill_all(&sb->k);
}

/* In the session's pid namespace (a process cannot leave its own) and in its cgroup (no process
 * of the sandbox may move itself out: it holds no cgroup.procs outside; its init leaves only once
 * the sandbox is empty). A pid number the session named that now belongs to a host process is in
 * neither. */
static bool jail_session_member(struct eb_box *sb, pid_t pid, int procdir)
{
    struct stat ns;
    if (fstatat(procdir, "ns/pid", &ns, 0) < 0 || ns.st_dev != sb->pidns.st_dev ||
        ns.st_ino != sb->pidns.st_ino)
        return false;
    return !sb->j->cg.version || eb_cgroup_has(&sb->cg, pid) == 1;
}

/* ---- for backends layered on the jail ----------------------------------------------------- */

int eb_jail_bind_ro(void *state, const char *src, const char *dst, struct execbox_error *err)
{
    struct jail *j = state;
    struct stat st;
    if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
        return eb_error_set(err, -ENOTDIR, "'%s' is not a directory", src);
    /* Each parent of dst is made in the root's tmpfs; the host directory itself is bound
     * read-only, nosuid and nodev like the system directories. */
    char part[EXECBOX_PATH_MAX];
    for (const char *p = strchr(dst, '/'); p; p = strchr(p + 1, '/')) {
        snprintf(part, sizeof(part), "%.*s", (int)(p - dst), dst);
        eb_plan_add(&j->sys, EB_MOP_DIR, NULL, part, NULL, 0, -1);
    }
    eb_plan_add(&j->sys, EB_MOP_DIR, NULL, dst, NULL, 0, -1);
    eb_plan_add(&j->sys, EB_MOP_BIND_RO, src, dst, NULL, 0, -1);
    if (j->sys.overflow)
        return eb_error_set(err, -E2BIG, "mount plan too large");
    return 0;
}

const struct eb_backend_ops eb_backend_jail = {
    .name = "jail",
    .probe = probe,
    .probe_open = probe_open,
    .open = jail_open,
    .close = jail_close,
    .start = jail_start,
    .deliver = jail_deliver,
    .wait = jail_wait,
    .destroy = jail_destroy,
    .warm = true,
    .template_start = jail_template_start,
    .template_stop = jail_template_stop,
    .template_alive = jail_template_alive,
    .template_memory = jail_template_memory,
    .network_allow = true,
    .check_network = check_network,
    .input_files = true,
    .session_stats = jail_session_stats,
    .session_kill = jail_session_kill,
    .session_member = jail_session_member,
};
