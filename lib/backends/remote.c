/* SPDX-License-Identifier: MIT */
/*
 * remote.c - the `remote` backend: each run goes to another `execbox serve` as one
 * POST /v1/execute over HTTP (libcurl, loaded on first use: backends/curl_load.c), and the
 * record that comes back is this run's result, with `backend` saying "remote".
 *
 * The request carries the run's whole policy with "cap": true, so the remote lowers any limit
 * above its own maximum to it rather than refusing the run (host paths, workspace and rootfs,
 * never travel: a run that sets them is refused here).
 *
 * Through the executor's lifecycle (lib/backends/backend.h): start() makes the request (and refuses
 * what cannot travel), deliver() has nothing to do, wait() sends it and takes the answer, a whole
 * result the far execbox made (struct eb_wait's final: nothing is mapped again here), or a
 * cancel for the executor to map; destroy() frees the request.
 *
 * Several URLs: a run starts at the next one in turn (round robin) and fails over to the
 * following ones when a remote cannot be connected to, or answers 429 or 5xx (it did not
 * take the run). Once a remote answered 200, or may have received the request and then went
 * silent or broke the connection, there is no retry: the run may have happened, and running
 * code twice is not ours to decide. A remote that refused a connection is tried last for
 * RM_DOWN_S seconds.
 *
 * The deadline of a run is its policy timeout plus RM_MARGIN_S (the queue at the remote, the
 * transfer); past it the request is aborted. Cancellation aborts the request and closes its
 * connection; `execbox serve` notices the hang-up and kills the run.
 *
 * Connection reuse: an idle list of (multi, easy) handle pairs; the multi handle keeps the
 * connection cache, so a run that takes a pair reuses its kept-alive connection. A pair whose
 * transfer did not end cleanly is destroyed, and its connection with it.
 *
 * Thread safety: the state is read-only after open() but for the idle list (under its mutex)
 * and the per-remote "down" marks and round-robin counter (atomics).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/util.h"
#include "model/policy.h"
#include "model/result.h"

/* Limits of this backend (here rather than in limits.h: they only make sense for it). */
#define RM_URLS_MAX 16
#define RM_URL_MAX 512
#define RM_TOKEN_MAX 1024
#define RM_IDLE_MAX 64                /* handle pairs (each with its connections) kept for reuse */
#define RM_CONNECT_MS 3000L           /* connecting to one remote */
#define RM_PROBE_MS 3000L             /* GET /v1/health in a probe */
#define RM_MARGIN_S 10.0              /* deadline = the policy's timeout + this */
#define RM_DOWN_NS (5000000000ULL)    /* a remote that refused a connection is tried last */
#define RM_SMALL_BODY_MAX (64U << 10) /* health and error replies */
/* A result reply: two streams of output_limit bytes each, which JSON escaping may grow six
 * times (\u00XX), plus this for the rest (tracebacks, file lists). */
#define RM_RESULT_FIXED (16ULL << 20)
#define RM_POLL_MS 1000

struct remote {
    char base[RM_URL_MAX];    /* as given, without a trailing '/' */
    char execute[RM_URL_MAX]; /* base + "/v1/execute" */
    uint64_t down_until_ns;   /* __atomic; 0 = up */
};

struct handles {
    CURLM *m; /* keeps the connection cache */
    CURL *h;
};

struct remote_state {
    struct remote remotes[RM_URLS_MAX];
    size_t n;
    struct curl_slist *headers; /* Content-Type, Expect, Authorization: read-only */
    unsigned next;              /* __atomic: the remote a run starts at */
    pthread_mutex_t lock;
    struct handles idle[RM_IDLE_MAX];
    size_t n_idle;
};

/* ---- options ---------------------------------------------------------------------------- */

struct options {
    struct remote remotes[RM_URLS_MAX];
    size_t n;
    char token[RM_TOKEN_MAX];
};

static int parse_options(const struct execbox_executor_options *o, struct options *s,
                         struct execbox_error *err)
{
    memset(s, 0, sizeof(*s));
    const char *list = o ? o->remote_urls : NULL;
    if (!list || !*list)
        return eb_error_set(err, -EINVAL,
                            "no remote given: --remote URL[,URL...] (each an `execbox serve`)");
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *u = p;
        p += n;
        if (*p == ',')
            p++;
        while (n && (*u == ' ' || *u == '\t'))
            u++, n--;
        while (n && (u[n - 1] == ' ' || u[n - 1] == '\t' || u[n - 1] == '/'))
            n--;
        if (!n)
            continue;
        if (s->n >= RM_URLS_MAX)
            return eb_error_set(err, -E2BIG, "more than %d remotes", RM_URLS_MAX);
        if (n + sizeof("/v1/execute") > RM_URL_MAX)
            return eb_error_set(err, -ENAMETOOLONG, "remote URL '%.40s...' is too long", u);
        struct remote *r = &s->remotes[s->n];
        memcpy(r->base, u, n);
        r->base[n] = '\0';
        if (strncmp(r->base, "http://", 7) != 0 && strncmp(r->base, "https://", 8) != 0)
            return eb_error_set(err, -EINVAL, "remote '%s' is not an http:// or https:// URL",
                                r->base);
        for (const char *c = r->base; *c; c++)
            if ((unsigned char)*c <= ' ' || *c == 0x7f)
                return eb_error_set(err, -EINVAL,
                                    "remote '%.64s' holds a space or a control "
                                    "character",
                                    r->base);
        memcpy(r->execute, r->base, n);
        memcpy(r->execute + n, "/v1/execute", sizeof("/v1/execute"));
        s->n++;
    }
    if (!s->n)
        return eb_error_set(err, -EINVAL, "no remote given: --remote URL[,URL...]");
    const char *token = o->remote_token ? o->remote_token : getenv("EXECBOX_REMOTE_TOKEN");
    if (token && *token) {
        if (strlen(token) >= sizeof(s->token))
            return eb_error_set(err, -E2BIG, "the remote token is longer than %d bytes",
                                RM_TOKEN_MAX - 1);
        /* It goes into a header line: no line breaks or other control bytes. */
        for (const char *c = token; *c; c++)
            if ((unsigned char)*c < ' ' || *c == 0x7f)
                return eb_error_set(err, -EINVAL, "the remote token holds a control character");
        memcpy(s->token, token, strlen(token) + 1);
    }
    return 0;
}

/* ---- HTTP ------------------------------------------------------------------------------- */

struct reply {
    char *data;
    size_t len, cap, max;
    bool overflow;
};

static size_t reply_write(char *p, size_t size, size_t n, void *ud)
{
    struct reply *b = ud;
    size_t len = size * n;
    if (b->len + len > b->max) {
        b->overflow = true;
        return 0; /* aborts the transfer */
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

static void set_common(CURL *h, const char *url, uint64_t budget_ms, struct reply *reply)
{
    long total = budget_ms > 0 ? (long)budget_ms : 1L;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* thread-safe timeouts: no SIGALRM */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, total < RM_CONNECT_MS ? total : RM_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reply_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)reply);
}

/* Runs the transfer of hp->h on hp->m, watching cancel_fd (-1: none). The transfer's
 * outcome; *ret_cancelled when the token fired first. */
static CURLcode perform(struct handles *hp, int cancel_fd, bool *ret_cancelled)
{
    if (curl_multi_add_handle(hp->m, hp->h) != CURLM_OK)
        return CURLE_OUT_OF_MEMORY;
    CURLcode res = CURLE_RECV_ERROR;
    for (;;) {
        int running = 0, queued = 0;
        if (curl_multi_perform(hp->m, &running) != CURLM_OK)
            break;
        CURLMsg *msg;
        bool done = false;
        while ((msg = curl_multi_info_read(hp->m, &queued)))
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == hp->h) {
                res = msg->data.result;
                done = true;
            }
        if (done || !running)
            break;
        /* The transfer's own timeouts end it; RM_POLL_MS only bounds each wait. */
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        int nfds = 0;
        if (curl_multi_poll(hp->m, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                            RM_POLL_MS, &nfds) != CURLM_OK)
            break;
        if (cancel_fd >= 0 && extra.revents) {
            *ret_cancelled = true;
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
    }
    curl_multi_remove_handle(hp->m, hp->h);
    return res;
}

static void handles_free(struct handles *hp)
{
    if (hp->h)
        curl_easy_cleanup(hp->h);
    if (hp->m)
        curl_multi_cleanup(hp->m); /* closes its cached connections */
    hp->h = NULL;
    hp->m = NULL;
}

static int handles_take(struct remote_state *s, struct handles *ret)
{
    pthread_mutex_lock(&s->lock);
    bool have = s->n_idle > 0;
    if (have)
        *ret = s->idle[--s->n_idle];
    pthread_mutex_unlock(&s->lock);
    if (have)
        return 0;
    ret->m = curl_multi_init();
    ret->h = curl_easy_init();
    if (!ret->m || !ret->h) {
        handles_free(ret);
        return -ENOMEM;
    }
    return 0;
}

/* Gives a pair back for reuse (its connection stays open), or destroys it. */
static void handles_give(struct remote_state *s, struct handles *hp, bool reuse)
{
    if (reuse) {
        pthread_mutex_lock(&s->lock);
        if (s->n_idle < RM_IDLE_MAX) {
            s->idle[s->n_idle++] = *hp;
            hp->m = NULL;
            hp->h = NULL;
        }
        pthread_mutex_unlock(&s->lock);
    }
    handles_free(hp);
}

/* The message of an execbox error body {"error": {"code", "message"}}, else the start of the
 * body as text. */
static void remote_message(const struct reply *b, char *out, size_t size)
{
    out[0] = '\0';
    if (!b->data)
        return;
    json_t *j = json_loadb(b->data, b->len, 0, NULL);
    json_t *e = json_object_get(j, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (msg)
        snprintf(out, size, "%s: %s", code ? code : "error", msg);
    else {
        char *clean = execbox_utf8_sanitize(b->data, b->len < 160 ? b->len : 160, NULL, NULL);
        snprintf(out, size, "%s", clean ? clean : "");
        free(clean);
        for (char *c = out; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
    }
    json_decref(j);
}

/* ---- probe, open, close ----------------------------------------------------------------- */

/* GET /v1/health of one remote: 0 with a one-line summary, or -errno with the reason. */
static int health(CURL *h, const struct remote *r, const char *auth, char *out, size_t size)
{
    char url[RM_URL_MAX + 16];
    snprintf(url, sizeof(url), "%s/v1/health", r->base);
    struct reply b = {.max = RM_SMALL_BODY_MAX};
    curl_easy_reset(h);
    set_common(h, url, RM_PROBE_MS, &b);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    struct curl_slist *hdrs = auth[0] ? curl_slist_append(NULL, auth) : NULL;
    if (hdrs)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cr = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    int rc = 0;
    long status = 0;
    if (cr != CURLE_OK) {
        snprintf(out, size, "%s: %s", r->base, curl_easy_strerror(cr));
        rc = cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    json_t *j = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    const char *st = json_string_value(json_object_get(j, "status"));
    const char *backend = json_string_value(json_object_get(j, "backend"));
    const char *version = json_string_value(json_object_get(j, "version"));
    json_t *workers = json_object_get(j, "workers");
    if (status == 200 && st && backend && version && json_is_integer(workers)) {
        snprintf(out, size, "%s: execbox %s, backend %s, %lld workers", r->base, version, backend,
                 (long long)json_integer_value(workers));
    } else if (st && backend) {
        snprintf(out, size, "%s: answers %ld (%s)", r->base, status, st);
        rc = -EAGAIN;
    } else {
        snprintf(out, size, "%s: answers %ld with something that is not execbox's health", r->base,
                 status);
        rc = -EPROTO;
    }
    json_decref(j);
out:
    free(b.data);
    return rc;
}

static bool loopback_url(const char *base)
{
    const char *host = strstr(base, "://") + 3;
    return strncmp(host, "127.", 4) == 0 || strncmp(host, "localhost", 9) == 0 ||
           strncmp(host, "[::1]", 5) == 0;
}

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    struct options s;
    struct execbox_error e = {0, ""};
    c->usable = false;
    snprintf(c->tier, sizeof(c->tier), "whatever the remote's backend gives (see its check)");
    if (parse_options(o, &s, &e) < 0) {
        eb_check_add(c, "remotes", false, true, "%s", e.msg);
        return -ENOTSUP;
    }
    const char *why = NULL;
    if (!eb_curl_load(&why)) {
        eb_check_add(c, "remotes", false, true, "%s", why);
        return -ENOTSUP;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        eb_check_add(c, "remotes", false, true, "libcurl could not initialise");
        return -ENOTSUP;
    }
    CURL *h = curl_easy_init();
    if (!h) {
        eb_check_add(c, "remotes", false, true, "out of memory");
        curl_global_cleanup();
        return -ENOTSUP;
    }
    char auth[RM_TOKEN_MAX + 32] = "";
    if (s.token[0])
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s.token);
    size_t healthy = 0;
    bool plain_public = false;
    char backends[64] = "";
    for (size_t i = 0; i < s.n; i++) {
        char line[200], name[32];
        int r = health(h, &s.remotes[i], auth, line, sizeof(line));
        snprintf(name, sizeof(name), "remote %zu", i + 1);
        eb_check_add(c, name, r == 0, false, "%s", line);
        if (r == 0) {
            healthy++;
            const char *b = strstr(line, "backend ");
            if (b && !backends[0])
                snprintf(backends, sizeof(backends), "%.*s", (int)strcspn(b + 8, ","), b + 8);
        }
        if (strncmp(s.remotes[i].base, "http://", 7) == 0 && !loopback_url(s.remotes[i].base))
            plain_public = true;
    }
    curl_easy_cleanup(h);
    curl_global_cleanup();
    eb_check_add(c, "remotes", healthy > 0, true, "%zu of %zu answer /v1/health", healthy, s.n);
    eb_check_add(c, "token", s.token[0] != 0, false, "%s",
                 s.token[0] ? "sent as a bearer token"
                            : "none (--remote-token or $EXECBOX_REMOTE_TOKEN)");
    eb_check_add(c, "transport", !plain_public, false, "%s",
                 plain_public ? "plain HTTP beyond loopback: code, output and token travel "
                                "unencrypted (use https:// or a private network)"
                              : "https, or loopback only");
    if (backends[0])
        snprintf(c->tier, sizeof(c->tier), "another execbox serve; its '%s' backend isolates",
                 backends);
    c->usable = healthy > 0;
    return c->usable ? 0 : -ENOTSUP;
}

static void close_backend(void *state)
{
    struct remote_state *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_idle; i++)
        handles_free(&s->idle[i]);
    curl_slist_free_all(s->headers);
    pthread_mutex_destroy(&s->lock);
    free(s);
    curl_global_cleanup();
}

static int open_backend(const struct execbox_executor_options *o,
                        const struct execbox_check *report, void **ret_state,
                        struct execbox_error *err)
{
    (void)report;
    struct options opt;
    int r = parse_options(o, &opt, err);
    if (r < 0)
        return r;
    const char *why = NULL;
    if (!eb_curl_load(&why))
        return eb_error_set(err, -ENOTSUP, "%s", why);
    /* Reference-counted and thread-safe in the libcurl we build against (7.84+); each
     * executor holds one reference. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return eb_error_set(err, -ENOMEM, "libcurl could not initialise");
    struct remote_state *s = calloc(1, sizeof(*s));
    if (!s) {
        curl_global_cleanup();
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    memcpy(s->remotes, opt.remotes, sizeof(s->remotes));
    s->n = opt.n;
    char auth[RM_TOKEN_MAX + 32];
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    s->headers = l;
    if (l)
        l = curl_slist_append(l, "Expect:"); /* no 100-continue round trip */
    if (l && opt.token[0]) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", opt.token);
        l = curl_slist_append(l, auth);
    }
    explicit_bzero(opt.token, sizeof(opt.token));
    explicit_bzero(auth, sizeof(auth));
    if (!l) {
        close_backend(s);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    *ret_state = s;
    return 0;
}

/* ---- one run ---------------------------------------------------------------------------- */

/* The request body: the code, its language and stdin, and the whole policy with "cap". */
static int request_body(const struct eb_run *run, char **ret, struct execbox_error *err)
{
    const struct execbox_policy *p = run->policy;
    if (p->workspace[0])
        return eb_error_set(err, -ENOTSUP,
                            "the remote backend cannot mount a directory of this "
                            "host at /workspace: run without --workspace");
    if (p->rootfs[0])
        return eb_error_set(err, -ENOTSUP,
                            "the remote backend uses the remote's root: run without --rootfs");
    json_t *o = eb_policy_to_object(p);
    if (!o)
        return eb_error_set(err, -ENOMEM, "out of memory");
    json_object_del(o, "workspace");
    json_object_del(o, "rootfs");
    int bad = json_object_set_new(o, "cap", json_true());
    bad |= json_object_set_new(o, "language", json_string(run->lang->name));
    json_t *code = json_stringn(run->code, run->code_len);
    if (!code) {
        json_decref(o);
        return eb_error_set(err, -EINVAL,
                            "the code is not valid UTF-8, which JSON cannot carry "
                            "to the remote");
    }
    bad |= json_object_set_new(o, "code", code);
    if (run->req->stdin_data) {
        json_t *in = json_stringn(run->req->stdin_data, run->req->stdin_len);
        if (!in) {
            json_decref(o);
            return eb_error_set(err, -EINVAL,
                                "stdin is not valid UTF-8, which JSON cannot "
                                "carry to the remote");
        }
        bad |= json_object_set_new(o, "stdin", in);
    }
    char *s =
        bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret = s;
    return 0;
}

/* Moves the record of a 200 reply into res (keeping backend and language). */
static int take_result(const struct reply *b, const struct remote *rm, struct execbox_result *res,
                       struct execbox_error *err)
{
    json_error_t je;
    json_t *j = b->data ? json_loadb(b->data, b->len, 0, &je) : NULL;
    if (!j)
        return eb_error_set(err, -EPROTO,
                            "the remote %s answered 200 with a body that is not "
                            "JSON (%s)",
                            rm->base, b->data ? je.text : "empty");
    struct execbox_result *got = eb_result_new(res->backend, res->language);
    if (!got) {
        json_decref(j);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    struct execbox_error perr = {0, ""};
    int r = eb_result_from_object(j, got, &perr);
    json_decref(j);
    if (r < 0) {
        execbox_result_free(got);
        if (r == -ENOMEM)
            return eb_error_set(err, -ENOMEM, "out of memory");
        return eb_error_set(err, -EPROTO,
                            "the remote %s answered 200 with a record this "
                            "execbox cannot read: %s",
                            rm->base, perr.msg);
    }
    /* Swap: res takes the parsed record, got takes what res held (nothing yet). */
    struct execbox_result tmp = *res;
    *res = *got;
    *got = tmp;
    execbox_result_free(got);
    return 0;
}

/* A run as this backend holds it (the backend's eb_box): the request, made by start(). */
struct eb_box {
    char *body;
};

static void rm_destroy(void *state, struct eb_box *w)
{
    (void)state;
    if (w) {
        free(w->body);
        free(w);
    }
}

/* Cold only: the request body (a run this backend cannot carry is refused here). */
static int rm_start(void *state, const struct eb_start *s, struct eb_box **ret,
                    struct execbox_error *err)
{
    (void)state;
    struct eb_box *w = calloc(1, sizeof(*w));
    if (!w)
        return eb_error_set(err, -ENOMEM, "out of memory");
    int r = request_body(s->run, &w->body, err);
    if (r < 0) {
        rm_destroy(state, w);
        return r;
    }
    *ret = w;
    return 0;
}

/* The request goes out in wait(), whose one POST is both the delivery and its answer. */
static int rm_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                      struct execbox_error *err)
{
    (void)state, (void)w, (void)run, (void)err;
    return 0;
}

/* POSTs the run to the remotes in turn until one takes it. Its answer is the whole result,
 * made by the far execbox (ret->final); a cancel is the outcome's, for the executor to map. */
static int rm_wait(void *state, struct eb_box *w, const struct eb_run *run,
                   struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    struct remote_state *s = state;
    const char *body = w->body;
    int r;
    uint64_t deadline = run->start_ns + (uint64_t)((run->policy->timeout + RM_MARGIN_S) * 1e9);
    uint64_t max = RM_RESULT_FIXED + 12 * run->policy->output_limit;
    int cancel_fd = eb_cancel_fd(run->req->cancel);

    /* The order: round robin from the next remote; remotes marked down go last. */
    size_t order[RM_URLS_MAX], n = 0;
    unsigned first = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
    uint64_t now = eb_now_ns();
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < s->n; i++) {
            size_t k = (first + i) % s->n;
            bool down = __atomic_load_n(&s->remotes[k].down_until_ns, __ATOMIC_RELAXED) > now;
            if (down == (pass == 1))
                order[n++] = k;
        }

    char last[240] = "";
    int last_code = -EHOSTUNREACH;
    for (size_t a = 0; a < n; a++) {
        struct remote *rm = &s->remotes[order[a]];
        now = eb_now_ns();
        if (now >= deadline)
            break;
        struct handles hp;
        if (handles_take(s, &hp) < 0)
            return eb_error_set(err, -ENOMEM, "out of memory");
        struct reply b = {.max = max};
        curl_easy_reset(hp.h);
        set_common(hp.h, rm->execute, (deadline - now) / 1000000, &b);
        curl_easy_setopt(hp.h, CURLOPT_POST, 1L);
        curl_easy_setopt(hp.h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(hp.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(hp.h, CURLOPT_HTTPHEADER, s->headers);
        bool was_cancelled = false;
        CURLcode cr = perform(&hp, cancel_fd, &was_cancelled);
        long status = 0;
        if (cr == CURLE_OK)
            curl_easy_getinfo(hp.h, CURLINFO_RESPONSE_CODE, &status);
        if (was_cancelled) {
            /* Destroying the pair closes the connection: the remote sees the hang-up and kills
             * the run. */
            handles_give(s, &hp, false);
            free(b.data);
            ret->oc.cancelled = true;
            ret->cpu_ns = -2;
            ret->peak_memory = -2;
            return 0;
        }
        if (cr != CURLE_OK) {
            long oserr = 0;
            curl_off_t connected = 0;
            curl_easy_getinfo(hp.h, CURLINFO_OS_ERRNO, &oserr);
            curl_easy_getinfo(hp.h, CURLINFO_CONNECT_TIME_T, &connected);
            handles_give(s, &hp, false);
            free(b.data);
            if (cr == CURLE_COULDNT_CONNECT || cr == CURLE_COULDNT_RESOLVE_HOST ||
                (cr == CURLE_OPERATION_TIMEDOUT && connected == 0 && eb_now_ns() < deadline)) {
                /* Nothing was sent: the next remote may take it. */
                __atomic_store_n(&rm->down_until_ns, eb_now_ns() + RM_DOWN_NS, __ATOMIC_RELAXED);
                snprintf(last, sizeof(last), "%s: %s", rm->base, curl_easy_strerror(cr));
                last_code = oserr ? -(int)oserr : -ECONNREFUSED;
                continue;
            }
            if (cr == CURLE_WRITE_ERROR && b.overflow)
                return eb_error_set(err, -EMSGSIZE,
                                    "the remote %s answered with more than %llu bytes", rm->base,
                                    (unsigned long long)max);
            if (cr == CURLE_OPERATION_TIMEDOUT)
                return eb_error_set(err, -ETIMEDOUT,
                                    "the remote %s did not answer within %g s (the run's "
                                    "timeout plus %g s)",
                                    rm->base, run->policy->timeout + RM_MARGIN_S, RM_MARGIN_S);
            /* Sent, then broken: the run may have happened, so no other remote is tried. */
            return eb_error_set(err, -EPROTO, "the remote %s broke off its answer: %s", rm->base,
                                curl_easy_strerror(cr));
        }
        __atomic_store_n(&rm->down_until_ns, 0, __ATOMIC_RELAXED);
        if (status == 200) {
            r = take_result(&b, rm, res, err);
            free(b.data);
            handles_give(s, &hp, r == 0);
            if (r < 0)
                return r;
            /* The remote inlines images up to its own size: no more than our caller asked. */
            for (size_t i = 0; i < res->n_files; i++) {
                struct execbox_file *f = &res->files[i];
                if (f->data && f->data_len > run->req->inline_files_max) {
                    free(f->data);
                    f->data = NULL;
                    f->data_len = 0;
                }
            }
            ret->final = true;
            if (run->req->on_output) {
                if (res->stdout_len)
                    run->req->on_output(run->req->userdata, EXECBOX_STREAM_STDOUT, res->stdout_data,
                                        res->stdout_len);
                if (res->stderr_len)
                    run->req->on_output(run->req->userdata, EXECBOX_STREAM_STDERR, res->stderr_data,
                                        res->stderr_len);
            }
            return 0;
        }
        char msg[200];
        remote_message(&b, msg, sizeof(msg));
        free(b.data);
        handles_give(s, &hp, true);
        if (status == 429 || status >= 500) {
            /* It did not take the run (queue full, draining, failing): try the next one. */
            snprintf(last, sizeof(last), "%s answered %ld (%s)", rm->base, status, msg);
            last_code = status == 429 ? -EAGAIN : -EHOSTUNREACH;
            continue;
        }
        return eb_error_set(err, status == 401 ? -EACCES : -EINVAL,
                            "the remote %s refused the run with %ld (%s)", rm->base, status, msg);
    }
    if (!last[0])
        return eb_error_set(err, -ETIMEDOUT, "no remote answered before the deadline");
    return eb_error_set(err, last_code, "no remote could take the run; last: %s", last);
}

const struct eb_backend_ops eb_backend_remote = {
    .name = "remote",
    .probe = probe,
    .open = open_backend,
    .close = close_backend,
    .start = rm_start,
    .deliver = rm_deliver,
    .wait = rm_wait,
    .destroy = rm_destroy,
};
