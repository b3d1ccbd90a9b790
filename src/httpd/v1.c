/* SPDX-License-Identifier: MIT */
/* v1.c - the /v1 API and /metrics: the runs, cells, sessions and files done on a worker, and
 * the answers the polling thread gives at once (health, metrics, sessions, DELETE). */
#include "internal.h"

#include "common/errmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum srv_outcome outcome_of(const struct execbox_result *r)
{
    if (r->timed_out)
        return SRV_OUTCOME_TIMEOUT;
    if (r->oom_killed)
        return SRV_OUTCOME_OOM;
    if (r->exit_code == 0 && !r->error_name)
        return SRV_OUTCOME_OK;
    return SRV_OUTCOME_ERROR;
}

/* Sets the worker's answer, read by http_done() on the same thread. body is malloc'd (freed
 * with free_fn), or NULL for none. */
void job_set_answer(struct job *j, int status, char *body, size_t len, const char *ctype,
                    void (*free_fn)(void *))
{
    j->answer.run_status = status;
    j->answer.body = body;
    j->answer.len = body ? len : 0;
    j->answer.ctype = ctype;
    j->answer.free_fn = free_fn;
}

static void set_json_answer(struct job *j, int status, json_t *o)
{
    char *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                   : NULL;
    json_decref(o);
    if (!body) {
        status = 503;
        body = srv_error_json("unavailable", "out of memory", NULL);
    }
    job_set_answer(j, status, body, body ? strlen(body) : 0, NULL, free);
}

static void set_error_answer(struct job *j, int status, const char *code, const char *msg,
                             const char *field)
{
    char *body = srv_error_json(code, msg, field);
    job_set_answer(j, status, body, body ? strlen(body) : 0, NULL, free);
}

/* The HTTP answer to an API error from its code, kind and field (never from its message), as
 * the one table (src/common/errmap.c) says for scope. field_hint: the field to name when the
 * error names none and the table takes the error's own (or NULL). */
static void set_api_error(struct job *j, enum errmap_scope scope, int r,
                          const struct execbox_error *e, const char *field_hint)
{
    const struct errmap_answer *a = errmap_answer(scope, r, e);
    const char *msg, *field;
    errmap_http_text(a, e, &msg, &field);
    if (!field && !a->http_field)
        field = field_hint;
    set_error_answer(j, a->http_status, a->http_code, msg, field);
}

/* A finished run or cell: counts it and answers with its record. */
static void set_result_answer(struct srv *s, struct job *j, struct execbox_result *res)
{
    enum srv_outcome o = outcome_of(res);
    bool cancelled = res->killed_reason == EXECBOX_KILLED_CANCELLED;
    srv_metrics_run(&s->metrics, o, cancelled);
    srv_metrics_egress(&s->metrics, res);
    j->answer.outcome = cancelled ? "cancelled" : srv_outcome_name(o);
    j->answer.exit_code = res->exit_code;
    char *body = NULL;
    struct execbox_error err = {0};
    if (execbox_result_to_json(res, 0, &body, &err) < 0) {
        set_error_answer(j, 500, "internal", err.msg, NULL);
        return;
    }
    /* The library's allocation is freed with execbox_free. */
    job_set_answer(j, 200, body, strlen(body), NULL, execbox_free);
}

static struct execbox_request request_of(struct job *j, const struct execbox_policy *policy)
{
    return (struct execbox_request){
        .language = j->spec.language,
        .code = j->spec.code_len ? j->spec.code : "\n",
        .code_len = j->spec.code_len ? j->spec.code_len : 1,
        .stdin_data = j->spec.stdin_data,
        .stdin_len = j->spec.stdin_len,
        .policy = policy,
        .on_output = j->req.sse ? sse_on_output : NULL,
        .userdata = j,
        .cancel = j->rj.cancel,
        .files = j->spec.files,
        .n_files = j->spec.n_files,
        .rich_results = j->spec.rich_results,
    };
}

void v1_run(struct srv *s, struct job *j)
{
    struct execbox_request req = request_of(j, &j->spec.policy);
    req.inline_files_max = SRV_INLINE_FILES_MAX;
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    uint64_t t = srv_now_ns();
    int r = execbox_executor_run(s->cfg.exec, &req, &res, &err);
    j->answer.run_s = (double)(srv_now_ns() - t) / 1e9;
    if (r < 0) {
        /* A backend without rich results refuses them naming no field: the request's is it. */
        set_api_error(j, ERRMAP_SCOPE_RUN, r, &err,
                      r == -ENOTSUP && j->spec.rich_results ? "rich_results" : NULL);
        return;
    }
    set_result_answer(s, j, res);
    execbox_result_free(res);
}

void v1_cell(struct srv *s, struct job *j)
{
    struct execbox_request req = request_of(j, &j->spec.policy);
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    uint64_t t = srv_now_ns();
    int r = execbox_session_run(sess_session(j->sess), &req, &res, &err);
    j->answer.run_s = (double)(srv_now_ns() - t) / 1e9;
    j->cell_claimed = false;
    sess_cell_end(j->sess, r == 0 ? res : NULL);
    if (r < 0) {
        set_api_error(j, ERRMAP_SCOPE_SESSION, r, &err, NULL);
        return;
    }
    set_result_answer(s, j, res);
    execbox_result_free(res);
}

/* A session as the API shows it. */
static json_t *session_json(const struct sess_summary *m)
{
    char created[32], expires[32], used[32];
    sess_iso_time(m->info.created_at, created, sizeof(created));
    sess_iso_time(m->info.expires_at, expires, sizeof(expires));
    sess_iso_time(m->info.last_used_at, used, sizeof(used));
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:I, s:I, s:b, s:I, s:I}", "id", m->id, "language",
        m->info.language, "created_at", created, "expires_at", expires, "last_used_at", used,
        "idle_timeout", (json_int_t)m->idle_timeout, "rollback", !m->no_rollback, "execution_count",
        (json_int_t)m->info.execution_count, "rolled_back_count", (json_int_t)m->info.rolled_back,
        "busy", m->cell_accepted || m->info.busy, "memory_bytes", (json_int_t)m->info.memory_bytes,
        "memory_peak_bytes", (json_int_t)m->info.memory_peak_bytes);
}

void v1_create(struct srv *s, struct job *j)
{
    struct sess_options o = {
        .language = j->spec.language,
        .policy = &j->spec.policy,
        .no_rollback = j->spec.no_rollback,
        .idle_timeout = j->spec.idle_timeout,
        .surface = "http",
        .owner = srv_owner(j),
        .owner_max = j->has_tenant ? j->tenant.max_sessions : 0,
    };
    struct sess *ss = NULL;
    struct execbox_error err = {0};
    int r = sess_create(s->sessions, &o, &ss, &err);
    if (r < 0 && errmap_answer(ERRMAP_SCOPE_SESSION, r, &err)->cls == ERRMAP_QUOTA) {
        tenants_rejected(s->cfg.tenants, j->tenant.name);
        char *body = srv_quota_json("max_sessions", err.msg);
        job_set_answer(j, 429, body, body ? strlen(body) : 0, NULL, free);
        j->answer.retry = 1;
        return;
    }
    if (r < 0) {
        set_api_error(j, ERRMAP_SCOPE_SESSION, r, &err, NULL);
        return;
    }
    if (__atomic_load_n(&j->client_gone, __ATOMIC_RELAXED)) {
        /* Nobody will ever know its id. */
        sess_remove(s->sessions, sess_id(ss), NULL, NULL);
        sess_put(ss);
        set_error_answer(j, 499, "client_gone", "the client disconnected", NULL);
        return;
    }
    struct sess_summary m;
    sess_summarize(ss, &m);
    sess_put(ss);
    set_json_answer(j, 201, session_json(&m));
}

/* The policy's file_size, resolved. */
size_t v1_file_cap(const struct execbox_policy *p)
{
    uint64_t v = p->file_size ? p->file_size : EXECBOX_DEFAULT_FILE_SIZE;
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

void v1_file_op(struct job *j)
{
    struct execbox_session *es = sess_session(j->sess);
    struct execbox_error err = {0};
    int r = 0;
    switch (j->req.op) {
    case OP_FILE_LIST: {
        struct execbox_file *files = NULL;
        size_t n = 0;
        r = execbox_session_list_files(es, &files, &n, &err);
        if (r < 0)
            break;
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
            char *p = execbox_utf8_sanitize(files[i].path, strlen(files[i].path), NULL, NULL);
            json_t *e =
                p ? json_pack("{s:s, s:I, s:s}", "path", p, "size", (json_int_t)files[i].size,
                              "mime", files[i].mime ? files[i].mime : "application/octet-stream")
                  : NULL;
            execbox_free(p);
            if (!e || json_array_append_new(a, e) < 0) {
                json_decref(a);
                a = NULL;
            }
        }
        execbox_files_free(files, n);
        set_json_answer(j, 200, a ? json_pack("{s:o}", "files", a) : NULL);
        return;
    }
    case OP_FILE_GET: {
        /* Opened here, sent from the descriptor by the polling thread (srv_respond_file). */
        int fd = -1;
        uint64_t size = 0;
        r = execbox_session_open_file(es, j->req.file_path, v1_file_cap(sess_policy(j->sess)), &fd,
                                      &size, &err);
        if (r < 0)
            break;
        if (size == 0) { /* nothing to send from it */
            close(fd);
            char *empty = strdup("");
            if (!empty) {
                set_error_answer(j, 503, "unavailable", "out of memory", NULL);
                return;
            }
            job_set_answer(j, 200, empty, 0, srv_mime_from_name(j->req.file_path), free);
            return;
        }
        job_set_answer(j, 200, NULL, 0, srv_mime_from_name(j->req.file_path), free);
        j->answer.fd = fd;
        j->answer.fd_size = size;
        return;
    }
    case OP_FILE_PUT: {
        r = execbox_session_write_file(es, j->req.file_path, j->body.data ? j->body.data : "",
                                       j->body.len, &err);
        if (r < 0)
            break;
        char *p = execbox_utf8_sanitize(j->req.file_path, strlen(j->req.file_path), NULL, NULL);
        set_json_answer(
            j, 201, p ? json_pack("{s:s, s:I}", "path", p, "size", (json_int_t)j->body.len) : NULL);
        execbox_free(p);
        return;
    }
    case OP_FILE_DELETE:
        r = execbox_session_remove_file(es, j->req.file_path, &err);
        if (r < 0)
            break;
        job_set_answer(j, 204, strdup(""), 0, NULL, free);
        return;
    default: r = -EINVAL; break;
    }
    set_api_error(j, ERRMAP_SCOPE_SESSION, r, &err, NULL);
}

static void fill_gauges(struct srv *s, struct srv_gauges *g)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    g->queue_depth = st.queued;
    g->queue_capacity = st.queue_capacity;
    g->in_flight = st.running;
    g->workers = st.workers;
    g->jobs_accepted = st.accepted;
    g->jobs_rejected = st.rejected;
    g->jobs_ran = st.ran;
    g->jobs_cancelled = st.cancelled;
    g->jobs_dropped = st.dropped;
    g->draining = __atomic_load_n(&s->draining, __ATOMIC_RELAXED) ||
                  __atomic_load_n(&s->leaving, __ATOMIC_RELAXED);
    g->backend = execbox_executor_backend(s->cfg.exec);
    sess_get_stats(s->sessions, &g->sessions);
    execbox_executor_pool_stats(s->cfg.exec, &g->pool);
}

enum MHD_Result v1_health(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct srv_gauges g;
    fill_gauges(s, &g);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "status", g.draining ? "draining" : "ok",
        "version", execbox_version(), "backend", g.backend, "workers", (json_int_t)g.workers,
        "in_flight", (json_int_t)g.in_flight, "queue_depth", (json_int_t)g.queue_depth,
        "queue_capacity", (json_int_t)g.queue_capacity, "sessions", (json_int_t)g.sessions.open);
    if (!o)
        return MHD_NO;
    return srv_respond_json(j, c, g.draining ? 503 : 200, o);
}

/* The per-tenant lines of /metrics appended to text (malloc'd, *len bytes); NULL on no
 * memory (text is freed). */
static char *tenant_metrics(struct srv *s, char *text, size_t *len)
{
    size_t max = 2 * TENANTS_MAX;
    struct tenant_stats *st = calloc(max, sizeof(*st));
    char *out = NULL;
    size_t n_out = 0;
    FILE *f = st ? open_memstream(&out, &n_out) : NULL;
    if (!f) {
        free(st);
        free(text);
        return NULL;
    }
    fwrite(text, 1, *len, f);
    free(text);
    size_t n = tenants_stats(s->cfg.tenants, st, max);
    static const char *const help[4][3] = {
        {"execbox_tenant_runs_total", "counter", "Runs and cells admitted, per tenant."},
        {"execbox_tenant_rejected_total", "counter", "Requests a tenant's quota refused (429)."},
        {"execbox_tenant_running", "gauge", "Runs and cells of the tenant running or queued."},
        {"execbox_tenant_sessions", "gauge", "Sessions the tenant holds open."},
    };
    for (size_t k = 0; k < 4; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", help[k][0], help[k][2], help[k][0], help[k][1]);
        for (size_t i = 0; i < n; i++) {
            unsigned long long v = k == 0   ? st[i].runs
                                   : k == 1 ? st[i].rejected
                                   : k == 2
                                       ? st[i].running
                                       : sess_list_owned(s->sessions, NULL, st[i].name, NULL, 0);
            fprintf(f, "%s{tenant=\"%s\"} %llu\n", help[k][0], st[i].name, v);
        }
    }
    free(st);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    *len = n_out;
    return out;
}

enum MHD_Result v1_metrics(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct srv_gauges g;
    fill_gauges(s, &g);
    size_t len;
    char *text = srv_metrics_render(&s->metrics, &g, &len);
    if (text && s->cfg.tenants)
        text = tenant_metrics(s, text, &len);
    if (!text)
        return MHD_NO;
    return srv_respond(j, c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, free, 0);
}

enum MHD_Result v1_session(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct sess_summary m;
    sess_summarize(j->sess, &m);
    (void)s;
    json_t *o = session_json(&m);
    return o ? srv_respond_json(j, c, 200, o) : MHD_NO;
}

enum MHD_Result v1_sessions(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    size_t max = s->cfg.max_sessions ? s->cfg.max_sessions : SESS_MAX_DEFAULT;
    struct sess_summary *v = calloc(max, sizeof(*v));
    if (!v)
        return srv_respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1);
    size_t n = sess_list_owned(s->sessions, NULL, srv_owner(j), v, max);
    if (n > max)
        n = max;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, session_json(&v[i])) < 0) {
            json_decref(a);
            a = NULL;
        }
    free(v);
    json_t *o = a ? json_pack("{s:o}", "sessions", a) : NULL;
    return o ? srv_respond_json(j, c, 200, o) : MHD_NO;
}

/* sess_remove's callback, on the registry's thread once the session's processes are gone:
 * answers the suspended DELETE. */
static void session_removed(void *ud)
{
    struct job *j = ud;
    pthread_mutex_lock(&j->lock);
    j->answer.body = strdup("");
    j->answer.len = 0;
    j->answer.free_fn = free;
    j->status = j->answer.body ? 204 : 503;
    j->state = J_DONE;
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->lock);
    job_unref(j);
}

/* DELETE /v1/sessions/{id}: the session is unlisted now and ended on the registry's thread;
 * the connection waits, suspended, for its 204. */
enum MHD_Result v1_delete_session(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    pthread_mutex_lock(&s->lock);
    s->pending++;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&j->lock);
    j->accepted = true;
    j->state = J_RUNNING;
    int r = sess_remove(s->sessions, sess_id(j->sess), session_removed, job_ref(j));
    if (r == 0) {
        j->suspended = true;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&j->lock);
    if (r == 0)
        return MHD_YES;
    job_unref(j); /* removed by someone else meanwhile */
    return srv_respond_error(j, c, 404, "session_not_found", "no such session", NULL, 0);
}

/* Parses the JSON body of a run, a new session or a cell into j->spec. An answer is sent when
 * it is bad (returns false, *ret set). */
bool v1_parse_body(struct srv *s, struct job *j, struct MHD_Connection *c, enum MHD_Result *ret)
{
    enum srv_body_kind kind = j->req.op == OP_CREATE ? SRV_BODY_SESSION
                              : j->req.op == OP_CELL ? SRV_BODY_CELL
                                                     : SRV_BODY_RUN;
    /* The limits a request may ask for: its session's, its tenant's ceilings, the server's. */
    const struct execbox_policy *base = j->req.op == OP_CELL ? sess_policy(j->sess)
                                        : j->has_tenant      ? &j->tenant.ceiling
                                                             : &s->cfg.policy;
    char field[64];
    struct execbox_error err = {0};
    int r = srv_parse_body(kind, j->body.data ? j->body.data : "", j->body.len, base, &j->spec,
                           field, sizeof(field), &err);
    free(j->body.data);
    j->body.data = NULL;
    if (r == 0 && kind == SRV_BODY_SESSION) {
        double idle;
        r = sess_idle_check(s->sessions, j->spec.idle_timeout, &idle, &err);
        snprintf(field, sizeof(field), "%s", r < 0 ? "idle_timeout" : "");
    }
    if (r == 0)
        return true;
    const struct errmap_answer *a = errmap_answer(ERRMAP_SCOPE_REQUEST, r, &err);
    const char *msg, *efield;
    errmap_http_text(a, &err, &msg, &efield);
    /* The parser names the field at fault in field, not in err. */
    *ret = srv_respond_error(j, c, a->http_status, a->http_code, msg,
                             a->http_field ? efield : field, a->retry ? 1 : 0);
    return false;
}
