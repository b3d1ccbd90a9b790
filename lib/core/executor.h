/* SPDX-License-Identifier: MIT */
/* executor.h - what other parts of the library (sessions) need of an executor. */
#ifndef EB_EXECUTOR_H
#define EB_EXECUTOR_H

#include "backends/backend.h"

/* A sandbox as the executor holds it: the backend's, and the template it was forked from (a
 * reference the executor drops when the sandbox is destroyed). */
struct eb_sandbox {
    struct eb_box *w;
    struct eb_template *tpl;
};

/* Starts a sandbox through ex's backend: a warm start (s->run NULL) forks it from the
 * template of (policy, language, preload) when the backend and the language have templates
 * and the executor keeps them. 0, or -errno with err set. */
int eb_sandbox_start(struct execbox_executor *ex, const struct eb_start *s, struct eb_sandbox *ret,
                     struct execbox_error *err);

/* Destroys a sandbox (sb->w NULL: nothing) and drops its template's reference. */
void eb_sandbox_destroy(struct execbox_executor *ex, struct eb_sandbox *sb);

/* An eb_wait with nothing known yet (counters -1: from the outcome; no workspace). */
void eb_wait_init(struct eb_wait *w);

/* Closes w->ws_fd and frees the interpreter's error strings w holds. */
void eb_wait_release(struct eb_wait *w);

/* How a run ended, made into its result: the one mapping for every run, cold, pooled, forked
 * or a session's cell (exit, deadline, cancel, output flood, set-up failure; the sandbox's own
 * CPU and memory counters over the rusage; the one OOM rule; the files left in /workspace, up
 * to req->inline_files_max bytes each inline, each marked against req's input files; the
 * interpreter's own error when nothing else was). Releases w (eb_wait_release). 0 or -ENOMEM. */
int eb_wait_to_result(const struct execbox_policy *policy, const struct execbox_request *req,
                      struct eb_wait *w, struct execbox_result *res);

/* One cold run straight through a backend's lifecycle (start with the run, deliver, wait, the
 * executor's mapping, destroy), without an executor: for tests of a backend. Same contract as
 * run_sandbox's caller: 0 with res filled, or -errno when the sandbox failed. */
int eb_backend_run_cold(const struct eb_backend_ops *ops, void *state, const struct eb_run *run,
                        struct execbox_result *res, struct execbox_error *err);

/* The executor's backend, its state and the preload its warm sandboxes import (borrowed). */
void eb_executor_parts(struct execbox_executor *ex, const struct eb_backend_ops **ret_ops,
                       void **ret_state, const char **ret_preload);

/* The request's code length (code_len, or strlen), checked with its stdin against
 * EXECBOX_CODE_MAX and EXECBOX_STDIN_MAX: 0, or -E2BIG with err set. */
int eb_request_sizes(const struct execbox_request *req, size_t *ret_code_len,
                     struct execbox_error *err);

/* Names in res the walls this executor runs without (allow_degraded). */
int eb_executor_add_degraded(const struct execbox_executor *ex, struct execbox_result *res);

/* A one-shot run with rich results (execbox_request.rich_results): a session of one cell,
 * started, run and freed. Same contract as execbox_executor_run; policy is resolved. */
int eb_session_oneshot(struct execbox_executor *ex, const struct execbox_request *req,
                       const struct execbox_policy *policy, struct execbox_result **ret,
                       struct execbox_error *err);

#endif
