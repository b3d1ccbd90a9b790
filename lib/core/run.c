/* SPDX-License-Identifier: MIT */
/* run.c - a one-shot run: prepare, acquire (pool | template | cold), deliver, wait, finish. With
 * rich results, the sandbox acquired is one serving cells (cells.h: its interpreter collects the
 * rich outputs), and deliver and wait are a cell's. */
#include "core/run.h"

#include <errno.h>

#include "base/error.h"
#include "base/util.h"
#include "core/pipeline.h"
#include "core/pool.h"
#include "core/cells.h"
#include "model/lang.h"
#include "model/result.h"
#include "ws/wsfile.h"

/* Acquires a sandbox for the run and runs it there: a pooled one when the pool has it ready, else
 * one forked now from the pair's live template, else one started cold for this run. A warm
 * sandbox that died before it got the code (nothing ran) gives way to a cold one, with a fresh
 * result. */
static int acquire_and_run(const struct eb_lifecycle *lc, struct eb_pool *pool,
                           const struct eb_run *run, struct execbox_result **res,
                           struct execbox_error *berr)
{
    const struct eb_backend_ops *ops = lc->ops;
    const struct execbox_policy *policy = run->policy;
    struct eb_lease sb = {0};
    bool warm = false;
    /* A backend that cannot enforce network "allow" never gets such a run, warm or cold. */
    if (policy->network == EXECBOX_NETWORK_ALLOW && !ops->network_allow)
        return eb_error_set(berr, -ENOTSUP,
                            "network 'allow' is not available with the '%s' backend: it cannot "
                            "enforce an allow-list (use the jail backend, or network 'none')",
                            ops->name);
    /* A fork on the request path costs what the pool's would have (a few ms); a cold start
     * costs an interpreter's start and the preload's imports. */
    if (pool && run->lang->warm_bootstrap)
        warm = eb_pool_take(pool, policy, run->lang, &sb) ||
               eb_pool_fork(pool, policy, run->lang, &sb);
    if (warm) {
        bool lost = false;
        int r = eb_deliver_and_wait(ops, lc->state, sb.box, run, *res, &lost, berr);
        eb_lease_end(lc, &sb);
        if (!lost)
            return r;
        execbox_result_free(*res);
        *res = eb_result_new(ops->name, run->lang->name);
        if (!*res)
            return -ENOMEM;
        eb_error_clear(berr);
    }
    struct eb_start st = {.policy = policy, .lang = run->lang, .run = run};
    int r = eb_lease_start(lc, &st, &sb, berr);
    if (r == 0) {
        r = eb_deliver_and_wait(ops, lc->state, sb.box, run, *res, NULL, berr);
        eb_lease_end(lc, &sb);
    }
    return r;
}

/* A rich one-shot run's acquire, deliver and wait: a sandbox serving cells started for the run,
 * its input files placed, the run delivered as its one cell (its deadline counts from there, as a
 * session's cell's does), the sandbox destroyed. The cell protocol's view of the run (its number,
 * whether it was rolled back) is not the run's. 0 with *ret_r the run's end for eb_finish (a
 * sandbox that failed: berr says how); or the request's own error (err set): rich results cannot
 * be had here (-ENOTSUP, -EINVAL), its input files could not be placed, or no memory. */
static int acquire_and_run_cell(const struct eb_lifecycle *lc, const struct execbox_request *req,
                                struct eb_prepared *p, struct execbox_result *res, int *ret_r,
                                struct execbox_error *berr, struct execbox_error *err)
{
    struct eb_cellbox cb;
    int r = eb_cellbox_start(lc, &p->policy, p->lang, true, &cb, berr);
    int refused = 0;
    if (r == -ENOTSUP || r == -EINVAL) {
        if (err)
            *err = *berr;
        refused = eb_error_prefix(err, r, "rich results");
    } else if (r == 0 && req->n_files) {
        refused = eb_ws_place(cb.link.ws_fd, req, &p->policy, err);
    }
    if (r == 0 && !refused) {
        p->start_ns = eb_now_ns();
        r = eb_cellbox_run(&cb, req, p, res, berr, err);
        if (r == -ENOMEM)
            refused = r; /* err says so */
    }
    eb_cellbox_close(&cb);
    res->rolled_back = false;
    res->execution_count = 0;
    *ret_r = r;
    return refused;
}

int eb_run_oneshot(const struct eb_lifecycle *lc, struct eb_pool *pool,
                   const struct execbox_request *req, struct execbox_result **ret,
                   struct execbox_error *err)
{
    struct eb_prepared p;
    int r = eb_prepare_oneshot(req, &p, err);
    if (r < 0)
        return r;
    if (req->n_files && !lc->ops->input_files)
        return eb_error_set(err, -ENOTSUP, "the %s backend cannot place input files",
                            lc->ops->name);
    if (req->rich_results && !p.lang->sessions)
        return eb_error_set(err, -ENOTSUP, "rich results: sessions are for python only, not %s",
                            p.lang->name);

    struct execbox_result *res = eb_result_new(lc->ops->name, p.lang->name);
    if (!res)
        return eb_error_set(err, -ENOMEM, "out of memory");
    struct eb_run run = eb_prepared_run(req, &p);
    struct execbox_error berr = {0, ""};
    int refused = 0;
    eb_pool_run_begin(pool);
    if (req->rich_results)
        refused = acquire_and_run_cell(lc, req, &p, res, &r, &berr, err);
    else
        r = acquire_and_run(lc, pool, &run, &res, &berr);
    eb_pool_run_end(pool);
    if (refused < 0) {
        execbox_result_free(res);
        return refused;
    }
    if (!res)
        return eb_error_set(err, -ENOMEM, "out of memory");
    if (eb_finish(lc, p.lang, r, &berr, p.start_ns, res, err) < 0) {
        execbox_result_free(res);
        return -ENOMEM;
    }
    *ret = res;
    return 0;
}
