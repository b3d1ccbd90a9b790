/* SPDX-License-Identifier: MIT */
/*
 * e2b_api.c - the e2b backend's client of E2B: HTTP with libcurl, the REST API's sandbox
 * create and delete, and the sandbox's own services: envd (the working directory, the listing
 * and reading of the files a run left) and the code interpreter's code contexts.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/curl_load.h"
#include "backends/e2b.h"
#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/hostrule.h"
#include "ws/workspace.h"

/* A key, a name, an id: 1..max characters of [A-Za-z0-9-_.:/]. */
bool e2b_valid_token(const char *s, size_t max)
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

/* ---- HTTP ---------------------------------------------------------------------------------- */

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
void e2b_base_options(CURL *h, const char *url, long timeout_ms)
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
    e2b_base_options(h, url, timeout_ms);
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
    if (!e2b_valid_token(v, size - 1))
        return -EPROTO;
    snprintf(out, size, "%s", v);
    return 0;
}

/* Creates the run's sandbox; a 429 is retried (honouring Retry-After) up to
 * E2B_CREATE_TRIES in all. 0 with *sb, or -errno with err saying what E2B answered. */
int e2b_create_sandbox(const struct e2b_state *s, const struct execbox_policy *p,
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
int e2b_delete_sandbox(const struct e2b_state *s, const struct sandbox *sb,
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
int e2b_sandbox_url(const struct e2b_state *s, const struct sandbox *sb, int port, const char *path,
                    char *url, size_t size, struct execbox_error *err)
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
struct curl_slist *e2b_sandbox_headers(const struct sandbox *sb, int port, const char *const *extra,
                                       size_t n_extra)
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
    int r = e2b_sandbox_url(s, sb, port, path, url, sizeof(url), err);
    if (r < 0)
        return r;
    struct curl_slist *hdrs = e2b_sandbox_headers(sb, port, extra, n_extra);
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
char *e2b_dump(json_t *o)
{
    char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return j;
}

/* Makes the run's working directory, E2B_WORKSPACE, and a code context whose cwd it is: the
 * default context works in the template's home, among the template's own files, which would
 * be listed as the run's. 0 with ctx set, or -errno. */
int e2b_prepare(const struct e2b_state *s, const struct sandbox *sb, const char *lang, char *ctx,
                size_t size, struct execbox_error *err)
{
    _cleanup_free_ char *mk = e2b_dump(json_pack("{s:s}", "path", E2B_WORKSPACE));
    _cleanup_free_ char *cx =
        e2b_dump(json_pack("{s:s, s:s}", "language", lang, "cwd", E2B_WORKSPACE));
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
int e2b_list_files(const struct e2b_state *s, const struct sandbox *sb, size_t inline_max,
                   struct execbox_result *res, struct execbox_error *err)
{
    uint64_t deadline = eb_now_ns() + (uint64_t)E2B_FILES_MS * 1000000;
    _cleanup_free_ char *body =
        e2b_dump(json_pack("{s:s, s:i}", "path", E2B_WORKSPACE, "depth", EB_FILES_DEPTH + 1));
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
