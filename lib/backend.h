/* SPDX-License-Identifier: MIT */
/* backend.h - the backend interface: one static table of operations per backend, found by
 * name in a registry. */
#ifndef EB_BACKEND_H
#define EB_BACKEND_H

#include <stdint.h>

#include "execbox/execbox.h"
#include "lang.h"

/* A backend's sandbox started ahead of time (opaque to the pool). */
struct eb_warm;

/* One run as the executor hands it to a backend: validated and resolved. */
struct eb_run {
    const struct execbox_request *req;
    const struct execbox_policy *policy; /* every field resolved */
    const struct eb_language *lang;
    const char *code;
    size_t code_len;
    uint64_t start_ns; /* the deadline counts from here */
};

/* A session's sandbox as a backend hands it to lib/session.c: walled, its interpreter serving
 * cells on sock (see lib/lang/python_session.py), its init told that no single process's exit
 * ends it. */
struct eb_session_box {
    struct eb_warm *w; /* the backend's */
    int sock;          /* our end of the session's SOCK_SEQPACKET socket, owned by the caller, with
                          SO_PASSCRED on since before the interpreter could send on it */
    int ws_fd;         /* the workspace directory, for file calls (the backend's, borrowed) */
};

/* A session sandbox's counters (its cgroup's). */
struct eb_box_stats {
    int64_t cpu_ns; /* -1 unknown */
    uint64_t peak_memory, oom_kills;
    uint64_t files; /* what its tmpfs hold now (charged to its memory) */
    uint64_t cap;   /* its memory cgroup's cap, 0 when none */
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
    /* Runs one request; thread-safe on one state. Fills res (output, status, times). Returns
     * 0, or -errno when the sandbox itself failed (the executor turns that into a
     * SandboxError result); everything the run created is gone either way. */
    int (*run)(void *state, const struct eb_run *run, struct execbox_result *res,
               struct execbox_error *err);
    void (*close)(void *state);

    /* Optional warm starts (lib/pool.c). warm_start sets up a whole sandbox for (policy,
     * language, preload) up to the point where the interpreter waits for its code; warm_run
     * hands it one run's code and stdin and supervises it exactly as run() does, deadline from
     * run->start_ns, and always consumes w; warm_discard destroys an unused one. */
    int (*warm_start)(void *state, const struct execbox_policy *policy,
                      const struct eb_language *lang, const char *preload, struct eb_warm **ret,
                      struct execbox_error *err);
    int (*warm_run)(void *state, struct eb_warm *w, const struct eb_run *run,
                    struct execbox_result *res, struct execbox_error *err);
    void (*warm_discard)(void *state, struct eb_warm *w);

    /* Places a request's input files (execbox_request.files) in /workspace before the code
     * runs; without it the executor refuses requests that have some. */
    bool input_files;
    /* Can enforce network "allow" (an allow-list proxy as the only way out). Without it the
     * executor refuses such runs: never silently open, never silently closed. */
    bool network_allow;
    /* Optional, for `execbox check` only (not probed at every open: it may cost a namespace):
     * adds a wall saying whether network "allow" works here. */
    void (*check_network)(struct execbox_check *report);
    /* Optional: fills the template fields of the pool's counters. */
    void (*warm_stats)(void *state, struct execbox_pool_stats *ret);

    /* Optional sessions (lib/session.c): session_start sets up a sandbox for (policy, language,
     * preload) as warm_start does, then turns it into a session's (its interpreter serves cells
     * on ret->sock); session_stats reads its counters; session_kill kills everything in it now
     * (thread-safe, also while a cell is supervised); session_destroy removes it. */
    int (*session_start)(void *state, const struct execbox_policy *policy,
                         const struct eb_language *lang, const char *preload,
                         struct eb_session_box *ret, struct execbox_error *err);
    void (*session_stats)(struct eb_warm *w, struct eb_box_stats *ret);
    void (*session_kill)(struct eb_warm *w);
    void (*session_destroy)(void *state, struct eb_warm *w);
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
