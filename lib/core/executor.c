/* SPDX-License-Identifier: MIT */
/* execbox.c - the public entry points: validate a request, pick the backend, fill the result. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"
#include "core/executor.h"
#include "core/pool.h"
#include "core/template.h"
#include "model/lang.h"
#include "model/policy.h"
#include "model/result.h"
#include "ws/workspace.h"
#include "ws/wsfile.h"

struct execbox_executor {
    const struct eb_backend_ops *ops;
    void *state;
    struct execbox_check report;
    bool degraded;
    struct eb_pool *pool;      /* NULL without a warm pool */
    struct eb_templates *tpls; /* NULL without templates */
    char preload[256];         /* pool_preload: what sessions import ahead too */
};

int eb_sandbox_start(struct execbox_executor *ex, const struct eb_start *s, struct eb_sandbox *ret,
                     struct execbox_error *err)
{
    struct eb_start st = *s;
    ret->w = NULL;
    ret->tpl = NULL;
    if (!st.preload)
        st.preload = "";
    if (!st.run && !ex->ops->warm)
        return eb_error_set(err, -ENOTSUP, "the %s backend has no warm starts", ex->ops->name);
    if (!st.run && ex->tpls && st.lang->template_bootstrap) {
        struct execbox_error terr = {0, ""};
        ret->tpl = eb_template_acquire(ex->tpls, st.policy, st.lang, st.preload, &terr);
        if (!ret->tpl && terr.code != -ENOTSUP) {
            if (err)
                *err = terr;
            return terr.code < 0 ? terr.code : -EIO;
        }
        /* -ENOTSUP: no template for this policy here; the backend's own warm start says
         * whether it can start one from nothing. */
        st.tpl = ret->tpl ? eb_template_box(ret->tpl) : NULL;
    }
    int r = ex->ops->start(ex->state, &st, &ret->w, err);
    if (r < 0) {
        ret->w = NULL;
        /* A template that died or fell out of step forks no more (a fork the policy does not
         * allow, say with pids 1, leaves it as it is). */
        if (ret->tpl && ex->ops->template_alive &&
            !ex->ops->template_alive(eb_template_box(ret->tpl)))
            eb_template_retire(ex->tpls, ret->tpl);
        if (ret->tpl)
            eb_template_release(ex->tpls, ret->tpl);
        ret->tpl = NULL;
    }
    return r;
}

void eb_sandbox_destroy(struct execbox_executor *ex, struct eb_sandbox *sb)
{
    if (sb->w)
        ex->ops->destroy(ex->state, sb->w);
    if (sb->tpl)
        eb_template_release(ex->tpls, sb->tpl);
    sb->w = NULL;
    sb->tpl = NULL;
}

void eb_wait_init(struct eb_wait *w)
{
    memset(w, 0, sizeof(*w));
    w->cpu_ns = -1;
    w->peak_memory = -1;
    w->ws_fd = -1;
}

void eb_wait_release(struct eb_wait *w)
{
    eb_close(&w->ws_fd);
    free(w->error_name);
    free(w->error_value);
    free(w->error_traceback);
    w->error_name = w->error_value = w->error_traceback = NULL;
}

int eb_wait_to_result(const struct execbox_policy *policy, const struct execbox_request *req,
                      struct eb_wait *w, struct execbox_result *res)
{
    int r = 0;
    if (!w->final) {
        /* An init killed by SIGKILL while its sandbox had OOM kills went with the program (an
         * OOM kill the kernel aimed at it, or one that took the whole cgroup): the program's
         * end, reported as the memory limit below, not a broken sandbox. */
        struct eb_outcome *oc = &w->oc;
        if (!oc->got_exit && !oc->setup_failed && !oc->timed_out && !oc->cancelled &&
            !oc->flooded && w->oom_kills > 0 && WIFSIGNALED(oc->init_status) &&
            WTERMSIG(oc->init_status) == SIGKILL) {
            oc->got_exit = true;
            oc->status = SIGKILL; /* a wait status: killed by SIGKILL */
        }
        r = eb_outcome_to_result(&w->oc, policy, res);
        if (r == 0 && w->error_name && !res->error_name &&
            eb_result_set_error(res, w->error_name, w->error_value, w->error_traceback) < 0)
            r = -ENOMEM;
        if (r == 0) {
            if (w->cpu_ns >= 0)
                res->cpu_time = (double)w->cpu_ns / 1e9;
            else if (w->cpu_ns == -2)
                res->cpu_time = -1;
            if (w->peak_memory >= 0)
                res->peak_memory_bytes = (uint64_t)w->peak_memory;
            else if (w->peak_memory == -2)
                res->peak_memory_bytes = 0;
            int o = eb_result_apply_oom(res, policy, w->oom_kills,
                                        w->oom_files[0] ? w->oom_files : NULL,
                                        w->oom_why[0] ? w->oom_why : NULL);
            if (o < 0)
                r = o;
        }
        if (r == 0 && w->ws_fd >= 0 && !w->files_listed)
            r = eb_workspace_list(w->ws_fd, req->inline_files_max, req, res);
    }
    eb_wait_release(w);
    return r;
}

/* Delivers the run to a started sandbox, waits for its end and maps it; the caller destroys
 * the sandbox. -EPIPE: the sandbox was gone before anything ran. */
static int deliver_and_wait(const struct eb_backend_ops *ops, void *state, struct eb_box *sb,
                            const struct eb_run *run, struct execbox_result *res,
                            struct execbox_error *err)
{
    struct eb_wait w;
    eb_wait_init(&w);
    int r = ops->deliver(state, sb, run, err);
    if (r == 0)
        r = ops->wait(state, sb, run, res, &w, err);
    if (r == 0 && w.lost)
        r = -EPIPE;
    if (r == 0)
        r = eb_wait_to_result(run->policy, run->req, &w, res);
    else
        eb_wait_release(&w);
    return r;
}

static int run_sandbox(struct execbox_executor *ex, struct eb_sandbox *sb, const struct eb_run *run,
                       struct execbox_result *res, struct execbox_error *err)
{
    int r = deliver_and_wait(ex->ops, ex->state, sb->w, run, res, err);
    eb_sandbox_destroy(ex, sb);
    return r;
}

int eb_backend_run_cold(const struct eb_backend_ops *ops, void *state, const struct eb_run *run,
                        struct execbox_result *res, struct execbox_error *err)
{
    struct eb_start st = {.policy = run->policy, .lang = run->lang, .run = run};
    struct eb_box *w = NULL;
    int r = ops->start(state, &st, &w, err);
    if (r == 0) {
        r = deliver_and_wait(ops, state, w, run, res, err);
        ops->destroy(state, w);
    }
    return r;
}

void eb_executor_parts(struct execbox_executor *ex, const struct eb_backend_ops **ret_ops,
                       void **ret_state, const char **ret_preload)
{
    *ret_ops = ex->ops;
    *ret_state = ex->state;
    *ret_preload = ex->preload;
}

int eb_request_sizes(const struct execbox_request *req, size_t *ret_code_len,
                     struct execbox_error *err)
{
    size_t code_len = req->code_len ? req->code_len : strlen(req->code);
    if (code_len > EXECBOX_CODE_MAX)
        return eb_error_set(err, -E2BIG, "code is %zu bytes, more than the maximum of %u", code_len,
                            EXECBOX_CODE_MAX);
    if (req->stdin_data && req->stdin_len > EXECBOX_STDIN_MAX)
        return eb_error_set(err, -E2BIG, "stdin is %zu bytes, more than the maximum of %u",
                            req->stdin_len, EXECBOX_STDIN_MAX);
    *ret_code_len = code_len;
    return 0;
}

int eb_executor_add_degraded(const struct execbox_executor *ex, struct execbox_result *res)
{
    if (ex->degraded)
        for (size_t i = 0; i < ex->report.n_walls; i++)
            if (!ex->report.walls[i].ok && ex->report.walls[i].required &&
                eb_result_add_degraded(res, ex->report.walls[i].name) < 0)
                return -ENOMEM;
    return 0;
}

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
    ex->ops = ops;
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
        ex->degraded = true;
    }
    snprintf(ex->preload, sizeof(ex->preload), "%s", o.pool_preload ? o.pool_preload : "");
    if (ops->open) {
        int r = ops->open(&o, &ex->report, &ex->state, err);
        if (r < 0) {
            free(ex);
            return r;
        }
    }
    if (ops->template_start && !o.no_templates) {
        int r = eb_templates_new(ops, ex->state, o.template_max_runs, o.template_max_age, &ex->tpls,
                                 err);
        if (r < 0) {
            execbox_executor_free(ex);
            return r;
        }
    }
    if (o.pool_size > 0) {
        int r = eb_pool_new(ex, ops, &o, &ex->pool, err);
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
    return ex ? ex->ops->name : NULL;
}

struct execbox_executor *execbox_executor_free(struct execbox_executor *ex)
{
    if (ex) {
        eb_pool_free(ex->pool);
        eb_templates_free(ex->tpls);
        if (ex->ops->close)
            ex->ops->close(ex->state);
        free(ex);
    }
    return NULL;
}

int execbox_executor_run(struct execbox_executor *ex, const struct execbox_request *req,
                         struct execbox_result **ret, struct execbox_error *err)
{
    if (!ex || !req || !ret)
        return eb_error_set(err, -EINVAL, "executor, request and result are required");
    if (!req->code)
        return eb_error_set(err, -EINVAL, "no code given");
    const struct eb_language *lang = eb_language_find(req->language);
    if (!lang)
        return eb_error_set(err, -EINVAL,
                            "unknown language '%s' (supported: python, "
                            "javascript, bash)",
                            req->language);
    size_t code_len = 0;
    int cr = eb_request_sizes(req, &code_len, err);
    if (cr < 0)
        return cr;
    struct execbox_policy policy;
    if (req->policy)
        policy = *req->policy;
    else
        memset(&policy, 0, sizeof(policy));
    eb_policy_resolve(&policy);
    int fr = eb_input_files_check(req, &policy, err);
    if (fr < 0)
        return fr;
    if (req->n_files && !ex->ops->input_files)
        return eb_error_set(err, -ENOTSUP, "the %s backend cannot place input files",
                            ex->ops->name);
    if (req->rich_results)
        return eb_session_oneshot(ex, req, &policy, ret, err);

    struct execbox_result *res = eb_result_new(ex->ops->name, lang->name);
    if (!res)
        return eb_error_set(err, -ENOMEM, "out of memory");
    struct eb_run run = {
        .req = req,
        .policy = &policy,
        .lang = lang,
        .code = req->code,
        .code_len = code_len,
        .start_ns = eb_now_ns(),
    };
    struct execbox_error berr = {0, ""};
    struct eb_sandbox sb = {0};
    bool pooled = false;
    /* A backend that cannot enforce network "allow" never gets such a run, warm or cold. */
    if (ex->pool && lang->warm_bootstrap &&
        (policy.network == EXECBOX_NETWORK_NONE || ex->ops->network_allow))
        pooled = eb_pool_take(ex->pool, &policy, lang, &sb);
    int r;
    if (policy.network == EXECBOX_NETWORK_ALLOW && !ex->ops->network_allow) {
        eb_sandbox_destroy(ex, &sb);
        r = eb_error_set(&berr, -ENOTSUP,
                         "network 'allow' is not available with the '%s' backend: it cannot "
                         "enforce an allow-list (use the jail backend, or network 'none')",
                         ex->ops->name);
    } else {
        r = pooled ? run_sandbox(ex, &sb, &run, res, &berr) : -EPIPE;
        if (r == -EPIPE) {
            /* Not pooled, or the warm sandbox died before it got the code (nothing ran): a cold
             * start, made for this run. */
            if (pooled) {
                execbox_result_free(res);
                res = eb_result_new(ex->ops->name, lang->name);
                if (!res)
                    return eb_error_set(err, -ENOMEM, "out of memory");
                eb_error_clear(&berr);
            }
            struct eb_start st = {.policy = &policy, .lang = lang, .run = &run};
            r = eb_sandbox_start(ex, &st, &sb, &berr);
            if (r == 0)
                r = run_sandbox(ex, &sb, &run, res, &berr);
        }
    }
    if (r == -ENOMEM) {
        execbox_result_free(res);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    if (r < 0) {
        if (!berr.msg[0])
            eb_error_set(&berr, r, "the sandbox failed: %s", execbox_strerror(r));
        res->execution_time = (double)(eb_now_ns() - run.start_ns) / 1e9;
        if (eb_result_sandbox_error(res, berr.msg) < 0) {
            execbox_result_free(res);
            return eb_error_set(err, -ENOMEM, "out of memory");
        }
    }
    if (eb_language_fill_error(lang, res) < 0) {
        execbox_result_free(res);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    if (eb_executor_add_degraded(ex, res) < 0) {
        execbox_result_free(res);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    *ret = res;
    return 0;
}

int execbox_executor_prewarm(struct execbox_executor *ex, const struct execbox_policy *policy,
                             const char *language, struct execbox_error *err)
{
    if (!ex)
        return eb_error_set(err, -EINVAL, "no executor");
    const struct eb_language *lang = eb_language_find(language);
    if (!lang)
        return eb_error_set(err, -EINVAL, "unknown language '%s'", language);
    if (!ex->pool)
        return 0;
    if (!lang->warm_bootstrap)
        return eb_error_set(err, -ENOTSUP, "%s cannot start warm", lang->name);
    if (policy && policy->network == EXECBOX_NETWORK_ALLOW && !ex->ops->network_allow)
        return eb_error_set(err, -ENOTSUP, "network 'allow' is not available with the '%s' backend",
                            ex->ops->name);
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
    if (ex && ex->pool && ex->tpls)
        eb_templates_stats(ex->tpls, ret);
}
