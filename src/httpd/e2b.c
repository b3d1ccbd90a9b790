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
#include "e2b_api.h"
#include "e2b_envd.h"
#include "e2b_lines.h"
#include "request.h"

/* The working directory a context reports: the session's, /workspace. */
#define E2B_CWD "/workspace"
#define E2B_TEXT "text/plain; charset=utf-8"

struct e2b_ctx {
    char id[E2B_ID_SIZE];
    char sess_id[SESS_ID_SIZE];     /* its session now; "" while starting */
    const char *language;           /* canonical, static */
    bool is_default;                /* the language's default context (of its owner) */
    char owner[SESS_OWNER_MAX + 1]; /* the tenant whose it is ("" none) */
    char sandbox[E2B_SBX_ID_SIZE];  /* the E2B sandbox it is of ("" the tenant's shared scope) */
    bool starting;                  /* a worker is making its session */
    bool doomed;     /* its sandbox was killed while it was starting: the worker ends it */
    uint64_t hidden; /* cells of ours its session ran (env_vars, commands) */
    struct e2b_ctx *next;
};

struct e2b {
    struct e2b_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t started;          /* a context's session was made, or its making failed */
    struct e2b_sandboxes *sandboxes; /* e2b_api.c's, with a lock of its own */
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
    if (e2b_sandboxes_new(&e->sandboxes) < 0) {
        free(e);
        if (err) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "e2b: out of memory");
        }
        return -ENOMEM;
    }
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->started, NULL);
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
    e2b_sandboxes_free(e->sandboxes);
    pthread_cond_destroy(&e->started);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return NULL;
}

struct e2b_sandboxes *e2b_sandboxes_of(struct e2b *e)
{
    return e->sandboxes;
}

const struct execbox_policy *e2b_policy_of(struct e2b *e)
{
    return e->cfg.policy;
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
    static const char *const routes[] = {"execute",   "contexts",    "health", "files",
                                         E2B_ENVD_FS, E2B_ENVD_PROC, "v2",     "sandboxes"};
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
    if (er < 0)
        er = e2b_api_route(method, sub, call, ret_allow);
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
    return op == E2B_OP_HEALTH || op == E2B_OP_LIST || op == E2B_OP_DELETE ||
           (e2b_api_op(op) && !e2b_api_has_body(op));
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

int e2b_json_answer(struct e2b_answer *a, int status, json_t *o)
{
    return json_answer(a, status, o);
}

int e2b_empty_answer(struct e2b_answer *a, int status)
{
    return empty_answer(a, status);
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

static struct e2b_ctx *add_ctx(struct e2b *e, const struct e2b_call *call, const char *language,
                               bool is_default)
{
    struct e2b_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    new_id(c->id);
    snprintf(c->owner, sizeof(c->owner), "%s", call->owner);
    snprintf(c->sandbox, sizeof(c->sandbox), "%s", call->sandbox);
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
    struct sess *s = sess_get_owned(e->cfg.sessions, c->sess_id, c->owner);
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

/* Whether the context is in the call's scope: its tenant's, and its sandbox's. */
static bool ctx_ours(const struct e2b_ctx *c, const struct e2b_call *call)
{
    return strcmp(c->owner, call->owner) == 0 && strcmp(c->sandbox, call->sandbox) == 0;
}

/* The call's context of that id: another tenant's or sandbox's is as unknown as none. */
static struct e2b_ctx *find_ctx(struct e2b *e, const struct e2b_call *call, const char *id)
{
    for (struct e2b_ctx *c = e->head; c; c = c->next)
        if (strcmp(c->id, id) == 0 && ctx_ours(c, call))
            return c;
    return NULL;
}

static struct e2b_ctx *find_default(struct e2b *e, const struct e2b_call *call,
                                    const char *language)
{
    for (struct e2b_ctx *c = e->head; c; c = c->next)
        if (c->is_default && strcmp(c->language, language) == 0 && ctx_ours(c, call))
            return c;
    return NULL;
}

void e2b_call_owner(struct e2b_call *call, const char *owner, size_t owner_max)
{
    snprintf(call->owner, sizeof(call->owner), "%s", owner ? owner : "");
    call->owner_max = owner_max;
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

void e2b_end_sandbox_contexts(struct e2b *e, const char *owner, const char *sandbox)
{
    /* Unlisted under the lock; their sessions end after it, on the registry's thread. */
    size_t n = 0, cap = 0;
    char(*sids)[SESS_ID_SIZE] = NULL;
    pthread_mutex_lock(&e->lock);
    for (struct e2b_ctx *c = e->head, *next; c; c = next) {
        next = c->next;
        if (strcmp(c->owner, owner) != 0 || strcmp(c->sandbox, sandbox) != 0)
            continue;
        if (c->starting) {
            c->doomed = true; /* the worker making it holds it */
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 8;
            void *p = realloc(sids, ncap * sizeof(*sids));
            if (!p)
                break; /* left listed: it ends at its idle timeout */
            sids = p;
            cap = ncap;
        }
        snprintf(sids[n++], SESS_ID_SIZE, "%s", c->sess_id);
        unlink_ctx(e, c);
    }
    pthread_mutex_unlock(&e->lock);
    for (size_t i = 0; i < n; i++)
        sess_remove(e->cfg.sessions, sids[i], NULL, NULL);
    free(sids);
}

int e2b_answer(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret)
{
    if (e2b_api_op(call->op))
        return e2b_api_answer(e, call, NULL, 0, ret);
    int er = e2b_api_enter(e, call, ret);
    if (er)
        return er < 0 ? er : 0;
    if (call->op == E2B_OP_HEALTH)
        return json_answer(ret, 200, json_string("OK"));
    if (call->op == E2B_OP_LIST) {
        json_t *a = json_array();
        pthread_mutex_lock(&e->lock);
        sweep(e);
        for (struct e2b_ctx *c = e->head; c && a; c = c->next)
            if (ctx_ours(c, call) && json_array_append_new(a, ctx_json(c)) < 0) {
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
    struct e2b_ctx *c = find_ctx(e, call, call->id);
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

/* What a call does with its context's cell: nothing (files), take it at once or be refused
 * (a command: a background one may hold the cell for long), or wait its turn (a cell). */
enum claim { CLAIM_NONE, CLAIM_NOW, CLAIM_TURN };

static int claim_context(struct e2b *e, struct e2b_call *call, const char *ctx_id,
                         const char *language, enum claim how, struct e2b_answer *ret);

static int prepare_execute(struct e2b *e, struct e2b_call *call, json_t *o, struct e2b_answer *ret)
{
    json_t *code = json_object_get(o, "code");
    if (!json_is_string(code))
        return text_answer(ret, 400, "code: required, a string");
    if (json_string_length(code) > EXECBOX_CODE_MAX)
        return text_answer(ret, 400, "code: larger than the maximum of %u MiB",
                           EXECBOX_CODE_MAX >> 20);
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
    return claim_context(e, call, ctx_id, language, CLAIM_TURN, ret);
}

/* Finds the context a call works in (ctx_id's, or the language's default one, added when there
 * is none) and takes a reference to its session (call->sess) and, for CLAIM_NOW, its cell. A
 * context still to be made is left in call->ctx with call->create, for the worker. A CLAIM_TURN
 * call takes no cell here: the cells of one context wait their turn in the runner
 * (e2b_call_serial), behind the call that makes it, and take the cell when it comes
 * (e2b_context_ready). 0, or 1 with the answer in *ret. */
static int claim_context(struct e2b *e, struct e2b_call *call, const char *ctx_id,
                         const char *language, enum claim how, struct e2b_answer *ret)
{
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = NULL;
    if (ctx_id) {
        c = find_ctx(e, call, ctx_id);
        if (c && !ctx_live(e, c, &call->sess))
            c = NULL;
        if (!c) {
            pthread_mutex_unlock(&e->lock);
            return text_answer(ret, 404, "Context %.64s not found", ctx_id);
        }
    } else {
        c = find_default(e, call, language);
        if (c && !ctx_live(e, c, &call->sess))
            c = NULL; /* expired: a new default context takes its place */
        if (!c) {
            if (e->n >= E2B_CONTEXTS_MAX)
                sweep(e);
            c = e->n < E2B_CONTEXTS_MAX ? add_ctx(e, call, language, true) : NULL;
            if (!c) {
                pthread_mutex_unlock(&e->lock);
                return text_answer(ret, 429, "too many contexts");
            }
            call->create = true;
        }
    }
    if (c->starting && !call->create && how != CLAIM_TURN) {
        pthread_mutex_unlock(&e->lock);
        return text_answer(ret, 409, "Context %s is starting", c->id);
    }
    call->ctx = call->create ? c : NULL; /* a live context may be deleted under the call */
    snprintf(call->ctx_id, sizeof(call->ctx_id), "%s", c->id);
    int r = 0;
    if (!call->create && how == CLAIM_NOW) {
        int b = sess_cell_begin(call->sess);
        if (b == -EBUSY)
            r = text_answer(ret, 409, "Context %s is running a cell (one at a time)", c->id);
        else if (b < 0)
            r = text_answer(ret, 404, "Context %s not found", c->id);
        else
            call->claimed = true;
    }
    call->queued_cell = !call->create && how == CLAIM_TURN;
    pthread_mutex_unlock(&e->lock);
    return r;
}

const char *e2b_call_serial(const struct e2b_call *call)
{
    /* Not a restart: it aborts the cell that runs rather than wait behind it. Not a command: a
     * background one holds the cell for as long as it runs, so a command is refused at once. */
    bool turns = call->op == E2B_OP_EXECUTE || call->op == E2B_OP_CREATE;
    return turns && call->ctx_id[0] ? call->ctx_id : NULL;
}

/* A queued cell's turn has come: the context's session now (a restart may have replaced it
 * while the call waited; one in progress is waited for) and its cell. 0, or an HTTP status with
 * the message in err. */
static int claim_turn(struct e2b *e, struct e2b_call *call, struct execbox_error *err)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += E2B_RESTART_WAIT_S;
    struct sess *s = NULL, *old = call->sess;
    int status = 0;
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = find_ctx(e, call, call->ctx_id);
    while (c && c->starting && pthread_cond_timedwait(&e->started, &e->lock, &dl) != ETIMEDOUT)
        c = find_ctx(e, call, call->ctx_id);
    if (c && c->starting) {
        status = 409;
        snprintf(err->msg, sizeof(err->msg), "Context %s is still starting", call->ctx_id);
    } else if (!c || !ctx_live(e, c, &s)) {
        status = 404;
        snprintf(err->msg, sizeof(err->msg),
                 "Context %s not found (it ended while the call waited)", call->ctx_id);
    } else {
        int b = sess_cell_begin(s);
        if (b < 0) {
            status = b == -EBUSY ? 409 : 404;
            snprintf(err->msg, sizeof(err->msg),
                     b == -EBUSY ? "Context %s is running a cell" : "Context %s not found",
                     call->ctx_id);
        } else {
            call->sess = s;
            s = old;
            call->claimed = true;
            call->queued_cell = false;
        }
    }
    pthread_mutex_unlock(&e->lock);
    sess_put(s);
    return status;
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
    struct e2b_ctx *c = e->n < E2B_CONTEXTS_MAX ? add_ctx(e, call, language, false) : NULL;
    pthread_mutex_unlock(&e->lock);
    if (!c)
        return text_answer(ret, 429, "too many contexts");
    call->ctx = c;
    call->create = true;
    snprintf(call->ctx_id, sizeof(call->ctx_id), "%s", c->id);
    return 0;
}

static int prepare_restart(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret)
{
    pthread_mutex_lock(&e->lock);
    /* A context whose session expired may still be restarted: it is only looked up. */
    struct e2b_ctx *c = find_ctx(e, call, call->id);
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
    if (e2b_api_op(call->op)) {
        int ar = e2b_api_answer(e, call, body, len, ret);
        return ar < 0 ? ar : 1;
    }
    int er = e2b_api_enter(e, call, ret);
    if (er)
        return er;
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
    struct sess_options so = {.language = c->language,
                              .policy = e->cfg.policy,
                              .surface = "e2b",
                              .owner = c->owner,
                              .owner_max = call->owner_max};
    struct sess *s = NULL;
    int r = sess_create(e->cfg.sessions, &so, &s, err);
    pthread_mutex_lock(&e->lock);
    bool doomed = r == 0 && c->doomed;
    char made[SESS_ID_SIZE] = "";
    if (doomed) {
        /* Its sandbox was killed meanwhile: the session goes with it. */
        snprintf(made, sizeof(made), "%s", sess_id(s));
        unlink_ctx(e, c);
    } else if (r < 0) {
        unlink_ctx(e, c);
    } else {
        snprintf(c->sess_id, sizeof(c->sess_id), "%s", sess_id(s));
        c->starting = false;
        c->hidden = 0;
    }
    pthread_cond_broadcast(&e->started); /* calls waiting for a restart (claim_turn) */
    pthread_mutex_unlock(&e->lock);
    if (doomed) {
        sess_put(s);
        sess_remove(e->cfg.sessions, made, NULL, NULL);
        snprintf(err->msg, sizeof(err->msg), "the sandbox was killed");
        call->ctx = NULL;
        call->create = false;
        return 404;
    }
    call->ctx = NULL;
    call->create = false;
    if (r < 0) {
        if (r == -EAGAIN || r == -EDQUOT)
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
    return claim_context(e, call, NULL, "python", cell ? CLAIM_NOW : CLAIM_NONE, ret);
}

uint64_t e2b_hidden_cells(struct e2b *e, struct e2b_call *call, uint64_t n)
{
    uint64_t v = 0;
    pthread_mutex_lock(&e->lock);
    struct e2b_ctx *c = find_ctx(e, call, call->ctx_id);
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
        return cell && call->queued_cell ? claim_turn(e, call, err) : 0;
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
        e2b_send_error(st, "SandboxError", err.msg[0] ? err.msg : "the context could not start",
                       "");
        e2b_send_end(st, 0, false);
        return;
    }
    if (call->env_setup && run_hidden(e, call, call->env_setup, cancel, &err) < 0) {
        sess_cell_end(call->sess, NULL);
        call->claimed = false;
        e2b_send_error(st, "SandboxError", err.msg, "");
        e2b_send_end(st, 0, false);
        return;
    }
    const struct execbox_policy *pol = sess_policy(call->sess);
    st->limit = pol->output_limit ? pol->output_limit : EXECBOX_DEFAULT_OUTPUT_LIMIT;
    struct execbox_request req = {
        .code = call->code_len ? call->code : "\n",
        .code_len = call->code_len ? call->code_len : 1,
        .on_output = e2b_on_output,
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
    e2b_flush_pending(st, 0);
    e2b_flush_pending(st, 1);
    if (r < 0) {
        e2b_send_error(st, r == -ESHUTDOWN || r == -ETIMEDOUT ? "ContextEnded" : "SandboxError",
                       err.msg[0] ? err.msg : execbox_strerror(r), "");
        e2b_send_end(st, 0, false);
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
        e2b_slow_note(note, sizeof(note), st->dropped);
        e2b_send_log(st, 1, note, strlen(note), true);
    }
    for (size_t i = 0; i < res->n_results; i++)
        e2b_send_result(st, &res->results[i]);
    e2b_send_cell_error(st, res, pol->timeout > 0 ? pol->timeout : EXECBOX_DEFAULT_TIMEOUT);
    /* The count of the client's cells, not of ours. */
    e2b_send_end(st, res->execution_count > hidden ? res->execution_count - hidden : 0, true);
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
    free(call->sbx_header);
    free(call->sbx_token);
    memset(call, 0, sizeof(*call));
}
