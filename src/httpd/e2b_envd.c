/* SPDX-License-Identifier: MIT */
/* e2b_envd.c - envd's files and commands for E2B's SDK (see e2b_envd.h, docs/e2b.md): the
 * routes, the request bodies (a multipart upload, Connect's JSON messages and their stream
 * envelopes), and the work on the default context's session. */
#include "e2b_envd_int.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "request.h"

/* ---- routes ------------------------------------------------------------------------------ */

int e2b_envd_route(const char *method, const char *sub, struct e2b_call *call,
                   const char **ret_allow)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;
    if (strcmp(sub, "/files") == 0) {
        call->op = post ? E2B_OP_FILES_POST : E2B_OP_FILES_GET;
        *ret_allow = "GET, HEAD, POST";
        return get || post ? 0 : 405;
    }
    static const struct {
        const char *path;
        enum e2b_op op;
    } rpcs[] = {
        {"/" E2B_ENVD_FS "/Stat", E2B_OP_FS_STAT},
        {"/" E2B_ENVD_FS "/ListDir", E2B_OP_FS_LIST},
        {"/" E2B_ENVD_FS "/MakeDir", E2B_OP_FS_MKDIR},
        {"/" E2B_ENVD_FS "/Remove", E2B_OP_FS_REMOVE},
        {"/" E2B_ENVD_FS "/Move", E2B_OP_FS_MOVE},
        {"/" E2B_ENVD_PROC "/Start", E2B_OP_PROC_START},
        {"/" E2B_ENVD_PROC "/SendSignal", E2B_OP_PROC_SIGNAL},
    };
    bool found = false;
    for (size_t i = 0; i < sizeof(rpcs) / sizeof(rpcs[0]) && !found; i++)
        if (strcmp(sub, rpcs[i].path) == 0) {
            call->op = rpcs[i].op;
            found = true;
        }
    if (!found) {
        static const char fs[] = "/" E2B_ENVD_FS "/", proc[] = "/" E2B_ENVD_PROC "/";
        if (strncmp(sub, fs, sizeof(fs) - 1) != 0 && strncmp(sub, proc, sizeof(proc) - 1) != 0)
            return -1;
        call->op = E2B_OP_RPC_OTHER;
    }
    *ret_allow = "POST";
    return post ? 0 : 405;
}

bool e2b_envd_op(enum e2b_op op)
{
    return op >= E2B_OP_FILES_GET && op <= E2B_OP_RPC_OTHER;
}

bool e2b_envd_json_body(enum e2b_op op)
{
    return op >= E2B_OP_FS_STAT && op <= E2B_OP_RPC_OTHER && op != E2B_OP_PROC_START &&
           op != E2B_OP_RPC_OTHER;
}

int e2b_call_request(struct e2b_call *call, const char *query_path, const char *ctype,
                     const char *sandbox_id, const char *access_token)
{
    if ((sandbox_id && !(call->sbx_header = strdup(sandbox_id))) ||
        (access_token && !(call->sbx_token = strdup(access_token))))
        return -ENOMEM;
    if (query_path) {
        /* The server leaves escapes alone (its paths are decoded once, by their routes). */
        size_t len = strlen(query_path), dlen = 0;
        if (!(call->query_path = malloc(len + 1)))
            return -ENOMEM;
        call->query_bad = srv_url_decode(query_path, len, call->query_path, len + 1, &dlen) < 0 ||
                          memchr(call->query_path, '\0', dlen) != NULL;
    }
    if (ctype && !(call->ctype = strdup(ctype)))
        return -ENOMEM;
    return 0;
}

void e2b_envd_clear(struct e2b_call *call)
{
    struct envd *d = call->envd;
    if (!d)
        return;
    for (size_t i = 0; i < d->n_parts; i++)
        free(d->parts[i].path);
    free(d->body);
    free(d->code);
    free(d);
    call->envd = NULL;
}

/* ---- answers ----------------------------------------------------------------------------- */

int envd_dump_answer(struct e2b_answer *a, int status, const char *ctype, json_t *o)
{
    *a = (struct e2b_answer){.status = status, .ctype = ctype};
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    a->body = s;
    a->len = strlen(s);
    return 0;
}

json_t *envd_clean_string(const char *s)
{
    char *c = execbox_utf8_sanitize(s, strlen(s), NULL, NULL);
    json_t *j = c ? json_string(c) : NULL;
    execbox_free(c);
    return j;
}

/* The HTTP status and name of each of Connect's codes (connectrpc.com/docs/protocol). */
static const struct {
    const char *name;
    int status;
} codes[] = {
    [C_INVALID] = {"invalid_argument", 400},     [C_NOT_FOUND] = {"not_found", 404},
    [C_EXISTS] = {"already_exists", 409},        [C_PRECONDITION] = {"failed_precondition", 400},
    [C_EXHAUSTED] = {"resource_exhausted", 429}, [C_ABORTED] = {"aborted", 409},
    [C_UNIMPLEMENTED] = {"unimplemented", 501},  [C_UNAVAILABLE] = {"unavailable", 503},
    [C_DEADLINE] = {"deadline_exceeded", 504},   [C_INTERNAL] = {"internal", 500},
};

enum code envd_code_of_errno(int r)
{
    switch (r) {
    case -ENOENT: return C_NOT_FOUND;
    case -EINVAL: return C_INVALID;
    case -EEXIST: return C_EXISTS;
    case -ENOTDIR:
    case -EISDIR:
    case -ENOTEMPTY: return C_PRECONDITION;
    case -EFBIG:
    case -E2BIG:
    case -ENOSPC: return C_EXHAUSTED;
    case -EBUSY: return C_ABORTED;
    case -ESHUTDOWN:
    case -ETIMEDOUT: return C_UNAVAILABLE;
    case -ENOTSUP: return C_UNIMPLEMENTED;
    default: return C_INTERNAL;
    }
}

enum code envd_code_of_status(int status)
{
    switch (status) {
    case 400: return C_INVALID;
    case 404: return C_NOT_FOUND;
    case 409: return C_ABORTED;
    case 429: return C_EXHAUSTED;
    case 503: return C_UNAVAILABLE;
    default: return C_INTERNAL;
    }
}

/* One Connect stream envd_envelope of o (taken); NULL without memory. */
char *envd_envelope(unsigned flags, json_t *o, size_t *ret_len)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *e = malloc(ENV_HDR + n);
    if (e) {
        e[0] = (char)flags;
        e[1] = (char)((n >> 24) & 0xff);
        e[2] = (char)((n >> 16) & 0xff);
        e[3] = (char)((n >> 8) & 0xff);
        e[4] = (char)(n & 0xff);
        memcpy(e + ENV_HDR, s, n);
        *ret_len = ENV_HDR + n;
    }
    free(s);
    return e;
}

json_t *envd_error_json(enum code c, const char *msg)
{
    return json_pack("{s:s, s:o}", "code", codes[c].name, "message", envd_clean_string(msg));
}

/* An error as the op's wire says it: envd's HTTP {"code", "message"}; a unary Connect error
 * (its status, {"code", "message"}); a Connect stream's end with the error. Returns 1 (the
 * call is answered), or -ENOMEM. */
int envd_fail(struct e2b_answer *a, enum e2b_op op, int code_or_status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int r;
    if (op == E2B_OP_FILES_GET || op == E2B_OP_FILES_POST) {
        r = envd_dump_answer(
            a, code_or_status, JSON_CTYPE,
            json_pack("{s:i, s:o}", "code", code_or_status, "message", envd_clean_string(msg)));
    } else if (op == E2B_OP_PROC_START) {
        *a = (struct e2b_answer){.status = 200, .ctype = E2B_CONNECT_STREAM_CTYPE};
        a->body = envd_envelope(
            ENV_END, json_pack("{s:o}", "error", envd_error_json((enum code)code_or_status, msg)),
            &a->len);
        r = a->body ? 0 : -ENOMEM;
    } else {
        enum code c = (enum code)code_or_status;
        r = envd_dump_answer(a, codes[c].status, JSON_CTYPE, envd_error_json(c, msg));
    }
    return r < 0 ? r : 1;
}

/* envd_fail() for an errno, with its message. */
int envd_fail_errno(struct e2b_answer *a, enum e2b_op op, int r, const struct execbox_error *err)
{
    const char *msg = err && err->msg[0] ? err->msg : execbox_strerror(r);
    if (op == E2B_OP_FILES_GET || op == E2B_OP_FILES_POST) {
        int status = r == -ENOENT                                    ? 404
                     : r == -EINVAL || r == -EISDIR || r == -ENOTDIR ? 400
                     : r == -EFBIG                                   ? 413
                     : r == -ENOSPC                                  ? 507
                     : r == -ESHUTDOWN || r == -ETIMEDOUT            ? 503
                                                                     : 500;
        return envd_fail(a, op, status, "%s", msg);
    }
    return envd_fail(a, op, envd_code_of_errno(r), "%s", msg);
}

/* Re-says an answer of e2b.c (plain text, an HTTP status) in the op's wire. */
static int rewrap(struct e2b_answer *a, enum e2b_op op)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "%.*s", (int)(a->len < sizeof(msg) ? a->len : sizeof(msg) - 1),
             a->body ? a->body : "");
    int status = a->status;
    free(a->body);
    *a = (struct e2b_answer){0};
    if (op == E2B_OP_FILES_GET || op == E2B_OP_FILES_POST)
        return envd_fail(a, op, status, "%s", msg);
    return envd_fail(a, op, envd_code_of_status(status), "%s", msg);
}

/* ---- paths ------------------------------------------------------------------------------- */

/* envd's path (absolute under /workspace or /home/user, or relative to it) as a workspace path
 * for the session calls: "" is the workspace itself (when root is allowed). The checks are the
 * session file routes' (srv_workspace_path_ok); the library checks again and refuses symlinks.
 * 0, or -EINVAL with the reason in msg. */
static int ws_path(const char *in, bool root, char *out, size_t size, char *msg, size_t msize)
{
    if (!in || !*in) {
        snprintf(msg, msize, "path: required");
        return -EINVAL;
    }
    const char *p = in;
    if (*p == '/') {
        static const char *const homes[] = {WS_ROOT, WS_HOME};
        bool inside = false;
        for (size_t i = 0; i < 2 && !inside; i++) {
            size_t n = strlen(homes[i]);
            if (strncmp(p, homes[i], n) == 0 && (p[n] == '\0' || p[n] == '/')) {
                p += n;
                inside = true;
            }
        }
        if (!inside) {
            snprintf(msg, msize,
                     "path '%.200s' is outside the workspace: execbox serves files under "
                     "/workspace only (/home/user means it)",
                     in);
            return -EINVAL;
        }
        while (*p == '/')
            p++;
    }
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        n--;
    if (n == 0) {
        if (!root) {
            snprintf(msg, msize, "path '%.200s' is the workspace itself", in);
            return -EINVAL;
        }
        out[0] = '\0';
        return 0;
    }
    if (n >= size || !srv_workspace_path_ok(p, n)) {
        snprintf(msg, msize,
                 "path '%.200s': expected a path in /workspace, without '.', '..' or empty parts",
                 in);
        return -EINVAL;
    }
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

/* "/workspace/REL" for an answer. */
json_t *envd_shown_path(const char *rel)
{
    char buf[EXECBOX_PATH_MAX + sizeof(WS_ROOT) + 1];
    snprintf(buf, sizeof(buf), "%s%s%s", WS_ROOT, *rel ? "/" : "", rel);
    return envd_clean_string(buf);
}

/* ---- bodies ------------------------------------------------------------------------------ */

/* A Connect unary request's JSON object; NULL with the answer set in *ret (*rc). */
static json_t *load_message(enum e2b_op op, const char *body, size_t len, struct e2b_answer *ret,
                            int *rc)
{
    json_error_t je;
    json_t *o = json_loadb(len ? body : "{}", len ? len : 2, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        *rc = envd_fail(ret, op, C_INVALID, "the message must be a JSON object%s%s", o ? "" : ": ",
                        o ? "" : je.text);
        return NULL;
    }
    return o;
}

/* A Connect stream request: one envd_envelope holding a JSON object. */
static json_t *load_enveloped(enum e2b_op op, const char *body, size_t len, struct e2b_answer *ret,
                              int *rc)
{
    if (len < ENV_HDR) {
        *rc = envd_fail(ret, op, C_INVALID, "the request must be one Connect envd_envelope");
        return NULL;
    }
    const unsigned char *u = (const unsigned char *)body;
    size_t n = (size_t)u[1] << 24 | (size_t)u[2] << 16 | (size_t)u[3] << 8 | (size_t)u[4];
    if (u[0] & ENV_COMPRESSED) {
        *rc = envd_fail(ret, op, C_UNIMPLEMENTED, "compressed messages are not supported");
        return NULL;
    }
    if (n != len - ENV_HDR) {
        *rc = envd_fail(ret, op, C_INVALID, "the envd_envelope's length is not the body's");
        return NULL;
    }
    return load_message(op, body + ENV_HDR, n, ret, rc);
}

static const char *opt_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The value of a multipart header parameter (name="..."), undici's escapes (%22, %0A, %0D)
 * undone. */
static bool header_param(const char *h, size_t hlen, const char *key, char *out, size_t size)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= hlen; i++) {
        if ((i == 0 || h[i - 1] == ' ' || h[i - 1] == ';') && strncasecmp(h + i, key, kl) == 0 &&
            h[i + kl] == '=' && h[i + kl + 1] == '"') {
            const char *v = h + i + kl + 2, *end = memchr(v, '"', hlen - (size_t)(v - h));
            if (!end)
                return false;
            size_t o = 0;
            for (const char *c = v; c < end; c++) {
                char ch = *c;
                if (ch == '%' && end - c >= 3 &&
                    (strncmp(c, "%22", 3) == 0 || strncasecmp(c, "%0A", 3) == 0 ||
                     strncasecmp(c, "%0D", 3) == 0)) {
                    ch = c[2] == '2' ? '"' : (c[2] == 'A' || c[2] == 'a') ? '\n' : '\r';
                    c += 2;
                }
                if (o + 1 >= size)
                    return false;
                out[o++] = ch;
            }
            out[o] = '\0';
            return true;
        }
    }
    return false;
}

static const void *find_bytes(const char *h, size_t hl, const char *n, size_t nl)
{
    return memmem(h, hl, n, nl);
}

/* The first case-insensitive occurrence of n in h[0..hl), or NULL. */
static const char *find_nocase(const char *h, size_t hl, const char *n)
{
    size_t nl = strlen(n);
    for (size_t i = 0; i + nl <= hl; i++)
        if (strncasecmp(h + i, n, nl) == 0)
            return h + i;
    return NULL;
}

static int add_part(struct envd *d, const char *given, size_t off, size_t len,
                    struct e2b_answer *ret, enum e2b_op op)
{
    char msg[400], path[EXECBOX_PATH_MAX];
    if (d->n_parts == E2B_ENVD_PARTS_MAX)
        return envd_fail(ret, op, 400, "more than %d files in one upload", E2B_ENVD_PARTS_MAX);
    if (ws_path(given, false, path, sizeof(path), msg, sizeof(msg)) < 0)
        return envd_fail(ret, op, 400, "%s", msg);
    struct part *p = &d->parts[d->n_parts];
    if (!(p->path = strdup(path)))
        return -ENOMEM;
    p->off = off;
    p->len = len;
    d->n_parts++;
    return 0;
}

/* multipart/form-data (RFC 7578), as E2B's SDK sends a write: a part "file" per file, its path
 * the query's or its filename. */
static int parse_multipart(struct envd *d, size_t len, const char *query_path, const char *ctype,
                           struct e2b_answer *ret, enum e2b_op op)
{
    char boundary[256];
    const char *b = strcasestr(ctype, "boundary=");
    if (!b)
        return envd_fail(ret, op, 400, "multipart/form-data without a boundary");
    b += 9;
    size_t bl = *b == '"' ? strcspn(b + 1, "\"") : strcspn(b, "; \t");
    if (*b == '"')
        b++;
    if (bl == 0 || bl + 5 > sizeof(boundary))
        return envd_fail(ret, op, 400, "multipart/form-data: a bad boundary");
    /* "\r\n--BOUNDARY": the delimiter; the body starts with it without the CRLF. */
    snprintf(boundary, sizeof(boundary), "\r\n--%.*s", (int)bl, b);
    size_t dl = bl + 4;
    const char *body = d->body;
    if (len < dl - 2 || memcmp(body, boundary + 2, dl - 2) != 0)
        return envd_fail(ret, op, 400,
                         "multipart/form-data: the body does not start with the boundary");
    size_t pos = dl - 2;
    while (true) {
        if (len - pos >= 2 && body[pos] == '-' && body[pos + 1] == '-')
            break; /* the close delimiter */
        if (len - pos < 2 || body[pos] != '\r' || body[pos + 1] != '\n')
            return envd_fail(ret, op, 400, "multipart/form-data: a malformed delimiter");
        pos += 2;
        const char *hend = find_bytes(body + pos, len - pos, "\r\n\r\n", 4);
        if (!hend)
            return envd_fail(ret, op, 400, "multipart/form-data: a part without its headers' end");
        size_t hl = (size_t)(hend - (body + pos));
        const char *h = body + pos;
        size_t data = pos + hl + 4;
        const char *next = find_bytes(body + data, len - data, boundary, dl);
        if (!next)
            return envd_fail(ret, op, 400, "multipart/form-data: a part without its end");
        size_t dlen = (size_t)(next - (body + data));
        char name[64] = "", filename[EXECBOX_PATH_MAX + 16] = "";
        const char *cd = find_nocase(h, hl, "content-disposition:");
        if (cd) {
            size_t rest = hl - (size_t)(cd - h);
            header_param(cd, rest, "name", name, sizeof(name));
            header_param(cd, rest, "filename", filename, sizeof(filename));
        }
        if (strcmp(name, "file") == 0) {
            const char *target = query_path && *query_path ? query_path : filename;
            int r = add_part(d, target, data, dlen, ret, op);
            if (r)
                return r;
        }
        pos = (size_t)(next - body) + dl;
    }
    if (d->n_parts == 0)
        return envd_fail(ret, op, 400, "the upload holds no part named \"file\"");
    if (query_path && *query_path && d->n_parts > 1)
        return envd_fail(ret, op, 400, "path: one file only when the query names the path");
    return 0;
}

static int prepare_upload(struct envd *d, struct e2b_call *call, const char *body, size_t len,
                          struct e2b_answer *ret)
{
    enum e2b_op op = call->op;
    const char *ct = call->ctype ? call->ctype : "";
    ct += strspn(ct, " \t");
    bool multipart = strncasecmp(ct, "multipart/form-data", 19) == 0;
    bool octet = strncasecmp(ct, "application/octet-stream", 24) == 0;
    if (!multipart && !octet)
        return envd_fail(ret, op, 415,
                         "the body must be multipart/form-data or application/octet-stream");
    if (!(d->body = malloc(len ? len : 1)))
        return -ENOMEM;
    if (len)
        memcpy(d->body, body, len);
    if (octet)
        return add_part(d, call->query_path, 0, len, ret, op);
    return parse_multipart(d, len, call->query_path, ct, ret, op);
}

/* envs checked as envd would take them: a NAME without '=' or NUL, a string without NUL. */
static int env_ok(json_t *env, char *msg, size_t msize)
{
    const char *k;
    json_t *v;
    json_object_foreach (env, k, v) {
        if (!*k || strchr(k, '=') || !json_is_string(v) ||
            strlen(json_string_value(v)) != json_string_length(v)) {
            snprintf(msg, msize, "'%.64s' is not NAME: a string without NUL", k);
            return -EINVAL;
        }
    }
    return 0;
}

/* A cell: head, the base64 of arg's JSON, tail. NULL without memory or past 16 MiB. */
static char *call_cell(const char *head, json_t *arg, const char *tail)
{
    char *s = json_dumps(arg, JSON_COMPACT | JSON_ENCODE_ANY);
    char *b64 = s ? execbox_base64(s, strlen(s)) : NULL;
    free(s);
    if (!b64)
        return NULL;
    size_t n = strlen(head) + strlen(b64) + strlen(tail) + 1;
    char *code = n <= EXECBOX_CODE_MAX ? malloc(n) : NULL;
    if (code)
        snprintf(code, n, "%s%s%s", head, b64, tail);
    execbox_free(b64);
    return code;
}

int e2b_envd_env_cells(json_t *env, char **ret_setup, char **ret_restore, char *msg,
                       size_t msg_size)
{
    char why[128];
    if (env_ok(env, why, sizeof(why)) < 0) {
        snprintf(msg, msg_size, "env_vars: %s", why);
        return -EINVAL;
    }
    static const char setup_head[] = "def _execbox_env(a):\n"
                                     "    import base64, json, os\n"
                                     "    a = json.loads(base64.b64decode(a))\n"
                                     "    saved = {k: os.environ.get(k) for k in a}\n"
                                     "    os.environ.update(a)\n"
                                     "    return saved\n"
                                     "_execbox_env_saved = _execbox_env('";
    static const char setup_tail[] = "')\n"
                                     "del _execbox_env\n";
    static const char restore[] = "def _execbox_env(saved):\n"
                                  "    import os\n"
                                  "    for k, v in saved.items():\n"
                                  "        if v is None:\n"
                                  "            os.environ.pop(k, None)\n"
                                  "        else:\n"
                                  "            os.environ[k] = v\n"
                                  "_execbox_env(globals().pop('_execbox_env_saved', {}))\n"
                                  "del _execbox_env\n";
    *ret_setup = call_cell(setup_head, env, setup_tail);
    *ret_restore = strdup(restore);
    if (!*ret_setup || !*ret_restore) {
        free(*ret_setup);
        free(*ret_restore);
        *ret_setup = *ret_restore = NULL;
        return -ENOMEM;
    }
    return 0;
}

/* The cell that runs a command in the session's sandbox: [cmd, *args] with the session's
 * environment plus envs, in cwd, stdin at its end, its output the cell's own; the cell exits
 * with the command's status (128 + N for signal N), so that it leaves nothing behind in the
 * interpreter (a failed cell is rolled back; a good one deletes its names). */
static const char cmd_head[] =
    "def _execbox_command(a):\n"
    "    import base64, json, os, subprocess, sys\n"
    "    a = json.loads(base64.b64decode(a))\n"
    "    env = dict(os.environ)\n"
    "    env.update(a['envs'])\n"
    "    try:\n"
    "        p = subprocess.run([a['cmd']] + a['args'], cwd=a['cwd'], env=env,\n"
    "                           stdin=subprocess.DEVNULL)\n"
    "    except OSError as e:\n"
    "        sys.stderr.write('%s: %s\\n' % (a['cmd'], e.strerror))\n"
    "        return 127 if isinstance(e, FileNotFoundError) else 126\n"
    "    return p.returncode if p.returncode >= 0 else 128 - p.returncode\n"
    "_execbox_status = _execbox_command('";
static const char cmd_tail[] = "')\n"
                               "del _execbox_command\n"
                               "if _execbox_status:\n"
                               "    raise SystemExit(_execbox_status)\n"
                               "del _execbox_status\n";

static int prepare_start(struct envd *d, struct e2b_call *call, json_t *o, struct e2b_answer *ret)
{
    enum e2b_op op = call->op;
    json_t *proc = json_object_get(o, "process");
    if (!json_is_object(proc))
        return envd_fail(ret, op, C_INVALID, "process: required, an object");
    json_t *pty = json_object_get(o, "pty");
    if (pty && !json_is_null(pty))
        return envd_fail(ret, op, C_UNIMPLEMENTED, "pty: not supported by execbox");
    json_t *stdin_v = json_object_get(o, "stdin");
    if (json_is_true(stdin_v))
        return envd_fail(ret, op, C_UNIMPLEMENTED,
                         "stdin: not supported by execbox (the command's stdin is empty)");
    const char *cmd = opt_str(proc, "cmd");
    if (!cmd || !*cmd)
        return envd_fail(ret, op, C_INVALID, "process.cmd: required, a string");
    json_t *args = json_object_get(proc, "args"), *envs = json_object_get(proc, "envs");
    if (args && !json_is_null(args) && !json_is_array(args))
        return envd_fail(ret, op, C_INVALID, "process.args: expected a list of strings");
    if (envs && !json_is_null(envs) && !json_is_object(envs))
        return envd_fail(ret, op, C_INVALID, "process.envs: expected a map of strings");
    json_t *a = json_pack("{s:s, s:[], s:{}, s:s}", "cmd", cmd, "args", "envs", "cwd", WS_ROOT);
    if (!a)
        return -ENOMEM;
    size_t i;
    json_t *v;
    int r = 0;
    json_array_foreach (json_is_array(args) ? args : NULL, i, v) {
        if (!json_is_string(v)) {
            r = envd_fail(ret, op, C_INVALID, "process.args: expected a list of strings");
            break;
        }
        json_array_append(json_object_get(a, "args"), v);
    }
    char why[128];
    if (!r && json_is_object(envs)) {
        if (env_ok(envs, why, sizeof(why)) < 0)
            r = envd_fail(ret, op, C_INVALID, "process.envs: %s", why);
        else
            json_object_update(json_object_get(a, "envs"), envs);
    }
    const char *cwd = opt_str(proc, "cwd");
    if (!r && cwd && *cwd) {
        /* The workspace, or a directory of the sandbox's own (where the command may cd too). */
        size_t hl = strlen(WS_HOME);
        if (strncmp(cwd, WS_HOME, hl) == 0 && (cwd[hl] == '\0' || cwd[hl] == '/')) {
            char mapped[EXECBOX_PATH_MAX];
            snprintf(mapped, sizeof(mapped), "%s%s", WS_ROOT, cwd + hl);
            json_object_set_new(a, "cwd", json_string(mapped));
        } else {
            json_object_set(a, "cwd", json_object_get(proc, "cwd"));
        }
    }
    if (r) {
        json_decref(a);
        return r;
    }
    d->code = call_cell(cmd_head, a, cmd_tail);
    json_decref(a);
    return d->code ? 0 : envd_fail(ret, op, C_INVALID, "the command is larger than 16 MiB");
}

int e2b_envd_prepare(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                     struct e2b_answer *ret)
{
    enum e2b_op op = call->op;
    if (op == E2B_OP_RPC_OTHER)
        return envd_fail(
            ret, op, C_UNIMPLEMENTED,
            "not supported by execbox: only files (read, write, list, exists, getInfo, "
            "makeDir, remove) and commands.run are");
    if (op == E2B_OP_PROC_START) {
        const char *ct = call->ctype ? call->ctype : "";
        if (strncasecmp(ct, E2B_CONNECT_STREAM_CTYPE, strlen(E2B_CONNECT_STREAM_CTYPE)) != 0)
            return envd_fail(ret, op, C_INVALID, "the request must be sent as %s",
                             E2B_CONNECT_STREAM_CTYPE);
    }
    struct envd *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    call->envd = d;
    char msg[400];
    int r = 0;
    if (call->query_bad)
        return envd_fail(ret, op, 400, "path: a malformed escape or a NUL byte");
    if (op == E2B_OP_FILES_GET) {
        if (ws_path(call->query_path, false, d->path, sizeof(d->path), msg, sizeof(msg)) < 0)
            return envd_fail(ret, op, 400, "%s", msg);
    } else if (op == E2B_OP_FILES_POST) {
        r = prepare_upload(d, call, body, len, ret);
    } else {
        json_t *o = op == E2B_OP_PROC_START ? load_enveloped(op, body, len, ret, &r)
                                            : load_message(op, body, len, ret, &r);
        if (!o)
            return r;
        if (op == E2B_OP_PROC_START) {
            r = prepare_start(d, call, o, ret);
        } else if (op == E2B_OP_PROC_SIGNAL) {
            json_t *pid = json_object_get(json_object_get(o, "process"), "pid");
            json_t *sig = json_object_get(o, "signal");
            d->pid = json_is_integer(pid) ? (unsigned)json_integer_value(pid) : 0;
            d->signal = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
            if (json_is_string(sig))
                d->signal = strcmp(json_string_value(sig), "SIGNAL_SIGKILL") == 0   ? 9
                            : strcmp(json_string_value(sig), "SIGNAL_SIGTERM") == 0 ? 15
                                                                                    : 0;
            if (!d->pid)
                r = envd_fail(ret, op, C_INVALID, "process.pid: required");
            else if (d->signal != 9 && d->signal != 15)
                r = envd_fail(ret, op, C_INVALID, "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
        } else if (op == E2B_OP_FS_MOVE) {
            /* Neither end may be the workspace itself. */
            if (ws_path(opt_str(o, "source"), false, d->path, sizeof(d->path), msg, sizeof(msg)) <
                    0 ||
                ws_path(opt_str(o, "destination"), false, d->dest, sizeof(d->dest), msg,
                        sizeof(msg)) < 0)
                r = envd_fail(ret, op, C_INVALID, "%s", msg);
        } else {
            json_t *depth = json_object_get(o, "depth");
            bool root = op == E2B_OP_FS_STAT || op == E2B_OP_FS_LIST;
            if (ws_path(opt_str(o, "path"), root, d->path, sizeof(d->path), msg, sizeof(msg)) < 0)
                r = envd_fail(ret, op, C_INVALID, "%s", msg);
            else if (depth && !json_is_null(depth) && !json_is_integer(depth))
                r = envd_fail(ret, op, C_INVALID, "depth: expected an integer");
            d->depth = json_is_integer(depth) && json_integer_value(depth) > 0
                           ? (unsigned)(json_integer_value(depth) > E2B_ENVD_DEPTH_MAX
                                            ? E2B_ENVD_DEPTH_MAX
                                            : json_integer_value(depth))
                           : 1;
        }
        json_decref(o);
    }
    if (r || op == E2B_OP_PROC_SIGNAL)
        return r;
    r = e2b_default_context(e, call, op == E2B_OP_PROC_START, ret);
    return r > 0 ? rewrap(ret, op) : r;
}
