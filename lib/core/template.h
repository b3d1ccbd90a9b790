/* SPDX-License-Identifier: MIT */
/* template.h - the executor's templates: per (policy, language, preload) one live template of the
 * backend's, forked from for each warm start, replaced after a bounded generation. */
#ifndef EB_TEMPLATE_H
#define EB_TEMPLATE_H

#include "backends/backend.h"

struct eb_templates;
struct eb_template; /* one generation: the backend's template and our bookkeeping */

/* A registry over a backend with template ops; max_runs/max_age bound each generation (0:
 * the defaults, 1000 runs and 600 s). */
int eb_templates_new(const struct eb_backend_ops *ops, void *state, unsigned max_runs,
                     double max_age, struct eb_templates **ret, struct execbox_error *err);

/* Stops every template: each one whose sandboxes are all destroyed at once, the others with
 * their last one. Every eb_template_release must still come. Accepts NULL. */
void eb_templates_free(struct eb_templates *ts);

/* A reference to the live template for the key, counted as one run: the listed one, or one
 * started now when there is none, it died, or its generation is over (the old one is retired:
 * it forks no more and ends with its last sandbox). The first acquire in the last quarter of a
 * generation starts its successor and returns that, the old one retired; eb_template_find goes
 * on finding the old one meanwhile. NULL with err set when none can be had, and
 * *ret_none set when none can ever be had for this policy and language here (the backend's
 * template start refused the kind, not a failure of this one). */
struct eb_template *eb_template_acquire(struct eb_templates *ts,
                                        const struct execbox_policy *policy,
                                        const struct eb_language *lang, const char *preload,
                                        bool *ret_none, struct execbox_error *err);

/* eb_template_acquire's reference to the listed template for the key, when one is live and its
 * generation not over; NULL otherwise. Never starts one (that takes as long as the preload's
 * imports): for a run that would rather go cold than wait. */
struct eb_template *eb_template_find(struct eb_templates *ts, const struct execbox_policy *policy,
                                     const struct eb_language *lang, const char *preload);

/* The backend's template to fork from. */
struct eb_tplproc *eb_template_box(struct eb_template *t);

/* Retires t now (it failed to fork, or is out of step): later acquires start another. */
void eb_template_retire(struct eb_templates *ts, struct eb_template *t);

/* Drops a reference (after the sandbox forked from it is destroyed, or the fork failed). */
void eb_template_release(struct eb_templates *ts, struct eb_template *t);

/* Fills the template fields of the pool's counters. */
void eb_templates_stats(struct eb_templates *ts, struct execbox_pool_stats *ret);

#endif
