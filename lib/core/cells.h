/* SPDX-License-Identifier: MIT */
/* cells.h - a sandbox that serves cells (lib/lang/python_session.py): started, one cell at a time
 * delivered and waited for (the pipeline's deliver and wait for cells), ended. A session keeps one
 * across its calls (session.c); a one-shot run with rich results starts one for its one cell
 * (run.c). Not thread-safe for two cells at once: the caller runs one at a time. */
#ifndef EB_CELLS_H
#define EB_CELLS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "core/lifecycle.h"
#include "core/pipeline.h"

struct eb_cellbox {
    const struct eb_lifecycle *lc; /* borrowed */
    struct eb_lease sbx;
    struct eb_session_link link;
    bool rollback; /* a failed cell leaves the state as it was (else an error is kept too) */
    bool oom_adj;  /* we may set oom_score_adj (root) */
    atomic_bool killed;
    pthread_mutex_t lock; /* what follows; the rest is the caller's */
    bool ended;
    int state_pidfd;
    int old_state_pidfd; /* the state before the last kept cell, until it is seen gone */
    uint64_t count;      /* cells delivered */
};

/* Starts a sandbox serving cells through lc (a template's fork, or warm from nothing) under
 * policy (resolved) for lang, and waits until its interpreter is ready. 0, or -errno with err set
 * (ret->sbx.never as for eb_lease_start); eb_cellbox_close(ret) is due either way. */
int eb_cellbox_start(const struct eb_lifecycle *lc, const struct execbox_policy *policy,
                     const struct eb_language *lang, bool rollback, struct eb_cellbox *ret,
                     struct execbox_error *err);

/* Delivers a prepared cell (its input files already placed) and waits for its end, mapped into
 * res (eb_wait_to_result, then its rich outputs; res->rolled_back set). 0; -ENOMEM with err set;
 * any other -errno: the sandbox failed (serr says how), for eb_finish to report. A sandbox that
 * can no longer be trusted is ended (eb_cellbox_end). */
int eb_cellbox_run(struct eb_cellbox *cb, const struct execbox_request *req,
                   const struct eb_prepared *p, struct execbox_result *res,
                   struct execbox_error *serr, struct execbox_error *err);

/* Ends it now (thread-safe, idempotent): everything in its sandbox is killed. killed marks it
 * ended by a cancel, so a running cell reports as cancelled. */
void eb_cellbox_end(struct eb_cellbox *cb, bool killed);

/* Whether it was ended, and whether its state process still lives (thread-safe). */
bool eb_cellbox_ended(struct eb_cellbox *cb);
bool eb_cellbox_state_alive(struct eb_cellbox *cb);

/* Waits (at most 1 s) until the state before the last kept cell has exited, so that the memory
 * read next is the new state's alone. */
void eb_cellbox_wait_old_state(struct eb_cellbox *cb);

/* Destroys the sandbox and closes what cb holds; cb may be one whose start failed. */
void eb_cellbox_close(struct eb_cellbox *cb);

#endif
