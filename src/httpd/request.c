/* SPDX-License-Identifier: MIT */
/* request.c - the wire format of `execbox serve` (see request.h): request bodies in, error
 * bodies and server-sent events out. Pure functions over bytes; no HTTP, no threads. */
#include "request.h"

#include "common/jsonrpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

_Static_assert(SRV_FILES_MAX <= 64, "files_decoded has one bit a file");

void srv_run_spec_clear(struct srv_run_spec *s)
{
    free(s->code);
    free(s->stdin_data);
    /* The spec made these copies: const only toward the library. */
    for (size_t i = 0; i < s->n_files; i++) {
        free((void *)s->files[i].path);
        if (s->files_decoded & (UINT64_C(1) << i))
            execbox_free((void *)s->files[i].data);
        else
            free((void *)s->files[i].data);
    }
    free(s->files);
    memset(s, 0, sizeof(*s));
}

__attribute__((format(printf, 5, 6))) static int bad(struct execbox_error *err, char *field,
                                                     size_t field_size, const char *name,
                                                     const char *fmt, ...)
{
    if (field_size)
        snprintf(field, field_size, "%s", name ? name : "");
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = -EINVAL;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Refuses nesting deeper than SRV_JSON_DEPTH_MAX before the parser sees it. Brackets inside
 * strings do not count. Returns false when too deep. */
static bool depth_ok(const char *s, size_t len)
{
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '[' || c == '{') {
            if (++depth > SRV_JSON_DEPTH_MAX)
                return false;
        } else if ((c == ']' || c == '}') && depth > 0)
            depth--;
    }
    return true;
}

static char *dup_json_string(const json_t *v, size_t *ret_len)
{
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, json_string_value(v), n);
    s[n] = '\0';
    *ret_len = n;
    return s;
}

static const char *known_language(const char *name)
{
    for (const char *const *l = execbox_languages(); *l; l++)
        if (strcmp(*l, name) == 0)
            return *l;
    return NULL;
}

/* Applies one policy field of the request to *pol through the library, which checks its type
 * and range and names it in the message. */
bool srv_workspace_path_ok(const char *path, size_t len)
{
    if (len == 0 || len >= EXECBOX_PATH_MAX || memchr(path, '\0', len) || path[0] == '/')
        return false;
    for (size_t i = 0; i <= len;) {
        const char *part = path + i;
        const char *slash = memchr(part, '/', len - i);
        size_t n = slash ? (size_t)(slash - part) : len - i;
        if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
            return false;
        i += n + 1;
    }
    return true;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int srv_url_decode(const char *in, size_t len, char *out, size_t size, size_t *ret_len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= len)
                return -EINVAL;
            int h = hex_value(in[i + 1]), l = hex_value(in[i + 2]);
            if (h < 0 || l < 0)
                return -EINVAL;
            c = (char)(h << 4 | l);
            i += 2;
        }
        if (o + 1 >= size)
            return -ENAMETOOLONG;
        out[o++] = c;
    }
    if (size == 0)
        return -ENAMETOOLONG;
    out[o] = '\0';
    *ret_len = o;
    return 0;
}

const char *srv_mime_from_name(const char *path)
{
    static const struct {
        const char *ext, *mime;
    } types[] = {
        {"txt", "text/plain; charset=utf-8"},
        {"log", "text/plain; charset=utf-8"},
        {"py", "text/x-python; charset=utf-8"},
        {"md", "text/markdown; charset=utf-8"},
        {"csv", "text/csv; charset=utf-8"},
        {"tsv", "text/tab-separated-values; charset=utf-8"},
        {"json", "application/json"},
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"xml", "application/xml"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"pdf", "application/pdf"},
        {"zip", "application/zip"},
        {"gz", "application/gzip"},
        {"parquet", "application/vnd.apache.parquet"},
    };
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcasecmp(dot + 1, types[i].ext) == 0)
                return types[i].mime;
    return "application/octet-stream";
}

/* The "files" array of a run or a cell: [{"path", "content", "encoding"?}], each within the
 * policy's file_size. */
static int parse_files(json_t *v, const struct execbox_policy *pol, struct srv_run_spec *spec,
                       char *field, size_t field_size, struct execbox_error *err)
{
    if (json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return bad(err, field, field_size, "files",
                   "files: expected an array of {path, content, encoding}");
    size_t n = json_array_size(v);
    if (n > SRV_FILES_MAX)
        return bad(err, field, field_size, "files", "files: more than %d entries", SRV_FILES_MAX);
    uint64_t cap = pol->file_size ? pol->file_size : EXECBOX_DEFAULT_FILE_SIZE;
    spec->files = calloc(n ? n : 1, sizeof(*spec->files));
    if (!spec->files)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        char name[32];
        snprintf(name, sizeof(name), "files[%zu]", i);
        if (!json_is_object(e))
            return bad(err, field, field_size, name, "%s: expected an object", name);
        const char *k;
        json_t *x;
        json_object_foreach (e, k, x)
            if (strcmp(k, "path") != 0 && strcmp(k, "content") != 0 && strcmp(k, "encoding") != 0)
                return bad(err, field, field_size, name, "%s: unknown field '%.64s'", name, k);
        json_t *p = json_object_get(e, "path"), *c = json_object_get(e, "content"),
               *enc = json_object_get(e, "encoding");
        snprintf(name, sizeof(name), "files[%zu].path", i);
        if (!json_is_string(p) ||
            !srv_workspace_path_ok(json_string_value(p), json_string_length(p)))
            return bad(err, field, field_size, name,
                       "%s: expected a path relative to /workspace, without '.', '..' or empty "
                       "parts",
                       name);
        bool b64 = false;
        if (enc && !json_is_null(enc)) {
            const char *es = json_is_string(enc) ? json_string_value(enc) : "";
            if (strcmp(es, "base64") == 0)
                b64 = true;
            else if (strcmp(es, "utf-8") != 0 && strcmp(es, "utf8") != 0) {
                snprintf(name, sizeof(name), "files[%zu].encoding", i);
                return bad(err, field, field_size, name, "%s: expected \"utf-8\" or \"base64\"",
                           name);
            }
        }
        snprintf(name, sizeof(name), "files[%zu].content", i);
        if (!json_is_string(c))
            return bad(err, field, field_size, name, "%s: expected a string", name);
        size_t plen;
        char *path = dup_json_string(p, &plen);
        if (!path)
            return -ENOMEM;
        spec->files[i].path = path;
        spec->n_files = i + 1;
        unsigned char *data;
        size_t dlen;
        if (b64) {
            /* The library's one decoder (padding optional, whitespace skipped). */
            data = execbox_base64_decode(json_string_value(c), json_string_length(c), &dlen);
            if (!data)
                return bad(err, field, field_size, name, "%s: not valid base64", name);
            spec->files_decoded |= UINT64_C(1) << i;
        } else {
            data = (unsigned char *)dup_json_string(c, &dlen);
            if (!data)
                return -ENOMEM;
        }
        spec->files[i].data = data;
        spec->files[i].len = dlen;
        if (dlen > cap)
            return bad(err, field, field_size, name,
                       "%s: %zu bytes, more than the file_size limit of %llu", name, dlen,
                       (unsigned long long)cap);
    }
    return 0;
}

/* Whether a key is one of kind's own fields (not a policy field). */
static bool cell_policy_key(const char *key)
{
    return strcmp(key, "timeout") == 0 || strcmp(key, "output_limit") == 0 ||
           strcmp(key, "output-limit") == 0;
}

/* One field of a body of this kind into spec (files: only noted, in *files; cap: in *cap).
 * 0, or the error of bad() or -ENOMEM. */
static int body_field(enum srv_body_kind kind, const char *key, json_t *v,
                      struct srv_run_spec *spec, bool *cap, json_t **files, char *field,
                      size_t field_size, struct execbox_error *err)
{
    bool runs = kind != SRV_BODY_SESSION; /* takes code, stdin and files */
    if (!runs &&
        (strcmp(key, "code") == 0 || strcmp(key, "stdin") == 0 || strcmp(key, "files") == 0))
        return bad(err, field, field_size, key,
                   "%s: not a field of a new session (send it to the session's /execute)", key);
    if (strcmp(key, "files") == 0) {
        *files = v; /* parsed last, once file_size is known */
    } else if (kind == SRV_BODY_SESSION && strcmp(key, "idle_timeout") == 0) {
        if (!json_is_number(v) || !(json_number_value(v) > 0))
            return bad(err, field, field_size, key,
                       "idle_timeout: expected whole seconds (a number from 1)");
        spec->idle_timeout = json_number_value(v);
    } else if (kind == SRV_BODY_CELL && strcmp(key, "rich_results") == 0) {
        /* A cell's results are always rich: true asks for what it gets anyway. */
        if (!json_is_true(v))
            return bad(err, field, field_size, key,
                       "rich_results: a session's cells always return rich results (give true "
                       "or leave it out)");
    } else if (kind == SRV_BODY_RUN && strcmp(key, "rich_results") == 0) {
        if (!json_is_boolean(v))
            return bad(err, field, field_size, key, "rich_results: expected true or false");
        spec->rich_results = json_is_true(v);
    } else if (kind == SRV_BODY_SESSION && strcmp(key, "rollback") == 0) {
        if (!json_is_boolean(v))
            return bad(err, field, field_size, key, "rollback: expected true or false");
        spec->no_rollback = json_is_false(v);
    } else if (strcmp(key, "code") == 0) {
        if (!json_is_string(v))
            return bad(err, field, field_size, "code", "code: expected a string");
        free(spec->code);
        spec->code = dup_json_string(v, &spec->code_len);
        if (!spec->code)
            return -ENOMEM;
    } else if (strcmp(key, "language") == 0) {
        if (json_is_null(v)) {
            spec->language = NULL;
            return 0;
        }
        if (!json_is_string(v))
            return bad(err, field, field_size, "language", "language: expected a string");
        spec->language = known_language(json_string_value(v));
        if (!spec->language) {
            char names[128];
            execbox_language_list(names, sizeof(names));
            return bad(err, field, field_size, "language", "language: '%.64s' is not one of %s",
                       json_string_value(v), names);
        }
    } else if (strcmp(key, "stdin") == 0) {
        free(spec->stdin_data);
        spec->stdin_data = NULL;
        spec->stdin_len = 0;
        if (json_is_null(v))
            return 0;
        if (!json_is_string(v))
            return bad(err, field, field_size, "stdin", "stdin: expected a string or null");
        spec->stdin_data = dup_json_string(v, &spec->stdin_len);
        if (!spec->stdin_data)
            return -ENOMEM;
    } else if (kind == SRV_BODY_CELL && strcmp(key, "cap") != 0 && !cell_policy_key(key) &&
               strcmp(key, "language") != 0) {
        /* A cell runs in its session's sandbox: only the per-cell limits may change. */
        return bad(err, field, field_size, key,
                   "%.64s: not a field of a cell (the session's limits are set when it is "
                   "created; a cell may lower timeout and output_limit)",
                   key);
    } else if (strcmp(key, "cap") == 0) {
        /* The remote backend sends its whole policy with "cap": true: this server's
         * maxima then lower it instead of refusing it. */
        if (!json_is_boolean(v))
            return bad(err, field, field_size, "cap", "cap: expected true or false");
        *cap = json_is_true(v);
    } else if (strcmp(key, "workspace") == 0 || strcmp(key, "rootfs") == 0) {
        /* Host paths are the operator's to choose, never a caller's. */
        return bad(err, field, field_size, key, "%s: may not be set per request", key);
    } else {
        struct execbox_error perr = {0};
        int r = execbox_policy_set_json(&spec->policy, key, v, &perr);
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            /* The library says what kind of error and which field; its message is for people,
             * never parsed. */
            if (perr.kind == EXECBOX_ERROR_UNKNOWN_FIELD)
                return bad(err, field, field_size, key, "unknown field '%.64s'", key);
            return bad(err, field, field_size, perr.field[0] ? perr.field : key, "%s", perr.msg);
        }
    }
    return 0;
}

int srv_parse_run(const char *body, size_t len, const struct execbox_policy *server,
                  struct srv_run_spec *ret, char *field, size_t field_size,
                  struct execbox_error *err)
{
    return srv_parse_body(SRV_BODY_RUN, body, len, server, ret, field, field_size, err);
}

int srv_parse_body(enum srv_body_kind kind, const char *body, size_t len,
                   const struct execbox_policy *server, struct srv_run_spec *ret, char *field,
                   size_t field_size, struct execbox_error *err)
{
    struct srv_run_spec spec = {.policy = *server};
    bool cap = false;
    if (field_size)
        field[0] = '\0';
    if (len == 0 && kind == SRV_BODY_SESSION) {
        /* A new session takes no body: all defaults. */
        body = "{}";
        len = 2;
    }
    if (len == 0)
        return bad(err, field, field_size, NULL, "empty body: expected a JSON object");
    if (!depth_ok(body, len))
        return bad(err, field, field_size, NULL,
                   "JSON nested deeper than 32 levels: a run request is a flat object");
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!root) {
        char why[160];
        return bad(err, field, field_size, NULL, "malformed JSON: %s",
                   jrpc_json_error_text(&je, why, sizeof(why)));
    }
    int r = 0;
    if (!json_is_object(root)) {
        r = bad(err, field, field_size, NULL, "the body must be a JSON object");
        goto out;
    }
    const char *key;
    json_t *v;
    bool runs = kind != SRV_BODY_SESSION; /* takes code, stdin and files */
    json_t *files = NULL;
    json_object_foreach (root, key, v) {
        r = body_field(kind, key, v, &spec, &cap, &files, field, field_size, err);
        if (r < 0)
            goto out;
    }
    if (runs && !spec.code) {
        r = bad(err, field, field_size, "code",
                "code: required (a string holding the program text)");
        goto out;
    }
    if (spec.code_len > EXECBOX_CODE_MAX) {
        r = bad(err, field, field_size, "code", "code: larger than the maximum of 16 MiB");
        goto out;
    }
    if (spec.stdin_len > EXECBOX_STDIN_MAX) {
        r = bad(err, field, field_size, "stdin", "stdin: larger than the maximum of 16 MiB");
        goto out;
    }
    if (cap)
        execbox_policy_cap(&spec.policy, server);
    if (files) {
        r = parse_files(files, &spec.policy, &spec, field, field_size, err);
        if (r < 0)
            goto out;
    }
    struct execbox_error cerr = {0};
    if (execbox_policy_check_within(&spec.policy, server, &cerr) < 0) {
        r = bad(err, field, field_size, cerr.field[0] ? cerr.field : NULL, "%s", cerr.msg);
        goto out;
    }
    *ret = spec;
    memset(&spec, 0, sizeof(spec));
out:
    srv_run_spec_clear(&spec);
    json_decref(root);
    return r;
}

char *srv_error_json(const char *code, const char *message, const char *field)
{
    /* Messages quote the request (cut to a length that may split a character): clean them,
     * or jansson refuses the string and the client would get no answer at all. */
    char *msg = execbox_utf8_sanitize(message, strlen(message), NULL, NULL);
    char *fld = field && *field ? execbox_utf8_sanitize(field, strlen(field), NULL, NULL) : NULL;
    json_t *e = msg ? json_pack("{s:s, s:s}", "code", code, "message", msg) : NULL;
    if (e && fld)
        json_object_set_new(e, "field", json_string(fld));
    execbox_free(msg);
    execbox_free(fld);
    if (!e)
        return NULL;
    json_t *o = json_pack("{s:o}", "error", e);
    if (!o)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    return s;
}

char *srv_quota_json(const char *quota, const char *message)
{
    char *msg = execbox_utf8_sanitize(message, strlen(message), NULL, NULL);
    json_t *o = msg ? json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "quota_exceeded", "message",
                                msg, "quota", quota)
                    : NULL;
    execbox_free(msg);
    if (!o)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *srv_sse_frame(const char *event, const char *json, size_t *ret_len)
{
    size_t n = strlen("event: \ndata: \n\n") + strlen(event) + strlen(json);
    char *f = malloc(n + 1);
    if (!f)
        return NULL;
    int w = snprintf(f, n + 1, "event: %s\ndata: %s\n\n", event, json);
    if (w < 0) {
        free(f);
        return NULL;
    }
    if (ret_len)
        *ret_len = (size_t)w;
    return f;
}

bool srv_host_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > SRV_HOST_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-'))
            return false;
    }
    return true;
}

bool srv_host_allowed(const char *host, const char *const *names, size_t n_names)
{
    char h[SRV_HOST_NAME_MAX + 1];
    size_t len = strlen(host), hl;
    const char *port = NULL;
    if (host[0] == '[') {
        /* "[v6]" or "[v6]:port": any IPv6 literal. */
        const char *close = strchr(host, ']');
        if (!close)
            return false;
        hl = (size_t)(close - host - 1);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1])
            return false;
        if (hl >= sizeof(h))
            return false;
        memcpy(h, host + 1, hl);
        h[hl] = '\0';
        struct in6_addr a6;
        if (inet_pton(AF_INET6, h, &a6) != 1)
            return false;
    } else {
        const char *colon = strchr(host, ':');
        hl = colon ? (size_t)(colon - host) : len;
        if (colon)
            port = colon + 1;
        if (hl == 0 || hl >= sizeof(h))
            return false;
        memcpy(h, host, hl);
        h[hl] = '\0';
    }
    if (port && (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port)))
        return false;
    if (host[0] == '[')
        return true;
    if (!srv_host_name_ok(h))
        return false;
    if (hl > 1 && h[hl - 1] == '.') /* "localhost." is localhost */
        h[--hl] = '\0';
    /* An IPv4 literal: a browser sends one only for a URL naming that address, whose pages
     * are then of that address's origin; no DNS answer can be behind it. */
    struct in_addr a4;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return true;
    if (strcasecmp(h, "localhost") == 0)
        return true;
    for (size_t i = 0; i < n_names; i++) {
        size_t nl = strlen(names[i]);
        if (nl > 1 && names[i][nl - 1] == '.')
            nl--;
        if (nl == hl && strncasecmp(h, names[i], nl) == 0)
            return true;
    }
    return false;
}

bool srv_request_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool srv_token_equal(const char *presented, const char *expected)
{
    size_t n = strlen(expected), m = strlen(presented);
    if (n == 0)
        return false;
    /* Every byte of the presented token is compared, against the expected one repeated, so
     * the time taken tells nothing about where a guess went wrong. */
    volatile unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < m; i++)
        diff |= (unsigned char)(presented[i] ^ expected[i % n]);
    return diff == 0;
}
