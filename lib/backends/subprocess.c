/* SPDX-License-Identifier: MIT */
/*
 * subprocess.c - the `subprocess` backend: a child process with rlimits in its own session,
 * sharing the host. For TRUSTED code only: it isolates nothing (no filesystem, network or
 * process walls); it exists for development and for hosts where nothing else runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../backend.h"
#include "../error.h"
#include "../proc.h"
#include "../util.h"
#include "../workspace.h"

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
    char tmp[EXECBOX_PATH_MAX];       /* TMPDIR */
    char workspace[EXECBOX_PATH_MAX]; /* cwd and HOME */
};

static int make_paths(const struct eb_run *run, struct run_paths *p, struct execbox_error *err)
{
    int r = eb_mkdtemp("run", p->dir, err);
    if (r < 0)
        return r;
    if (snprintf(p->code, sizeof(p->code), "%s/%s", p->dir, run->lang->filename) >=
            (int)sizeof(p->code) ||
        snprintf(p->tmp, sizeof(p->tmp), "%s/tmp", p->dir) >= (int)sizeof(p->tmp))
        return eb_error_set(err, -ENAMETOOLONG, "temp path too long");
    if (mkdir(p->tmp, 0700) < 0)
        return eb_error_set(err, -errno, "mkdir '%s': %s", p->tmp, execbox_strerror(-errno));
    r = eb_write_file(p->code, run->code, run->code_len, 0400);
    if (r < 0)
        return eb_error_set(err, r, "write the program: %s", execbox_strerror(r));
    if (run->policy->workspace[0]) {
        struct stat st;
        if (stat(run->policy->workspace, &st) < 0 || !S_ISDIR(st.st_mode))
            return eb_error_set(err, -ENOTDIR, "workspace '%s' is not a directory",
                                run->policy->workspace);
        memcpy(p->workspace, run->policy->workspace, sizeof(p->workspace));
    } else {
        snprintf(p->workspace, sizeof(p->workspace), "%s/workspace", p->dir);
        if (mkdir(p->workspace, 0700) < 0)
            return eb_error_set(err, -errno, "mkdir workspace: %s", execbox_strerror(-errno));
    }
    return 0;
}

static int run(void *state, const struct eb_run *run, struct execbox_result *res,
               struct execbox_error *err)
{
    (void)state;
    const struct execbox_policy *pol = run->policy;
    struct run_paths paths;
    memset(&paths, 0, sizeof(paths));
    struct eb_env env;
    struct eb_child child;
    eb_child_init(&child);
    int fds[8] = {-1, -1, -1, -1, -1, -1, -1, -1}; /* out r/w, err r/w, status r/w, ctl r/w */
    _cleanup_close_ int in_fd = -1;
    int r = make_paths(run, &paths, err);
    if (r < 0)
        goto out;
    r = eb_env_build(&env, paths.workspace, paths.tmp, pol->cpus);
    if (r < 0) {
        eb_error_set(err, r, "environment too large");
        goto out;
    }
    char *argv[8];
    size_t argc = 0;
    argv[argc++] = (char *)run->lang->interpreter;
    for (size_t i = 0; run->lang->args[i] && argc < 6; i++)
        argv[argc++] = (char *)run->lang->args[i];
    argv[argc++] = paths.code;
    argv[argc] = NULL;

    in_fd = eb_stdin_fd(run->req->stdin_data, run->req->stdin_len, err);
    if (in_fd < 0) {
        r = in_fd;
        goto out;
    }
    for (int i = 0; i < 8; i += 2)
        if (pipe2(&fds[i], O_CLOEXEC) < 0) {
            r = eb_error_set(err, -errno, "pipe: %s", execbox_strerror(-errno));
            goto out;
        }
    struct eb_guest guest = {
        .stdin_fd = in_fd,
        .stdout_fd = fds[1],
        .stderr_fd = fds[3],
        .status_fd = fds[5],
        .cwd = paths.workspace,
        .path = run->lang->interpreter,
        .argv = argv,
        .envp = env.envp,
        .memory_rlimit = run->lang->memory_rlimit,
        .memory = pol->memory,
        .file_size = pol->file_size,
        .cpu_seconds = (uint64_t)ceil(pol->timeout * pol->cpus) + 1,
    };
    struct eb_init init = {.status_fd = fds[5], .ctl_fd = fds[6], .guest = &guest};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        r = eb_error_set(err, -errno, "fork: %s", execbox_strerror(-errno));
        goto out;
    }
    if (pid == 0) {
        /* init: a new session so the whole tree is one process group we can kill; dies with
         * us; a subreaper so double-forked daemons come back to it and are killed too. */
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        close(fds[0]);
        close(fds[2]);
        close(fds[4]);
        close(fds[7]);
        eb_init_main(&init);
    }
    child.pid = pid;
    child.kill_pgid = pid;
    child.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    child.out_fd = TAKE_FD(fds[0]);
    child.err_fd = TAKE_FD(fds[2]);
    child.status_fd = TAKE_FD(fds[4]);
    child.ctl_fd = TAKE_FD(fds[7]);
    for (int i = 0; i < 8; i++)
        eb_close(&fds[i]);
    eb_close(&in_fd);
    if (child.pidfd < 0) {
        r = eb_error_set(err, -errno, "pidfd_open: %s", execbox_strerror(-errno));
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto out;
    }
    struct eb_outcome oc;
    r = eb_supervise(&child, run->req, pol, run->start_ns, res, &oc, err);
    if (r == 0)
        r = eb_outcome_to_result(&oc, pol, res);
    if (r == 0) {
        _cleanup_close_ int wfd =
            open(paths.workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (wfd >= 0)
            r = eb_workspace_list(wfd, run->req->inline_files_max, res);
    }
out:
    for (int i = 0; i < 8; i++)
        eb_close(&fds[i]);
    eb_child_close(&child);
    if (paths.dir[0])
        eb_rm_rf(paths.dir);
    return r;
}

const struct eb_backend_ops eb_backend_subprocess = {
    .name = "subprocess",
    .probe = probe,
    .run = run,
};
