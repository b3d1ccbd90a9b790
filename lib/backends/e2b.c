/* SPDX-License-Identifier: MIT */
/*
 * e2b.c - the `e2b` backend: one fresh E2B cloud sandbox (a Firecracker microVM run by E2B) per
 * run, through E2B's REST API and its code interpreter's `/execute` stream, with libcurl
 * (loaded lazily, backends/curl_load.c).
 *
 * A run: POST {api}/sandboxes (the template, the sandbox's own lifetime = the run's timeout
 * plus a margin, no internet for network "none", no auto-pause); envd's MakeDir of the run's
 * working directory and a code context working there (POST {sandbox}/contexts); POST
 * {sandbox}/execute (the code; NDJSON lines typed stdout, stderr, result, error,
 * number_of_executions, end_of_execution); once the code ended, envd's ListDir of that
 * directory and GET /files of its small images; and DELETE {api}/sandboxes/{id} on every path
 * out once the sandbox was created: success, guest error, timeout, cancel, flood, a broken
 * stream. Should this process
 * die before the DELETE, E2B ends the sandbox itself when its lifetime runs out.
 *
 * Configuration follows E2B's own SDKs: E2B_API_KEY (required), E2B_DOMAIN (default e2b.app),
 * E2B_API_URL (default https://api.<domain>), E2B_SANDBOX_URL (default
 * https://<port>-<id>.<domain>, port 49999 for the code interpreter and 49983 for envd; set, it
 * serves every sandbox and port, named by the E2b-Sandbox-Id and E2b-Sandbox-Port headers, as
 * E2B's SDKs do). Plain http is accepted only for loopback hosts:
 * the API key never travels in clear over a network.
 *
 * Thread safety: the state is read-only after open(); each run has its own curl handles.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "base/buf.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/hostrule.h"
#include "model/result.h"
#include "proc/proc.h"
#include "ws/workspace.h"

/* Limits of this backend. */
#define E2B_DEFAULT_DOMAIN "e2b.app"
#define E2B_DEFAULT_TEMPLATE "code-interpreter-v1"
#define E2B_JUPYTER_PORT 49999               /* the code interpreter's port inside the sandbox */
#define E2B_CONNECT_MS 5000L                 /* connecting to the API or the sandbox */
#define E2B_CALL_MS 30000L                   /* create and delete */
#define E2B_LIFETIME_MARGIN 30               /* the sandbox outlives the run's timeout by this */
#define E2B_LIFETIME_MAX 86400               /* E2B's longest sandbox lifetime (Pro tier) */
#define E2B_BODY_MAX (1U << 20)              /* largest JSON reply to create or delete */
#define E2B_LINE_MAX (8U << 20)              /* largest single NDJSON line of the stream */
#define E2B_FLOOD_FACTOR 16                  /* stream bytes past 16 x output_limit ... */
#define E2B_FLOOD_MIN (64ULL << 20)          /* ... and past 64 MiB in all end the run */
#define E2B_CREATE_TRIES 3                   /* a 429 on create is retried this often in all */
#define E2B_RETRY_AFTER_MAX 5.0              /* longest Retry-After we honour, seconds */
#define E2B_KEY_MAX 256                      /* an API key longer than this is not one */
#define E2B_ENVD_PORT 49983                  /* envd, the sandbox's own API (files, processes) */
#define E2B_WORKSPACE "/home/user/workspace" /* the run's working directory, made per run */
#define E2B_ENVD_USER "Authorization: Basic dXNlcjo=" /* envd acts as "user" (base64 "user:") */
#define E2B_LIST_MAX (8U << 20)                       /* largest ListDir reply */
#define E2B_FILES_MS 30000L                           /* listing and reading the images, in all */
#define E2B_INLINE_TOTAL_MAX (32U << 20)              /* image bytes read inline per run, in all */

struct e2b_state {
    char api[512];     /* API base URL, no trailing slash */
    char sandbox[512]; /* E2B_SANDBOX_URL, or "" to derive it per sandbox */
    char domain[256];
    char key_header[E2B_KEY_MAX + 16]; /* "X-API-Key: e2b_..." */
    char template_id[128];
};

/* ---- configuration ------------------------------------------------------------------------- */

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

/* True when url is https://..., or http:// to a loopback host (tests, a local proxy). */
static bool url_allowed(const char *url)
{
    if (strncmp(url, "https://", 8) == 0)
        return url[8] != '\0';
    if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *h = url + 7;
    static const char *const loop[] = {"127.", "localhost:", "localhost/", "[::1]"};
    for (size_t i = 0; i < ARRAY_SIZE(loop); i++)
        if (strncmp(h, loop[i], strlen(loop[i])) == 0)
            return true;
    return strcmp(h, "localhost") == 0;
}

static bool valid_token(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("-_.:/", *p)))
            return false;
    return true;
}

/* Reads the configuration; 0, or -errno with err naming what is wrong. */
static int parse_options(const struct execbox_executor_options *o, struct e2b_state *s,
                         struct execbox_error *err)
{
    memset(s, 0, sizeof(*s));
    const char *key = getenv("E2B_API_KEY");
    if (!key || !*key)
        return eb_error_set(err, -ENOKEY, "E2B_API_KEY is not set (the key from E2B's dashboard)");
    if (!valid_token(key, E2B_KEY_MAX))
        return eb_error_set(err, -EINVAL, "E2B_API_KEY is not a valid key");
    snprintf(s->key_header, sizeof(s->key_header), "X-API-Key: %s", key);
    const char *domain = env_or("E2B_DOMAIN", E2B_DEFAULT_DOMAIN);
    if (!valid_token(domain, sizeof(s->domain) - 1) || strchr(domain, '/'))
        return eb_error_set(err, -EINVAL, "E2B_DOMAIN '%s' is not a domain name", domain);
    snprintf(s->domain, sizeof(s->domain), "%s", domain);
    const char *api = getenv("E2B_API_URL");
    if (api && *api) {
        if (strlen(api) >= sizeof(s->api))
            return eb_error_set(err, -ENAMETOOLONG, "E2B_API_URL is too long");
        snprintf(s->api, sizeof(s->api), "%s", api);
    } else {
        snprintf(s->api, sizeof(s->api), "https://api.%s", s->domain);
    }
    const char *sb = getenv("E2B_SANDBOX_URL");
    if (sb && *sb) {
        if (strlen(sb) >= sizeof(s->sandbox))
            return eb_error_set(err, -ENAMETOOLONG, "E2B_SANDBOX_URL is too long");
        snprintf(s->sandbox, sizeof(s->sandbox), "%s", sb);
    }
    for (char *u = s->api; u; u = u == s->api ? s->sandbox : NULL) {
        size_t n = strlen(u);
        while (n && u[n - 1] == '/')
            u[--n] = '\0';
        if (u[0] && !url_allowed(u))
            return eb_error_set(err, -EINVAL,
                                "'%s' is neither https:// nor http:// to a loopback address "
                                "(the API key must not travel in clear)",
                                u);
    }
    const char *t =
        o && o->e2b_template && *o->e2b_template ? o->e2b_template : E2B_DEFAULT_TEMPLATE;
    if (!valid_token(t, sizeof(s->template_id) - 1))
        return eb_error_set(err, -EINVAL, "'%s' is not a valid E2B template name", t);
    snprintf(s->template_id, sizeof(s->template_id), "%s", t);
    return 0;
}

/* The policy fields E2B's API has no knob for: a template's VM size is fixed when the template
 * is built, and the sandbox's disk and process table are the VM's own. */
static const struct {
    const char *wall;
    const char *detail;
} not_enforced[] = {
    {"memory", "not enforced by this backend: the template's VM memory (set when it is built)"},
    {"cpus", "not enforced by this backend: the template's vCPU count"},
    {"pids", "not enforced by this backend: the VM's own process table"},
    {"tmpfs", "not enforced by this backend: /tmp is the VM's disk"},
    {"workspace_size", "not enforced by this backend: the VM's disk"},
    {"file_size", "not enforced by this backend: the VM's disk"},
};

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    struct e2b_state s;
    struct execbox_error err = {0};
    snprintf(c->tier, sizeof(c->tier), "remote microVM: an E2B sandbox (Firecracker), per run");
    const char *why = NULL;
    bool curl_ok = eb_curl_load(&why) != NULL;
    eb_check_add(c, "libcurl", curl_ok, true, "%s", curl_ok ? "loaded" : why);
    int r = parse_options(o, &s, &err);
    eb_check_add(c, "configuration", r == 0, true, "%s", r == 0 ? "E2B_API_KEY set" : err.msg);
    if (r == 0) {
        eb_check_add(c, "endpoint", true, false, "API %s, template '%s', sandbox %s%s", s.api,
                     s.template_id, s.sandbox[0] ? s.sandbox : "https://49999-<id>.",
                     s.sandbox[0] ? "" : s.domain);
    }
    eb_check_add(c, "boundary", true, false,
                 "E2B's Firecracker microVM, one per run, deleted after it (not contacted by "
                 "check)");
    eb_check_add(c, "timeout", true, false,
                 "enforced here on the stream; the sandbox's own lifetime is the timeout + %d s",
                 E2B_LIFETIME_MARGIN);
    eb_check_add(c, "network none", true, false, "allow_internet_access: false");
    eb_check_add(c, "network allow", true, false,
                 "allow_hosts as E2B's network.allowOut, the rest denied; ports not enforced");
    eb_check_add(c, "output_limit", true, false, "enforced here on the stream");
    for (size_t i = 0; i < ARRAY_SIZE(not_enforced); i++)
        eb_check_add(c, not_enforced[i].wall, false, false, "%s", not_enforced[i].detail);
    eb_check_add(c, "workspace files", true, false,
                 "listed from %s (made per run, the code's cwd) through envd before the delete; "
                 "--workspace and --rootfs are refused",
                 E2B_WORKSPACE);
    eb_check_add(c, "stdin", false, false, "the code interpreter has none; refused when given");
    c->usable = curl_ok && r == 0;
    return c->usable ? 0 : -ENOTSUP;
}

static int open_backend(const struct execbox_executor_options *o,
                        const struct execbox_check *report, void **ret_state,
                        struct execbox_error *err)
{
    (void)report;
    const char *why = NULL;
    if (!eb_curl_load(&why))
        return eb_error_set(err, -ENOTSUP, "%s", why);
    struct e2b_state *s = calloc(1, sizeof(*s));
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    int r = parse_options(o, s, err);
    if (r < 0) {
        free(s);
        return r;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(s);
        return eb_error_set(err, -EIO, "libcurl's global initialisation failed");
    }
    *ret_state = s;
    return 0;
}

static void close_backend(void *state)
{
    if (!state)
        return;
    curl_global_cleanup();
    free(state);
}

/* ---- HTTP ---------------------------------------------------------------------------------- */

/* A bounded reply and its Retry-After (seconds, 0 if none). */
struct reply {
    struct eb_http_body body;
    double retry_after;
};

static size_t reply_header(char *p, size_t size, size_t n, void *ud)
{
    struct reply *b = ud;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0) {
        char v[32];
        snprintf(v, sizeof(v), "%.*s", (int)(len - (sizeof(name) - 1)), p + sizeof(name) - 1);
        char *end;
        double d = strtod(v, &end);
        if (end != v && d > 0 && isfinite(d))
            b->retry_after = d;
    }
    return len;
}

/* Common options of every request: protocols, timeouts, no redirects, no signals. */
static void base_options(CURL *h, const char *url, long timeout_ms)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, E2B_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
}

/* Appends each non-NULL line to *hdrs. 0 or -ENOMEM (*hdrs then freed). */
static int add_headers(struct curl_slist **hdrs, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!lines[i])
            continue;
        struct curl_slist *t = curl_slist_append(*hdrs, lines[i]);
        if (!t) {
            curl_slist_free_all(*hdrs);
            *hdrs = NULL;
            return -ENOMEM;
        }
        *hdrs = t;
    }
    return 0;
}

/* One request with a bounded reply. 0 with *status (any HTTP status) and *reply, or -errno
 * (transport failure) with err set. hdrs stays the caller's. */
static int http_call(const char *method, const char *url, struct curl_slist *hdrs, const char *json,
                     long timeout_ms, struct reply *reply, long *status, struct execbox_error *err)
{
    CURL *h = curl_easy_init();
    if (!h)
        return eb_error_set(err, -ENOMEM, "out of memory");
    base_options(h, url, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (json) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, eb_http_body_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply->body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, reply_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, reply);
    CURLcode cr = curl_easy_perform(h);
    int r = 0;
    if (cr != CURLE_OK) {
        r = eb_error_set(err, cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO, "%s %s: %s",
                         method, url,
                         reply->body.overflow ? "reply too large" : curl_easy_strerror(cr));
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    }
    curl_easy_cleanup(h);
    return r;
}

/* One API call with a bounded JSON reply, as http_call. */
static int api_call(const struct e2b_state *s, const char *method, const char *path,
                    const char *json, struct reply *reply, long *status, struct execbox_error *err)
{
    char url[1024];
    if (snprintf(url, sizeof(url), "%s%s", s->api, path) >= (int)sizeof(url))
        return eb_error_set(err, -ENAMETOOLONG, "request URL too long");
    struct curl_slist *hdrs = NULL;
    const char *lines[] = {s->key_header, "Content-Type: application/json"};
    if (add_headers(&hdrs, lines, ARRAY_SIZE(lines)) < 0)
        return eb_error_set(err, -ENOMEM, "out of memory");
    int r = http_call(method, url, hdrs, json, E2B_CALL_MS, reply, status, err);
    curl_slist_free_all(hdrs);
    return r;
}

/* ---- the sandbox's lifecycle --------------------------------------------------------------- */

struct sandbox {
    char id[128];
    char token[256];  /* envdAccessToken, "" when the sandbox is not secured */
    char domain[256]; /* the sandbox's domain, "" = the configured one */
};

/* network "allow": E2B's egress rules, allowOut the hosts (E2B filters by host or address,
 * not by port) and denyOut everything else. NULL on ENOMEM. */
static json_t *network_rules(const struct execbox_policy *p)
{
    json_t *allow = json_array();
    for (size_t i = 0; allow && i < EXECBOX_ALLOW_HOSTS_MAX && p->allow_hosts[i][0]; i++) {
        struct eb_host_rule rule;
        char text[EXECBOX_ALLOW_HOST_LEN + 8];
        if (eb_host_rule_parse(p->allow_hosts[i], &rule, NULL) < 0)
            continue; /* the policy was validated when it was set */
        rule.port = 0;
        eb_host_rule_format(&rule, text, sizeof(text));
        json_array_append_new(allow, json_string(text));
    }
    return allow ? json_pack("{s:o, s:[s]}", "allowOut", allow, "denyOut", "0.0.0.0/0") : NULL;
}

static int create_body(const struct e2b_state *s, const struct execbox_policy *p, char **ret,
                       struct execbox_error *err)
{
    double life = ceil(p->timeout) + E2B_LIFETIME_MARGIN;
    if (life > E2B_LIFETIME_MAX)
        life = E2B_LIFETIME_MAX;
    bool allow = p->network == EXECBOX_NETWORK_ALLOW;
    /* secure: the sandbox's own API wants the access token; autoPause false: at the end of
     * its lifetime the sandbox is killed, never kept. */
    json_t *b = json_pack("{s:s, s:I, s:b, s:b, s:b, s:{s:s}, s:{}}", "templateID", s->template_id,
                          "timeout", (json_int_t)life, "secure", 1, "allow_internet_access", allow,
                          "autoPause", 0, "metadata", "created_by", "execbox", "envVars");
    if (b && allow)
        json_object_set_new(b, "network", network_rules(p));
    char *j = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    if (!j)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret = j;
    return 0;
}

static int copy_field(json_t *o, const char *name, char *out, size_t size, bool required)
{
    const char *v = json_string_value(json_object_get(o, name));
    if (!v)
        return required ? -EPROTO : 0;
    if (!valid_token(v, size - 1))
        return -EPROTO;
    snprintf(out, size, "%s", v);
    return 0;
}

/* Creates the run's sandbox; a 429 is retried (honouring Retry-After) up to
 * E2B_CREATE_TRIES in all. 0 with *sb, or -errno with err saying what E2B answered. */
static int create_sandbox(const struct e2b_state *s, const struct execbox_policy *p,
                          struct sandbox *sb, struct execbox_error *err)
{
    _cleanup_free_ char *body = NULL;
    int r = create_body(s, p, &body, err);
    if (r < 0)
        return r;
    for (int attempt = 1;; attempt++) {
        struct reply rep = {.body.max = E2B_BODY_MAX};
        long status = 0;
        r = api_call(s, "POST", "/sandboxes", body, &rep, &status, err);
        if (r < 0) {
            free(rep.body.data);
            return eb_error_prefix(err, r, "creating the E2B sandbox");
        }
        if (status == 201 || status == 200) {
            json_t *j = rep.body.data ? json_loadb(rep.body.data, rep.body.len, 0, NULL) : NULL;
            free(rep.body.data);
            memset(sb, 0, sizeof(*sb));
            r = j ? copy_field(j, "sandboxID", sb->id, sizeof(sb->id), true) : -EPROTO;
            if (r == 0)
                r = copy_field(j, "envdAccessToken", sb->token, sizeof(sb->token), false);
            if (r == 0)
                r = copy_field(j, "domain", sb->domain, sizeof(sb->domain), false);
            json_decref(j);
            if (r < 0)
                return eb_error_set(err, -EPROTO,
                                    "creating the E2B sandbox: the API's reply lacks a valid "
                                    "sandboxID");
            return 0;
        }
        char msg[200];
        eb_http_message(&rep.body, msg, sizeof(msg));
        double wait = rep.retry_after > 0 ? rep.retry_after : (double)attempt;
        free(rep.body.data);
        if (status == 429 && attempt < E2B_CREATE_TRIES) {
            if (wait > E2B_RETRY_AFTER_MAX)
                wait = E2B_RETRY_AFTER_MAX;
            usleep((useconds_t)(wait * 1e6));
            continue;
        }
        int code = status == 401 || status == 403 ? -EACCES
                   : status == 429                ? -EBUSY
                   : status == 404                ? -ENOENT
                   : status == 400                ? -EINVAL
                                                  : -EIO;
        const char *hint = status == 401   ? " (check E2B_API_KEY)"
                           : status == 429 ? " (rate limited; every try answered 429)"
                           : status == 404 ? " (unknown template?)"
                                           : "";
        return eb_error_set(err, code,
                            "creating the E2B sandbox from template '%s': HTTP %ld: %s%s",
                            s->template_id, status, msg[0] ? msg : "no message", hint);
    }
}

/* Deletes the sandbox; a 404 means it is gone already (its lifetime ran out). 0 or -errno. */
static int delete_sandbox(const struct e2b_state *s, const struct sandbox *sb,
                          struct execbox_error *err)
{
    char path[200];
    snprintf(path, sizeof(path), "/sandboxes/%s", sb->id);
    int r = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct reply rep = {.body.max = E2B_BODY_MAX};
        long status = 0;
        r = api_call(s, "DELETE", path, NULL, &rep, &status, err);
        char msg[200];
        eb_http_message(&rep.body, msg, sizeof(msg));
        free(rep.body.data);
        if (r == 0 && (status == 204 || status == 200 || status == 404))
            return 0;
        if (r == 0)
            r = eb_error_set(err, -EIO, "HTTP %ld: %s", status, msg[0] ? msg : "no message");
    }
    return eb_error_prefix(err, r,
                           "deleting E2B sandbox '%s' failed (E2B ends it when its lifetime "
                           "runs out)",
                           sb->id);
}

/* ---- the sandbox's own services: envd (files) and the code interpreter ------------------- */

/* The URL of path on one of the sandbox's ports: E2B_SANDBOX_URL (the port then travels in the
 * E2b-Sandbox-Port header), else https://<port>-<id>.<domain>. */
static int sandbox_url(const struct e2b_state *s, const struct sandbox *sb, int port,
                       const char *path, char *url, size_t size, struct execbox_error *err)
{
    int n = s->sandbox[0] ? snprintf(url, size, "%s%s", s->sandbox, path)
                          : snprintf(url, size, "https://%d-%s.%s%s", port, sb->id,
                                     sb->domain[0] ? sb->domain : s->domain, path);
    if (n < 0 || (size_t)n >= size)
        return eb_error_set(err, -ENAMETOOLONG, "sandbox URL too long");
    return 0;
}

/* The headers of every request to the sandbox (E2B's proxy routes by id and port; the access
 * token authenticates; the API key never goes there), then extra. NULL on ENOMEM. */
static struct curl_slist *sandbox_headers(const struct sandbox *sb, int port,
                                          const char *const *extra, size_t n_extra)
{
    char h_id[200], h_port[64], h_tok[300];
    snprintf(h_id, sizeof(h_id), "E2b-Sandbox-Id: %s", sb->id);
    snprintf(h_port, sizeof(h_port), "E2b-Sandbox-Port: %d", port);
    snprintf(h_tok, sizeof(h_tok), "X-Access-Token: %s", sb->token);
    const char *lines[] = {h_id, h_port, sb->token[0] ? h_tok : NULL};
    struct curl_slist *hdrs = NULL;
    if (add_headers(&hdrs, lines, ARRAY_SIZE(lines)) < 0 || add_headers(&hdrs, extra, n_extra) < 0)
        return NULL;
    return hdrs;
}

/* One request to the sandbox with a bounded reply, as http_call. */
static int sandbox_call(const struct e2b_state *s, const struct sandbox *sb, int port,
                        const char *method, const char *path, const char *json,
                        const char *const *extra, size_t n_extra, long timeout_ms,
                        struct reply *reply, long *status, struct execbox_error *err)
{
    char url[2048];
    int r = sandbox_url(s, sb, port, path, url, sizeof(url), err);
    if (r < 0)
        return r;
    struct curl_slist *hdrs = sandbox_headers(sb, port, extra, n_extra);
    if (!hdrs)
        return eb_error_set(err, -ENOMEM, "out of memory");
    r = http_call(method, url, hdrs, json, timeout_ms, reply, status, err);
    curl_slist_free_all(hdrs);
    return r;
}

/* One unary call of envd's filesystem service, in the Connect protocol's JSON encoding as E2B's
 * SDKs speak it, as the code interpreter's user. */
static int envd_rpc(const struct e2b_state *s, const struct sandbox *sb, const char *method,
                    const char *json, long timeout_ms, struct reply *reply, long *status,
                    struct execbox_error *err)
{
    char path[96];
    snprintf(path, sizeof(path), "/filesystem.Filesystem/%s", method);
    static const char *const extra[] = {"Content-Type: application/json",
                                        "Connect-Protocol-Version: 1", E2B_ENVD_USER};
    return sandbox_call(s, sb, E2B_ENVD_PORT, "POST", path, json, extra, ARRAY_SIZE(extra),
                        timeout_ms, reply, status, err);
}

/* A JSON body, or NULL on ENOMEM (o is consumed). */
static char *dump(json_t *o)
{
    char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return j;
}

/* Makes the run's working directory, E2B_WORKSPACE, and a code context whose cwd it is: the
 * default context works in the template's home, among the template's own files, which would
 * be listed as the run's. 0 with ctx set, or -errno. */
static int prepare(const struct e2b_state *s, const struct sandbox *sb, const char *lang, char *ctx,
                   size_t size, struct execbox_error *err)
{
    _cleanup_free_ char *mk = dump(json_pack("{s:s}", "path", E2B_WORKSPACE));
    _cleanup_free_ char *cx = dump(json_pack("{s:s, s:s}", "language", lang, "cwd", E2B_WORKSPACE));
    if (!mk || !cx)
        return eb_error_set(err, -ENOMEM, "out of memory");
    struct reply rep = {.body.max = E2B_BODY_MAX};
    long status = 0;
    char msg[200];
    int r = envd_rpc(s, sb, "MakeDir", mk, E2B_CALL_MS, &rep, &status, err);
    eb_http_message(&rep.body, msg, sizeof(msg));
    free(rep.body.data);
    if (r < 0)
        return eb_error_prefix(err, r, "E2B sandbox '%s': making %s", sb->id, E2B_WORKSPACE);
    if (status == 409)
        return eb_error_set(err, -EEXIST,
                            "E2B sandbox '%s': the template already has %s; its files would be "
                            "listed as the run's",
                            sb->id, E2B_WORKSPACE);
    if (status != 200)
        return eb_error_set(err, -EIO, "E2B sandbox '%s': making %s: HTTP %ld: %s", sb->id,
                            E2B_WORKSPACE, status, msg[0] ? msg : "no message");
    static const char *const extra[] = {"Content-Type: application/json"};
    rep = (struct reply){.body.max = E2B_BODY_MAX};
    r = sandbox_call(s, sb, E2B_JUPYTER_PORT, "POST", "/contexts", cx, extra, ARRAY_SIZE(extra),
                     E2B_CALL_MS, &rep, &status, err);
    json_t *j = r == 0 && (status == 200 || status == 201) && rep.body.data
                    ? json_loadb(rep.body.data, rep.body.len, 0, NULL)
                    : NULL;
    eb_http_message(&rep.body, msg, sizeof(msg));
    free(rep.body.data);
    if (r < 0)
        return eb_error_prefix(err, r, "E2B sandbox '%s': creating a code context", sb->id);
    r = j ? copy_field(j, "id", ctx, size, true) : -EPROTO;
    json_decref(j);
    if (r < 0 && (status == 200 || status == 201))
        return eb_error_set(err, -EPROTO,
                            "E2B sandbox '%s': the code context's reply lacks a valid id", sb->id);
    if (r < 0)
        return eb_error_set(err, -EIO, "E2B sandbox '%s': creating a code context: HTTP %ld: %s",
                            sb->id, status, msg[0] ? msg : "no message");
    return 0;
}

/* ---- the files a run left ------------------------------------------------------------------ */

struct entry {
    char *rel; /* relative to E2B_WORKSPACE */
    uint64_t size;
};

static int cmp_entries(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->rel, ((const struct entry *)b)->rel);
}

/* A regular file: envd's FileType, as its JSON name or its number. */
static bool is_file(json_t *t)
{
    const char *v = json_string_value(t);
    return v ? strcmp(v, "FILE_TYPE_FILE") == 0 : json_integer_value(t) == 1;
}

/* An int64 as proto3's JSON encodes it (a decimal string), or a plain number. */
static bool entry_size(json_t *v, uint64_t *ret)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *ret = (uint64_t)json_integer_value(v);
        return true;
    }
    const char *t = json_string_value(v);
    if (!t || !*t || strspn(t, "0123456789") != strlen(t) || strlen(t) > 19)
        return false;
    *ret = strtoull(t, NULL, 10);
    return true;
}

/* The path below E2B_WORKSPACE, or NULL for one that is not a clean relative path there. */
static const char *relative(json_t *path)
{
    const char *p = json_string_value(path);
    size_t n = sizeof(E2B_WORKSPACE) - 1;
    if (!p || strlen(p) != json_string_length(path) || strncmp(p, E2B_WORKSPACE "/", n + 1) != 0)
        return NULL;
    const char *rel = p + n + 1;
    if (!*rel || strlen(rel) >= EXECBOX_PATH_MAX)
        return NULL;
    for (const char *c = rel;;) {
        size_t k = strcspn(c, "/");
        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
            return NULL;
        if (!c[k])
            break;
        c += k + 1;
    }
    return rel;
}

/* Reads one small image into f->data when its bytes are what its name says; a file gone since
 * the listing (404) or grown past inline_max stays listed without data. 0 or -errno. */
static int fetch_image(const struct e2b_state *s, const struct sandbox *sb, struct execbox_file *f,
                       size_t inline_max, long timeout_ms, struct execbox_error *err)
{
    char abs[EXECBOX_PATH_MAX + sizeof(E2B_WORKSPACE) + 1];
    snprintf(abs, sizeof(abs), "%s/%s", E2B_WORKSPACE, f->path);
    CURL *h = curl_easy_init();
    char *q = h ? curl_easy_escape(h, abs, 0) : NULL;
    if (h)
        curl_easy_cleanup(h);
    if (!q)
        return eb_error_set(err, -ENOMEM, "out of memory");
    char path[3 * sizeof(abs) + 64];
    snprintf(path, sizeof(path), "/files?path=%s&username=user", q);
    curl_free(q);
    struct reply rep = {.body.max = inline_max};
    long status = 0;
    int r = sandbox_call(s, sb, E2B_ENVD_PORT, "GET", path, NULL, NULL, 0, timeout_ms, &rep,
                         &status, err);
    if (r < 0 && rep.body.overflow) {
        free(rep.body.data);
        return 0;
    }
    if (r == 0 && status == 200 && rep.body.len > 0 &&
        eb_image_magic_ok(f->mime, (const unsigned char *)rep.body.data, rep.body.len)) {
        f->data = (unsigned char *)rep.body.data;
        f->data_len = rep.body.len;
        return 0;
    }
    char msg[200];
    eb_http_message(&rep.body, msg, sizeof(msg));
    free(rep.body.data);
    if (r < 0)
        return r;
    if (status == 200 || status == 404)
        return 0;
    return eb_error_set(err, -EIO, "GET /files '%s': HTTP %ld: %s", abs, status,
                        msg[0] ? msg : "no message");
}

/* Lists the regular files below E2B_WORKSPACE (envd's ListDir, which follows no symlink; depth
 * 1 is the directory's own entries, so files EB_FILES_DEPTH directories down are listed, as
 * lib/ws/workspace.c lists them) into res->files, sorted by path, at most EB_FILES_MAX; images up
 * to inline_max bytes are read inline, at most E2B_INLINE_TOTAL_MAX bytes in all. A listing too
 * large to read gives no files and files_truncated. 0 or -errno. */
static int list_files(const struct e2b_state *s, const struct sandbox *sb, size_t inline_max,
                      struct execbox_result *res, struct execbox_error *err)
{
    uint64_t deadline = eb_now_ns() + (uint64_t)E2B_FILES_MS * 1000000;
    _cleanup_free_ char *body =
        dump(json_pack("{s:s, s:i}", "path", E2B_WORKSPACE, "depth", EB_FILES_DEPTH + 1));
    if (!body)
        return eb_error_set(err, -ENOMEM, "out of memory");
    struct reply rep = {.body.max = E2B_LIST_MAX};
    long status = 0;
    int r = envd_rpc(s, sb, "ListDir", body, E2B_FILES_MS, &rep, &status, err);
    if (r < 0 && rep.body.overflow) {
        free(rep.body.data);
        res->files_truncated = true;
        return 0;
    }
    json_t *j = r == 0 && status == 200 && rep.body.data
                    ? json_loadb(rep.body.data, rep.body.len, JSON_ALLOW_NUL, NULL)
                    : NULL;
    char msg[200];
    eb_http_message(&rep.body, msg, sizeof(msg));
    free(rep.body.data);
    if (r < 0)
        return r;
    if (status != 200)
        return eb_error_set(err, -EIO, "ListDir %s: HTTP %ld: %s", E2B_WORKSPACE, status,
                            msg[0] ? msg : "no message");
    json_t *entries = json_object_get(j, "entries");
    if (!json_is_object(j) || (entries && !json_is_array(entries))) {
        json_decref(j);
        return eb_error_set(err, -EPROTO, "ListDir %s: the reply is not a list of entries",
                            E2B_WORKSPACE);
    }
    size_t n = json_array_size(entries), k = 0;
    struct entry *e = n ? calloc(n, sizeof(*e)) : NULL;
    if (n && !e) {
        json_decref(j);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(entries, i);
        const char *rel = relative(json_object_get(o, "path"));
        uint64_t size;
        if (!rel || !is_file(json_object_get(o, "type")) ||
            !entry_size(json_object_get(o, "size"), &size))
            continue;
        e[k].rel = strdup(rel);
        e[k].size = size;
        if (!e[k].rel) {
            r = -ENOMEM;
            break;
        }
        k++;
    }
    json_decref(j);
    if (k > 1)
        qsort(e, k, sizeof(*e), cmp_entries);
    size_t keep = k > EB_FILES_MAX ? EB_FILES_MAX : k;
    if (r == 0 && keep) {
        res->files = calloc(keep, sizeof(*res->files));
        if (!res->files)
            r = -ENOMEM;
    }
    for (size_t i = 0; r == 0 && i < keep; i++) {
        struct execbox_file *f = &res->files[i];
        const char *base = strrchr(e[i].rel, '/');
        f->mime = strdup(eb_mime_from_name(base ? base + 1 : e[i].rel));
        if (!f->mime) {
            r = -ENOMEM;
            break;
        }
        f->path = TAKE_PTR(e[i].rel);
        f->size = e[i].size;
        res->n_files++;
    }
    res->files_truncated = res->files_truncated || k > keep;
    for (size_t i = 0; i < k; i++)
        free(e[i].rel);
    free(e);
    if (r < 0)
        return r;
    size_t left = E2B_INLINE_TOTAL_MAX;
    for (size_t i = 0; i < res->n_files; i++) {
        struct execbox_file *f = &res->files[i];
        if (strncmp(f->mime, "image/", 6) != 0 || f->size == 0 || f->size > inline_max ||
            f->size > left)
            continue;
        uint64_t now = eb_now_ns();
        if (now >= deadline)
            return eb_error_set(err, -ETIMEDOUT, "reading the images took longer than %ld ms",
                                E2B_FILES_MS);
        r = fetch_image(s, sb, f, inline_max, (long)((deadline - now) / 1000000), err);
        if (r < 0)
            return r;
        left -= f->data_len;
    }
    return 0;
}

/* ---- the execute stream -------------------------------------------------------------------- */

struct stream {
    const struct execbox_request *req;
    CURL *h;
    struct eb_capbuf buf[2]; /* stdout, stderr */
    char *line;              /* the line being assembled */
    size_t len, cap;
    uint64_t bytes, flood_at;
    long status;              /* the HTTP status, once the first byte arrived */
    struct eb_http_body body; /* a non-200 reply's body */
    json_t *error;            /* the "error" line, if any */
    bool flooded, ended, unexpected, bad_line, nomem;
};

static int deliver(struct stream *st, int which, const char *text, size_t n)
{
    return eb_capbuf_take(&st->buf[which], st->req->on_output, st->req->userdata,
                          which == 0 ? EXECBOX_STREAM_STDOUT : EXECBOX_STREAM_STDERR, text, n);
}

/* One NDJSON line of the code interpreter. false stops the transfer. */
static bool take_line(struct stream *st, const char *p, size_t n)
{
    if (n == 0)
        return true;
    json_t *j = json_loadb(p, n, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type) {
        json_decref(j);
        st->bad_line = true;
        return false;
    }
    bool ok = true;
    if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
        json_t *t = json_object_get(j, "text");
        if (json_is_string(t) &&
            deliver(st, type[3] == 'o' ? 0 : 1, json_string_value(t), json_string_length(t)) < 0)
            ok = !(st->nomem = true);
    } else if (strcmp(type, "error") == 0) {
        json_decref(st->error);
        st->error = json_incref(j);
    } else if (strcmp(type, "end_of_execution") == 0) {
        st->ended = true;
    } else if (strcmp(type, "unexpected_end_of_execution") == 0) {
        st->unexpected = true;
    }
    /* "result" (rich display data of the last expression) and "number_of_executions" carry
     * nothing a one-shot run's record has a field for. */
    json_decref(j);
    return ok;
}

static size_t stream_write(char *p, size_t size, size_t n, void *ud)
{
    struct stream *st = ud;
    size_t len = size * n;
    if (!st->status)
        curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &st->status);
    if (st->status != 200)
        return eb_http_body_write(p, size, n, &st->body);
    st->bytes += len;
    if (st->bytes > st->flood_at) {
        st->flooded = true;
        return 0;
    }
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t k = nl ? (size_t)(nl - (p + i)) : len - i;
        if (st->len + k > E2B_LINE_MAX) {
            st->bad_line = true;
            return 0;
        }
        if (st->len + k + 1 > st->cap) {
            size_t cap = st->cap ? st->cap : 4096;
            while (cap < st->len + k + 1)
                cap *= 2;
            char *d = realloc(st->line, cap);
            if (!d) {
                st->nomem = true;
                return 0;
            }
            st->line = d;
            st->cap = cap;
        }
        memcpy(st->line + st->len, p + i, k);
        st->len += k;
        i += k;
        if (nl) {
            i++;
            bool go = take_line(st, st->line, st->len);
            st->len = 0;
            if (!go)
                return 0;
        }
    }
    return len;
}

/* The code interpreter's name of the run's language. */
static const char *interpreter_language(const struct eb_run *run)
{
    return strcmp(run->lang->name, "javascript") == 0 ? "js"
           : strcmp(run->lang->name, "bash") == 0     ? "bash"
                                                      : "python";
}

static int execute_body(const struct eb_run *run, const char *ctx, char **ret,
                        struct execbox_error *err)
{
    json_t *code = json_stringn(run->code, run->code_len);
    if (!code)
        return eb_error_set(err, -EINVAL, "the e2b backend sends code as JSON: it must be UTF-8");
    /* The context carries the language and the working directory. */
    char *j = dump(json_pack("{s:o, s:s, s:{}}", "code", code, "context_id", ctx, "env_vars"));
    if (!j)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret = j;
    return 0;
}

struct exec_outcome {
    bool timed_out, cancelled;
    CURLcode cr;
};

/* Streams one execution until it ends, the deadline passes or the cancel fd fires. 0 with *o,
 * or -errno for a failure before the transfer could start. */
static int execute(const struct e2b_state *s, const struct sandbox *sb, const char *ctx,
                   const struct eb_run *run, uint64_t deadline_ns, struct stream *st,
                   struct exec_outcome *o, struct execbox_error *err)
{
    char url[2048];
    int r = sandbox_url(s, sb, E2B_JUPYTER_PORT, "/execute", url, sizeof(url), err);
    if (r < 0)
        return r;
    _cleanup_free_ char *body = NULL;
    r = execute_body(run, ctx, &body, err);
    if (r < 0)
        return r;
    static const char *const ctype[] = {"Content-Type: application/json"};
    struct curl_slist *hdrs = sandbox_headers(sb, E2B_JUPYTER_PORT, ctype, ARRAY_SIZE(ctype));
    if (!hdrs)
        return eb_error_set(err, -ENOMEM, "out of memory");
    CURLM *m = curl_multi_init();
    st->h = curl_easy_init();
    if (!m || !st->h) {
        curl_slist_free_all(hdrs);
        if (m)
            curl_multi_cleanup(m);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    /* The transfer's own timeout is a backstop a second past the deadline: the deadline
     * itself is enforced below, where it is told apart from a failure. */
    uint64_t now = eb_now_ns();
    long left_ms = deadline_ns > now ? (long)((deadline_ns - now) / 1000000) : 0;
    base_options(st->h, url, left_ms + 1000);
    curl_easy_setopt(st->h, CURLOPT_POST, 1L);
    curl_easy_setopt(st->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(st->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(st->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(st->h, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(st->h, CURLOPT_WRITEDATA, st);
    curl_multi_add_handle(m, st->h);
    int cancel_fd = eb_cancel_fd(run->req->cancel);
    o->cr = CURLE_OK;
    for (;;) {
        int running = 0;
        curl_multi_perform(m, &running);
        int left;
        CURLMsg *msg;
        bool done = false;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) {
                o->cr = msg->data.result;
                done = true;
            }
        if (done || !running)
            break;
        now = eb_now_ns();
        if (now >= deadline_ns) {
            o->timed_out = true;
            break;
        }
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        int ms = (int)((deadline_ns - now) / 1000000) + 1;
        int fired = 0;
        curl_multi_poll(m, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                        ms > 1000 ? 1000 : ms, &fired);
        if (cancel_fd >= 0 && extra.revents) {
            o->cancelled = true;
            break;
        }
    }
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &st->status);
    curl_multi_remove_handle(m, st->h);
    curl_multi_cleanup(m);
    curl_easy_cleanup(st->h);
    st->h = NULL;
    curl_slist_free_all(hdrs);
    return 0;
}

/* ---- a run --------------------------------------------------------------------------------- */

/* Strips ANSI colour sequences (IPython colours its tracebacks) in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (const char *p = s; *p;) {
        if (p[0] == '\x1b' && p[1] == '[') {
            p += 2;
            while (*p && !(*p >= '@' && *p <= '~'))
                p++;
            if (*p)
                p++;
            continue;
        }
        *w++ = *p++;
    }
    *w = '\0';
}

/* The exception the interpreter reported: SystemExit is the program's exit status; anything
 * else is exit 1 with the traceback appended to stderr, as a local interpreter prints it, and
 * the exception as the run's error (w's error_*, for the executor). *ret_code: the exit code. */
static int apply_error(struct stream *st, int *ret_code, struct eb_wait *w)
{
    const char *name = json_string_value(json_object_get(st->error, "name"));
    const char *value = json_string_value(json_object_get(st->error, "value"));
    const char *tb = json_string_value(json_object_get(st->error, "traceback"));
    if (!name)
        name = "Error";
    if (!value)
        value = "";
    if (strcmp(name, "SystemExit") == 0) {
        char *end;
        long code = strtol(value, &end, 10);
        if (!*value || strcmp(value, "None") == 0)
            *ret_code = 0;
        else if (*end == '\0' && code >= 0 && code <= 255)
            *ret_code = (int)code;
        else {
            *ret_code = 1;
            if (deliver(st, 1, value, strlen(value)) < 0 || deliver(st, 1, "\n", 1) < 0)
                return -ENOMEM;
        }
        return 0;
    }
    *ret_code = 1;
    _cleanup_free_ char *clean = strdup(tb ? tb : "");
    if (!clean)
        return -ENOMEM;
    strip_ansi(clean);
    size_t n = strlen(clean);
    if (n &&
        (deliver(st, 1, clean, n) < 0 || (clean[n - 1] != '\n' && deliver(st, 1, "\n", 1) < 0)))
        return -ENOMEM;
    w->error_name = strdup(name);
    w->error_value = strdup(value);
    w->error_traceback = TAKE_PTR(clean);
    return w->error_name && w->error_value ? 0 : -ENOMEM;
}

static int refuse(const struct eb_run *run, struct execbox_error *err)
{
    if (run->req->stdin_data)
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend cannot pass stdin (E2B's code interpreter has none)");
    if (run->policy->workspace[0])
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend cannot mount a host --workspace (the sandbox is "
                            "remote)");
    if (run->policy->rootfs[0])
        return eb_error_set(err, -ENOTSUP,
                            "the e2b backend has no --rootfs: the E2B template is the root "
                            "(--e2b-template)");
    return 0;
}

static int record_degraded(const struct execbox_policy *p, struct execbox_result *res)
{
    for (size_t i = 0; i < ARRAY_SIZE(not_enforced); i++)
        if (eb_result_add_degraded(res, not_enforced[i].wall) < 0)
            return -ENOMEM;
    /* E2B's egress rules know hosts, not ports; and it reports no egress record. */
    if (p->network == EXECBOX_NETWORK_ALLOW && eb_result_add_degraded(res, "allow_ports") < 0)
        return -ENOMEM;
    return 0;
}

/* A run's E2B sandbox (the backend's eb_box): created and prepared (its working directory, a
 * code context there) by start(); the code goes with the execute in wait(), which deletes the
 * sandbox once the code ended and its files were listed (so that a failed delete is the run's
 * error), else destroy() does. */
struct eb_box {
    struct sandbox sb;
    char ctx[128];
    uint64_t t0; /* deliver(): the deadline counts from here */
    bool deleted;
};

static void e2b_destroy(void *state, struct eb_box *w)
{
    if (!w)
        return;
    if (!w->deleted)
        delete_sandbox(state, &w->sb, NULL);
    free(w);
}

/* Cold only: the refusals first (nothing is created for a refused run), then the sandbox, its
 * working directory and a code context working there. */
static int e2b_start(void *state, const struct eb_start *s, struct eb_box **ret,
                     struct execbox_error *err)
{
    const struct e2b_state *e = state;
    int r = refuse(s->run, err);
    if (r < 0)
        return r;
    struct eb_box *w = calloc(1, sizeof(*w));
    if (!w)
        return eb_error_set(err, -ENOMEM, "out of memory");
    r = create_sandbox(e, s->policy, &w->sb, err);
    if (r < 0) {
        free(w);
        return r;
    }
    r = prepare(e, &w->sb, interpreter_language(s->run), w->ctx, sizeof(w->ctx), err);
    if (r < 0) {
        e2b_destroy(state, w);
        return r;
    }
    *ret = w;
    return 0;
}

/* The code travels with the execute call, which wait() makes and follows. */
static int e2b_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                       struct execbox_error *err)
{
    (void)state, (void)run, (void)err;
    w->t0 = eb_now_ns();
    return 0;
}

/* Streams the execution to its end, the deadline, a cancel or a flood; lists the files once the
 * code ran to its end; deletes the sandbox; reports how it ended. */
static int e2b_wait(void *state, struct eb_box *w, const struct eb_run *run,
                    struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    const struct e2b_state *s = state;
    const struct execbox_policy *p = run->policy;
    if (record_degraded(p, res) < 0)
        return -ENOMEM;
    struct stream st = {.req = run->req, .body.max = E2B_BODY_MAX};
    uint64_t lim = p->output_limit * E2B_FLOOD_FACTOR;
    st.flood_at = lim > E2B_FLOOD_MIN ? lim : E2B_FLOOD_MIN;
    eb_capbuf_init(&st.buf[0], p->output_limit);
    eb_capbuf_init(&st.buf[1], p->output_limit);
    struct exec_outcome o = {0};
    int r = execute(s, &w->sb, w->ctx, run, w->t0 + (uint64_t)(p->timeout * 1e9), &st, &o, err);
    res->execution_time = (double)(eb_now_ns() - w->t0) / 1e9;
    /* The files, only once the code ran to its end: after a timeout or a cancel the code may
     * still be writing. */
    struct execbox_error lerr = {0, ""};
    int lr = 0;
    if (r == 0 && !o.timed_out && !o.cancelled && !st.flooded && !st.nomem && st.status == 200 &&
        !st.bad_line && !st.unexpected && o.cr == CURLE_OK && st.ended) {
        lr = list_files(s, &w->sb, run->req->inline_files_max, res, &lerr);
        if (lr < 0)
            lr = eb_error_prefix(&lerr, lr, "E2B sandbox '%s': the files in %s", w->sb.id,
                                 E2B_WORKSPACE);
        ret->files_listed = true;
    }
    /* The sandbox goes on every path out, before anything else can fail. */
    struct execbox_error derr = {0, ""};
    int dr = delete_sandbox(s, &w->sb, &derr);
    w->deleted = true;

    /* E2B reports no CPU or memory figure. */
    ret->cpu_ns = -2;
    ret->peak_memory = -2;
    struct eb_outcome *oc = &ret->oc;
    int code = 0;
    if (r < 0) {
        /* nothing ran */
    } else if (o.timed_out || o.cancelled) {
        oc->timed_out = o.timed_out;
        oc->cancelled = o.cancelled;
    } else if (st.flooded) {
        /* The stream was cut and the sandbox deleted with the code in it. */
        oc->flooded = true;
        oc->flood_at = st.flood_at;
        oc->flood_stopped = true;
    } else if (st.nomem) {
        r = eb_error_set(err, -ENOMEM, "out of memory");
    } else if (st.status != 200) {
        char msg[200];
        eb_http_message(&st.body, msg, sizeof(msg));
        r = eb_error_set(err, st.status == 502 ? -ENOENT : -EIO,
                         "E2B sandbox '%s': /execute answered HTTP %ld: %s%s", w->sb.id, st.status,
                         msg[0] ? msg : "no message",
                         st.status == 502 ? " (the sandbox is gone: not found or timed out)" : "");
    } else if (st.bad_line) {
        r = eb_error_set(err, -EPROTO,
                         "E2B sandbox '%s': the execute stream sent a line that is not a typed "
                         "JSON object (or longer than %u bytes)",
                         w->sb.id, E2B_LINE_MAX);
    } else if (st.unexpected) {
        r = eb_error_set(err, -EIO,
                         "E2B sandbox '%s': the code interpreter's kernel ended unexpectedly "
                         "(out of memory in the VM?)",
                         w->sb.id);
    } else if (o.cr != CURLE_OK || !st.ended) {
        r = eb_error_set(err, -EIO, "E2B sandbox '%s': the execute stream broke off: %s", w->sb.id,
                         o.cr != CURLE_OK ? curl_easy_strerror(o.cr)
                                          : "it ended without end_of_execution");
    } else if (!st.error || (r = apply_error(&st, &code, ret)) == 0) {
        /* The code ran to its end: its exit status (SystemExit's), 0 without an error. */
        oc->got_exit = true;
        oc->status = W_EXITCODE(code, 0);
    }
    if (r >= 0 && lr < 0) {
        r = lr;
        if (err)
            *err = lerr;
    }
    if (r >= 0 && dr < 0) {
        r = dr;
        if (err)
            *err = derr;
    }
    eb_capbuf_take_end(&st.buf[0], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDOUT);
    eb_capbuf_take_end(&st.buf[1], run->req->on_output, run->req->userdata, EXECBOX_STREAM_STDERR);
    res->stdout_truncated = eb_capbuf_truncated(&st.buf[0]);
    res->stderr_truncated = eb_capbuf_truncated(&st.buf[1]);
    res->stdout_bytes = st.buf[0].total;
    res->stderr_bytes = st.buf[1].total;
    if ((eb_capbuf_finish(&st.buf[0], &res->stdout_data, &res->stdout_len) < 0 ||
         eb_capbuf_finish(&st.buf[1], &res->stderr_data, &res->stderr_len) < 0) &&
        r >= 0)
        r = eb_error_set(err, -ENOMEM, "out of memory");
    eb_capbuf_free(&st.buf[0]);
    eb_capbuf_free(&st.buf[1]);
    free(st.line);
    free(st.body.data);
    json_decref(st.error);
    return r < 0 ? r : 0;
}

const struct eb_backend_ops eb_backend_e2b = {
    .name = "e2b",
    .probe = probe,
    .open = open_backend,
    .close = close_backend,
    .start = e2b_start,
    .deliver = e2b_deliver,
    .wait = e2b_wait,
    .destroy = e2b_destroy,
    /* E2B enforces the hosts of an allow-list itself (network.allowOut, the rest denied). */
    .network_allow = true,
};
