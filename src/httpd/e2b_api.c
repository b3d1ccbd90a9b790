/* SPDX-License-Identifier: MIT */
/* e2b_api.c - E2B's control plane for the SDK's Sandbox class (e2b_api.h): a table of sandboxes
 * (id, tenant, access token, template, metadata, start and end) under one lock taken outside
 * e2b.c's, its routes and their JSON answers, and the check that puts every other call in its
 * sandbox. */
#include "e2b_api.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/io.h"
#include "request.h"

#define SBX_TOKEN_SIZE 33   /* 128 random bits in hex */
#define SBX_TEMPLATE_MAX 64 /* the longest templateID kept */
#define SBX_METADATA_MAX 4096

struct sbx {
    char id[E2B_SBX_ID_SIZE];
    char owner[SESS_OWNER_MAX + 1];
    char token[SBX_TOKEN_SIZE];
    char template_id[SBX_TEMPLATE_MAX + 1];
    double started, end; /* Unix time */
    json_t *metadata;    /* an object of strings */
    struct sbx *next;
};

struct e2b_sandboxes {
    pthread_mutex_t lock;
    struct sbx *head;
    size_t n;
};

int e2b_sandboxes_new(struct e2b_sandboxes **ret)
{
    struct e2b_sandboxes *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    *ret = t;
    return 0;
}

static struct sbx *sbx_free(struct sbx *x)
{
    json_decref(x->metadata);
    free(x);
    return NULL;
}

struct e2b_sandboxes *e2b_sandboxes_free(struct e2b_sandboxes *t)
{
    if (!t)
        return NULL;
    for (struct sbx *x = t->head, *next; x; x = next) {
        next = x->next;
        sbx_free(x);
    }
    pthread_mutex_destroy(&t->lock);
    free(t);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n random bytes as 2n lowercase hex digits into out (2n + 1 bytes). */
static int random_hex(char *out, size_t n)
{
    unsigned char b[32];
    if (n > sizeof(b) || getrandom(b, n, 0) != (ssize_t)n)
        return -EIO;
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* ---- routes ------------------------------------------------------------------------------ */

/* A sandbox id in a path: what we hand out, lowercase hex (and the SDK's debug id). */
static bool sbx_id_ok(const char *s, size_t n)
{
    if (n == 0 || n >= E2B_SBX_ID_SIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

int e2b_api_route(const char *method, const char *sub, struct e2b_call *call,
                  const char **ret_allow)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;
    bool v2 = strncmp(sub, "/v2/sandboxes", 13) == 0;
    const char *rest = v2 ? sub + 13 : strncmp(sub, "/sandboxes", 10) == 0 ? sub + 10 : NULL;
    if (!rest || (*rest && *rest != '/'))
        return -1;
    if (!*rest) {
        if (!v2)
            return -1;
        call->op = post ? E2B_OP_SBX_CREATE : E2B_OP_SBX_LIST;
        *ret_allow = "GET, HEAD, POST";
        return get || post ? 0 : 405;
    }
    const char *id = rest + 1;
    size_t n = strcspn(id, "/");
    if (!sbx_id_ok(id, n))
        return 404;
    memcpy(call->id, id, n);
    call->id[n] = '\0';
    const char *tail = id + n;
    if (v2 && strcmp(tail, "/connect") == 0) {
        call->op = E2B_OP_SBX_CONNECT;
        *ret_allow = "POST";
        return post ? 0 : 405;
    }
    if (!v2 && !*tail) {
        bool del = strcmp(method, "DELETE") == 0;
        call->op = del ? E2B_OP_SBX_KILL : E2B_OP_SBX_INFO;
        *ret_allow = "DELETE, GET, HEAD";
        return get || del ? 0 : 405;
    }
    if (!v2 && strcmp(tail, "/timeout") == 0) {
        call->op = E2B_OP_SBX_TIMEOUT;
        *ret_allow = "POST";
        return post ? 0 : 405;
    }
    return 404;
}

bool e2b_api_op(enum e2b_op op)
{
    return op >= E2B_OP_SBX_CREATE && op <= E2B_OP_SBX_KILL;
}

bool e2b_api_has_body(enum e2b_op op)
{
    return op == E2B_OP_SBX_CREATE || op == E2B_OP_SBX_TIMEOUT || op == E2B_OP_SBX_CONNECT;
}

/* ---- the table (t->lock held) ------------------------------------------------------------ */

/* Unlinks the sandboxes that have ended onto *dropped (their contexts end after the lock). */
static void unlink_ended(struct e2b_sandboxes *t, double now, struct sbx **dropped)
{
    for (struct sbx **p = &t->head; *p;) {
        struct sbx *x = *p;
        if (x->end > now) {
            p = &x->next;
            continue;
        }
        *p = x->next;
        t->n--;
        x->next = *dropped;
        *dropped = x;
    }
}

static struct sbx *find_sbx(struct e2b_sandboxes *t, const char *owner, const char *id)
{
    for (struct sbx *x = t->head; x; x = x->next)
        if (strcmp(x->id, id) == 0 && strcmp(x->owner, owner) == 0)
            return x;
    return NULL;
}

/* Ends the contexts of sandboxes taken out of the table, and frees them. No lock held. */
static void end_dropped(struct e2b *e, struct sbx *dropped)
{
    for (struct sbx *x = dropped, *next; x; x = next) {
        next = x->next;
        e2b_end_sandbox_contexts(e, x->owner, x->id);
        sbx_free(x);
    }
}

/* ---- answers ----------------------------------------------------------------------------- */

/* The control plane's errors are JSON {code, message}, which the SDK reads. */
static int api_error(struct e2b_answer *a, int status, const char *msg)
{
    return e2b_json_answer(a, status, json_pack("{s:i, s:s}", "code", status, "message", msg));
}

static void iso_time(double t, char *out, size_t n)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - floor(t)) * 1e9)};
    cli_iso_time(&ts, 3, out, n);
}

/* What create and connect answer: how the SDK reaches the sandbox. */
static json_t *sbx_reach(const struct sbx *x)
{
    /* One secret as both tokens: the SDK sends the traffic one where it sends no envd one (its
     * context calls), so that every call of a sandbox carries it. */
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n}", "sandboxID", x->id, "templateID",
                     x->template_id, "alias", x->template_id, "clientID", "execbox", "envdVersion",
                     E2B_ENVD_VERSION, "envdAccessToken", x->token, "trafficAccessToken", x->token,
                     "domain");
}

/* What getInfo and list show of a sandbox; the sizes are the server's policy's. */
static json_t *sbx_info(const struct sbx *x, const struct execbox_policy *pol)
{
    char started[40], end[40];
    iso_time(x->started, started, sizeof(started));
    iso_time(x->end, end, sizeof(end));
    double cpus = pol->cpus > 0 ? pol->cpus : EXECBOX_DEFAULT_CPUS;
    uint64_t mem = pol->memory ? pol->memory : EXECBOX_DEFAULT_MEMORY;
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:n}", "sandboxID",
                     x->id, "templateID", x->template_id, "alias", x->template_id, "clientID",
                     "execbox", "startedAt", started, "endAt", end, "state", "running", "cpuCount",
                     (json_int_t)ceil(cpus), "memoryMB", (json_int_t)(mem >> 20), "envdVersion",
                     E2B_ENVD_VERSION, "metadata",
                     x->metadata ? json_incref(x->metadata) : json_object(), "domain");
}

/* The body's "timeout" (seconds) into *ret, or the default when absent. 0, or 1 answered. */
static int body_timeout(json_t *o, double dflt, double *ret, struct e2b_answer *a)
{
    json_t *v = o ? json_object_get(o, "timeout") : NULL;
    *ret = dflt;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > E2B_SANDBOX_TIMEOUT_MAX) {
        char msg[96];
        snprintf(msg, sizeof(msg), "timeout: a whole number of seconds from 0 to %d",
                 E2B_SANDBOX_TIMEOUT_MAX);
        return api_error(a, 400, msg) < 0 ? -ENOMEM : 1;
    }
    *ret = (double)json_integer_value(v);
    return 0;
}

/* Options of create that execbox has no way to honour: refused rather than ignored. */
static const char *unsupported_option(json_t *o)
{
    static const char *const keys[] = {"mcp", "network", "volumeMounts", "iam", "autoResume"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (v && !json_is_null(v))
            return keys[i];
    }
    json_t *env = json_object_get(o, "envVars");
    if (env && !json_is_null(env) && (!json_is_object(env) || json_object_size(env)))
        return "envVars (give envs to runCode and commands.run)";
    if (json_is_true(json_object_get(o, "autoPause")))
        return "autoPause";
    if (json_is_true(json_object_get(o, "allow_internet_access")))
        return "allow_internet_access (the server's policy decides the network)";
    return NULL;
}

static int parse_create(json_t *o, struct sbx *x, struct e2b_answer *a)
{
    const char *bad = unsupported_option(o);
    if (bad) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s: not supported by execbox", bad);
        return api_error(a, 400, msg) < 0 ? -ENOMEM : 1;
    }
    json_t *tpl = json_object_get(o, "templateID");
    if (tpl && !json_is_null(tpl) &&
        (!json_is_string(tpl) || json_string_length(tpl) > SBX_TEMPLATE_MAX ||
         !json_string_length(tpl)))
        return api_error(a, 400, "templateID: a name of 1 to 64 characters") < 0 ? -ENOMEM : 1;
    snprintf(x->template_id, sizeof(x->template_id), "%s",
             json_is_string(tpl) ? json_string_value(tpl) : "code-interpreter-v1");
    json_t *md = json_object_get(o, "metadata");
    if (md && !json_is_null(md)) {
        const char *k;
        json_t *v;
        bool ok = json_is_object(md);
        json_object_foreach (ok ? md : NULL, k, v)
            ok &= json_is_string(v);
        char *s = ok ? json_dumps(md, JSON_COMPACT) : NULL;
        ok &= s && strlen(s) <= SBX_METADATA_MAX;
        free(s);
        if (!ok)
            return api_error(a, 400, "metadata: an object of strings, at most 4 KiB") < 0 ? -ENOMEM
                                                                                          : 1;
        x->metadata = json_incref(md);
    }
    double timeout;
    int r = body_timeout(o, E2B_SANDBOX_TIMEOUT_DEFAULT, &timeout, a);
    if (r)
        return r;
    x->started = now_s();
    x->end = x->started + timeout;
    return 0;
}

static int answer_create(struct e2b *e, struct e2b_call *call, json_t *o, struct e2b_answer *ret)
{
    struct sbx *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    int r = parse_create(o, x, ret);
    if (r) {
        sbx_free(x);
        return r < 0 ? r : 0;
    }
    snprintf(x->owner, sizeof(x->owner), "%s", call->owner);
    if (random_hex(x->id, 10) < 0 || random_hex(x->token, 16) < 0) {
        sbx_free(x);
        return api_error(ret, 500, "no random bytes for the sandbox's id") < 0 ? -ENOMEM : 0;
    }
    struct e2b_sandboxes *t = e2b_sandboxes_of(e);
    struct sbx *dropped = NULL;
    pthread_mutex_lock(&t->lock);
    unlink_ended(t, now_s(), &dropped);
    bool full = t->n >= E2B_SANDBOXES_MAX;
    if (!full) {
        x->next = t->head;
        t->head = x;
        t->n++;
    }
    /* The answer is built from x while it is surely ours. */
    json_t *reach = full ? NULL : sbx_reach(x);
    pthread_mutex_unlock(&t->lock);
    end_dropped(e, dropped);
    if (full) {
        sbx_free(x);
        char msg[96];
        snprintf(msg, sizeof(msg), "%d sandboxes are running, the server's most",
                 E2B_SANDBOXES_MAX);
        return api_error(ret, 429, msg) < 0 ? -ENOMEM : 0;
    }
    return e2b_json_answer(ret, 201, reach);
}

int e2b_api_answer(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                   struct e2b_answer *ret)
{
    json_t *o = NULL;
    if (e2b_api_has_body(call->op) && len) {
        o = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            return api_error(ret, 400, "the body must be a JSON object");
        }
    }
    if (call->op == E2B_OP_SBX_CREATE) {
        int r = answer_create(e, call, o, ret);
        json_decref(o);
        return r;
    }
    double timeout = -1; /* none given: the end stays */
    int r = call->op == E2B_OP_SBX_TIMEOUT || call->op == E2B_OP_SBX_CONNECT
                ? body_timeout(o, -1, &timeout, ret)
                : 0;
    json_decref(o);
    if (r)
        return r < 0 ? r : 0;
    if (call->op == E2B_OP_SBX_TIMEOUT && timeout < 0)
        return api_error(ret, 400, "timeout: required");
    const struct execbox_policy *pol = e2b_policy_of(e);
    struct e2b_sandboxes *t = e2b_sandboxes_of(e);
    struct sbx *dropped = NULL;
    double now = now_s();
    json_t *out = NULL;
    int status = 404;
    pthread_mutex_lock(&t->lock);
    unlink_ended(t, now, &dropped);
    if (call->op == E2B_OP_SBX_LIST) {
        out = json_array();
        for (struct sbx *x = t->head; x && out; x = x->next)
            if (strcmp(x->owner, call->owner) == 0 &&
                json_array_append_new(out, sbx_info(x, pol)) < 0) {
                json_decref(out);
                out = NULL;
            }
        status = 200;
    } else {
        struct sbx *x = find_sbx(t, call->owner, call->id);
        if (x && call->op == E2B_OP_SBX_KILL) {
            for (struct sbx **p = &t->head; *p; p = &(*p)->next)
                if (*p == x) {
                    *p = x->next;
                    break;
                }
            t->n--;
            x->next = dropped;
            dropped = x;
            status = 204;
        } else if (x) {
            if (timeout >= 0)
                x->end = now + timeout; /* E2B's rule: the timeout counts from now */
            status = call->op == E2B_OP_SBX_TIMEOUT ? 204 : 200;
            out = call->op == E2B_OP_SBX_INFO      ? sbx_info(x, pol)
                  : call->op == E2B_OP_SBX_CONNECT ? sbx_reach(x)
                                                   : NULL;
        }
    }
    pthread_mutex_unlock(&t->lock);
    end_dropped(e, dropped);
    if (status == 404) {
        char msg[96];
        snprintf(msg, sizeof(msg), "sandbox %s not found", call->id);
        return api_error(ret, 404, msg);
    }
    if (status == 204)
        return e2b_empty_answer(ret, 204);
    return out ? e2b_json_answer(ret, status, out) : -ENOMEM;
}

int e2b_api_enter(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret)
{
    call->sandbox[0] = '\0';
    const char *id = call->sbx_header;
    if (e2b_api_op(call->op) || !id || !*id || strcmp(id, E2B_DEBUG_SANDBOX_ID) == 0)
        return 0;
    struct e2b_sandboxes *t = e2b_sandboxes_of(e);
    struct sbx *dropped = NULL;
    int status = 0;
    pthread_mutex_lock(&t->lock);
    unlink_ended(t, now_s(), &dropped);
    struct sbx *x = strlen(id) < E2B_SBX_ID_SIZE ? find_sbx(t, call->owner, id) : NULL;
    if (!x)
        status = 404;
    else if (!srv_token_equal(call->sbx_token ? call->sbx_token : "", x->token))
        status = 401;
    else
        snprintf(call->sandbox, sizeof(call->sandbox), "%s", x->id);
    pthread_mutex_unlock(&t->lock);
    end_dropped(e, dropped);
    if (status == 404)
        return api_error(ret, 404, "sandbox not found (it was killed or timed out)") < 0 ? -ENOMEM
                                                                                         : 1;
    if (status == 401)
        return api_error(ret, 401, "wrong or missing X-Access-Token for this sandbox") < 0 ? -ENOMEM
                                                                                           : 1;
    return 0;
}
