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
 *
 * This file holds the backend table and the assembly of a sandbox (sandbox_start); the
 * mechanisms are in lib/jail/: the executor's state and a sandbox's life cycle (box.h), the
 * init (child.h), the stage and its sweep (stage.h), a host workspace (hostws.h), detached
 * tmpfs (tmpfs.h), the exiting inits (reaper.h), network "allow" (proxyrun.h), templates
 * (tplclient.h); the probe is jail_probe.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/jail_probe.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/box.h"
#include "jail/cgroup.h"
#include "jail/child.h"
#include "jail/hostws.h"
#include "jail/mntpin.h"
#include "jail/mounts.h"
#include "jail/netns.h"
#include "jail/netproxy.h"
#include "jail/ns.h"
#include "jail/prewarm.h"
#include "jail/proxyrun.h"
#include "jail/reaper.h"
#include "jail/seccomp.h"
#include "jail/stage.h"
#include "jail/tmpfs.h"
#include "jail/tplclient.h"
#include "jail/uidpool.h"
#include "model/lang.h"
#include "model/result.h"
#include "proc/proc.h"
#include "ws/workspace.h"
#include "ws/wsfile.h"

#define NETNS_POOL 2

/* ---- open / close ---------------------------------------------------------------------------- */

/* The stage directory (stage.h), the matplotlib font list staged in it, and the system part of
 * every run's mount plan. */
static int prepare_cache(struct jail *j, struct execbox_error *err)
{
    int r = eb_stage_prepare(j->cache, sizeof(j->cache), err);
    if (r < 0)
        return r;
    snprintf(j->rootdir, sizeof(j->rootdir), "%s/root", j->cache);
    char name[64];
    if (eb_prewarm_load(j->cache, name, &j->mpl_data, &j->mpl_len) == 0)
        snprintf(j->mpl_file, sizeof(j->mpl_file), "tmp/.matplotlib/%s", name);
    eb_plan_init(&j->sys);
    /* /etc is bound per run, from the stage the run holds locked (sandbox_start). */
    return eb_plan_system(&j->sys, NULL, "", err);
}

static void jail_close(void *state)
{
    struct jail *j = state;
    if (!j)
        return;
    for (int i = 0; i < 4; i++)
        eb_close(&j->tpl_blob_fds[i]);
    eb_grave_flush(); /* the cgroups in it point at j->cg, and may be kept in j->cg_spares */
    eb_cgroup_spares_free(j->cg_spares);
    pthread_mutex_destroy(&j->tpl_start_lock);
    eb_netns_pool_free(j->pool);
    eb_close(&j->mntns_fd);
    pthread_mutex_destroy(&j->mntns_lock);
    eb_reap_exiting(false);
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
    /* Unknown (no /proc): each run's init keeps the host's command line; /proc is what shows it. */
    (void)eb_host_cmdline(&j->host_cmdline, &j->host_cmdline_len);
    /* Root only (see netns.h). Started first, so that even a one-shot run finds a namespace
     * made on another core while this thread builds the filter and the run's cgroup. */
    if (j->userns.root_mode)
        j->pool = eb_netns_pool_new(NETNS_POOL);
    eb_jail_probe_cgroup(&j->cg);
    if (j->cg.version && o && o->keep_cgroups)
        j->cg_spares = eb_cgroup_spares_new(&j->cg);
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
    eb_stage_sweep(&j->cg, EB_JAIL_CG_PREFIX, j->cache, j->userns.root_mode, o && o->sweep_now);
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
        if (eb_mntns_pin_open(EB_MNTNS_PIN_DIR, j->rootdir, plans, 1, EB_MNTNS_PIN_MAX_AGE,
                              &j->mntns_fd, &pinned, NULL) < 0)
            j->mntns_failed = true;
    }
    int fd = j->mntns_fd;
    pthread_mutex_unlock(&j->mntns_lock);
    return fd;
}

/* Three kinds of sandbox come out of sandbox_start, and where they differ it says so by mode:
 * cold (the run's program in /code, its stdin the guest's, running at once), warm (the
 * interpreter runs the language's bootstrap, which imports the preload and waits on fd 3; /code
 * is ours to fill at run time) and a template (a warm interpreter that serves forks instead,
 * tplclient.h: /workspace and /code stay empty, each run attaches its own). */
enum start_mode { START_COLD, START_WARM, START_TEMPLATE };

/* The per-run scratch mounts: /tmp (with MPLCONFIGDIR, the guest's own, holding the prebuilt
 * font list) and /dev/shm (POSIX semaphores and shared memory), owned by the guest. */
static void plan_scratch(const struct eb_box *sb, struct eb_mount_plan *dyn)
{
    const struct jail *j = sb->j;
    unsigned gu = j->userns.root_mode ? (unsigned)sb->userns.host_uid : EB_JAIL_UID;
    unsigned gg = j->userns.root_mode ? (unsigned)sb->userns.host_gid : EB_JAIL_GID;
    char opts[128];
    snprintf(opts, sizeof(opts), "size=%" PRIu64 ",nr_inodes=16384,mode=1777,uid=%u,gid=%u",
             sb->policy.tmpfs, gu, gg);
    eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "tmp", opts, 0, -1);
    if (j->mpl_file[0]) {
        eb_plan_add(dyn, EB_MOP_DIR, NULL, "tmp/.matplotlib", NULL, 0, -1);
        eb_plan_add(dyn, EB_MOP_CHOWN, NULL, "tmp/.matplotlib", NULL, 0, -1);
        dyn->ops[dyn->n - 1].uid = gu;
        dyn->ops[dyn->n - 1].gid = gg;
        eb_plan_add(dyn, EB_MOP_FILE, NULL, j->mpl_file, NULL, 0, -1);
        dyn->ops[dyn->n - 1].data = j->mpl_data; /* not copied: the child reads our memory */
        dyn->ops[dyn->n - 1].len = j->mpl_len;
    }
    snprintf(opts, sizeof(opts), "size=%u,nr_inodes=1024,mode=1777,uid=%u,gid=%u", EB_JAIL_SHM_SIZE,
             gu, gg);
    eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "dev/shm", opts, 0, -1);
}

/* /workspace: a caller's host directory (hostws.h); else, as root, a fresh detached tmpfs
 * (tmpfs.h); else a private host directory (no tmpfs outside our namespaces). A template's
 * stays an empty directory. A cold run's input files go in before the guest exists: through the
 * fresh workspace's mount, or into the host directory (pinned), owned as its root is. */
static int plan_workspace(struct eb_box *sb, enum start_mode mode, const struct eb_run *run,
                          struct eb_mount_plan *dyn, struct execbox_error *err)
{
    struct jail *j = sb->j;
    const struct execbox_policy *pol = &sb->policy;
    int r;
    if (mode == START_TEMPLATE)
        return 0;
    if (pol->workspace[0]) {
        if ((r = eb_host_ws_open(&sb->host, pol->workspace, &sb->userns, j->cache, j->id,
                                 &sb->ws_fd, err)) < 0)
            return r;
        if (sb->ws_fd >= 0)
            eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "workspace", NULL, 0, sb->ws_fd);
        else
            eb_plan_add(dyn, EB_MOP_BIND_RW, sb->host.path, "workspace", NULL, 0, -1);
    } else if (j->userns.root_mode) {
        sb->ws_fd = eb_tmpfs_workspace(&sb->userns, pol->workspace_size, err);
        if (sb->ws_fd < 0)
            return sb->ws_fd;
        eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "workspace", NULL, 0, sb->ws_fd);
    } else {
        char what[32];
        snprintf(what, sizeof(what), "ws-%d", (int)getpid());
        if ((r = eb_mkdtemp(what, sb->host.path, err)) < 0)
            return r;
        eb_plan_add(dyn, EB_MOP_BIND_RW, sb->host.path, "workspace", NULL, 0, -1);
    }
    if (!run || !run->req->n_files)
        return 0;
    if (sb->host.root_fd >= 0)
        return eb_ws_place(sb->host.root_fd, run->req, pol, err);
    if (sb->ws_fd >= 0)
        return eb_ws_place(sb->ws_fd, run->req, pol, err);
    return eb_input_files_place_at(sb->host.path, run->req, pol, err);
}

/* /code: cold, a tmpfs of its own sized for the program (the root is too small for one of up to
 * EXECBOX_CODE_MAX), the program written into it (guest_code) and read-only once written; warm,
 * a detached tmpfs that we fill at run time (sb->code_fd), the sandbox attaching *ret_ro, its
 * read-only view (tmpfs.h); a template's stays an empty directory. */
static int plan_code(struct eb_box *sb, enum start_mode mode, const struct eb_run *run,
                     const char *guest_code, struct eb_mount_plan *dyn, int *ret_ro,
                     struct execbox_error *err)
{
    if (mode == START_TEMPLATE)
        return 0;
    if (mode == START_WARM) {
        bool cover;
        int r = eb_tmpfs_code(&sb->code_fd, ret_ro, &cover, err);
        if (r < 0)
            return r;
        eb_plan_add(dyn, cover ? EB_MOP_ATTACH_COVER : EB_MOP_ATTACH, NULL, "code", NULL, 0,
                    *ret_ro);
        return 0;
    }
    char opts[64];
    snprintf(opts, sizeof(opts), "size=%zu,nr_inodes=16,mode=0755", run->code_len + (64U << 10));
    eb_plan_add(dyn, EB_MOP_TMPFS, NULL, "code", opts, 0, -1);
    eb_plan_add(dyn, EB_MOP_FILE, NULL, guest_code + 1, NULL, 0, -1);
    /* The program text is not copied into the plan: the child reads it from its copy of our
     * memory. */
    dyn->ops[dyn->n - 1].data = run->code;
    dyn->ops[dyn->n - 1].len = run->code_len;
    eb_plan_add(dyn, EB_MOP_RDONLY, NULL, "code", NULL, 0, -1);
    return 0;
}

/* /etc, for a run on the host's system directories: hold the stage this sandbox binds (shared
 * lock in sb->stage_fd, until it is destroyed): the start-up sweep removes only stages no sandbox
 * holds. As root the child attaches a read-only clone of exactly the locked stage's etc (made
 * here, *ret_etc: a re-stage swapping the path meanwhile cannot make it bind another one);
 * unprivileged, it binds the path (we may not clone mounts here). */
static int plan_etc(struct eb_box *sb, struct eb_mount_plan *dyn, int *ret_etc,
                    struct execbox_error *err)
{
    const struct jail *j = sb->j;
    sb->stage_fd = open(j->cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sb->stage_fd < 0 || flock(sb->stage_fd, LOCK_SH) < 0)
        return eb_error_set(err, -errno, "lock the /etc stage %s: %s", j->cache,
                            execbox_strerror(-errno));
    if (!j->userns.root_mode) {
        char src[EXECBOX_PATH_MAX + 8];
        snprintf(src, sizeof(src), "%s/etc", j->cache);
        eb_plan_add(dyn, EB_MOP_BIND_RO, src, "etc", NULL, 0, -1);
        return 0;
    }
    *ret_etc = (int)syscall(SYS_open_tree, sb->stage_fd, "etc",
                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (*ret_etc < 0 ||
        syscall(SYS_mount_setattr, *ret_etc, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
        return eb_error_set(err, -errno, "a read-only clone of the /etc stage: %s",
                            execbox_strerror(-errno));
    eb_plan_add(dyn, EB_MOP_ATTACH, NULL, "etc", NULL, 0, *ret_etc);
    return 0;
}

/* The interpreter's command line, in argv (20 entries): cold, the program; warm, the bootstrap
 * with the program's and stdin's paths and the preload; a template's bootstrap gets besides the
 * numbers of the fds it is handed (3..7: socket, helper, init, bpf, mpl; it takes them as
 * helper, sock, init, bpf, mpl), the font list's name and whether Landlock is on. */
static void guest_argv(const struct eb_box *sb, enum start_mode mode, const char *preload,
                       char *guest_code, char *guest_stdin, char **argv)
{
    const struct jail *j = sb->j;
    const struct eb_language *lang = sb->lang;
    size_t argc = 0;
    argv[argc++] = (char *)lang->interpreter;
    for (size_t i = 0; lang->args[i] && argc < 6; i++)
        argv[argc++] = (char *)lang->args[i];
    if (mode == START_COLD) {
        argv[argc++] = guest_code;
        argv[argc] = NULL;
        return;
    }
    argv[argc++] = (char *)"-c";
    argv[argc++] =
        (char *)(mode == START_TEMPLATE ? lang->template_bootstrap : lang->warm_bootstrap);
    argv[argc++] = guest_code;
    argv[argc++] = guest_stdin;
    argv[argc++] = (char *)preload;
    if (mode == START_TEMPLATE) {
        static const char *const order[] = {"4", "3", "5", "6", "7"};
        for (size_t i = 0; i < ARRAY_SIZE(order); i++)
            argv[argc++] = (char *)order[i];
        argv[argc++] = (char *)(j->mpl_file[0] ? strrchr(j->mpl_file, '/') + 1 : "");
        argv[argc++] = (char *)(j->landlock_ok ? "1" : "0");
    }
    argv[argc] = NULL;
}

/* The namespaces the child does not make with clone3 but joins, and the clone flags for the
 * rest (*ret_flags). A run on the host's system directories copies the prepared mount namespace
 * (run_mntns: that small namespace, not ours; the child mounts its proc and its own mounts
 * there); each run takes a fresh network namespace from the pool, and with network "allow" its
 * proxy listens in it (a template's forks get theirs in jail_start, not the template). */
static int start_namespaces(struct eb_box *sb, struct eb_jail_child *ctx,
                            const struct eb_mount_plan *sysplan, const struct eb_mount_plan *dyn,
                            bool tpl, int *netns_fd, unsigned long *ret_flags,
                            struct execbox_error *err)
{
    struct jail *j = sb->j;
    unsigned long flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    if (!j->userns.root_mode)
        flags |= CLONE_NEWUSER;
    int mntns_fd = sysplan == &j->sys ? run_mntns(j) : -1;
    if (mntns_fd >= 0) {
        ctx->mntns_fd = mntns_fd;
        ctx->plans[0] = dyn;
        ctx->plans[1] = &j->proc_plan;
        eb_jail_child_keep(ctx, mntns_fd);
    } else {
        flags |= CLONE_NEWNS;
    }
    *netns_fd = eb_netns_take(j->pool);
    if (sb->policy.network == EXECBOX_NETWORK_ALLOW && !tpl) {
        int ns = -1;
        int r = eb_proxy_run(j->userns.root_mode, &sb->policy, *netns_fd, &ns, &sb->proxy, err);
        if (r < 0)
            return r;
        if (ns != *netns_fd) {
            eb_close(netns_fd);
            *netns_fd = ns;
        }
    }
    if (*netns_fd >= 0) {
        ctx->netns_fd = *netns_fd;
        eb_jail_child_keep(ctx, *netns_fd);
    } else {
        flags |= CLONE_NEWNET;
    }
    *ret_flags = flags;
    return 0;
}

/* The fds the sandbox's init keeps (keep[n], then the cgroup's, then a template's tpl_fds), and
 * its way out of the run's cgroup: init leaves it once the sandbox is empty, so that the parent
 * can remove it and return without waiting for init's exit (see eb_init_loop_leave); leave holds
 * EB_LEAVE_FDS_MAX and must live as long as ctx. */
static void child_keep(struct eb_jail_child *ctx, const struct eb_box *sb, const int *keep,
                       size_t n, const int *tpl_fds, int *leave)
{
    for (size_t i = 0; i < n; i++)
        eb_jail_child_keep(ctx, keep[i]);
    for (int i = 0; i < EB_CG_N; i++)
        eb_jail_child_keep(ctx, sb->cg.procs_fd[i]);
    for (int i = 0; i < EB_CG_N; i++)
        if (sb->cg.leave_fd[i] >= 0 && ctx->init.n_leave < EB_LEAVE_FDS_MAX) {
            leave[ctx->init.n_leave++] = sb->cg.leave_fd[i];
            eb_jail_child_keep(ctx, sb->cg.leave_fd[i]);
        }
    ctx->init.leave_fds = leave;
    if (tpl_fds)
        for (int i = 0; i < 5; i++)
            eb_jail_child_keep(ctx, tpl_fds[i]);
}

/* sb takes the started init: its pid and pidfd (*pidfd), and our ends of its pipes (fds as
 * sandbox_start made them: out, err, status, ctl, alive, go). */
static void box_take_child(struct eb_box *sb, pid_t pid, int *pidfd, int fds[12])
{
    sb->k.cg = sb->j->cg.version ? &sb->cg : NULL;
    sb->child.pid = pid;
    sb->child.pidfd = TAKE_FD(*pidfd);
    sb->k.pidfd = sb->child.pidfd;
    sb->child.out_fd = TAKE_FD(fds[0]);
    sb->child.err_fd = TAKE_FD(fds[2]);
    sb->child.status_fd = TAKE_FD(fds[4]);
    sb->child.ctl_fd = TAKE_FD(fds[7]);
    sb->child.kill_all = eb_box_kill_all;
    sb->child.ctx = &sb->k;
    sb->child.exit_msg_ends = true;
    sb->alive_w = TAKE_FD(fds[9]); /* kept until the end */
    sb->go_fd = TAKE_FD(fds[11]);
}

/* Builds the whole sandbox and starts init and the guest: cold (preload NULL, run given), warm
 * (preload) or a template (tpl_fds, its interpreter's fds 3..7; preload too). See start_mode. */
static int sandbox_start(struct eb_box *sb, const char *preload, const struct eb_run *run,
                         const int *tpl_fds, struct execbox_error *err)
{
    struct jail *j = sb->j;
    const struct execbox_policy *pol = &sb->policy;
    const struct eb_language *lang = sb->lang;
    enum start_mode mode = tpl_fds ? START_TEMPLATE : preload ? START_WARM : START_COLD;
    bool warm = mode != START_COLD, tpl = mode == START_TEMPLATE;
    int fds[12] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    /* out, err, status, ctl, alive, go */
    _cleanup_close_ int in_fd = -1, netns_fd = -1, pidfd = -1, code_ro = -1, etc_fd = -1;
    int r = 0;

    /* Per-run mounts: /tmp, /dev/shm, /workspace, the program and /etc. On the heap, where only
     * the few entries used are ever touched (they were two thread-local plans, 24 KiB that every
     * thread of the host process had zeroed at its start); the child reads its own copy. */
    _cleanup_free_ struct eb_mount_plan *dyn = malloc(sizeof(*dyn)), *rootfs_plan = NULL;
    if (!dyn)
        return eb_error_set(err, -ENOMEM, "out of memory");
    eb_plan_init(dyn);
    if ((r = eb_box_take_uid(sb, err)) < 0)
        return r;
    plan_scratch(sb, dyn);
    if ((r = plan_workspace(sb, mode, run, dyn, err)) < 0)
        return r;
    char guest_code[80], guest_stdin[80];
    snprintf(guest_code, sizeof(guest_code), "/code/%s", lang->filename);
    snprintf(guest_stdin, sizeof(guest_stdin), "/code/stdin");
    if ((r = plan_code(sb, mode, run, guest_code, dyn, &code_ro, err)) < 0)
        return r;
    if (!pol->rootfs[0] && (r = plan_etc(sb, dyn, &etc_fd, err)) < 0)
        return r;
    if (dyn->overflow)
        return eb_error_set(err, -E2BIG, "mount plan too large");
    const struct eb_mount_plan *sysplan = &j->sys;
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
    if (pol->network == EXECBOX_NETWORK_ALLOW && (r = eb_proxy_env(&env)) < 0)
        return eb_error_set(err, r, "environment too large");
    char *argv[20];
    guest_argv(sb, mode, preload, guest_code, guest_stdin, argv);

    /* Also where v1 has cpuacct in a hierarchy of its own: a run that is killed (timeout,
     * cancel) sends no exit message with its processes' rusage, and the cgroup's count is then
     * the only one of its CPU time. A warm run's counts from the cgroup's CPU at its start (the
     * imports before it are not the run's). */
    if ((r = eb_box_cgroup(sb, err)) < 0)
        return r;
    if (tpl)
        in_fd = open("/dev/null", O_RDWR | O_CLOEXEC); /* the template's stdio */
    else
        in_fd =
            eb_stdin_fd(warm ? NULL : run->req->stdin_data, warm ? 0 : run->req->stdin_len, err);
    if (in_fd < 0)
        return tpl ? eb_error_set(err, -errno, "open /dev/null") : in_fd;
    for (int i = 0; i < (warm ? 12 : 10); i += 2)
        if ((i == 10 ? eb_go_channel(&fds[i], sb->session) : pipe2(&fds[i], O_CLOEXEC)) < 0) {
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
        .pre_exec = tpl ? NULL : eb_jail_guest_pre_exec,
    };
    struct eb_jail_child ctx = {
        .root_mode = j->userns.root_mode,
        .landlock = j->landlock_ok,
        .seccomp = j->seccomp_ok ? &j->seccomp : NULL,
        .rootdir = j->rootdir,
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
        .host_cmdline = j->host_cmdline,
        .host_cmdline_len = j->host_cmdline_len,
    };
    if (tpl)
        for (int i = 0; i < 5; i++)
            guest.pass_fds[guest.n_pass++] = tpl_fds[i];
    guest.pre_exec_arg = &ctx;
    int leave[EB_LEAVE_FDS_MAX];
    int keep[] = {in_fd,  fds[1],  fds[3],    fds[5],  fds[6],
                  fds[8], fds[10], sb->ws_fd, code_ro, etc_fd};
    child_keep(&ctx, sb, keep, ARRAY_SIZE(keep), tpl_fds, leave);
    ctx.init.guest_setup = tpl ? eb_jail_tpl_guest_setup : eb_jail_guest_setup;
    ctx.init.guest_setup_arg = &ctx;

    unsigned long flags;
    if ((r = start_namespaces(sb, &ctx, sysplan, dyn, tpl, &netns_fd, &flags, err)) < 0)
        goto out;
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
        eb_jail_child_main(&ctx);
    box_take_child(sb, pid, &pidfd, fds);
out:
    for (int i = 0; i < 12; i++)
        eb_close(&fds[i]);
    return r;
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
        eb_reap_defer(&sb->child.pidfd);
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
        eb_box_files(sb, &st, w->oc.tmp_bytes, &in_tmp, &in_ws);
        if (!eb_oom_files_detail(w->oom_files, sizeof(w->oom_files), in_tmp, in_ws))
            w->oom_files[0] = '\0';
    }
    if (sb->ws_fd >= 0)
        w->ws_fd = openat(sb->ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (sb->host.path[0])
        w->ws_fd = open(sb->host.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    /* A fork whose init vanished without a report, before anything was seen of the run, was
     * lost with its template (the guest cannot kill its init): nothing ran as far as anyone can
     * tell, so the executor may run it cold, as when the go byte finds no reader. */
    if (r == 0 && sb->tpl && !w->oc.got_exit && !w->oc.setup_failed && !w->oc.timed_out &&
        !w->oc.cancelled && sb->guest_bytes == 0)
        w->lost = true;
    return r;
}

/* ---- templates (tplclient.h) ---------------------------------------------------------------- */

static int sandbox_start(struct eb_box *sb, const char *preload, const struct eb_run *run,
                         const int *tpl_fds, struct execbox_error *err);

/* Starts a template for (policy, lang, preload): its sandbox, then its interpreter's imports,
 * until it says it is ready. */
static int tpl_start(struct jail *j, const struct execbox_policy *policy,
                     const struct eb_language *lang, const char *preload, struct eb_tplproc **ret,
                     struct execbox_error *err)
{
    struct eb_tplproc *t;
    int fds[5];
    int r = eb_tpl_new(j, policy, lang, preload, &t, fds, err);
    if (r < 0)
        return r;
    r = sandbox_start(&t->sb, t->preload, NULL, fds, err);
    close(fds[0]);
    if (r == 0)
        r = eb_tpl_ready(t, err);
    if (r < 0) {
        eb_tpl_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

static void jail_template_stop(void *state, struct eb_tplproc *t)
{
    (void)state;
    eb_tpl_free(t);
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
                               struct eb_tplproc **ret, struct execbox_error *err)
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
 * interpreter then that it serves cells (lib/core/cells.c). */
static int session_begin(struct eb_box *sb, struct eb_session_link *ret, struct execbox_error *err)
{
    /* The session's pid namespace, which its init (pid 1 there) is in: lib/core/cells.c acts on
     * no process the session names that is not in it (session_member). */
    pid_t init_pid = 0;
    _cleanup_close_ int init_dir = eb_pidfd_procdir(sb->child.pidfd, &init_pid);
    if (init_dir < 0)
        return eb_error_set(err, init_dir, "the session's init: %s", execbox_strerror(init_dir));
    if (fstatat(init_dir, "ns/pid", &sb->pidns, 0) < 0)
        return eb_error_set(err, -errno, "the session's pid namespace: %s",
                            execbox_strerror(-errno));
    /* The kernel names the sender of each message we receive (lib/core/cells.c learns the state's
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
        eb_box_destroy(sb);
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
    eb_reap_exiting(false);
    int r = s->run ? 0 : warm_refuse(j, s->policy, s->lang, s->session != NULL, err);
    if (r < 0)
        return r;
    struct eb_box *sb = NULL;
    if (s->tpl) {
        r = eb_tpl_fork(j, s->tpl, s->policy, s->session != NULL, &sb, err);
    } else {
        sb = malloc(sizeof(*sb));
        if (!sb)
            return eb_error_set(err, -ENOMEM, "out of memory");
        eb_box_init(sb, j, s->policy, s->lang);
        sb->session = s->session != NULL;
        sb->cold = s->run != NULL;
        r = sandbox_start(sb, s->run ? NULL : s->preload, s->run, NULL, err);
    }
    if (r == 0 && s->tpl && s->policy->network == EXECBOX_NETWORK_ALLOW)
        /* network "allow": the proxy's listener is made in the fork's own network namespace
         * (the helper made it; joined through its init's pidfd) before the guest can get its
         * code; the proxy enforces this run's policy. (A sandbox started from nothing gets its
         * proxy in sandbox_start.) */
        r = eb_proxy_run(j->userns.root_mode, &sb->policy, sb->child.pidfd, &(int){-1}, &sb->proxy,
                         err);
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
    eb_box_files(sb, &st, 0, &ret->files_tmp, &ret->files_ws);
    ret->cap = sb->policy.memory;
}

static void jail_session_kill(struct eb_box *sb)
{
    eb_box_kill_all(&sb->k);
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

static void jail_resource_stats(void *state, struct execbox_pool_stats *ret)
{
    struct jail *j = state;
    if (j && j->cg_spares)
        eb_cgroup_spares_count(j->cg_spares, &ret->cgroups_kept, &ret->cgroups_reused);
}

const struct eb_backend_ops eb_backend_jail = {
    .name = "jail",
    .probe = eb_jail_probe,
    .probe_open = eb_jail_probe_open,
    .open = jail_open,
    .close = jail_close,
    .start = jail_start,
    .deliver = jail_deliver,
    .wait = jail_wait,
    .destroy = jail_destroy,
    .warm = true,
    .template_start = jail_template_start,
    .template_stop = jail_template_stop,
    .template_alive = eb_tpl_alive,
    .template_memory = eb_tpl_memory,
    .resource_stats = jail_resource_stats,
    .network_allow = true,
    .check_network = eb_jail_check_network,
    .input_files = true,
    .session_stats = jail_session_stats,
    .session_kill = jail_session_kill,
    .session_member = jail_session_member,
};
