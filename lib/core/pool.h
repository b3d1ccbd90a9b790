/* SPDX-License-Identifier: MIT */
/* pool.h - warm sandboxes kept ready per (policy, language), each serving exactly one run. */
#ifndef EB_POOL_H
#define EB_POOL_H

#include "core/lifecycle.h"

struct eb_pool;

/* Starts a pool of warm sandboxes of lc's backend (lc is borrowed for the pool's life).
 * Background threads (one per core, at most 4 and at most the pool size) fill it through
 * eb_lease_start. */
int eb_pool_new(const struct eb_lifecycle *lc, const struct execbox_executor_options *o,
                struct eb_pool **ret, struct execbox_error *err);

/* Stops the thread and destroys every warm sandbox. Accepts NULL. */
void eb_pool_free(struct eb_pool *p);

/* A ready sandbox for (policy, lang) in *ret (true), or false (the caller runs cold). Either way
 * the pair is marked wanted, so the pool keeps it filled until it goes unused for the idle time. */
bool eb_pool_take(struct eb_pool *p, const struct execbox_policy *policy,
                  const struct eb_language *lang, struct eb_lease *ret);

/* For a run eb_pool_take found nothing ready for: a warm sandbox forked now from the live
 * template of (policy, lang) and the pool's preload, in *ret (true, counted as forked), or false
 * when there is no live template (the caller runs cold; none is started for it). */
bool eb_pool_fork(struct eb_pool *p, const struct execbox_policy *policy,
                  const struct eb_language *lang, struct eb_lease *ret);

/* Brackets a run of the executor, whatever sandbox it gets, or a cell of one of its sessions (p
 * may be NULL: nothing). While runs are in flight, and for a moment after the last one ends, a pair
 * with at least half its sandboxes ready waits to refill, so that its forks do not take CPU from
 * the runs' paths. */
void eb_pool_run_begin(struct eb_pool *p);
void eb_pool_run_end(struct eb_pool *p);

/* Marks the pair wanted now. */
int eb_pool_prewarm(struct eb_pool *p, const struct execbox_policy *policy,
                    const struct eb_language *lang, struct execbox_error *err);

void eb_pool_stats(struct eb_pool *p, struct execbox_pool_stats *ret);

#endif
