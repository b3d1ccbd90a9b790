/* SPDX-License-Identifier: MIT */
/* route.c - libmicrohttpd's request handler: routing a path, the checks decided from the
 * headers (host, origin, token, method, body type), reading the body, and handing the job on. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The bearer token's tenant into j (every route but health needs one when the server has
 * tenants). */
static bool authorized(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (!s->cfg.tenants)
        return true;
    if (j->has_tenant)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    j->has_tenant = tenants_auth(s->cfg.tenants, h, &j->tenant);
    return j->has_tenant;
}

static bool wants_sse(struct MHD_Connection *c)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return a && strcasestr(a, "text/event-stream") != NULL;
}

/* Whether a page of this origin may call us (--allow-origin; "*" allows any). An origin is
 * compared whole, ignoring case (scheme and host are case-insensitive). */
static bool origin_allowed(struct srv *s, const char *origin)
{
    if (strlen(origin) >= sizeof(((struct job *)0)->req.origin))
        return false;
    for (size_t i = 0; i < s->cfg.n_allow_origins; i++)
        if (strcmp(s->cfg.allow_origins[i], "*") == 0 ||
            strcasecmp(s->cfg.allow_origins[i], origin) == 0)
            return true;
    return false;
}

/* application/json, with or without parameters (charset=utf-8). */
static bool json_content_type(const char *ct)
{
    static const char want[] = "application/json";
    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return false;
    ct += sizeof(want) - 1;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

static void reject(struct job *j, int status, const char *code, const char *msg, size_t retry)
{
    j->rej.status = status;
    j->rej.code = code;
    snprintf(j->rej.msg, sizeof(j->rej.msg), "%s", msg);
    j->rej.retry = retry;
}

/* Routes a path (as sent: percent-escapes are decoded here, once, only where a path names a
 * file). Fills j->req.route, j->req.sess_id and, for a file, j->req.file_path or j->req.bad_path.
 */
static void route(struct job *j, const char *url)
{
    static const char sessions[] = "/v1/sessions";
    j->req.route = R_OTHER;
    if (strcmp(url, "/v1/execute") == 0) {
        j->req.route = R_EXECUTE;
        return;
    }
    if (strcmp(url, "/v1/health") == 0) {
        j->req.route = R_HEALTH;
        return;
    }
    if (strcmp(url, "/metrics") == 0) {
        j->req.route = R_METRICS;
        return;
    }
    if (strncmp(url, sessions, sizeof(sessions) - 1) != 0)
        return;
    const char *t = url + sizeof(sessions) - 1;
    if (*t == '\0') {
        j->req.route = R_SESSIONS;
        return;
    }
    if (*t != '/')
        return;
    t++;
    size_t n = strcspn(t, "/");
    if (n == 0)
        return;
    /* An id of another shape is no session's: it stays "" and the route answers 404. */
    if (n == SESS_ID_LEN && strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789-_") >= n) {
        memcpy(j->req.sess_id, t, n);
        j->req.sess_id[n] = '\0';
    }
    t += n;
    if (*t == '\0')
        j->req.route = R_SESSION;
    else if (strcmp(t, "/execute") == 0)
        j->req.route = R_SESSION_EXECUTE;
    else if (strcmp(t, "/files") == 0)
        j->req.route = R_SESSION_FILES;
    else if (strncmp(t, "/files/", 7) == 0) {
        j->req.route = R_SESSION_FILE;
        const char *raw = t + 7;
        size_t len = strlen(raw), dlen = 0;
        j->req.file_path = malloc(len + 1);
        if (!j->req.file_path || srv_url_decode(raw, len, j->req.file_path, len + 1, &dlen) < 0 ||
            !srv_workspace_path_ok(j->req.file_path, dlen))
            j->req.bad_path = true;
    }
}

/* The method a route takes, and what its job does. OP_NONE with *ok: answered now. */
static bool route_method(struct job *j, bool get, bool *ret_json_body)
{
    const char *m = j->req.method;
    bool post = strcmp(m, "POST") == 0, del = strcmp(m, "DELETE") == 0, put = strcmp(m, "PUT") == 0;
    *ret_json_body = post;
    switch (j->req.route) {
    case R_EXECUTE: j->req.op = OP_RUN; return post;
    case R_SESSIONS: j->req.op = post ? OP_CREATE : OP_NONE; return post || get;
    case R_SESSION: return get || del;
    case R_SESSION_EXECUTE: j->req.op = OP_CELL; return post;
    case R_SESSION_FILES: j->req.op = OP_FILE_LIST; return get;
    case R_SESSION_FILE:
        j->req.op = get ? OP_FILE_GET : put ? OP_FILE_PUT : OP_FILE_DELETE;
        return get || put || del;
    default: return get;
    }
}

/* DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 is, to the
 * browser, of the same origin as this server, and may read every answer; its requests still
 * name evil.example in Host. Without a token, only our own names are served. False: rejected. */
static bool check_host(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (!s->cfg.check_host)
        return true;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host || srv_host_allowed(host, s->cfg.allow_hosts, s->cfg.n_allow_hosts))
        return true;
    j->req.op = OP_NONE;
    reject(j, 421, "misdirected_request",
           "Host names no name of this server (without a token: its address, "
           "localhost, --allow-host-header)",
           0);
    return false;
}

/* A browser names the page behind a request in Origin, and sends a "simple" cross-site POST
 * without asking first: a page the user merely opens must not run code here. False: decided
 * (rejected, or a preflight). */
static bool check_origin(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin)
        return true;
    if (!origin_allowed(s, origin)) {
        reject(j, 403, "forbidden_origin",
               "requests from web pages of this origin are not allowed (--allow-origin)", 0);
        return false;
    }
    j->req.cors = true;
    snprintf(j->req.origin, sizeof(j->req.origin), "%s", origin);
    if (strcmp(j->req.method, "OPTIONS") == 0 && j->req.route != R_OTHER) {
        j->req.preflight = true;
        return false;
    }
    return true;
}

/* The secret of an E2B sandbox a call carries: envd's X-Access-Token, or the traffic token the
 * SDK sends instead on its context calls (execbox hands out one secret as both). */
static const char *e2b_access_token(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    return t ? t : MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2B-Traffic-Access-Token");
}

/* What the route's job does with this method (j->req.op), and whether it takes a JSON body. An
 * E2B path (em, sub: from e2b_match_path) is E2B's to route. False: decided (rejected, or an
 * E2B call answered at once). */
static bool check_method(struct srv *s, struct job *j, struct MHD_Connection *c, enum e2b_match em,
                         const char *e2b_sub, bool *json_body)
{
    bool get = strcmp(j->req.method, "GET") == 0 || strcmp(j->req.method, "HEAD") == 0;
    if (j->req.route == R_E2B) {
        /* E2B's SDK cannot send our bearer header: the token rides in the path. */
        if (em == E2B_NO_TOKEN && !authorized(s, j, c)) {
            reject(j, 401, "unauthorized",
                   "missing or wrong token: with a token, the E2B routes are under /e2b/TOKEN/", 0);
            return false;
        }
        /* A tenant's calls find and make that tenant's contexts only. */
        e2b_call_owner(&j->e2b, srv_owner(j), j->has_tenant ? j->tenant.max_sessions : 0);
        int r = e2b_route(j->req.method, e2b_sub, &j->e2b, &j->req.allow);
        if (r == 0 &&
            e2b_call_request(
                &j->e2b, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path"),
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
                MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"),
                e2b_access_token(c)) < 0)
            r = 503;
        if (r == 503)
            reject(j, 503, "unavailable", "out of memory", 1);
        else if (r == 404)
            reject(j, 404, "not_found", "no such endpoint", 0);
        else if (r == 405)
            reject(j, 405, "method_not_allowed", "method not allowed here (see Allow)", 0);
        if (r || e2b_op_immediate(j->e2b.op))
            return false;
        j->req.op = OP_E2B; /* a POST with a JSON body, but for envd's files and streams */
        *json_body = e2b_op_json_body(j->e2b.op);
    } else if (!route_method(j, get, json_body)) {
        j->req.op = OP_NONE;
        reject(j, 405, "method_not_allowed",
               j->req.route == R_EXECUTE || j->req.route == R_SESSION_EXECUTE
                   ? "use POST"
                   : "method not allowed",
               0);
        return false;
    }
    return true;
}

/* The token, draining, and a session route's session and path. False: decided (rejected, or
 * health and metrics, which need nothing more). */
static bool check_access(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (j->req.route == R_HEALTH || (j->req.route == R_METRICS && authorized(s, j, c)))
        return false;
    if (j->req.route != R_E2B && !authorized(s, j, c)) {
        j->req.op = OP_NONE;
        reject(j, 401, "unauthorized", "missing or wrong bearer token", 0);
        return false;
    }
    if (j->req.route == R_METRICS)
        return false;
    if (__atomic_load_n(&s->draining, __ATOMIC_RELAXED)) {
        j->req.op = OP_NONE;
        reject(j, 503, "draining", "the server is shutting down", srv_retry_after(s));
        return false;
    }
    if (j->req.route < R_SESSION || j->req.route > R_SESSION_FILE)
        return true;
    /* Another tenant's session is as unknown as one that never was. */
    j->sess = j->req.sess_id[0] ? sess_get_owned(s->sessions, j->req.sess_id, srv_owner(j)) : NULL;
    if (!j->sess) {
        j->req.op = OP_NONE;
        reject(j, 404, "session_not_found", "no such session (unknown, deleted or expired)", 0);
        return false;
    }
    if (j->req.route == R_SESSION_FILE && j->req.bad_path) {
        j->req.op = OP_NONE;
        reject(j, 400, "bad_request",
               "path: expected a path relative to /workspace, without '.', '..' or empty "
               "parts (escapes are decoded once)",
               0);
        snprintf(j->rej.field, sizeof(j->rej.field), "path");
        return false;
    }
    /* A file's body is bounded by the session's file_size as well as --max-body. */
    if (j->req.op == OP_FILE_PUT && v1_file_cap(sess_policy(j->sess)) < j->body.max)
        j->body.max = v1_file_cap(sess_policy(j->sess));
    return true;
}

/* A job that takes a body: its Content-Length against the limit and its Content-Type, then
 * reading it (J_READING). */
static enum MHD_Result expect_body(struct job *j, struct MHD_Connection *c, bool json_body)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long cl_len = 0; /* 0 also without Content-Length */
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        cl_len = n;
        if (errno || *end || n > j->body.max) {
            j->body.too_large = true;
            if (errno || n > SRV_DISCARD_MAX) {
                /* Too much to read and throw away: answer now and close. */
                char msg[96];
                snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes",
                         j->body.max);
                return srv_respond_error(j, c, 413, "payload_too_large", msg, NULL, 0);
            }
        }
    }
    if (json_body && !json_content_type(MHD_lookup_connection_value(
                         c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        /* Also what keeps a browser from sending it cross-site without a preflight. A file's
         * PUT takes any type: a browser never sends a PUT cross-site without a preflight,
         * which an origin not given with --allow-origin fails (403). A new session and an E2B
         * restart take no body at all (`curl -X POST`, E2B's SDK): an empty one is defaults,
         * whatever its type. Without Content-Length (chunked) that is known once it is in. */
        bool optional =
            j->req.op == OP_CREATE || (j->req.op == OP_E2B && j->e2b.op == E2B_OP_RESTART);
        if (optional && cl_len == 0) {
            j->body.ctype_not_json = true;
        } else {
            j->req.op = OP_NONE;
            reject(j, 415, "unsupported_media_type", "the body must be sent as application/json",
                   0);
            return MHD_YES;
        }
    }
    if (j->req.op == OP_RUN || j->req.op == OP_CELL)
        j->req.sse = wants_sse(c);
    else if (j->req.op == OP_E2B)
        j->req.sse = e2b_op_streams(j->e2b.op);
    j->state = J_READING;
    return MHD_YES;
}

/* The token an E2B path must carry: with tenants, its first segment when that is a tenant's
 * token (the tenant is then j's), else one that matches nothing (the path has no token; the
 * bearer header may still name a tenant). NULL: a server without tokens. */
static const char *e2b_path_token(struct srv *s, struct job *j, const char *url, char *seg,
                                  size_t n)
{
    if (!s->cfg.tenants)
        return NULL;
    static const char prefix[] = "/e2b/";
    if (strncmp(url, prefix, sizeof(prefix) - 1) == 0) {
        const char *p = url + sizeof(prefix) - 1;
        size_t len = strcspn(p, "/?");
        if (len > 0 && len < n) {
            memcpy(seg, p, len);
            seg[len] = '\0';
            if (tenants_auth(s->cfg.tenants, seg, &j->tenant)) {
                j->has_tenant = true;
                return seg;
            }
        }
    }
    return "\x01"; /* no path segment is this */
}

/* The first call for a request: its headers are in. Routes it (an E2B path's token is kept out
 * of j->req.path, which the log shows), and decides what can be decided without the body. */
static enum MHD_Result first_call(struct srv *s, struct job *j, struct MHD_Connection *c,
                                  const char *url)
{
    const char *e2b_sub = NULL;
    char seg[TENANT_TOKEN_MAX + 1];
    enum e2b_match em = e2b_match_path(url, e2b_path_token(s, j, url, seg, sizeof(seg)), &e2b_sub,
                                       j->req.path, sizeof(j->req.path));
    if (em != E2B_NOT_OURS)
        j->req.route = R_E2B;
    else
        route(j, url);
    /* The front door checked that this is "chunked" and the only framing header. */
    j->req.close =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    if (!check_host(s, j, c) || !check_origin(s, j, c))
        return MHD_YES;
    if (j->req.route == R_OTHER) {
        reject(j, 404, "not_found", "no such endpoint", 0);
        return MHD_YES;
    }
    bool json_body = false;
    if (!check_method(s, j, c, em, e2b_sub, &json_body) || !check_access(s, j, c))
        return MHD_YES;
    if (j->req.op == OP_NONE)
        return MHD_YES; /* answered at the last call */
    return expect_body(j, c, json_body);
}

/* The last call for a request that is not a run. */
static enum MHD_Result answer_now(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (j->rej.status)
        return srv_respond_error(j, c, j->rej.status, j->rej.code, j->rej.msg,
                                 j->rej.field[0] ? j->rej.field : NULL, j->rej.retry);
    if (j->req.preflight) {
        char *empty = strdup("");
        return empty ? srv_respond(j, c, 204, "text/plain", empty, 0, free, 0) : MHD_NO;
    }
    switch (j->req.route) {
    case R_HEALTH: return v1_health(s, j, c);
    case R_METRICS: return v1_metrics(s, j, c);
    case R_SESSIONS: return v1_sessions(s, j, c);
    case R_SESSION:
        return strcmp(j->req.method, "DELETE") == 0 ? v1_delete_session(s, j, c)
                                                    : v1_session(s, j, c);
    case R_E2B: {
        struct e2b_answer a;
        if (e2b_answer(s->e2b, &j->e2b, &a) < 0)
            return MHD_NO;
        return srv_respond(j, c, a.status, a.ctype, a.body, a.len, free, 0);
    }
    default: return srv_respond_error(j, c, 404, "not_found", "no such endpoint", NULL, 0);
    }
}

static enum MHD_Result upload(struct srv *s, struct job *j, const char *data, size_t n)
{
    (void)s;
    if (!j->body.too_large && j->body.len + n > j->body.max)
        j->body.too_large = true;
    if (j->body.too_large) {
        free(j->body.data);
        j->body.data = NULL;
        j->body.cap = 0;
        j->body.discarded += n;
        return j->body.discarded > SRV_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (j->body.len + n + 1 > j->body.cap) {
        /* Grow geometrically: a body arrives in many small pieces. */
        size_t cap = j->body.cap ? j->body.cap : 4096;
        while (cap < j->body.len + n + 1)
            cap *= 2;
        char *nb = realloc(j->body.data, cap);
        if (!nb)
            return MHD_NO;
        j->body.data = nb;
        j->body.cap = cap;
    }
    memcpy(j->body.data + j->body.len, data, n);
    j->body.len += n;
    return MHD_YES;
}

/* Counts the job's run in its tenant's max_runs from now until the run ends (job.c). False:
 * not counted (at the quota, or no memory: quota_answer says which). */
static bool count_run(struct srv *s, struct job *j)
{
    if (!j->has_tenant)
        return true;
    const char *quota = NULL;
    j->run_refused = tenants_run_begin(s->cfg.tenants, &j->tenant, &quota);
    if (j->run_refused < 0)
        return false;
    __atomic_store_n(&j->run_counted, true, __ATOMIC_RELEASE);
    return true;
}

/* The answer to a run count_run refused: 429 at the tenant's max_runs. */
static enum MHD_Result quota_answer(struct job *j, struct MHD_Connection *c)
{
    if (j->run_refused != -EDQUOT)
        return srv_respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1);
    char msg[160];
    snprintf(msg, sizeof(msg), "%s has %u runs going, its max_runs (retry when one ends)",
             j->tenant.name, j->tenant.max_runs);
    return srv_respond_quota(j, c, "max_runs", msg, 1);
}

/* An E2B call's body is in: prepare it, and queue it unless that answered it. */
static enum MHD_Result e2b_submit(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    struct e2b_answer a;
    int r = e2b_prepare(s->e2b, &j->e2b, j->body.data ? j->body.data : "", j->body.len, &a);
    free(j->body.data);
    j->body.data = NULL;
    if (r < 0)
        return srv_respond_error(j, c, 503, "unavailable", "out of memory", NULL, 1);
    if (r > 0)
        return srv_respond(j, c, a.status, a.ctype, a.body, a.len, free, 0);
    struct execbox_error err = {0};
    if (runner_job_init(&j->rj, &err) < 0)
        return srv_respond_error(j, c, 503, "unavailable", err.msg, NULL, 1);
    /* Code an E2B call runs (an execute, a command) counts in the tenant's max_runs. */
    if (e2b_op_streams(j->e2b.op) && !count_run(s, j))
        return quota_answer(j, c);
    /* The calls on one context take turns, in order (E2B queues a busy context's cells). */
    j->rj.serial = e2b_call_serial(&j->e2b);
    return job_queue(s, j, c);
}

/* The body is in: validate it and queue the job. */
static enum MHD_Result submit(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    if (j->body.too_large) {
        char msg[96];
        snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes", j->body.max);
        return srv_respond_error(j, c, 413, "payload_too_large", msg, NULL, 0);
    }
    if (j->body.ctype_not_json && j->body.len > 0)
        return srv_respond_error(j, c, 415, "unsupported_media_type",
                                 "the body must be sent as application/json", NULL, 0);
    if (j->req.op == OP_E2B)
        return e2b_submit(s, j, c);
    enum MHD_Result ret = MHD_YES;
    if ((j->req.op == OP_RUN || j->req.op == OP_CREATE || j->req.op == OP_CELL) &&
        !v1_parse_body(s, j, c, &ret))
        return ret;
    if (j->req.op != OP_FILE_PUT) {
        free(j->body.data);
        j->body.data = NULL;
    }
    struct execbox_error err = {0};
    if (runner_job_init(&j->rj, &err) < 0)
        return srv_respond_error(j, c, 503, "unavailable", err.msg, NULL, 1);
    if ((j->req.op == OP_RUN || j->req.op == OP_CELL) && !count_run(s, j))
        return quota_answer(j, c);
    if (j->req.op == OP_CELL) {
        /* One cell at a time, decided now rather than when a worker takes it. */
        int r = sess_cell_begin(j->sess);
        if (r == -EBUSY) {
            srv_run_uncount(s, j);
            return srv_respond_error(j, c, 409, "session_busy",
                                     "a cell is already running in this session", NULL, 0);
        }
        if (r < 0) {
            srv_run_uncount(s, j);
            return srv_respond_error(j, c, 404, "session_not_found", "the session has ended", NULL,
                                     0);
        }
        j->cell_claimed = true;
    }
    return job_queue(s, j, c);
}

enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *data_size, void **con_cls)
{
    (void)version;
    struct srv *s = cls;
    struct job *j = *con_cls;
    if (!j) {
        j = job_new(s, c, url, method);
        if (!j)
            return MHD_NO;
        *con_cls = j;
        return first_call(s, j, c, url);
    }
    if (*data_size) {
        size_t n = *data_size;
        *data_size = 0;
        if (j->state == J_READING)
            return upload(s, j, data, n);
        /* The body of a request that is answered without it: thrown away, up to a point. */
        j->body.discarded += n;
        return j->body.discarded > SRV_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (j->state == J_READING)
        return submit(s, j, c);
    if (j->state == J_NEW)
        return answer_now(s, j, c);
    pthread_mutex_lock(&j->lock);
    enum MHD_Result ret = MHD_YES;
    if (j->state == J_DONE && !j->req.sse && j->answer.fd >= 0) {
        int fd = j->answer.fd;
        j->answer.fd = -1;
        ret = srv_respond_file(j, c, j->answer.ctype ? j->answer.ctype : "application/octet-stream",
                               fd, j->answer.fd_size);
    } else if (j->state == J_DONE && !j->req.sse) {
        char *body = j->answer.body;
        j->answer.body = NULL;
        if (!body)
            ret = MHD_NO;
        else
            ret =
                srv_respond(j, c, j->status, j->answer.ctype ? j->answer.ctype : "application/json",
                            body, j->answer.len, j->answer.free_fn, j->answer.retry);
    }
    pthread_mutex_unlock(&j->lock);
    return ret;
}

void srv_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)c;
    struct srv *s = cls;
    struct job *j = *con_cls;
    if (!j)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&j->lock);
    j->conn = NULL;
    j->suspended = false;
    bool live = j->state == J_QUEUED || j->state == J_RUNNING;
    if (live) /* a streaming client hung up mid-run */
        __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
    int status = j->status;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
        (j->client_gone || toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT ||
         toe == MHD_REQUEST_TERMINATED_READ_ERROR || status == 0))
        status = 499;
    if (j->client_gone)
        status = 499;
    bool accepted = j->accepted;
    pthread_mutex_unlock(&j->lock);
    if (live)
        runner_cancel(s->runner, &j->rj);

    srv_metrics_status(&s->metrics, status);
    if (j->req.route == R_EXECUTE)
        srv_metrics_latency(&s->metrics, (double)(srv_now_ns() - j->req.t0_ns) / 1e9);
    srv_access_log(j, status);
    if (accepted) {
        pthread_mutex_lock(&s->lock);
        s->pending--;
        pthread_mutex_unlock(&s->lock);
    }
    job_unref(j);
}

/* libmicrohttpd's unescaping of the path: none. route() decodes a file's path itself, once,
 * and then validates it (a decoded "%00" or "%2e%2e" must be seen, not cut or resolved). */
size_t srv_keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}
