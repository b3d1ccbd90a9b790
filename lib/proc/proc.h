/* SPDX-License-Identifier: MIT */
/* proc.h - the process side of every local backend: a sandbox "init" that starts the guest,
 * reaps everything and kills all on request, the guest's last steps before exec, and the
 * parent's supervision loop (output caps, deadline, cancellation, kill, reap). How a run ended,
 * and its mapping into the result, is outcome.h.
 *
 * Shape of a run:  parent --fork/clone--> init --fork--> guest --exec--> interpreter
 *   - init is a child subreaper (subprocess) or pid 1 of a new pid namespace (jail); when the
 *     guest exits, or the parent asks, it kills every descendant, reaps them and reports.
 *   - messages go to the parent on the status pipe, each one write() of < PIPE_BUF (atomic).
 */
#ifndef EB_PROC_H
#define EB_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "execbox/execbox.h"
#include "proc/outcome.h"

enum eb_msg_type {
    EB_MSG_ERROR = 'E', /* setup failed before exec: err says why */
    EB_MSG_EXIT = 'X',  /* the guest ended: status, and the CPU and memory of its whole tree */
    EB_MSG_KEPT = 'K',  /* a session's cell ended with status and its process is the new state */
    /* a template run's program ended with status, and every process of the sandbox is stopped
     * or killed: nothing can write to its output any more (what is in the pipes is all there
     * is), but they may still be exiting in its cgroup (eb_init_loop_done) */
    EB_MSG_DONE = 'D',
};

struct eb_msg {
    int type;
    int status;       /* X: wait status of the guest */
    int64_t utime_us; /* X: user CPU of everything init reaped */
    int64_t stime_us;
    int64_t maxrss_kb;        /* X: largest resident set among them */
    uint64_t tmp_bytes;       /* X, D: what the sandbox's /tmp and /dev/shm held then (jail) */
    struct execbox_error err; /* E */
};

#define EB_PASS_FDS_MAX 6

/* What the guest does between fork and exec. Everything here is prepared by the parent;
 * the child only makes async-signal-safe calls. */
struct eb_guest {
    int stdin_fd;  /* becomes fd 0 */
    int stdout_fd; /* becomes fd 1 */
    int stderr_fd; /* becomes fd 2 */
    int status_fd; /* an exec failure is reported here (closed by exec) */
    /* fds the guest gets as its 3, 4, ... in this order (a warm start's go pipe; a template's
     * socket and programs); at most EB_PASS_FDS_MAX. */
    int pass_fds[EB_PASS_FDS_MAX];
    int n_pass;
    const char *cwd;  /* chdir target */
    const char *path; /* interpreter */
    char *const *argv;
    char *const *envp;
    int memory_rlimit; /* RLIMIT_AS or RLIMIT_DATA capped at memory, -1 for none */
    uint64_t memory, file_size;
    uint64_t cpu_seconds; /* RLIMIT_CPU; 0 = none */
    /* Last step before exec (the jail loads seccomp here). 0 or -errno with err set. */
    int (*pre_exec)(void *arg, struct execbox_error *err);
    void *pre_exec_arg;
};

/* Runs in the guest process: never returns. Sends EB_MSG_ERROR and _exit(127) on failure. */
__attribute__((noreturn)) void eb_guest_exec(const struct eb_guest *g);

struct eb_init {
    int status_fd; /* write end of the status pipe */
    int ctl_fd;    /* read end: a byte or EOF means "kill everything now" */
    const struct eb_guest *guest;
    int (*guest_setup)(void *arg, struct execbox_error *err); /* in the guest, before exec */
    void *guest_setup_arg;
    /* Host-side cgroup.procs files init moves itself to once the sandbox is empty (see
     * eb_init_loop_leave); init keeps them, the guest closes them before anything else. */
    const int *leave_fds;
    int n_leave;
    /* A template: a spare child takes the guest's usual pid first (it exits at once), so the
     * template's interpreter never has the pid its forks' guests get (see tpl_helper.c). */
    bool spare_pid;
};

#define EB_KEEP_FDS_MAX 24
#define EB_LEAVE_FDS_MAX 4 /* one per cgroup v1 hierarchy the jail uses */

/* Closes every fd, the standard ones included, but those in keep (negative entries ignored).
 * More than EB_KEEP_FDS_MAX entries: closes nothing and returns -E2BIG (a caller must fail,
 * never run with fds silently dropped or kept). 0 or -errno. Async-signal-safe. */
int eb_close_all_except(const int *keep, int n);

/* Runs in the sandbox's init process: forks the guest, reaps, kills all when the guest exits
 * or ctl_fd fires, sends EB_MSG_EXIT, then _exit(0). When not pid 1 it must already be a
 * child subreaper. Never returns. */
__attribute__((noreturn)) void eb_init_main(const struct eb_init *in);

/* Forks a sandbox init that shares the host's namespaces (the subprocess and gvisor backends; the
 * jail's init is pid 1 of its own instead): a session of its own, so the whole tree is one
 * process group to kill; dying with us; a child subreaper, so double-forked processes come back
 * to it and die with it. nice > 0 lowers its priority. Then eb_init_main(in), which closes every
 * fd but its own. The init's pid with *ret_pidfd, or -errno with err set. */
pid_t eb_fork_subreaper_init(const struct eb_init *in, int nice, int *ret_pidfd,
                             struct execbox_error *err);

/* Parent's view of a started sandbox. */
struct eb_child {
    pid_t pid;  /* init */
    int pidfd;  /* of init */
    int out_fd; /* read ends */
    int err_fd;
    int status_fd;
    int ctl_fd;      /* write end */
    pid_t kill_pgid; /* > 0: also SIGKILL this process group as a backstop */
    /* init is another process's child (a run forked from a template): its pidfd says when it
     * is gone, and nobody here waits for it. */
    bool not_ours;
    /* Backend's own kill (e.g. the cgroup); may be NULL. Called at deadline or cancel. */
    void (*kill_all)(void *ctx);
    void *ctx;
    /* EB_MSG_EXIT and EOF on both streams end the supervision, without waiting for init's own
     * exit (its init left the run's cgroup first, so nothing of the run is still running):
     * init may still be exiting when eb_supervise returns, and then the caller reaps it
     * (outcome.init_running). */
    bool exit_msg_ends;
    /* With exit_msg_ends: once EB_MSG_EXIT (or EB_MSG_KEPT) has arrived, wait at most this long
     * for EOF on the streams (a session's cell may leave a process holding them); 0: no limit. */
    unsigned drain_after_exit_ms;
    /* EB_MSG_DONE is believed: the status pipe's only writer is a template run's init (its
     * guest holds no copy of it). Anywhere else (a session's cell holds its status pipe) the
     * record is ignored, for it ends the run on the word of its sender. */
    bool done_ok;
};

void eb_child_init(struct eb_child *c);
/* Closes the parent's fds of c. */
void eb_child_close(struct eb_child *c);

/* Supervises a started sandbox until everything in it is dead and reaped: drains both output
 * streams into res under the policy's output_limit (calling req->on_output as bytes arrive),
 * enforces the deadline counted from start_ns, watches req->cancel, kills on either, and
 * collects init's report. Closes nothing of c. 0, or -errno for a failure of the supervisor
 * itself (then everything was still killed and reaped). */
int eb_supervise(struct eb_child *c, const struct execbox_request *req,
                 const struct execbox_policy *p, uint64_t start_ns, struct execbox_result *res,
                 struct eb_outcome *out, struct execbox_error *err);

/* Warm starts: writes a run's program as dir/name and its stdin as dir/stdin (a link to
 * /dev/null when in is NULL), both read-only, through dirfd (the backend's way into the
 * waiting sandbox). 0 or -errno with err set. */
int eb_warm_deliver(int dirfd, const char *name, const char *code, size_t code_len, const char *in,
                    size_t in_len, struct execbox_error *err);

/* Sends the go byte on *go_fd and closes it. -EPIPE when the sandbox died before it (nothing
 * ran: the caller may run cold). */
int eb_warm_go(int *go_fd, struct execbox_error *err);

/* A memfd holding data (for stdin), positioned at 0; or /dev/null when data is NULL. */
int eb_stdin_fd(const char *data, size_t len, struct execbox_error *err);

#endif
