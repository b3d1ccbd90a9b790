/* SPDX-License-Identifier: MIT */
/* e2b.c - E2B's code-interpreter wire over execbox sessions (see e2b.h, docs/e2b.md): the
 * routes, the request bodies, a table from context ids to registry sessions (under one lock,
 * taken outside the registry's), and a cell's output and result as E2B's NDJSON lines. */
#include "e2b.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/io.h"
#include "e2b_envd.h"
#include "request.h"

/* The working directory a context reports: the session's, /workspace. */
#define E2B_CWD "/workspace"
#define E2B_TEXT "text/plain; charset=utf-8"
/* A partial output line waits for its end up to this size (or the cell's end). */
#define E2B_LINE_MAX 4096

struct e2b_ctx {
    char id[E2B_ID_SIZE];
    char sess_id[SESS_ID_SIZE]; /* its session now; "" while starting */
    const char *language;       /* canonical, static */
    bool is_default;            /* the language's default context */
    bool starting;              /* a worker is making its session */
    uint64_t hidden;            /* cells of ours its session ran (env_vars, commands) */
    struct e2b_ctx *next;
};

struct e2b {
    struct e2b_config cfg;
    pthread_mutex_t lock;
    struct e2b_ctx *head;
    size_t n;
};

int e2b_new(const struct e2b_config *cfg, struct e2b **ret, struct execbox_error *err)
{
    struct e2b *e = calloc(1, sizeof(*e));
    if (!e) {
        if (err) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "e2b: out of memory");
        }
        return -ENOMEM;
    }
    e->cfg = *cfg;
    pthread_mutex_init(&e->lock, NULL);
    *ret = e;
    return 0;
}

struct e2b *e2b_free(struct e2b *e)
{
    if (!e)
        return NULL;
    while (e->head) {
        struct e2b_ctx *c = e->head;
        e->head = c->next;
        free(c);
    }
    pthread_mutex_destroy(&e->lock);
    free(e);
    return NULL;
}

/* ---- paths and routes -------------------------------------------------------------------- */

enum e2b_match e2b_match_path(const char *path, const char *token, const char **ret_sub,
                              char *shown, size_t shown_size)
{
    static const char prefix[] = "/e2b";
    size_t pl = sizeof(prefix) - 1;
    if (strncmp(path, prefix, pl) != 0 || (path[pl] != '/' && path[pl] != '\0'))
        return E2B_NOT_OURS;
    const char *rest = path + pl; /* "" or "/..." */
    if (!token || !*token) {
        *ret_sub = *rest ? rest : "/";
        snprintf(shown, shown_size, "%s", path);
        return E2B_OURS;
    }
    const char *seg = *rest ? rest + 1 : rest;
    size_t sl = strcspn(seg, "/");
    char first[256];
    if (sl < sizeof(first)) {
        memcpy(first, seg, sl);
        first[sl] = '\0';
        if (srv_token_equal(first, token)) {
            *ret_sub = seg[sl] ? seg + sl : "/";
            snprintf(shown, shown_size, "/e2b/***%s", seg + sl);
            return E2B_OURS;
        }
    }
    /* Not the token: a route (for a caller with the bearer header), or a wrong token, which
     * must not reach the log. */
    *ret_sub = *rest ? rest : "/";
    static const char *const routes[] = {"execute", "contexts",  "health",
                                         "files",   E2B_ENVD_FS, E2B_ENVD_PROC};
    bool route = false;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        route |= strlen(routes[i]) == sl && strncmp(seg, routes[i], sl) == 0;
    if (route)
        snprintf(shown, shown_size, "%s", path);
    else
        snprintf(shown, shown_size, "/e2b/***%s", seg + sl);
    return E2B_NO_TOKEN;
}

/* A context id in a path: what we hand out, a UUID's characters. */
static bool id_ok(const char *s, size_t n)
{
    if (n == 0 || n >= E2B_ID_SIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

int e2b_route(const char *method, const char *sub, struct e2b_call *call, const char **ret_allow)
{
    int er = e2b_envd_route(method, sub, call, ret_allow);
    if (er >= 0)
        return er;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;
    if (strcmp(sub, "/health") == 0) {
        call->op = E2B_OP_HEALTH;
        *ret_allow = "GET, HEAD";
        return get ? 0 : 405;
    }
    if (strcmp(sub, "/execute") == 0) {
        call->op = E2B_OP_EXECUTE;
        *ret_allow = "POST";
        return post ? 0 : 405;
    }
    if (strcmp(sub, "/contexts") == 0) {
        *ret_allow = "GET, HEAD, POST";
        call->op = post ? E2B_OP_CREATE : E2B_OP_LIST;
        return get || post ? 0 : 405;
    }
    static const char ctxs[] = "/contexts/";
    if (strncmp(sub, ctxs, sizeof(ctxs) - 1) != 0)
        return 404;
    const char *id = sub + sizeof(ctxs) - 1;
    size_t n = strcspn(id, "/");
    if (!id_ok(id, n))
        return 404;
    memcpy(call->id, id, n);
    call->id[n] = '\0';
    if (id[n] == '\0') {
        call->op = E2B_OP_DELETE;
        *ret_allow = "DELETE";
        return strcmp(method, "DELETE") == 0 ? 0 : 405;
    }
    if (strcmp(id + n, "/restart") == 0) {
        call->op = E2B_OP_RESTART;
        *ret_allow = "POST";
        return post ? 0 : 405;
    }
    call->op = E2B_OP_NONE;
    return 404;
}

bool e2b_op_immediate(enum e2b_op op)
{
    return op == E2B_OP_HEALTH || op == E2B_OP_LIST || op == E2B_OP_DELETE;
}

bool e2b_op_streams(enum e2b_op op)
{
    return op == E2B_OP_EXECUTE || op == E2B_OP_PROC_START;
}

bool e2b_op_json_body(enum e2b_op op)
{
    return !e2b_envd_op(op) || e2b_envd_json_body(op);
}

const char *e2b_stream_ctype(enum e2b_op op)
{
    return e2b_envd_op(op) ? E2B_CONNECT_STREAM_CTYPE : "application/x-ndjson";
}

/* ---- answers ----------------------------------------------------------------------------- */

/* E2B's server answers errors as plain text. */
__attribute__((format(printf, 3, 4))) static int text_answer(struct e2b_answer *a, int status,
                                                             const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* A message may quote the request, cut anywhere. */
    char *clean = execbox_utf8_sanitize(msg, strlen(msg), NULL, NULL);
    *a = (struct e2b_answer){.status = status, .ctype = E2B_TEXT};
    if (!clean)
        return -ENOMEM;
    a->body = strdup(clean);
    execbox_free(clean);
    if (!a->body)
        return -ENOMEM;
    a->len = strlen(a->body);
    return 1;
}

static int json_answer(struct e2b_answer *a, int status, json_t *o)
{
    *a = (struct e2b_answer){.status = status, .ctype = "application/json"};
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                    JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    a->body = s;
    a->len = strlen(s);
    return 0;
}

static int empty_answer(struct e2b_answer *a, int status)
{
    *a = (struct e2b_answer){.status = status, .ctype = E2B_TEXT, .body = strdup("")};
    return a->body ? 0 : -ENOMEM;
}

/* ---- the context table (e->lock held) ----------------------------------------------------- */

static void new_id(char *buf)
{
    unsigned char b[16] = {0};
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        memcpy(b, &ts, sizeof(ts) < sizeof(b) ? sizeof(ts) : sizeof(b));
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(buf, E2B_ID_SIZE,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

static void unlink_ctx(struct e2b *e, struct e2b_ctx *c)
{
    for (struct e2b_ctx **p = &e->head; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            e->n--;
            free(c);
            return;
        }
}

static struct e2b_ctx *add_ctx(struct e2b *e, const char *language, bool is_default)
{
    struct e2b_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    new_id(c->id);
    c->language = language;
    c->is_default = is_default;
    c->starting = true;
    struct e2b_ctx **p = &e->head;
    while (*p)
        p = &(*p)->next;
    *p = c;
    e->n++;
    return c;
}

/* Whether the context still has a live session; a context whose session expired or ended is
 * dropped (its id answers 404 from now on). Returns a reference in *ret_sess when asked. */
static bool ctx_live(struct e2b *e, struct e2b_ctx *c, struct sess **ret_sess)
{
    if (c->starting)
        return true;
    struct sess *s = sess_get(e->cfg.sessions, c->sess_id);
    if (!s) {
        unlink_ctx(e, c);
        return false;
    }
    if (ret_sess)
        *ret_sess = s;
    else
        sess_put(s);
    return true;
}

static struct e2b_ctx *find_ctx(struct e2b *e, const char *id)
{
    for (struct e2b_ctx *c = e->head; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

static struct e2b_ctx *find_default(struct e2b *e, const char *language)
{
    for (struct e2b_ctx *c = e->head; c; c = c->next)
        if (c->is_default && strcmp(c->language, language) == 0)
            return c;
    return NULL;
}

/* Drops entries of sessions that are gone, so that the table holds no more than is live. */
static void sweep(struct e2b *e)
{
    for (struct e2b_ctx *c = e->head, *next; c; c = next) {
        next = c->next;
        ctx_live(e, c, NULL);
    }
}

/* ---- immediate ops ----------------------------------------------------------------------- */

static json_t *ctx_json(const struct e2b_ctx *c)
{
    return json_pack("{s:s, s:s, s:s}", "id", c->id, "language", c->language, "cwd", E2B_CWD);
}

int e2b_answer(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret)
{
    if (call->op == E2B_OP_HEALTH)
        return json_answer(ret, 200, json_string("OK"));
    if (call->op == E2B_OP_LIST) {
        json_t *a = json_array();
        pthread_mutex_lock(&e->lock);
        sweep(e);
        for (struct e2b_ctx *c = e->head; c && a; c = c->next)
            if (json_array_append_new(a, ctx_json(c)) < 0) {
                json_decref(a);
                a = NULL;
            }
        pthread_mutex_unlock(&e->lock);
        return json_answer(ret, 200, a);
    }
    if (call->op != E2B_OP_DELETE)
        return text_answer(ret, 404, "Not Found") < 0 ? -ENOMEM : 0;
    char sid[SESS_ID_SIZE] = "";
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = find_ctx(e, call->id);
    bool found = c && ctx_live(e, c, NULL);
    bool starting = found && c->starting;
    if (found && !starting) {
        snprintf(sid, sizeof(sid), "%s", c->sess_id);
        unlink_ctx(e, c);
    }
    pthread_mutex_unlock(&e->lock);
    int r;
    if (!found)
        r = text_answer(ret, 404, "Context %s not found", call->id);
    else if (starting)
        r = text_answer(ret, 409, "Context %s is starting", call->id);
    else {
        /* Unlisted now; ended and freed on the registry's thread. */
        sess_remove(e->cfg.sessions, sid, NULL, NULL);
        r = empty_answer(ret, 204);
    }
    return r < 0 ? -ENOMEM : 0;
}

/* ---- bodies ------------------------------------------------------------------------------ */

/* E2B's normalize_language, then ours ("js" -> "javascript"). NULL when unknown. */
static const char *language_of(const char *name)
{
    char low[32];
    while (*name == ' ' || *name == '\t')
        name++;
    size_t n = strlen(name);
    while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
        n--;
    if (n == 0)
        return "python";
    if (n >= sizeof(low))
        return NULL;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    return execbox_language_name(low);
}

static json_t *load_object(const char *body, size_t len, struct e2b_answer *ret, int *rc)
{
    if (len == 0) {
        *rc = text_answer(ret, 400, "the body must be a JSON object");
        return NULL;
    }
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        *rc = text_answer(ret, 400, "the body must be a JSON object%s%s", o ? "" : ": ",
                          o ? "" : je.text);
        return NULL;
    }
    return o;
}

/* A field that is absent or null reads as NULL; another type is refused. */
static int opt_string(json_t *o, const char *key, const char **ret, struct e2b_answer *a)
{
    json_t *v = json_object_get(o, key);
    *ret = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return text_answer(a, 400, "%s: expected a string", key);
    *ret = json_string_value(v);
    return 0;
}

static int claim_context(struct e2b *e, struct e2b_call *call, const char *ctx_id,
                         const char *language, bool cell, struct e2b_answer *ret);

static int prepare_execute(struct e2b *e, struct e2b_call *call, json_t *o, struct e2b_answer *ret)
{
    json_t *code = json_object_get(o, "code");
    if (!json_is_string(code))
        return text_answer(ret, 400, "code: required, a string");
    if (json_string_length(code) > EXECBOX_CODE_MAX)
        return text_answer(ret, 400, "code: larger than the maximum of 16 MiB");
    const char *ctx_id, *lang_name;
    int r;
    if ((r = opt_string(o, "context_id", &ctx_id, ret)) ||
        (r = opt_string(o, "language", &lang_name, ret)))
        return r;
    json_t *env = json_object_get(o, "env_vars");
    if (env && !json_is_null(env) && !json_is_object(env))
        return text_answer(ret, 400, "env_vars: expected an object of strings");
    if (json_object_size(env)) {
        char msg[160];
        r = e2b_envd_env_cells(env, &call->env_setup, &call->env_restore, msg, sizeof(msg));
        if (r == -EINVAL)
            return text_answer(ret, 400, "%s", msg);
        if (r < 0)
            return r;
    }
    if (ctx_id && lang_name)
        return text_answer(ret, 400, "Only one of context_id or language can be provided");
    const char *language = lang_name ? language_of(lang_name) : "python";
    if (!language)
        return text_answer(ret, 400, "language: '%.32s' is not supported", lang_name);
    call->code_len = json_string_length(code);
    call->code = malloc(call->code_len + 1);
    if (!call->code)
        return -ENOMEM;
    memcpy(call->code, json_string_value(code), call->code_len + 1);
    return claim_context(e, call, ctx_id, language, true, ret);
}

/* Finds the context a call works in (ctx_id's, or the language's default one, added when there
 * is none) and takes a reference to its session (call->sess) and, when cell, its cell. A context
 * still to be made is left in call->ctx with call->create, for the worker. 0, or 1 with the
 * answer in *ret. */
static int claim_context(struct e2b *e, struct e2b_call *call, const char *ctx_id,
                         const char *language, bool cell, struct e2b_answer *ret)
{
    int r;
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = NULL;
    if (ctx_id) {
        c = find_ctx(e, ctx_id);
        if (c && !ctx_live(e, c, &call->sess))
            c = NULL;
        if (!c) {
            pthread_mutex_unlock(&e->lock);
            return text_answer(ret, 404, "Context %.64s not found", ctx_id);
        }
    } else {
        c = find_default(e, language);
        if (c && !ctx_live(e, c, &call->sess))
            c = NULL; /* expired: a new default context takes its place */
        if (!c) {
            if (e->n >= E2B_CONTEXTS_MAX)
                sweep(e);
            c = e->n < E2B_CONTEXTS_MAX ? add_ctx(e, language, true) : NULL;
            if (!c) {
                pthread_mutex_unlock(&e->lock);
                return text_answer(ret, 429, "too many contexts");
            }
            call->create = true;
        }
    }
    if (c->starting && !call->create) {
        pthread_mutex_unlock(&e->lock);
        return text_answer(ret, 409, "Context %s is starting", c->id);
    }
    call->ctx = call->create ? c : NULL; /* a live context may be deleted under the call */
    snprintf(call->ctx_id, sizeof(call->ctx_id), "%s", c->id);
    r = 0;
    if (!call->create && cell) {
        int b = sess_cell_begin(call->sess);
        if (b == -EBUSY)
            r = text_answer(ret, 409, "Context %s is running a cell (one at a time)", c->id);
        else if (b < 0)
            r = text_answer(ret, 404, "Context %s not found", c->id);
        else
            call->claimed = true;
    }
    pthread_mutex_unlock(&e->lock);
    return r;
}

static int prepare_create(struct e2b *e, struct e2b_call *call, json_t *o, struct e2b_answer *ret)
{
    const char *lang_name, *cwd;
    int r;
    if ((r = opt_string(o, "language", &lang_name, ret)) || (r = opt_string(o, "cwd", &cwd, ret)))
        return r;
    const char *language = lang_name ? language_of(lang_name) : "python";
    if (!language)
        return text_answer(ret, 400, "language: '%.32s' is not supported", lang_name);
    /* The session's cwd is its workspace; E2B's default, /home/user, is taken to mean it. */
    if (cwd && strcmp(cwd, E2B_CWD) != 0 && strcmp(cwd, "/home/user") != 0)
        return text_answer(ret, 400, "cwd: execbox contexts work in %s", E2B_CWD);
    pthread_mutex_lock(&e->lock);
    if (e->n >= E2B_CONTEXTS_MAX)
        sweep(e);
    struct e2b_ctx *c = e->n < E2B_CONTEXTS_MAX ? add_ctx(e, language, false) : NULL;
    pthread_mutex_unlock(&e->lock);
    if (!c)
        return text_answer(ret, 429, "too many contexts");
    call->ctx = c;
    call->create = true;
    return 0;
}

static int prepare_restart(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret)
{
    pthread_mutex_lock(&e->lock);
    /* A context whose session expired may still be restarted: it is only looked up. */
    struct e2b_ctx *c = find_ctx(e, call->id);
    int r = 0;
    if (!c) {
        r = text_answer(ret, 404, "Context %s not found", call->id);
    } else if (c->starting) {
        r = text_answer(ret, 409, "Context %s is starting", call->id);
    } else {
        snprintf(call->old_sess, sizeof(call->old_sess), "%s", c->sess_id);
        c->sess_id[0] = '\0';
        c->starting = true;
        call->ctx = c;
        call->create = true;
    }
    pthread_mutex_unlock(&e->lock);
    return r;
}

int e2b_prepare(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                struct e2b_answer *ret)
{
    if (call->op == E2B_OP_RESTART)
        return prepare_restart(e, call, ret);
    if (e2b_envd_op(call->op))
        return e2b_envd_prepare(e, call, body, len, ret);
    int rc = 0;
    json_t *o = load_object(body, len, ret, &rc);
    if (!o)
        return rc;
    if (call->op == E2B_OP_EXECUTE)
        rc = prepare_execute(e, call, o, ret);
    else if (call->op == E2B_OP_CREATE)
        rc = prepare_create(e, call, o, ret);
    else
        rc = text_answer(ret, 404, "Not Found");
    json_decref(o);
    return rc;
}

/* ---- making a context's session (on a worker) --------------------------------------------- */

/* Makes the session of call->ctx; 0, or an HTTP status with the message in err. */
static int start_context(struct e2b *e, struct e2b_call *call, struct execbox_error *err)
{
    struct e2b_ctx *c = call->ctx;
    /* The session replaced by a restart goes first, so that it does not count twice. */
    if (call->old_sess[0])
        sess_remove(e->cfg.sessions, call->old_sess, NULL, NULL);
    struct sess_options so = {.language = c->language, .policy = e->cfg.policy, .surface = "e2b"};
    struct sess *s = NULL;
    int r = sess_create(e->cfg.sessions, &so, &s, err);
    pthread_mutex_lock(&e->lock);
    if (r < 0) {
        unlink_ctx(e, c);
    } else {
        snprintf(c->sess_id, sizeof(c->sess_id), "%s", sess_id(s));
        c->starting = false;
        c->hidden = 0;
    }
    pthread_mutex_unlock(&e->lock);
    call->ctx = NULL;
    call->create = false;
    if (r < 0) {
        if (r == -EAGAIN)
            return 429;
        if (r == -ESHUTDOWN)
            return 503;
        return r == -ENOTSUP || r == -EINVAL || r == -EPERM ? 400 : 500;
    }
    call->sess = s;
    return 0;
}

int e2b_default_context(struct e2b *e, struct e2b_call *call, bool cell, struct e2b_answer *ret)
{
    return claim_context(e, call, NULL, "python", cell, ret);
}

uint64_t e2b_hidden_cells(struct e2b *e, struct e2b_call *call, uint64_t n)
{
    uint64_t v = 0;
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = find_ctx(e, call->ctx_id);
    if (c) {
        c->hidden += n;
        v = c->hidden;
    }
    pthread_mutex_unlock(&e->lock);
    return v;
}

int e2b_context_ready(struct e2b *e, struct e2b_call *call, bool cell, struct execbox_error *err)
{
    if (!call->create)
        return 0;
    int status = start_context(e, call, err);
    if (status)
        return status;
    if (cell) {
        if (sess_cell_begin(call->sess) < 0) {
            snprintf(err->msg, sizeof(err->msg), "the context ended as it started");
            return 500;
        }
        call->claimed = true;
    }
    return 0;
}

/* ---- lines ------------------------------------------------------------------------------- */

struct stream {
    e2b_push_fn push;
    void *ud;
    uint64_t limit;       /* bytes streamed per output stream: the policy's output_limit */
    uint64_t streamed[2]; /* per stream */
    uint64_t dropped;     /* bytes the client was too slow for */
    bool capped[2];
    char carry[2][4]; /* an incomplete UTF-8 sequence at the end of the last chunk */
    size_t carry_len[2];
    char pend[2][E2B_LINE_MAX]; /* the start of a line whose end has not come yet */
    size_t pend_len[2];
};

/* Sends one object as a line; takes the reference. */
static bool send_line(struct stream *st, json_t *o, bool force)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                : NULL;
    json_decref(o);
    if (!s)
        return false;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return false;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    bool kept = st->push(st->ud, line, n + 1, force);
    if (!kept)
        st->dropped += n + 1;
    free(line);
    return kept;
}

static void send_log(struct stream *st, int k, const char *text, size_t len, bool force)
{
    char t[48];
    cli_iso_time(NULL, 6, t, sizeof(t));
    send_line(st,
              json_pack("{s:s, s:s%, s:s}", "type", k ? "stderr" : "stdout", "text", text, len,
                        "timestamp", t),
              force);
}

static void flush_pending(struct stream *st, int k)
{
    if (st->pend_len[k])
        send_log(st, k, st->pend[k], st->pend_len[k], false);
    st->pend_len[k] = 0;
}

/* Sends clean text as one message per line, as they end; a partial line waits in pend. Pieces
 * are cut only at newlines, so each message is whole UTF-8. */
static void send_lines(struct stream *st, int k, const char *s, size_t n)
{
    while (n) {
        const char *nl = memchr(s, '\n', n);
        size_t take = nl ? (size_t)(nl - s) + 1 : n;
        if (st->pend_len[k] + take <= E2B_LINE_MAX) {
            memcpy(st->pend[k] + st->pend_len[k], s, take);
            st->pend_len[k] += take;
            if (nl)
                flush_pending(st, k);
        } else {
            flush_pending(st, k);
            if (nl || take > E2B_LINE_MAX) {
                send_log(st, k, s, take, false);
            } else {
                memcpy(st->pend[k], s, take);
                st->pend_len[k] = take;
            }
        }
        s += take;
        n -= take;
    }
}

/* The cell's on_output: its output as stdout or stderr lines as each line ends, up to the
 * policy's output_limit per stream, invalid UTF-8 replaced and a sequence split between chunks
 * carried over whole. */
static void on_output(void *ud, enum execbox_stream stream, const char *data, size_t len)
{
    struct stream *st = ud;
    int k = stream == EXECBOX_STREAM_STDERR ? 1 : 0;
    if (st->capped[k])
        return;
    if (st->streamed[k] + len > st->limit) {
        len = (size_t)(st->limit - st->streamed[k]);
        st->capped[k] = true;
    }
    st->streamed[k] += len;
    size_t total = st->carry_len[k] + len;
    char *joined = malloc(total ? total : 1);
    if (!joined)
        return;
    memcpy(joined, st->carry[k], st->carry_len[k]);
    if (len)
        memcpy(joined + st->carry_len[k], data, len);
    size_t keep = 0, clen = 0;
    char *clean = execbox_utf8_sanitize(joined, total, &clen, &keep);
    if (clean) {
        memcpy(st->carry[k], joined + total - keep, keep);
        st->carry_len[k] = keep;
        send_lines(st, k, clean, clen);
        execbox_free(clean);
    }
    free(joined);
    if (st->capped[k]) {
        flush_pending(st, k);
        char note[160];
        snprintf(note, sizeof(note),
                 "\n[execbox: %s past the output_limit of %llu bytes is not streamed]\n",
                 k ? "stderr" : "stdout", (unsigned long long)st->limit);
        send_log(st, 1, note, strlen(note), true);
    }
}

/* E2B's text/plain of a result drops the quotes of a string's repr. */
static json_t *result_text(const char *text)
{
    size_t n = strlen(text);
    if (n >= 2 && (text[0] == '\'' || text[0] == '"') && text[n - 1] == text[0])
        return json_stringn(text + 1, n - 2);
    return json_string(text);
}

static void send_result(struct stream *st, const struct execbox_rich *rich)
{
    json_t *o = json_pack("{s:s}", "type", "result");
    if (!o)
        return;
    if (rich->text)
        json_object_set_new(o, "text", result_text(rich->text));
    const struct {
        const char *key, *val;
    } forms[] = {
        {"html", rich->html},
        {"markdown", rich->markdown},
        {"svg", rich->svg},
        {"png", rich->png},
        {"jpeg", rich->jpeg},
        {"latex", rich->latex},
        {"javascript", rich->javascript},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        if (forms[i].val)
            json_object_set_new(o, forms[i].key, json_string(forms[i].val));
    if (rich->json) {
        /* E2B carries it parsed; text that is not JSON stays a string. */
        json_t *j = json_loads(rich->json, JSON_DECODE_ANY, NULL);
        json_object_set_new(o, "json", j ? j : json_string(rich->json));
    }
    json_object_set_new(o, "is_main_result", json_boolean(rich->is_main_result));
    send_line(st, o, true);
}

static void send_error(struct stream *st, const char *name, const char *value,
                       const char *traceback)
{
    send_line(st,
              json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value",
                        value ? value : "", "traceback", traceback ? traceback : ""),
              true);
}

static void send_end(struct stream *st, uint64_t count, bool with_count)
{
    if (with_count)
        send_line(st,
                  json_pack("{s:s, s:I}", "type", "number_of_executions", "execution_count",
                            (json_int_t)count),
                  true);
    send_line(st, json_pack("{s:s}", "type", "end_of_execution"), true);
}

/* The error execbox gives a run that ended badly without an exception ("Signal", "ExitStatus",
 * with no traceback): E2B names those itself below, as its SDKs know them. */
static bool generic_error(const struct execbox_result *res)
{
    return (!res->error_traceback || !*res->error_traceback) &&
           (strcmp(res->error_name, "Signal") == 0 || strcmp(res->error_name, "ExitStatus") == 0);
}

/* The error line of a cell that did not end normally, or none. */
static void send_cell_error(struct stream *st, const struct execbox_result *res, double timeout)
{
    char value[256];
    if (res->timed_out) {
        snprintf(value, sizeof(value),
                 "Execution timed out after %g s (the server's cell timeout); the context's state "
                 "is as before the cell",
                 timeout);
        send_error(st, "TimeoutError", value, "");
    } else if (res->killed_reason == EXECBOX_KILLED_CANCELLED) {
        /* E2B's name for a cell its kernel did not finish. */
        send_error(st, "ExecutionAborted",
                   "the cell was cancelled: its context was restarted or removed, or the server "
                   "is stopping",
                   "");
    } else if (res->error_name && !generic_error(res)) {
        send_error(st, res->error_name, res->error_value, res->error_traceback);
    } else if (res->oom_killed) {
        send_error(st, "MemoryError",
                   "the cell was killed at the memory limit; the context's state is as before the "
                   "cell",
                   "");
    } else if (res->signal) {
        snprintf(value, sizeof(value), "the cell was killed by signal %d%s", res->signal,
                 res->rolled_back ? "; the context's state is as before the cell" : "");
        send_error(st, "Killed", value, "");
    } else if (res->exit_code != 0) {
        snprintf(value, sizeof(value), "the cell ended with exit status %d%s", res->exit_code,
                 res->rolled_back ? "; the context's state is as before the cell" : "");
        send_error(st, "SystemExit", value, "");
    }
}

/* Runs a cell of ours (env_vars' setup or restore) in the call's claimed cell, its output
 * unseen. 0, or -EIO (or the run's error) with err set. */
static int run_hidden(struct e2b *e, struct e2b_call *call, const char *code,
                      struct execbox_cancel *cancel, struct execbox_error *err)
{
    struct execbox_request req = {.code = code, .cancel = cancel};
    struct execbox_result *res = NULL;
    int r = execbox_session_run(sess_session(call->sess), &req, &res, err);
    if (r < 0)
        return r;
    e2b_hidden_cells(e, call, 1);
    if (res->exit_code != 0 || res->error_name) {
        snprintf(err->msg, sizeof(err->msg), "env_vars: the cell that sets them failed (%s)",
                 res->error_name ? res->error_name : "exit status");
        r = -EIO;
    }
    execbox_result_free(res);
    return r;
}

static void run_execute(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel,
                        struct stream *st, struct e2b_outcome *out)
{
    struct execbox_error err = {0};
    if (e2b_context_ready(e, call, true, &err)) {
        send_error(st, "SandboxError", err.msg[0] ? err.msg : "the context could not start", "");
        send_end(st, 0, false);
        return;
    }
    if (call->env_setup && run_hidden(e, call, call->env_setup, cancel, &err) < 0) {
        sess_cell_end(call->sess, NULL);
        call->claimed = false;
        send_error(st, "SandboxError", err.msg, "");
        send_end(st, 0, false);
        return;
    }
    const struct execbox_policy *pol = sess_policy(call->sess);
    st->limit = pol->output_limit ? pol->output_limit : EXECBOX_DEFAULT_OUTPUT_LIMIT;
    struct execbox_request req = {
        .code = call->code_len ? call->code : "\n",
        .code_len = call->code_len ? call->code_len : 1,
        .on_output = on_output,
        .userdata = st,
        .cancel = cancel,
    };
    struct execbox_result *res = NULL;
    int r = execbox_session_run(sess_session(call->sess), &req, &res, &err);
    uint64_t hidden = e2b_hidden_cells(e, call, 0);
    if (call->env_restore && r == 0) {
        /* The variables were the cell's only: as they were before it (also after a failure). */
        struct execbox_error rerr = {0};
        run_hidden(e, call, call->env_restore, NULL, &rerr);
    }
    sess_cell_end(call->sess, r == 0 ? res : NULL);
    call->claimed = false;
    flush_pending(st, 0);
    flush_pending(st, 1);
    if (r < 0) {
        send_error(st, r == -ESHUTDOWN || r == -ETIMEDOUT ? "ContextEnded" : "SandboxError",
                   err.msg[0] ? err.msg : execbox_strerror(r), "");
        send_end(st, 0, false);
        return;
    }
    *out = (struct e2b_outcome){
        .ran = true,
        .timed_out = res->timed_out,
        .oom_killed = res->oom_killed,
        .cancelled = res->killed_reason == EXECBOX_KILLED_CANCELLED,
        .failed = res->exit_code != 0 || res->error_name,
        .exit_code = res->exit_code,
    };
    if (st->dropped) {
        char note[160];
        snprintf(note, sizeof(note),
                 "\n[execbox: %llu bytes of output were not streamed: the client read too "
                 "slowly]\n",
                 (unsigned long long)st->dropped);
        send_log(st, 1, note, strlen(note), true);
    }
    for (size_t i = 0; i < res->n_results; i++)
        send_result(st, &res->results[i]);
    send_cell_error(st, res, pol->timeout > 0 ? pol->timeout : EXECBOX_DEFAULT_TIMEOUT);
    /* The count of the client's cells, not of ours. */
    send_end(st, res->execution_count > hidden ? res->execution_count - hidden : 0, true);
    execbox_result_free(res);
}

void e2b_run(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel, e2b_push_fn push,
             void *ud, struct e2b_answer *ret, struct e2b_outcome *out)
{
    *out = (struct e2b_outcome){0};
    *ret = (struct e2b_answer){0};
    if (e2b_envd_op(call->op)) {
        e2b_envd_run(e, call, cancel, push, ud, ret, out);
        return;
    }
    if (call->op == E2B_OP_EXECUTE) {
        struct stream st = {.push = push, .ud = ud};
        run_execute(e, call, cancel, &st, out);
        return;
    }
    /* create, restart: make the session */
    struct execbox_error err = {0};
    char id[E2B_ID_SIZE];
    struct e2b_ctx *c = call->ctx;
    snprintf(id, sizeof(id), "%s", c->id);
    const char *language = c->language;
    int status = start_context(e, call, &err);
    if (status) {
        text_answer(ret, status, "%s", err.msg[0] ? err.msg : "the context could not start");
        return;
    }
    if (call->op == E2B_OP_RESTART) {
        empty_answer(ret, 204);
        return;
    }
    json_answer(ret, 200,
                json_pack("{s:s, s:s, s:s}", "id", id, "language", language, "cwd", E2B_CWD));
}

void e2b_call_clear(struct e2b *e, struct e2b_call *call)
{
    if (call->claimed)
        sess_cell_end(call->sess, NULL);
    sess_put(call->sess);
    if (call->create && call->ctx) {
        /* Never ran: the context it was to make is dropped. */
        pthread_mutex_lock(&e->lock);
        unlink_ctx(e, call->ctx);
        pthread_mutex_unlock(&e->lock);
        if (call->old_sess[0])
            sess_remove(e->cfg.sessions, call->old_sess, NULL, NULL);
    }
    e2b_envd_clear(call);
    free(call->code);
    free(call->env_setup);
    free(call->env_restore);
    free(call->query_path);
    free(call->ctype);
    memset(call, 0, sizeof(*call));
}
