/* SPDX-License-Identifier: MIT */
/* executor.c - the executor: a backend probed and opened, its templates and pool; one-shot runs go
 * through the run pipeline (run.c). */
#include "core/executor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "base/error.h"
#include "core/pool.h"
#include "core/run.h"
#include "core/template.h"
#include "model/lang.h"
#include "model/policy.h"

static const char *backend_name(const struct execbox_executor_options *o)
{
    return o && o->backend && *o->backend ? o->backend : EXECBOX_DEFAULT_BACKEND;
}

int execbox_check_backend(const char *backend, const struct execbox_executor_options *opts,
                          struct execbox_check *ret, struct execbox_error *err)
{
    struct execbox_executor_options o = {0};
    if (opts)
        o = *opts;
    if (backend)
        o.backend = backend;
    const char *name = backend_name(&o);
    const struct eb_backend_ops *ops = eb_backend_find(name);
    if (!ops)
        return eb_error_set(err, -ENOENT, "unknown backend '%s'", name);
    memset(ret, 0, sizeof(*ret));
    snprintf(ret->backend, sizeof(ret->backend), "%s", ops->name);
    ops->probe(&o, ret);
    if (!ret->tier[0]) /* the probe stopped before it could say */
        snprintf(ret->tier, sizeof(ret->tier), "none: this backend cannot run here");
    if (ops->check_network)
        ops->check_network(ret);
    else if (!ops->network_allow)
        eb_check_add(ret, "network allow-list", false, false,
                     "not available: this backend cannot enforce an allow-list, so network "
                     "'allow' is refused (never run open)");
    return 0;
}

int execbox_executor_new(const struct execbox_executor_options *opts, struct execbox_executor **ret,
                         struct execbox_error *err)
{
    struct execbox_executor_options o = {0};
    if (opts)
        o = *opts;
    const char *name = backend_name(&o);
    const struct eb_backend_ops *ops = eb_backend_find(name);
    if (!ops)
        return eb_error_set(err, -ENOENT, "unknown backend '%s' (try: execbox check)", name);
    struct execbox_executor *ex = calloc(1, sizeof(*ex));
    if (!ex)
        return eb_error_set(err, -ENOMEM, "out of memory");
    ex->lc.ops = ops;
    ex->lc.report = &ex->report;
    snprintf(ex->report.backend, sizeof(ex->report.backend), "%s", ops->name);
    (ops->probe_open ? ops->probe_open : ops->probe)(&o, &ex->report);
    if (!ex->report.usable) {
        const char *why = "it cannot run on this machine";
        for (size_t i = 0; i < ex->report.n_walls; i++)
            if (!ex->report.walls[i].ok && ex->report.walls[i].required) {
                why = ex->report.walls[i].detail;
                break;
            }
        eb_error_set(err, -ENOTSUP, "backend '%s' is not usable here: %s", ops->name, why);
        free(ex);
        return -ENOTSUP;
    }
    for (size_t i = 0; i < ex->report.n_walls; i++) {
        const struct execbox_wall *w = &ex->report.walls[i];
        if (w->ok || !w->required)
            continue;
        if (!o.allow_degraded) {
            eb_error_set(err, -ENOTSUP,
                         "backend '%s': wall '%s' is missing (%s); refusing to run untrusted code "
                         "without it (allow_degraded / --allow-degraded overrides)",
                         ops->name, w->name, w->detail);
            free(ex);
            return -ENOTSUP;
        }
        ex->lc.degraded = true;
    }
    snprintf(ex->lc.preload, sizeof(ex->lc.preload), "%s", o.pool_preload ? o.pool_preload : "");
    if (ops->open) {
        int r = ops->open(&o, &ex->report, &ex->lc.state, err);
        if (r < 0) {
            free(ex);
            return r;
        }
    }
    if (ops->template_start && !o.no_templates) {
        int r = eb_templates_new(ops, ex->lc.state, o.template_max_runs, o.template_max_age,
                                 &ex->lc.tpls, err);
        if (r < 0) {
            execbox_executor_free(ex);
            return r;
        }
    }
    if (o.pool_size > 0) {
        int r = eb_pool_new(&ex->lc, &o, &ex->pool, err);
        if (r < 0) {
            execbox_executor_free(ex);
            return r;
        }
    }
    *ret = ex;
    return 0;
}

const char *execbox_executor_backend(const struct execbox_executor *ex)
{
    return ex ? ex->lc.ops->name : NULL;
}

struct execbox_executor *execbox_executor_free(struct execbox_executor *ex)
{
    if (ex) {
        eb_pool_free(ex->pool);
        eb_templates_free(ex->lc.tpls);
        if (ex->lc.ops->close)
            ex->lc.ops->close(ex->lc.state);
        free(ex);
    }
    return NULL;
}

int execbox_executor_run(struct execbox_executor *ex, const struct execbox_request *req,
                         struct execbox_result **ret, struct execbox_error *err)
{
    if (!ex || !req || !ret)
        return eb_error_set(err, -EINVAL, "executor, request and result are required");
    return eb_run_oneshot(&ex->lc, ex->pool, req, ret, err);
}

int execbox_executor_prewarm(struct execbox_executor *ex, const struct execbox_policy *policy,
                             const char *language, struct execbox_error *err)
{
    if (!ex)
        return eb_error_set(err, -EINVAL, "no executor");
    const struct eb_language *lang = eb_language_find(language);
    if (!lang) {
        char names[128];
        execbox_language_list(names, sizeof(names));
        return eb_error_set(err, -EINVAL, "unknown language '%s' (supported: %s)", language, names);
    }
    if (!ex->pool)
        return 0;
    if (!lang->warm_bootstrap)
        return eb_error_set(err, -ENOTSUP, "%s cannot start warm", lang->name);
    if (policy && policy->network == EXECBOX_NETWORK_ALLOW && !ex->lc.ops->network_allow)
        return eb_error_set(err, -ENOTSUP, "network 'allow' is not available with the '%s' backend",
                            ex->lc.ops->name);
    struct execbox_policy p;
    if (policy)
        p = *policy;
    else
        memset(&p, 0, sizeof(p));
    eb_policy_resolve(&p);
    return eb_pool_prewarm(ex->pool, &p, lang, err);
}

void execbox_executor_pool_stats(struct execbox_executor *ex, struct execbox_pool_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (ex && ex->pool)
        eb_pool_stats(ex->pool, ret);
    if (ex && ex->pool && ex->lc.tpls)
        eb_templates_stats(ex->lc.tpls, ret);
    if (ex && ex->lc.ops->resource_stats)
        ex->lc.ops->resource_stats(ex->lc.state, ret);
}
