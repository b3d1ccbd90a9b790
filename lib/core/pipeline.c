/* SPDX-License-Identifier: MIT */
/* pipeline.c - prepare and finish, the two ends every run shares (pipeline.h). */
#include "core/pipeline.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/error.h"
#include "base/util.h"
#include "model/lang.h"
#include "model/policy.h"
#include "model/result.h"
#include "ws/workspace.h"
#include "ws/wsfile.h"

/* What every request must be: within the sizes. */
static int check_sizes(const struct execbox_request *req, size_t *ret_code_len,
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

int eb_prepare_oneshot(const struct execbox_request *req, struct eb_prepared *ret,
                       struct execbox_error *err)
{
    memset(ret, 0, sizeof(*ret));
    ret->start_ns = eb_now_ns();
    if (!req->code)
        return eb_error_set(err, -EINVAL, "no code given");
    ret->lang = eb_language_find(req->language);
    if (!ret->lang) {
        char names[128];
        execbox_language_list(names, sizeof(names));
        return eb_error_set(err, -EINVAL, "unknown language '%s' (supported: %s)", req->language,
                            names);
    }
    int r = check_sizes(req, &ret->code_len, err);
    if (r < 0)
        return r;
    if (req->policy)
        ret->policy = *req->policy;
    eb_policy_resolve(&ret->policy);
    return eb_input_files_check(req, &ret->policy, err);
}

int eb_prepare_cell(const struct execbox_request *req, const struct eb_language *lang,
                    const struct execbox_policy *sess, struct eb_prepared *ret,
                    struct execbox_error *err)
{
    memset(ret, 0, sizeof(*ret));
    ret->start_ns = eb_now_ns();
    ret->lang = lang;
    if (!req->code)
        return eb_error_set(err, -EINVAL, "no code given");
    if (req->language && eb_language_find(req->language) != lang)
        return eb_error_set(err, -EINVAL, "this session runs %s, not '%s'", lang->name,
                            req->language);
    int r = check_sizes(req, &ret->code_len, err);
    if (r < 0)
        return r;
    /* A cell may ask for less time or output than the session has, nothing else. */
    ret->policy = *sess;
    if (req->policy) {
        struct execbox_policy want = *req->policy;
        eb_policy_resolve(&want);
        if (want.timeout > sess->timeout || want.output_limit > sess->output_limit) {
            const char *field = want.timeout > sess->timeout ? "timeout" : "output_limit";
            r = eb_error_set(err, -EPERM, "a cell may not ask for more %s than its session has",
                             want.timeout > sess->timeout ? "time" : "output");
            if (err) {
                err->kind = EXECBOX_ERROR_OVER_MAXIMUM;
                snprintf(err->field, sizeof(err->field), "%s", field);
            }
            return r;
        }
        ret->policy.timeout = want.timeout;
        ret->policy.output_limit = want.output_limit;
    }
    return eb_input_files_check(req, &ret->policy, err);
}

struct eb_run eb_prepared_run(const struct execbox_request *req, const struct eb_prepared *p)
{
    return (struct eb_run){
        .req = req,
        .policy = &p->policy,
        .lang = p->lang,
        .code = req->code,
        .code_len = p->code_len,
        .start_ns = p->start_ns,
    };
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

/* The sandbox's own counters over the outcome's rusage, and the one OOM rule. */
static int apply_counters(const struct execbox_policy *policy, const struct eb_wait *w,
                          struct execbox_result *res)
{
    if (w->cpu_ns >= 0)
        res->cpu_time = (double)w->cpu_ns / 1e9;
    else if (w->cpu_ns == -2)
        res->cpu_time = -1;
    if (w->peak_memory >= 0)
        res->peak_memory_bytes = (uint64_t)w->peak_memory;
    else if (w->peak_memory == -2)
        res->peak_memory_bytes = 0;
    return eb_result_apply_oom(res, policy, w->oom_kills, w->oom_files[0] ? w->oom_files : NULL,
                               w->oom_why[0] ? w->oom_why : NULL);
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
        if (r == 0)
            r = apply_counters(policy, w, res);
        if (r == 0 && w->ws_fd >= 0 && !w->files_listed)
            r = eb_workspace_list(w->ws_fd, req->inline_files_max, req, res);
    }
    eb_wait_release(w);
    return r;
}

int eb_finish(const struct eb_lifecycle *lc, const struct eb_language *lang, int r,
              struct execbox_error *berr, uint64_t start_ns, struct execbox_result *res,
              struct execbox_error *err)
{
    if (r == -ENOMEM)
        return eb_error_set(err, -ENOMEM, "out of memory");
    if (r < 0) {
        if (!berr->msg[0])
            eb_error_set(berr, r, "the sandbox failed: %s", execbox_strerror(r));
        res->execution_time = (double)(eb_now_ns() - start_ns) / 1e9;
        if (eb_result_sandbox_error(res, berr->msg) < 0)
            return eb_error_set(err, -ENOMEM, "out of memory");
    }
    if (eb_language_fill_error(lang, res) < 0 || eb_lifecycle_add_degraded(lc, res) < 0)
        return eb_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

int eb_deliver_and_wait(const struct eb_backend_ops *ops, void *state, struct eb_box *box,
                        const struct eb_run *run, struct execbox_result *res, bool *ret_lost,
                        struct execbox_error *err)
{
    struct eb_wait w;
    eb_wait_init(&w);
    bool lost = false;
    int r = ops->deliver(state, box, run, err);
    /* The backend's contract (backend.h): -EPIPE from deliver is "gone before it got the
     * code"; read here once, and named. */
    if (r == -EPIPE)
        lost = true;
    if (r == 0)
        r = ops->wait(state, box, run, res, &w, err);
    if (r == 0 && w.lost) {
        lost = true;
        r = eb_error_set(err, -EPIPE, "the sandbox was gone before the run began");
    }
    if (ret_lost)
        *ret_lost = lost;
    if (r == 0)
        r = eb_wait_to_result(run->policy, run->req, &w, res);
    else
        eb_wait_release(&w);
    return r;
}

int eb_backend_run_cold(const struct eb_backend_ops *ops, void *state, const struct eb_run *run,
                        struct execbox_result *res, struct execbox_error *err)
{
    struct eb_start st = {.policy = run->policy, .lang = run->lang, .run = run};
    struct eb_box *box = NULL;
    int r = ops->start(state, &st, &box, err);
    if (r == 0) {
        r = eb_deliver_and_wait(ops, state, box, run, res, NULL, err);
        ops->destroy(state, box);
    }
    return r;
}
