/* SPDX-License-Identifier: MIT */
/* backend.h - the backend interface: one static table of operations per backend, found by
 * name in a registry. */
#ifndef EB_BACKEND_H
#define EB_BACKEND_H

#include <stdint.h>

#include "execbox/execbox.h"
#include "model/lang.h"
#include "proc/proc.h"

/* A backend's sandbox (opaque to the executor), and a backend's template: a walled process that
 * sandboxes are forked from. */
struct eb_box;
struct eb_tplproc;

/* One run as the executor hands it to a backend: validated and resolved. */
struct eb_run {
    const struct execbox_request *req;
    const struct execbox_policy *policy; /* every field resolved */
    const struct eb_language *lang;
    const char *code;
    size_t code_len;
    uint64_t start_ns; /* the deadline counts from here */
};

/* The link to a session's sandbox as a backend hands it to lib/core/cells.c: walled, its
 * interpreter serving cells on sock (see lib/lang/python_session.py), its init told that no single
 * process's exit ends it. */
struct eb_session_link {
    int sock;  /* our end of the session's SOCK_SEQPACKET socket, owned by the caller, with
                  SO_PASSCRED on since before the interpreter could send on it */
    int ws_fd; /* the workspace directory, for file calls (the backend's, borrowed) */
    /* SO_PASSPIDFD is on as well (kernel 6.5+): each message comes with a pidfd of the process
     * that sent it (SCM_PIDFD), and a message without one is from a process already gone. Off:
     * only the sender's pid number (SCM_CREDENTIALS), which names whatever process has that
     * number when we look (see session_member). */
    bool pidfd_cmsg;
};

/* What the executor asks a backend's start() for. */
struct eb_start {
    const struct execbox_policy *policy; /* resolved */
    const struct eb_language *lang;
    /* A cold start: the run the sandbox is made for. The backend may place its program, stdin
     * and input files while it builds the sandbox; deliver() then only lets it go. NULL: a warm
     * start, the sandbox made as far as it can be without the code (interpreter up, preload
     * imported), waiting for deliver(). */
    const struct eb_run *run;
    const char *preload;    /* warm: the modules imported ahead ("" none) */
    struct eb_tplproc *tpl; /* warm: fork the sandbox from this template (the executor keeps it
                              alive until the sandbox is destroyed) */
    /* warm, for a session: the sandbox serves cells instead of one program; filled in. */
    struct eb_session_link *session;
};

/* How a run ended, as wait() reports it. The executor alone turns this into the result's
 * exit_code, signal, timed_out, killed_reason, error, cpu_time, peak_memory_bytes, OOM verdict
 * and files (eb_wait_to_result), the same way for every backend. */
struct eb_wait {
    struct eb_outcome oc; /* the exit, deadline, cancel, flood, set-up failure (proc.h) */
    /* The sandbox's own counters for the run (a cgroup's), each better than the rusage in oc:
     * cpu_ns -1 means use oc's rusage, -2 unknown; peak_memory likewise (bytes). */
    int64_t cpu_ns;
    int64_t peak_memory;
    uint64_t oom_kills;  /* OOM kills the sandbox recorded during the run */
    char oom_why[256];   /* what a MemoryLimit message adds ("" nothing) */
    char oom_files[160]; /* its files' share of the cap at the kill (eb_oom_files_detail; "") */
    int ws_fd;         /* the workspace to list for the result (the executor closes it), -1 none */
    bool files_listed; /* the backend listed the files itself (res->files; from inside) */
    /* The exception the guest's interpreter reported as data rather than only as a traceback
     * on stderr (a code interpreter's "error" message): the result's error when the run ended
     * by its exit and the mapping set no other. Owned: the executor frees them. NULL: none. */
    char *error_name, *error_value, *error_traceback;
    /* res is a whole result another executor made (the remote backend): nothing is mapped. */
    bool final;
    /* The sandbox was gone before anything of the run was seen (a warm one lost with its
     * template): nothing ran, so the executor may run the request cold. */
    bool lost;
};

/* A session sandbox's counters (its cgroup's). */
struct eb_box_stats {
    int64_t cpu_ns;                          /* -1 unknown */
    uint64_t memory, peak_memory, oom_kills; /* memory now and the most ever, bytes */
    uint64_t files_tmp; /* what its /tmp and /dev/shm hold now (charged to its memory) */
    uint64_t files_ws;  /* what its fresh /workspace holds now (likewise) */
    uint64_t cap;       /* its memory cgroup's cap (policy.memory), 0 when none */
};

struct eb_backend_ops {
    const char *name;
    /* Fills report (backend name preset) with each wall and whether it works here. Returns 0,
     * or -ENOTSUP when the backend cannot run at all (report.usable false, a wall says why). */
    int (*probe)(const struct execbox_executor_options *o, struct execbox_check *report);
    /* Optional: what an executor's open uses instead of probe(): the same report, possibly
     * from a cache the backend keeps (it must be as trustworthy as a live probe). `execbox
     * check` (execbox_check_backend) always calls probe(). */
    int (*probe_open)(const struct execbox_executor_options *o, struct execbox_check *report);
    /* Prepares per-executor state after a successful probe. */
    int (*open)(const struct execbox_executor_options *o, const struct execbox_check *report,
                void **ret_state, struct execbox_error *err);
    void (*close)(void *state);

    /*
     * The sandbox lifecycle; the executor owns it (lib/core/executor.c): a cold run is start (with
     * the run) -> deliver -> wait -> destroy on the caller's thread; a pooled run takes a sandbox
     * started warm ahead of time (lib/core/pool.c) and does deliver -> wait -> destroy; a
     * template's sandboxes are warm starts forked from a template the executor keeps
     * (lib/core/template.c). All four are thread-safe on one state.
     *
     * start: builds a sandbox for s. 0 with *ret, or -errno with err set (-ENOTSUP: this
     * backend cannot make that kind of start, e.g. warm with a host workspace; the executor
     * then runs cold). Nothing is left behind on failure.
     */
    int (*start)(void *state, const struct eb_start *s, struct eb_box **ret,
                 struct execbox_error *err);
    /* Hands the sandbox the run's program, stdin and input files (what a cold start did not
     * place already) and lets it go: the deadline counts from run->start_ns. -EPIPE: the
     * sandbox was gone before it got the code (nothing ran: the executor may run it cold). */
    int (*deliver)(void *state, struct eb_box *box, const struct eb_run *run,
                   struct execbox_error *err);
    /* Supervises the run to its end: the output into res under the policy's output_limit
     * (calling req->on_output as bytes arrive), the deadline, req->cancel, the kill of
     * everything in the sandbox on either; then fills ret. Sets nothing else of res but
     * execution_time, egress and degraded (the walls the backend does not enforce for this run)
     * (and, with ret->final or ret->files_listed, what those say). 0, or -errno when the
     * sandbox itself failed (the executor makes that a SandboxError result). */
    int (*wait)(void *state, struct eb_box *box, const struct eb_run *run,
                struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err);
    /* Removes the sandbox and everything in it (running or not). Accepts NULL. */
    void (*destroy)(void *state, struct eb_box *box);
    /* start() accepts warm starts (s->run NULL): the executor may keep a pool. Without it the
     * executor never calls start() without a run (eb_lease_start refuses for it). */
    bool warm;

    /* Optional templates (lib/core/template.c): template_start makes one for (policy, language,
     * preload), ready to fork sandboxes from (start with s->tpl); template_stop kills it (the
     * executor calls it once no sandbox of it is left); template_alive says whether it can
     * still fork; template_memory is what it holds (bytes, for /metrics and `execbox check`).
     * template_start's -ENOTSUP means there can never be a template for this policy and language
     * here (the executor then starts without one); any other error is a failure of this start. */
    int (*template_start)(void *state, const struct execbox_policy *policy,
                          const struct eb_language *lang, const char *preload,
                          struct eb_tplproc **ret, struct execbox_error *err);
    void (*template_stop)(void *state, struct eb_tplproc *t);
    bool (*template_alive)(struct eb_tplproc *t);
    uint64_t (*template_memory)(struct eb_tplproc *t);
    /* Optional: the counters of the sandboxes' own resources (ret's cgroups_* fields). */
    void (*resource_stats)(void *state, struct execbox_pool_stats *ret);

    /* Places a request's input files (execbox_request.files) in /workspace before the code
     * runs; without it the executor refuses requests that have some. */
    bool input_files;
    /* Can enforce network "allow" (an allow-list proxy as the only way out). Without it the
     * executor refuses such runs: never silently open, never silently closed. */
    bool network_allow;
    /* Optional, for `execbox check` only (not probed at every open: it may cost a namespace):
     * adds a wall saying whether network "allow" works here. */
    void (*check_network)(struct execbox_check *report);
    /* Optional sessions (lib/core/cells.c; the sandbox is a warm start with s->session):
     * session_stats reads its counters; session_kill kills everything in it now (thread-safe,
     * also while a cell is supervised). */
    void (*session_stats)(struct eb_box *box, struct eb_box_stats *ret);
    void (*session_kill)(struct eb_box *box);
    /* Whether the process pid (as we see it; pinned by the caller: a pidfd still alive after
     * procdir, its /proc directory, was opened) is one of the session's sandbox: in its pid
     * namespace and its cgroup. Nothing is done to a process the session names unless this
     * says so. */
    bool (*session_member)(struct eb_box *box, pid_t pid, int procdir);
};

const struct eb_backend_ops *eb_backend_find(const char *name);

/* Appends a wall to a report (printf-style detail). */
void eb_check_add(struct execbox_check *c, const char *name, bool ok, bool required,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

extern const struct eb_backend_ops eb_backend_subprocess;
extern const struct eb_backend_ops eb_backend_jail;
/* For backends layered on the jail (pyodide): after the jail's open(), before any run, binds
 * the host directory src read-only at dst (relative to the root, e.g. "opt/x") in every run
 * that uses the host's system directories (not a policy rootfs). */
int eb_jail_bind_ro(void *jail_state, const char *src, const char *dst, struct execbox_error *err);
extern const struct eb_backend_ops eb_backend_docker;
extern const struct eb_backend_ops eb_backend_remote;
extern const struct eb_backend_ops eb_backend_e2b;
extern const struct eb_backend_ops eb_backend_pyodide;
extern const struct eb_backend_ops eb_backend_gvisor;
extern const struct eb_backend_ops eb_backend_firecracker;

#endif
