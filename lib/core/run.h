/* SPDX-License-Identifier: MIT */
/* run.h - a one-shot run through the pipeline (pipeline.h): prepare, acquire (a pooled sandbox,
 * a template's fork, a cold start; with rich results a session's state), deliver, wait,
 * finish. */
#ifndef EB_RUN_H
#define EB_RUN_H

#include "core/lifecycle.h"

struct eb_pool;

/* execbox_executor_run's contract, with the executor's lifecycle and pool (NULL: none). */
int eb_run_oneshot(const struct eb_lifecycle *lc, struct eb_pool *pool,
                   const struct execbox_request *req, struct execbox_result **ret,
                   struct execbox_error *err);

#endif
