/* SPDX-License-Identifier: MIT */
/*
 * session.c - sessions: an interpreter's state kept across cells (see execbox.h and
 * docs/sessions.md), in a sandbox serving cells (cells.c, which speaks the cell protocol), with
 * what makes it a session: its policy every cell is held to, its idle and lifetime limits, one
 * cell at a time, its counters and its workspace's file calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"
#include "core/cells.h"
#include "core/executor.h"
#include "core/pipeline.h"
#include "core/pool.h"
#include "model/lang.h"
#include "model/policy.h"
#include "model/result.h"
#include "ws/workspace.h"
#include "ws/wsdir.h"
#include "ws/wsfile.h"

struct execbox_session {
    const struct eb_language *lang;
    struct execbox_policy policy;
    struct eb_cellbox cb;
    double idle, lifetime;
    pthread_mutex_t lock; /* created, last_used, rolled_back */
    atomic_bool busy;
    uint64_t rolled_back;
    double created, last_used;
    struct eb_pool *pool; /* the executor's (NULL none): its refill gives way to cells too */
};

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double expires_at(const struct execbox_session *s)
{
    double a = s->last_used + s->idle, b = s->created + s->lifetime;
    return a < b ? a : b;
}

/* execbox_session_new on a lifecycle. */
static int session_open(const struct eb_lifecycle *lc, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err)
{
    struct execbox_session_options opt = {0};
    if (o)
        opt = *o;
    const struct eb_language *lang = eb_language_find(opt.language);
    if (!lang) {
        char names[128];
        execbox_language_list(names, sizeof(names));
        return eb_error_set(err, -EINVAL, "unknown language '%s' (supported: %s)", opt.language,
                            names);
    }
    if (!lang->sessions)
        return eb_error_set(err, -ENOTSUP, "sessions are for python only, not %s", lang->name);
    if (opt.idle_timeout < 0 || opt.max_lifetime < 0)
        return eb_error_set(err, -EINVAL, "idle_timeout and max_lifetime must not be negative");
    struct execbox_session *s = calloc(1, sizeof(*s));
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    s->lang = lang;
    if (opt.policy)
        s->policy = *opt.policy;
    eb_policy_resolve(&s->policy);
    s->idle = opt.idle_timeout > 0 ? opt.idle_timeout : EXECBOX_SESSION_IDLE_DEFAULT;
    s->lifetime = opt.max_lifetime > 0 ? opt.max_lifetime : EXECBOX_SESSION_LIFETIME_DEFAULT;
    pthread_mutex_init(&s->lock, NULL);
    int r = eb_cellbox_start(lc, &s->policy, lang, !opt.no_rollback, &s->cb, err);
    if (r < 0) {
        execbox_session_free(s);
        return r;
    }
    s->created = s->last_used = now_wall();
    *ret = s;
    return 0;
}

int execbox_session_new(struct execbox_executor *ex, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err)
{
    if (!ex || !ret)
        return eb_error_set(err, -EINVAL, "executor and result are required");
    int r = session_open(&ex->lc, o, ret, err);
    if (r == 0)
        (*ret)->pool = ex->pool;
    return r;
}

static void touch(struct execbox_session *s)
{
    pthread_mutex_lock(&s->lock);
    s->last_used = now_wall();
    pthread_mutex_unlock(&s->lock);
}

void execbox_session_touch(struct execbox_session *s)
{
    if (s)
        touch(s);
}

/* 0 when the session can take a call now; -ESHUTDOWN or -ETIMEDOUT (it is ended then). */
static int usable(struct execbox_session *s, struct execbox_error *err)
{
    if (eb_cellbox_ended(&s->cb))
        return eb_error_set(err, -ESHUTDOWN, "the session has ended");
    pthread_mutex_lock(&s->lock);
    bool expired = now_wall() >= expires_at(s);
    pthread_mutex_unlock(&s->lock);
    if (expired) {
        eb_cellbox_end(&s->cb, false);
        return eb_error_set(err, -ETIMEDOUT, "the session has expired");
    }
    if (!eb_cellbox_state_alive(&s->cb)) {
        eb_cellbox_end(&s->cb, false);
        return eb_error_set(err, -ESHUTDOWN, "the session's state process is gone");
    }
    return 0;
}

int execbox_session_run(struct execbox_session *s, const struct execbox_request *req,
                        struct execbox_result **ret, struct execbox_error *err)
{
    if (!s || !req || !ret)
        return eb_error_set(err, -EINVAL, "session, request and result are required");
    struct eb_prepared p;
    int pr = eb_prepare_cell(req, s->lang, &s->policy, &p, err);
    if (pr < 0)
        return pr;
    bool no = false;
    if (!atomic_compare_exchange_strong(&s->busy, &no, true))
        return eb_error_set(err, -EBUSY, "a cell is running in this session");
    int r = usable(s, err);
    if (r < 0) {
        atomic_store(&s->busy, false);
        return r;
    }
    touch(s);
    struct execbox_result *res = eb_result_new(s->cb.lc->ops->name, s->lang->name);
    if (!res) {
        atomic_store(&s->busy, false);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    struct execbox_error serr = {0, ""};
    eb_pool_run_begin(s->pool);
    /* The input files go into the workspace first: failing that is the request's error. */
    bool placed = !req->n_files || (r = eb_ws_place(s->cb.link.ws_fd, req, &p.policy, err)) == 0;
    if (placed) {
        p.start_ns = eb_now_ns(); /* the cell's deadline counts from its delivery */
        r = eb_cellbox_run(&s->cb, req, &p, res, &serr, err);
    }
    if (placed && r != -ENOMEM) {
        res->in_session = true;
        pthread_mutex_lock(&s->cb.lock);
        res->execution_count = s->cb.count;
        pthread_mutex_unlock(&s->cb.lock);
        pthread_mutex_lock(&s->lock);
        if (res->rolled_back)
            s->rolled_back++;
        pthread_mutex_unlock(&s->lock);
        r = eb_finish(s->cb.lc, s->lang, r, &serr, p.start_ns, res, err);
    }
    eb_pool_run_end(s->pool);
    touch(s);
    atomic_store(&s->busy, false);
    if (r < 0) {
        execbox_result_free(res);
        return r;
    }
    *ret = res;
    return 0;
}

void execbox_session_info(struct execbox_session *s, struct execbox_session_info *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!s)
        return;
    snprintf(ret->language, sizeof(ret->language), "%s", s->lang->name);
    pthread_mutex_lock(&s->lock);
    ret->created_at = s->created;
    ret->last_used_at = s->last_used;
    ret->expires_at = expires_at(s);
    ret->rolled_back = s->rolled_back;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->cb.lock);
    ret->execution_count = s->cb.count;
    pthread_mutex_unlock(&s->cb.lock);
    ret->alive =
        !eb_cellbox_ended(&s->cb) && eb_cellbox_state_alive(&s->cb) && now_wall() < ret->expires_at;
    ret->busy = atomic_load(&s->busy);
    eb_cellbox_wait_old_state(&s->cb);
    if (s->cb.sbx.box) {
        struct eb_box_stats st = {.cpu_ns = -1};
        s->cb.lc->ops->session_stats(s->cb.sbx.box, &st);
        ret->memory_bytes = st.memory;
        ret->memory_peak_bytes = st.peak_memory;
    }
}

/* File calls: the session must be alive; they count as use. */
static int file_call(struct execbox_session *s, struct execbox_error *err)
{
    if (!s)
        return eb_error_set(err, -EINVAL, "no session");
    int r = usable(s, err);
    if (r == 0)
        touch(s);
    return r;
}

int execbox_session_write_file(struct execbox_session *s, const char *path, const void *data,
                               size_t len, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_write(s->cb.link.ws_fd, path, data, len, s->policy.file_size, err);
}

int execbox_session_read_file(struct execbox_session *s, const char *path, size_t max,
                              char **ret_data, size_t *ret_len, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_read(s->cb.link.ws_fd, path, max, ret_data, ret_len, err);
}

int execbox_session_open_file(struct execbox_session *s, const char *path, uint64_t max,
                              int *ret_fd, uint64_t *ret_size, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_open_read(s->cb.link.ws_fd, path, max, ret_fd, ret_size, err);
}

int execbox_session_list_files(struct execbox_session *s, struct execbox_file **ret_files,
                               size_t *ret_n, struct execbox_error *err)
{
    int r = file_call(s, err);
    if (r < 0)
        return r;
    _cleanup_close_ int wfd = openat(s->cb.link.ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (wfd < 0)
        return eb_error_set(err, -errno, "open the workspace: %s", execbox_strerror(-errno));
    struct execbox_result tmp;
    memset(&tmp, 0, sizeof(tmp));
    r = eb_workspace_list(wfd, 0, NULL, &tmp);
    if (r < 0) {
        execbox_files_free(tmp.files, tmp.n_files);
        return eb_error_set(err, r, "list the workspace: %s", execbox_strerror(r));
    }
    *ret_files = tmp.files;
    *ret_n = tmp.n_files;
    return 0;
}

int execbox_session_remove_file(struct execbox_session *s, const char *path,
                                struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_remove(s->cb.link.ws_fd, path, err);
}

int execbox_session_rename(struct execbox_session *s, const char *from, const char *to,
                           struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_rename(s->cb.link.ws_fd, from, to, err);
}

int execbox_session_make_dir(struct execbox_session *s, const char *path, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_mkdir(s->cb.link.ws_fd, path, err);
}

int execbox_session_stat(struct execbox_session *s, const char *path, struct execbox_dirent *ret,
                         struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_stat(s->cb.link.ws_fd, path, ret, err);
}

int execbox_session_list_dir(struct execbox_session *s, const char *path, size_t max,
                             struct execbox_dirent **ret, size_t *ret_n, struct execbox_error *err)
{
    int r = file_call(s, err);
    return r < 0 ? r : eb_ws_list_dir(s->cb.link.ws_fd, path, max, ret, ret_n, err);
}

void execbox_files_free(struct execbox_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].path);
        free(files[i].mime);
        free(files[i].data);
    }
    free(files);
}

void execbox_session_kill(struct execbox_session *s)
{
    if (!s)
        return;
    eb_cellbox_end(&s->cb, true);
}

struct execbox_session *execbox_session_free(struct execbox_session *s)
{
    if (!s)
        return NULL;
    eb_cellbox_close(&s->cb);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}
