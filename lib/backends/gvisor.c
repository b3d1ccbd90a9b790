/* SPDX-License-Identifier: MIT */
/*
 * gvisor.c - the `gvisor` backend: each run in a fresh gVisor sandbox (`runsc run` on an OCI
 * bundle built from the policy). gVisor's Sentry is a kernel in user space: the guest's system
 * calls are served by it, not by the host kernel, which the Sentry reaches only through a
 * narrow, seccomp-filtered set of its own.
 *
 * A run, through the executor's lifecycle (lib/backends/backend.h): start() makes a private run
 * directory holding the bundle (config.json and an empty root directory that gets the system
 * directories as read-only binds and symlinks), the program (read-only bind at /code) and a
 * fresh workspace (a host tmpfs of workspace_size when we are root, bound at /workspace);
 * deliver() starts runsc run in a session of its own under an init of ours (eb_init_main), so
 * the deadline, a cancel or the end of the guest kill runsc and every process it started;
 * wait() supervises it and reports its end (the executor lists the workspace); destroy() does
 * `runsc delete --force`, unmounts and removes everything.
 *
 * Platform: ptrace unless --gvisor-platform says otherwise (kvm needs a usable /dev/kvm;
 * systrap needs a runsc from 2023 or later). The cgroup limits (memory, pids, CPU) are runsc's
 * own: it creates cgroupsPath from the bundle's resources.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"
#include "jail/mounts.h"
#include "proc/childlib.h"
#include "proc/proc.h"
#include "ws/workspace.h"

#define GV_DELETE_MS 10000 /* runsc delete --force, after every run */
#define GV_GUEST_UID 1000  /* the jail's guest uid and gid, so that outputs match */
/* The host-side pids cgroup holds gVisor's own Sentry and gofer threads besides the guest's
 * (on the ptrace platform each guest process is a host stub process): it gets this much on
 * top of the policy's pids so that the sandbox itself can start. That is no bound on the
 * guest (a thread bomb under pids 32 reached 1,024 threads): RLIMIT_NPROC = pids is, inside
 * the sandbox (write_config). */
#define GV_PIDS_SENTRY 128

static const char *const runsc_paths[] = {"/usr/bin/runsc", "/usr/sbin/runsc",
                                          "/usr/local/bin/runsc"};

struct gvisor {
    char runsc[64];
    char platform[16];
    char state[EXECBOX_PATH_MAX]; /* runsc --root: its container state, ours alone */
    char stage[EXECBOX_PATH_MAX]; /* the staged /etc (stage/etc), bound read-only */
    unsigned id;
    atomic_uint seq;
};

static const char *find_runsc(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(runsc_paths); i++)
        if (access(runsc_paths[i], X_OK) == 0)
            return runsc_paths[i];
    return NULL;
}

static const char *platform_of(const struct execbox_executor_options *o)
{
    return o && o->gvisor_platform && *o->gvisor_platform ? o->gvisor_platform : "ptrace";
}

/* Runs argv (runsc) with stdio on /dev/null and waits at most ms; its exit status, or -errno.
 * out (optional) gets the first bytes of its stdout. */
static int run_tool(char *const argv[], int ms, char *out, size_t out_size)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t got = 0;
    uint64_t deadline = eb_now_ns() + (uint64_t)ms * 1000000;
    int status = -1;
    for (;;) {
        if (out && got + 1 < out_size) {
            /* poll, not select: a server may hold more than FD_SETSIZE fds. */
            struct pollfd pf = {.fd = p[0], .events = POLLIN};
            if (poll(&pf, 1, 20) > 0) {
                ssize_t n = read(p[0], out + got, out_size - 1 - got);
                if (n > 0)
                    got += (size_t)n;
            }
        } else {
            usleep(20000);
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (eb_now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            close(p[0]);
            return -ETIMEDOUT;
        }
    }
    if (out)
        out[got] = '\0';
    close(p[0]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    const char *runsc = find_runsc();
    const char *platform = platform_of(o);
    snprintf(c->tier, sizeof(c->tier), "user-space kernel: gVisor (runsc, platform %s)", platform);
    char ver[256] = "";
    int vr = runsc ? run_tool((char *const[]){(char *)runsc, (char *)"--version", NULL}, 5000, ver,
                              sizeof(ver))
                   : -ENOENT;
    char *nl = strchr(ver, '\n');
    if (nl)
        *nl = '\0';
    eb_check_add(c, "runsc", vr == 0, true, "%s",
                 vr == 0 ? ver
                 : runsc ? "runsc does not run (runsc --version failed)"
                         : "runsc is not installed (Debian: apt-get install runsc)");
    bool root = geteuid() == 0;
    eb_check_add(c, "root", root, true, "%s",
                 root ? "runsc runs rootful (it needs root to set up the sandbox)"
                      : "not root: runsc needs root here");
    bool known = strcmp(platform, "ptrace") == 0 || strcmp(platform, "kvm") == 0 ||
                 strcmp(platform, "systrap") == 0;
    bool kvm = access("/dev/kvm", R_OK | W_OK) == 0;
    eb_check_add(c, "platform", known, true, "%s%s", known ? platform : "unknown platform",
                 strcmp(platform, "ptrace") == 0 && kvm
                     ? " (/dev/kvm exists: --gvisor-platform kvm where it is usable)"
                     : "");
    eb_check_add(c, "user-space kernel", true, false,
                 "the guest's system calls go to gVisor's Sentry, not the host kernel");
    eb_check_add(c, "namespaces", true, false, "pid, network, ipc, uts, mount (runsc's own)");
    eb_check_add(c, "network none", true, false, "runsc --network=none: loopback only");
    eb_check_add(c, "read-only root", true, false,
                 "system directories bound read-only, a staged /etc; or the policy's rootfs");
    eb_check_add(c, "cgroup limits", access("/sys/fs/cgroup", F_OK) == 0, false,
                 "memory (no swap), pids, CPU quota: runsc's cgroupsPath");
    eb_check_add(c, "tmpfs and workspace", true, false,
                 "/tmp a sized tmpfs in the sandbox; /workspace a sized host tmpfs (root)");
    eb_check_add(c, "no privileges", true, false,
                 "uid 1000, every capability set empty, no_new_privs, rlimits, nice filter");
    c->usable = vr == 0 && root && known;
    return c->usable ? 0 : -ENOTSUP;
}

static void gvisor_close(void *state)
{
    struct gvisor *g = state;
    if (!g)
        return;
    if (g->state[0])
        eb_rm_rf(g->state);
    if (g->stage[0])
        eb_rm_rf(g->stage);
    free(g);
}

static int gvisor_open(const struct execbox_executor_options *o, const struct execbox_check *report,
                       void **ret_state, struct execbox_error *err)
{
    (void)report;
    struct gvisor *g = calloc(1, sizeof(*g));
    if (!g)
        return eb_error_set(err, -ENOMEM, "out of memory");
    const char *runsc = find_runsc();
    snprintf(g->runsc, sizeof(g->runsc), "%s", runsc ? runsc : "runsc");
    snprintf(g->platform, sizeof(g->platform), "%s", platform_of(o));
    if (getrandom(&g->id, sizeof(g->id), 0) != sizeof(g->id))
        g->id = (unsigned)eb_now_ns();
    int r = eb_mkdtemp("gvisor-state", g->state, err);
    if (r == 0)
        r = eb_mkdtemp("gvisor-stage", g->stage, err);
    /* The guest runs as nobody: the staged /etc must be readable by it. */
    if (r == 0 && chmod(g->stage, 0755) < 0)
        r = eb_error_set(err, -errno, "chmod '%s': %s", g->stage, execbox_strerror(-errno));
    if (r == 0)
        r = eb_stage_etc(g->stage, err);
    if (r < 0) {
        gvisor_close(g);
        return r;
    }
    *ret_state = g;
    return 0;
}

/* ---- the bundle ----------------------------------------------------------------------------- */

struct run_dir {
    char dir[EXECBOX_PATH_MAX];    /* private, removed after */
    char bundle[EXECBOX_PATH_MAX]; /* dir/bundle: config.json, rootfs/ */
    char code[EXECBOX_PATH_MAX];   /* dir/code: the program, bound read-only at /code */
    char ws[EXECBOX_PATH_MAX];     /* the workspace on the host */
    bool ws_mounted;               /* ws is a tmpfs of ours */
    char id[64];                   /* the container's name */
};

static int add_mount(json_t *mounts, const char *dst, const char *type, const char *src,
                     const char *opts[])
{
    json_t *o = json_array();
    for (size_t i = 0; o && opts[i]; i++)
        json_array_append_new(o, json_string(opts[i]));
    json_t *m = json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", type, "source", src,
                          "options", o);
    return m && json_array_append_new(mounts, m) == 0 ? 0 : -ENOMEM;
}

/* The root directory of the bundle: the host's /bin, /lib... as the same symlinks into /usr
 * (merged /usr) and empty mount points for the rest. */
static int make_rootfs(const char *rootfs, const char *policy_rootfs, json_t *mounts)
{
    if (mkdir(rootfs, 0755) < 0)
        return -errno;
    static const char *const sys[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};
    static const char *ro[] = {"rbind", "ro", "nosuid", "nodev", NULL};
    char src[EXECBOX_PATH_MAX], dst[EXECBOX_PATH_MAX + 16];
    for (size_t i = 0; !policy_rootfs[0] && i < ARRAY_SIZE(sys); i++) {
        snprintf(src, sizeof(src), "/%s", sys[i]);
        snprintf(dst, sizeof(dst), "%s/%s", rootfs, sys[i]);
        struct stat st;
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char t[EXECBOX_PATH_MAX];
            ssize_t n = readlink(src, t, sizeof(t) - 1);
            if (n < 0)
                continue;
            t[n] = '\0';
            if (symlink(t, dst) < 0)
                return -errno;
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdir(dst, 0755) < 0 || add_mount(mounts, src, "bind", src, ro) < 0)
                return -errno ? -errno : -ENOMEM;
        }
    }
    static const char *const points[] = {"etc", "tmp", "workspace", "code", "proc", "dev"};
    for (size_t i = 0; !policy_rootfs[0] && i < ARRAY_SIZE(points); i++) {
        snprintf(dst, sizeof(dst), "%s/%s", rootfs, points[i]);
        if (mkdir(dst, 0755) < 0)
            return -errno;
    }
    return 0;
}

static int write_config(const struct gvisor *g, const struct run_dir *d, const struct eb_run *run,
                        struct execbox_error *err)
{
    const struct execbox_policy *p = run->policy;
    json_t *mounts = json_array();
    char rootfs[EXECBOX_PATH_MAX + 16];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", d->bundle);
    int r = mounts ? make_rootfs(rootfs, p->rootfs, mounts) : -ENOMEM;
    if (r < 0) {
        json_decref(mounts);
        return eb_error_set(err, r, "building the bundle's root: %s", execbox_strerror(r));
    }
    char etc[EXECBOX_PATH_MAX + 8], tmpopt[64], guest_code[96];
    snprintf(etc, sizeof(etc), "%s/etc", g->stage);
    snprintf(tmpopt, sizeof(tmpopt), "size=%" PRIu64, p->tmpfs);
    snprintf(guest_code, sizeof(guest_code), "/code/%s", run->lang->filename);
    static const char *ro[] = {"rbind", "ro", "nosuid", "nodev", NULL};
    static const char *rw[] = {"rbind", "rw", "nosuid", "nodev", NULL};
    const char *tmp_opts[] = {"nosuid", "nodev", "mode=1777", tmpopt, NULL};
    static const char *none[] = {NULL};
    if (!p->rootfs[0])
        r |= add_mount(mounts, "/etc", "bind", etc, ro);
    r |= add_mount(mounts, "/proc", "proc", "proc", none);
    r |= add_mount(mounts, "/tmp", "tmpfs", "tmpfs", tmp_opts);
    r |= add_mount(mounts, "/workspace", "bind", d->ws, rw);
    r |= add_mount(mounts, "/code", "bind", d->code, ro);

    struct eb_env env;
    if (eb_env_build(&env, "/workspace", "/tmp", p->cpus) < 0) {
        json_decref(mounts);
        return eb_error_set(err, -E2BIG, "environment too large");
    }
    json_t *envj = json_array(), *args = json_array();
    for (size_t i = 0; i < env.n; i++) {
        /* gVisor completes a write to a full host pipe short (Linux blocks until all of it
         * is written), and unbuffered Python does not retry a short write: its output would
         * be cut at the pipe's size. Buffered, Python's writer retries until all is out. */
        if (strncmp(env.envp[i], "PYTHONUNBUFFERED=", 17) == 0)
            continue;
        json_array_append_new(envj, json_string(env.envp[i]));
    }
    json_array_append_new(args, json_string(run->lang->interpreter));
    for (size_t i = 0; run->lang->args[i]; i++)
        json_array_append_new(args, json_string(run->lang->args[i]));
    json_array_append_new(args, json_string(guest_code));
    /* No capability at all, no new privileges, uid 1000, and the rlimits the jail sets. gVisor
     * applies RLIMIT_NPROC per uid inside the sandbox (runsc's host processes keep the host's
     * limits): the guest is the only process of its uid there, so this is the guest's pids
     * bound, threads included. RLIMIT_NICE 0: no nice value below the start (see the filter). */
    json_t *caps = json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective",
                             "inheritable", "permitted", "ambient");
    json_t *rlimits = json_pack(
        "[{s:s, s:I, s:I}, {s:s, s:I, s:I}, {s:s, s:i, s:i}, {s:s, s:I, s:I}, {s:s, s:i, s:i}]",
        "type", "RLIMIT_FSIZE", "hard", (json_int_t)p->file_size, "soft", (json_int_t)p->file_size,
        "type", "RLIMIT_NOFILE", "hard", (json_int_t)1024, "soft", (json_int_t)1024, "type",
        "RLIMIT_CORE", "hard", 0, "soft", 0, "type", "RLIMIT_NPROC", "hard", (json_int_t)p->pids,
        "soft", (json_int_t)p->pids, "type", "RLIMIT_NICE", "hard", 0, "soft", 0);
    char cgpath[128];
    snprintf(cgpath, sizeof(cgpath), "/execbox-%d-g%08x-%u", (int)getpid(), g->id,
             atomic_fetch_add((atomic_uint *)&g->seq, 1));
    int64_t period = 100000, quota = (int64_t)ceil(p->cpus * (double)period);
    json_t *cfg = json_pack(
        "{s:s, s:{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:o, s:o, s:b}, s:{s:s, s:b}, s:s, s:o,"
        " s:{s:[{s:s},{s:s},{s:s},{s:s},{s:s}], s:s, s:{s:{s:I, s:I}, s:{s:I}, s:{s:I, s:I}}}}",
        "ociVersion", "1.0.2", "process", "terminal", 0, "user", "uid", GV_GUEST_UID, "gid",
        GV_GUEST_UID, "args", args, "env", envj, "cwd", "/workspace", "capabilities", caps,
        "rlimits", rlimits, "noNewPrivileges", 1, "root", "path", p->rootfs[0] ? p->rootfs : rootfs,
        "readonly", 1, "hostname", "execbox", "mounts", mounts, "linux", "namespaces", "type",
        "pid", "type", "network", "type", "ipc", "type", "uts", "type", "mount", "cgroupsPath",
        cgpath, "resources", "memory", "limit", (json_int_t)p->memory, "swap",
        (json_int_t)p->memory, "pids", "limit", (json_int_t)p->pids + GV_PIDS_SENTRY, "cpu",
        "quota", (json_int_t)quota, "period", (json_int_t)period);
    /* gVisor checks no privilege on setpriority (a guest with no capability and RLIMIT_NICE 0
     * could still lower its nice value to -20) nor on the scheduling calls: the filter that
     * runsc loads inside the sandbox (--oci-seccomp) refuses them as Linux would refuse a
     * process without CAP_SYS_NICE. A negative nice value is bit 31 of the int argument. */
    json_t *filter =
        json_pack("{s:s, s:[{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}, {s:[s, s, s], s:s, s:i}]}",
                  "defaultAction", "SCMP_ACT_ALLOW", "syscalls", "names", "setpriority", "action",
                  "SCMP_ACT_ERRNO", "errnoRet", EACCES, "args", "index", 2, "value",
                  (json_int_t)0x80000000, "valueTwo", (json_int_t)0x80000000, "op",
                  "SCMP_CMP_MASKED_EQ", "names", "sched_setscheduler", "sched_setparam",
                  "sched_setattr", "action", "SCMP_ACT_ERRNO", "errnoRet", EPERM);
    if (!cfg || r || !filter ||
        json_object_set_new(json_object_get(cfg, "linux"), "seccomp", filter) < 0) {
        json_decref(cfg);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    char path[EXECBOX_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/config.json", d->bundle);
    r = json_dump_file(cfg, path, JSON_COMPACT);
    json_decref(cfg);
    return r < 0 ? eb_error_set(err, -EIO, "writing '%s'", path) : 0;
}

/* The run directory, the program, the workspace. */
static int prepare(const struct gvisor *g, const struct eb_run *run, struct run_dir *d,
                   struct execbox_error *err)
{
    const struct execbox_policy *p = run->policy;
    int r = eb_mkdtemp("gvisor-run", d->dir, err);
    if (r < 0)
        return r;
    snprintf(d->bundle, sizeof(d->bundle), "%.*s/bundle", EXECBOX_PATH_MAX - 16, d->dir);
    snprintf(d->code, sizeof(d->code), "%.*s/code", EXECBOX_PATH_MAX - 16, d->dir);
    snprintf(d->id, sizeof(d->id), "execbox-%d-%08x-%u", (int)getpid(), g->id,
             atomic_fetch_add((atomic_uint *)&g->seq, 1));
    char file[EXECBOX_PATH_MAX + 64];
    snprintf(file, sizeof(file), "%s/%s", d->code, run->lang->filename);
    /* The guest (nobody) traverses the run directory to its binds: 0711, nothing listable. */
    if (chmod(d->dir, 0711) < 0 || mkdir(d->bundle, 0711) < 0 || mkdir(d->code, 0755) < 0)
        return eb_error_set(err, -errno, "run directory: %s", execbox_strerror(-errno));
    if ((r = eb_write_file(file, run->code, run->code_len, 0444)) < 0)
        return eb_error_set(err, r, "write the program: %s", execbox_strerror(r));
    if (p->workspace[0]) {
        if (!realpath(p->workspace, d->ws))
            return eb_error_set(err, -errno, "workspace '%s': %s", p->workspace,
                                execbox_strerror(-errno));
        if ((r = eb_workspace_check_host(d->ws, err)) < 0)
            return r;
    } else {
        snprintf(d->ws, sizeof(d->ws), "%.*s/ws", EXECBOX_PATH_MAX - 16, d->dir);
        if (mkdir(d->ws, 0700) < 0)
            return eb_error_set(err, -errno, "mkdir workspace: %s", execbox_strerror(-errno));
        char opts[96];
        snprintf(opts, sizeof(opts), "size=%" PRIu64 ",nr_inodes=16384,mode=0700,uid=%d,gid=%d",
                 p->workspace_size, GV_GUEST_UID, GV_GUEST_UID);
        /* A host tmpfs caps the fresh workspace at workspace_size (root only, as runsc). */
        if (mount("tmpfs", d->ws, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
            return eb_error_set(err, -errno, "workspace tmpfs: %s", execbox_strerror(-errno));
        d->ws_mounted = true;
    }
    return write_config(g, d, run, err);
}

/* Whether runsc still keeps state for the container (a `runsc run` that ended normally has
 * removed it; one that was killed has not). */
static bool has_state(const struct gvisor *g, const char *id)
{
    DIR *dir = opendir(g->state);
    if (!dir)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(dir));)
        found = strstr(e->d_name, id) != NULL;
    closedir(dir);
    return found;
}

static void cleanup(const struct gvisor *g, struct run_dir *d)
{
    /* `runsc delete --force` kills what is left of the sandbox and removes its state; it
     * costs a runsc start (~0.1-0.2 s here), so only when there is something to delete. */
    if (d->id[0] && has_state(g, d->id)) {
        char *const argv[] = {(char *)g->runsc,
                              (char *)"--root",
                              (char *)g->state,
                              (char *)"delete",
                              (char *)"--force",
                              d->id,
                              NULL};
        run_tool(argv, GV_DELETE_MS, NULL, 0);
    }
    if (d->ws_mounted)
        umount2(d->ws, MNT_DETACH);
    if (d->dir[0])
        eb_rm_rf(d->dir);
}

/* ---- a run ---------------------------------------------------------------------------------- */

/* A run's sandbox (the backend's eb_box): its run directory and bundle, made by start(); runsc
 * under our init, started by deliver(). */
struct eb_box {
    struct run_dir d;
    struct eb_child child;
    int in_fd; /* the run's stdin, until deliver() hands it to runsc */
};

/* Kills what is left of runsc (if wait() did not reap it), deletes its state, unmounts and
 * removes the run directory. */
static void gv_destroy(void *state, struct eb_box *w)
{
    if (!w)
        return;
    if (w->child.pid > 0) {
        if (w->child.pidfd >= 0)
            syscall(SYS_pidfd_send_signal, w->child.pidfd, SIGKILL, NULL, 0);
        kill(-w->child.pid, SIGKILL);
        waitpid(w->child.pid, NULL, 0);
        w->child.pid = -1;
    }
    eb_close(&w->in_fd);
    eb_child_close(&w->child);
    cleanup(state, &w->d);
    free(w);
}

/* Cold only: the bundle built from the policy, the program, the workspace. */
static int gv_start(void *state, const struct eb_start *s, struct eb_box **ret,
                    struct execbox_error *err)
{
    const struct gvisor *g = state;
    struct eb_box *w = calloc(1, sizeof(*w));
    if (!w)
        return eb_error_set(err, -ENOMEM, "out of memory");
    eb_child_init(&w->child);
    w->in_fd = -1;
    int r = prepare(g, s->run, &w->d, err);
    if (r == 0) {
        w->in_fd = eb_stdin_fd(s->run->req->stdin_data, s->run->req->stdin_len, err);
        if (w->in_fd < 0)
            r = w->in_fd;
    }
    if (r < 0) {
        gv_destroy(state, w);
        return r;
    }
    *ret = w;
    return 0;
}

/* `runsc run` on the bundle, in a session of its own under an init of ours. */
static int gv_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                      struct execbox_error *err)
{
    (void)run;
    const struct gvisor *g = state;
    int fds[8] = {-1, -1, -1, -1, -1, -1, -1, -1}; /* out, err, status, ctl */
    int r = 0;
    for (int i = 0; i < 8; i += 2)
        if (pipe2(&fds[i], O_CLOEXEC) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    char platform[40];
    snprintf(platform, sizeof(platform), "--platform=%s", g->platform);
    char *argv[] = {
        (char *)g->runsc, (char *)"--root", (char *)g->state, platform, (char *)"--network=none",
        /* the bundle's filter (write_config), applied to the guest inside the sandbox */
        (char *)"--oci-seccomp", (char *)"run", (char *)"--bundle", w->d.bundle, w->d.id, NULL};
    char *envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    struct eb_guest guest = {
        .stdin_fd = w->in_fd,
        .stdout_fd = fds[1],
        .stderr_fd = fds[3],
        .status_fd = fds[5],
        .cwd = w->d.dir,
        .path = g->runsc,
        .argv = argv,
        .envp = envp,
        .memory_rlimit = -1, /* runsc is not the guest: the cgroup caps the sandbox */
        .file_size = RLIM_INFINITY,
    };
    struct eb_init init = {.status_fd = fds[5], .ctl_fd = fds[6], .guest = &guest};
    /* Our init as runsc's parent: runsc's sandbox and gofer processes stay below it, in its
     * process group, and die with it whatever runsc does. */
    int pidfd = -1;
    pid_t pid = eb_fork_subreaper_init(&init, 0, &pidfd, err);
    if (pid < 0) {
        r = pid;
        goto out;
    }
    w->child.pid = pid;
    w->child.kill_pgid = pid;
    w->child.pidfd = pidfd;
    w->child.out_fd = TAKE_FD(fds[0]);
    w->child.err_fd = TAKE_FD(fds[2]);
    w->child.status_fd = TAKE_FD(fds[4]);
    w->child.ctl_fd = TAKE_FD(fds[7]);
    eb_close(&w->in_fd);
out:
    for (int i = 0; i < 8; i++)
        eb_close(&fds[i]);
    return r;
}

/* Supervises runsc to its end. runsc reports a guest killed by signal N as its own exit
 * 128 + N: that is made the signal status it stands for. runsc's rusage is its own, not the
 * guest's, and the cgroup is runsc's: CPU and memory are unknown. The workspace is listed when
 * the guest ended. */
static int gv_wait(void *state, struct eb_box *w, const struct eb_run *run,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    (void)state;
    int r = eb_supervise(&w->child, run->req, run->policy, run->start_ns, res, &ret->oc, err);
    w->child.pid = -1; /* reaped by eb_supervise */
    if (r < 0)
        return r;
    struct eb_outcome *oc = &ret->oc;
    if (oc->got_exit && WIFEXITED(oc->status) && WEXITSTATUS(oc->status) > 128 &&
        WEXITSTATUS(oc->status) < 128 + 65)
        oc->status = WEXITSTATUS(oc->status) - 128;
    ret->cpu_ns = -2;
    ret->peak_memory = -2;
    if (oc->got_exit)
        ret->ws_fd = open(w->d.ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return 0;
}

const struct eb_backend_ops eb_backend_gvisor = {
    .name = "gvisor",
    .probe = probe,
    .open = gvisor_open,
    .close = gvisor_close,
    .start = gv_start,
    .deliver = gv_deliver,
    .wait = gv_wait,
    .destroy = gv_destroy,
};
