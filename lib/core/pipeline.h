/* SPDX-License-Identifier: MIT */
/* pipeline.h - the two ends every run shares, one-shot or a session's cell: prepare (the request
 * checked, its language found, its policy resolved) and finish (the one mapping from how the run
 * ended to its result: outcome, counters, OOM, files, the interpreter's error, SandboxError,
 * degradations). Between them a run acquires a sandbox (pool, template, cold, or one serving
 * cells: a session's, or one started for a rich one-shot), delivers the code and waits:
 * lib/core/run.c for one-shots, lib/core/cells.c for cells. */
#ifndef EB_PIPELINE_H
#define EB_PIPELINE_H

#include "backends/backend.h"
#include "core/lifecycle.h"

/* A run as prepare leaves it: what deliver and wait need beside the request. */
struct eb_prepared {
    const struct eb_language *lang;
    size_t code_len;
    struct execbox_policy policy; /* every field resolved */
    uint64_t start_ns;            /* the deadline counts from here */
};

/* Checks a one-shot request (code present and within EXECBOX_CODE_MAX, stdin within
 * EXECBOX_STDIN_MAX, a known language, input files within the policy) and resolves its policy
 * into *ret. 0, or -EINVAL / -E2BIG / -EPERM with err set. */
int eb_prepare_oneshot(const struct execbox_request *req, struct eb_prepared *ret,
                       struct execbox_error *err);

/* Checks a session's cell the same way: its language must be the session's (lang), and it may
 * ask for less time or output than the session's policy (sess), nothing else (-EPERM,
 * EXECBOX_ERROR_OVER_MAXIMUM with the field named). */
int eb_prepare_cell(const struct execbox_request *req, const struct eb_language *lang,
                    const struct execbox_policy *sess, struct eb_prepared *ret,
                    struct execbox_error *err);

/* The run as a backend sees it. */
struct eb_run eb_prepared_run(const struct execbox_request *req, const struct eb_prepared *p);

/* An eb_wait with nothing known yet (counters -1: from the outcome; no workspace). */
void eb_wait_init(struct eb_wait *w);

/* Closes w->ws_fd and frees the interpreter's error strings w holds. */
void eb_wait_release(struct eb_wait *w);

/* How a run ended, made into its result (the first half of finish): exit, deadline, cancel,
 * output flood, set-up failure; the sandbox's own CPU and memory counters over the rusage; the
 * one OOM rule; the files left in /workspace, up to req->inline_files_max bytes each inline,
 * each marked against req's input files; the interpreter's own error when nothing else was.
 * Releases w (eb_wait_release). 0 or -ENOMEM. */
int eb_wait_to_result(const struct execbox_policy *policy, const struct execbox_request *req,
                      struct eb_wait *w, struct execbox_result *res);

/* The rest of finish, for every run: r < 0 (the sandbox failed; berr says why) becomes the
 * result's SandboxError with the time since start_ns; then the language's parse of the error,
 * and the walls lc runs without. 0, or -ENOMEM with err set (res is the caller's still). */
int eb_finish(const struct eb_lifecycle *lc, const struct eb_language *lang, int r,
              struct execbox_error *berr, uint64_t start_ns, struct execbox_result *res,
              struct execbox_error *err);

/* Delivers the run to a started sandbox and waits for its end, mapped (eb_wait_to_result); the
 * caller destroys the sandbox. *ret_lost (when given) is set when the sandbox was gone before
 * anything ran (deliver's -EPIPE, or wait's lost): the caller may then run the request again. */
int eb_deliver_and_wait(const struct eb_backend_ops *ops, void *state, struct eb_box *box,
                        const struct eb_run *run, struct execbox_result *res, bool *ret_lost,
                        struct execbox_error *err);

/* One cold run straight through a backend's lifecycle (start with the run, deliver, wait, the
 * mapping, destroy), without an executor: for tests of a backend. 0 with res filled, or -errno
 * when the sandbox failed. */
int eb_backend_run_cold(const struct eb_backend_ops *ops, void *state, const struct eb_run *run,
                        struct execbox_result *res, struct execbox_error *err);

#endif
