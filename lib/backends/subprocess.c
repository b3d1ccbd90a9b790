/* SPDX-License-Identifier: MIT */
/*
 * subprocess.c - the `subprocess` backend: a child process with rlimits in its own session,
 * sharing the host. For TRUSTED code only: it isolates nothing (no filesystem, network or
 * process walls); it exists for development and for hosts where nothing else runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"
#include "proc/childlib.h"
#include "proc/proc.h"
#include "ws/workspace.h"
#include "ws/wsfile.h"

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    (void)o;
    c->usable = true;
    snprintf(c->tier, sizeof(c->tier), "none: trusted code only (shares the host)");
    eb_check_add(c, "process group", true, false, "own session; the whole tree is killed");
    eb_check_add(c, "rlimits", true, false, "CPU, address space, file size, open files, no core");
    eb_check_add(c, "filesystem", false, false, "none: the code sees and can change the host");
    eb_check_add(c, "network", false, false, "none: the code has the host's network");
    eb_check_add(c, "memory cap", true, false, "RLIMIT_AS/RLIMIT_DATA only, no OOM accounting");
    return 0;
}

struct run_paths {
    char dir[EXECBOX_PATH_MAX];       /* private run dir, removed after */
    char code[EXECBOX_PATH_MAX];      /* the program file */
    char in[EXECBOX_PATH_MAX];        /* a warm start's stdin file */
    char tmp[EXECBOX_PATH_MAX];       /* TMPDIR */
    char workspace[EXECBOX_PATH_MAX]; /* cwd and HOME */
};

/* A started sandbox: cold (the program is already in place) or warm (waiting on go_fd). */
struct eb_box {
    struct run_paths paths;
    struct eb_child child;
    int go_fd; /* warm: write end of the guest's fd 3 */
    bool cold; /* started with its run: the program is in place and running */
};

static int make_paths(const struct execbox_policy *pol, const struct eb_language *lang,
                      struct run_paths *p, struct execbox_error *err)
{
    int r = eb_mkdtemp("run", p->dir, err);
    if (r < 0)
        return r;
    if (snprintf(p->code, sizeof(p->code), "%s/%s", p->dir, lang->filename) >=
            (int)sizeof(p->code) ||
        snprintf(p->in, sizeof(p->in), "%s/stdin", p->dir) >= (int)sizeof(p->in) ||
        snprintf(p->tmp, sizeof(p->tmp), "%s/tmp", p->dir) >= (int)sizeof(p->tmp))
        return eb_error_set(err, -ENAMETOOLONG, "temp path too long");
    if (mkdir(p->tmp, 0700) < 0)
        return eb_error_set(err, -errno, "mkdir '%s': %s", p->tmp, execbox_strerror(-errno));
    if (pol->workspace[0]) {
        struct stat st;
        if (stat(pol->workspace, &st) < 0 || !S_ISDIR(st.st_mode))
            return eb_error_set(err, -ENOTDIR, "workspace '%s' is not a directory", pol->workspace);
        memcpy(p->workspace, pol->workspace, sizeof(p->workspace));
    } else {
        snprintf(p->workspace, sizeof(p->workspace), "%s/workspace", p->dir);
        if (mkdir(p->workspace, 0700) < 0)
            return eb_error_set(err, -errno, "mkdir workspace: %s", execbox_strerror(-errno));
    }
    return 0;
}

static void sandbox_init(struct eb_box *sb)
{
    memset(sb, 0, sizeof(*sb));
    eb_child_init(&sb->child);
    sb->go_fd = -1;
}

/* Kills whatever is still running, reaps init and removes the run dir. */
static void sandbox_destroy(struct eb_box *sb)
{
    if (sb->child.pid > 0) {
        if (sb->child.pidfd >= 0)
            syscall(SYS_pidfd_send_signal, sb->child.pidfd, SIGKILL, NULL, 0);
        kill(-sb->child.pid, SIGKILL);
        waitpid(sb->child.pid, NULL, 0);
        sb->child.pid = -1;
    }
    eb_close(&sb->go_fd);
    eb_child_close(&sb->child);
    if (sb->paths.dir[0])
        eb_rm_rf(sb->paths.dir);
    sb->paths.dir[0] = '\0';
}

/* True when we may set a niceness back to 0 after raising it (root, or RLIMIT_NICE). */
static bool can_renice(void)
{
    struct rlimit rl;
    return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20);
}

/* Starts init and the guest. Cold (preload NULL): the program run->code is written first and
 * the interpreter runs it with run's stdin. Warm: the interpreter runs lang->warm_bootstrap,
 * which imports preload and waits on fd 3. */
static int sandbox_start(const struct execbox_policy *pol, const struct eb_language *lang,
                         const char *preload, const struct eb_run *run, struct eb_box *sb,
                         struct execbox_error *err)
{
    bool warm = preload != NULL;
    struct eb_env env;
    int fds[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}; /* out, err, status, ctl, go */
    _cleanup_close_ int in_fd = -1;
    int r = make_paths(pol, lang, &sb->paths, err);
    if (r == 0 && !warm && run)
        r = eb_input_files_place_at(sb->paths.workspace, run->req, pol, err);
    if (r < 0)
        goto out;
    r = eb_env_build(&env, sb->paths.workspace, sb->paths.tmp, pol->cpus);
    if (r < 0) {
        eb_error_set(err, r, "environment too large");
        goto out;
    }
    char *argv[12];
    size_t argc = 0;
    argv[argc++] = (char *)lang->interpreter;
    for (size_t i = 0; lang->args[i] && argc < 6; i++)
        argv[argc++] = (char *)lang->args[i];
    if (warm) {
        argv[argc++] = (char *)"-c";
        argv[argc++] = (char *)lang->warm_bootstrap;
        argv[argc++] = sb->paths.code;
        argv[argc++] = sb->paths.in;
        argv[argc++] = (char *)preload;
    } else {
        r = eb_write_file(sb->paths.code, run->code, run->code_len, 0400);
        if (r < 0) {
            eb_error_set(err, r, "write the program: %s", execbox_strerror(r));
            goto out;
        }
        argv[argc++] = sb->paths.code;
    }
    argv[argc] = NULL;

    in_fd = eb_stdin_fd(warm ? NULL : run->req->stdin_data, warm ? 0 : run->req->stdin_len, err);
    if (in_fd < 0) {
        r = in_fd;
        goto out;
    }
    for (int i = 0; i < (warm ? 10 : 8); i += 2)
        if (pipe2(&fds[i], O_CLOEXEC) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    struct eb_guest guest = {
        .stdin_fd = in_fd,
        .stdout_fd = fds[1],
        .stderr_fd = fds[3],
        .status_fd = fds[5],
        .pass_fds = {fds[8]},
        .n_pass = warm ? 1 : 0,
        .cwd = sb->paths.workspace,
        .path = lang->interpreter,
        .argv = argv,
        .envp = env.envp,
        .memory_rlimit = lang->memory_rlimit,
        .memory = pol->memory,
        .file_size = pol->file_size,
        /* A warm interpreter spent CPU on its imports before the run: give that back. */
        .cpu_seconds = (uint64_t)ceil(pol->timeout * pol->cpus) + (warm ? 10 : 1),
    };
    struct eb_init init = {.status_fd = fds[5], .ctl_fd = fds[6], .guest = &guest};
    /* A warm sandbox waits at low CPU priority so that starting it never slows a run that is
     * going on; warm_run restores normal priority, which needs the right to lower niceness. */
    bool nice_warm = warm && can_renice();
    int pidfd = -1;
    pid_t pid = eb_fork_subreaper_init(&init, nice_warm ? 10 : 0, &pidfd, err);
    if (pid < 0) {
        r = pid;
        goto out;
    }
    sb->child.pid = pid;
    sb->child.kill_pgid = pid;
    sb->child.pidfd = pidfd;
    sb->child.out_fd = TAKE_FD(fds[0]);
    sb->child.err_fd = TAKE_FD(fds[2]);
    sb->child.status_fd = TAKE_FD(fds[4]);
    sb->child.ctl_fd = TAKE_FD(fds[7]);
    sb->go_fd = TAKE_FD(fds[9]);
    r = 0;
out:
    for (int i = 0; i < 10; i++)
        eb_close(&fds[i]);
    return r;
}

/* Supervises a started sandbox to the end: the output into res, the outcome, the workspace. */
static int sub_wait(void *state, struct eb_box *sb, const struct eb_run *run,
                    struct execbox_result *res, struct eb_wait *w, struct execbox_error *err)
{
    (void)state;
    int r = eb_supervise(&sb->child, run->req, run->policy, run->start_ns, res, &w->oc, err);
    sb->child.pid = -1; /* reaped by eb_supervise */
    w->ws_fd = open(sb->paths.workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    return r;
}

static void sub_destroy(void *state, struct eb_box *sb)
{
    (void)state;
    if (sb) {
        sandbox_destroy(sb);
        free(sb);
    }
}

/* Cold: the sandbox made around its run, which starts at once; warm: the interpreter imports
 * the preload and waits for its code. */
static int sub_start(void *state, const struct eb_start *s, struct eb_box **ret,
                     struct execbox_error *err)
{
    if (!s->run && !s->lang->warm_bootstrap)
        return eb_error_set(err, -ENOTSUP, "%s cannot start warm", s->lang->name);
    if (s->session)
        return eb_error_set(err, -ENOTSUP, "the subprocess backend has no sessions");
    struct eb_box *sb = malloc(sizeof(*sb));
    if (!sb)
        return eb_error_set(err, -ENOMEM, "out of memory");
    sandbox_init(sb);
    sb->cold = s->run != NULL;
    int r = sandbox_start(s->policy, s->lang, s->run ? NULL : s->preload, s->run, sb, err);
    if (r < 0) {
        sub_destroy(state, sb);
        return r;
    }
    *ret = sb;
    return 0;
}

/* Warm: the program and stdin into the run's directory, the input files, normal priority
 * again, the go byte; cold: it is running already. */
static int sub_deliver(void *state, struct eb_box *sb, const struct eb_run *run,
                       struct execbox_error *err)
{
    (void)state;
    if (sb->cold)
        return 0;
    _cleanup_close_ int dirfd = open(sb->paths.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int r = dirfd < 0 ? eb_error_set(err, -errno, "open the run dir: %s", execbox_strerror(-errno))
                      : eb_warm_deliver(dirfd, run->lang->filename, run->code, run->code_len,
                                        run->req->stdin_data, run->req->stdin_len, err);
    if (r == 0)
        r = eb_input_files_place_at(sb->paths.workspace, run->req, run->policy, err);
    /* Back to normal priority before the code runs (the whole process group: init and guest). */
    if (r == 0 && can_renice())
        setpriority(PRIO_PGRP, sb->child.pid, 0);
    if (r == 0)
        r = eb_warm_go(&sb->go_fd, err);
    return r;
}

const struct eb_backend_ops eb_backend_subprocess = {
    .name = "subprocess",
    .probe = probe,
    .start = sub_start,
    .deliver = sub_deliver,
    .wait = sub_wait,
    .destroy = sub_destroy,
    .warm = true,
    .input_files = true,
};
