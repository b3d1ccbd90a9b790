/* SPDX-License-Identifier: MIT */
/* pool.h - warm sandboxes kept ready per (policy, language), each serving exactly one run. */
#ifndef EB_POOL_H
#define EB_POOL_H

#include "backend.h"

struct eb_pool;

/* Starts a pool over a backend that has warm ops. Background threads (one per core, at most
 * 4 and at most the pool size) fill it. */
int eb_pool_new(const struct eb_backend_ops *ops, void *state,
                const struct execbox_executor_options *o, struct eb_pool **ret,
                struct execbox_error *err);

/* Stops the thread and destroys every warm sandbox. Accepts NULL. */
void eb_pool_free(struct eb_pool *p);

/* A ready sandbox for (policy, lang), or NULL (the caller runs cold). Either way the pair is
 * marked wanted, so the pool keeps it filled until it goes unused for the idle time. */
struct eb_warm *eb_pool_take(struct eb_pool *p, const struct execbox_policy *policy,
                             const struct eb_language *lang);

/* Marks the pair wanted now. */
int eb_pool_prewarm(struct eb_pool *p, const struct execbox_policy *policy,
                    const struct eb_language *lang, struct execbox_error *err);

void eb_pool_stats(struct eb_pool *p, struct execbox_pool_stats *ret);

/* True when two resolved policies are the same in every field. */
bool eb_policy_equal(const struct execbox_policy *a, const struct execbox_policy *b);

#endif
