/* SPDX-License-Identifier: MIT */
/* lifecycle.h - a backend's sandboxes as the core starts and destroys them: cold, or forked from
 * the template of their (policy, language, preload). The executor owns one lifecycle; the pool,
 * sessions and the run pipeline borrow it. */
#ifndef EB_LIFECYCLE_H
#define EB_LIFECYCLE_H

#include <stdbool.h>

#include "backends/backend.h"

struct eb_templates;

/* What starting and destroying sandboxes needs: the backend and its state, the templates (NULL
 * without), what warm sandboxes import ahead, and the walls the backend runs without. */
struct eb_lifecycle {
    const struct eb_backend_ops *ops;
    void *state;
    struct eb_templates *tpls;          /* NULL without templates */
    char preload[256];                  /* pool_preload: what sessions import ahead too */
    const struct execbox_check *report; /* the backend's probe, for the degraded walls */
    bool degraded;                      /* allow_degraded let a required wall be missing */
};

/* A lease: a backend's sandbox (box) as the core holds it, with the reference to the template
 * it was forked from, which the lease keeps until it ends. */
struct eb_lease {
    struct eb_box *box;
    struct eb_template *tpl;
    /* Set when a start failed because the backend can never make this kind of start for this
     * policy (a warm start with a host workspace, say): callers decide on this, not on errno. */
    bool never;
};

/* Starts a sandbox through lc's backend: a warm start (s->run NULL) forks it from the template
 * of (policy, language, preload) when the backend and the language have templates and lc keeps
 * them, and starts without one when there can be none for it here. 0, or -errno with err set
 * (and ret->never as above). */
int eb_lease_start(const struct eb_lifecycle *lc, const struct eb_start *s, struct eb_lease *ret,
                   struct execbox_error *err);

/* A warm start (s->run NULL) forked from the live template of (policy, language, preload), never
 * one started for it: -ENOENT (err set) when none is live, else as eb_lease_start. For a run
 * that found no warm sandbox ready: a fork now costs a few ms, a template start the preload's
 * imports, a cold start an interpreter's. */
int eb_lease_fork(const struct eb_lifecycle *lc, const struct eb_start *s, struct eb_lease *ret,
                  struct execbox_error *err);

/* Ends a lease: destroys its sandbox (lease->box NULL: none) and drops its template reference. */
void eb_lease_end(const struct eb_lifecycle *lc, struct eb_lease *lease);

/* Names in res the required walls lc's backend runs without (allow_degraded): 0 or -ENOMEM. */
int eb_lifecycle_add_degraded(const struct eb_lifecycle *lc, struct execbox_result *res);

#endif
