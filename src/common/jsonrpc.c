/* SPDX-License-Identifier: MIT */
/* jsonrpc.c - JSON-RPC 2.0 framing and message classification (see jsonrpc.h). */
#include "jsonrpc.h"
#include "execbox/execbox.h" /* EXECBOX_JSON_REAL_DIGITS */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jrpc_reader_init(struct jrpc_reader *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max ? max : 1;
}

void jrpc_reader_release(struct jrpc_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
    r->dropping = 0;
}

/* Appends to the current line; 1 when it would pass the limit (nothing appended). */
static int append(struct jrpc_reader *r, const char *data, size_t n)
{
    if (n == 0)
        return 0; /* (found by the fuzzer: NULL + 0 before the first allocation) */
    if (n > r->max - r->len)
        return 1;
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n)
            cap = cap > r->max / 2 ? r->max : cap * 2;
        char *nb = realloc(r->buf, cap);
        if (!nb)
            return -ENOMEM;
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    return 0;
}

static int emit(struct jrpc_reader *r, jrpc_frame_fn fn, void *ud)
{
    size_t len = r->len;
    r->len = 0;
    if (len && r->buf[len - 1] == '\r')
        len--;
    if (len == 0)
        return 0;
    return fn(ud, r->buf, len, 0);
}

int jrpc_reader_feed(struct jrpc_reader *r, const char *data, size_t n, jrpc_frame_fn fn,
                     void *userdata)
{
    while (n) {
        const char *nl = memchr(data, '\n', n);
        size_t chunk = nl ? (size_t)(nl - data) : n;
        if (r->dropping) {
            r->dropping += chunk;
        } else {
            int a = append(r, data, chunk);
            if (a < 0)
                return a;
            if (a > 0) {
                /* Over the limit: forget what we kept and count the rest of the line. The
                 * buffer is released so an attacker cannot pin max bytes per oversized line. */
                r->dropping = r->len + chunk;
                r->len = 0;
                free(r->buf);
                r->buf = NULL;
                r->cap = 0;
            }
        }
        if (!nl)
            return 0;
        data += chunk + 1;
        n -= chunk + 1;
        int rc;
        if (r->dropping) {
            size_t dropped = r->dropping;
            r->dropping = 0;
            rc = fn(userdata, NULL, 0, dropped);
        } else {
            rc = emit(r, fn, userdata);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

int jrpc_reader_finish(struct jrpc_reader *r, jrpc_frame_fn fn, void *userdata)
{
    if (r->dropping) {
        size_t dropped = r->dropping;
        r->dropping = 0;
        return fn(userdata, NULL, 0, dropped);
    }
    return emit(r, fn, userdata);
}

char *jrpc_json_error_text(const json_error_t *e, char *buf, size_t n)
{
    const char *why;
    switch (json_error_code(e)) {
    case json_error_out_of_memory: why = "out of memory"; break;
    case json_error_stack_overflow: why = "nested too deeply"; break;
    case json_error_invalid_utf8: why = "not valid UTF-8"; break;
    case json_error_premature_end_of_input: why = "the text ends too early"; break;
    case json_error_end_of_input_expected: why = "text after the end of the JSON value"; break;
    case json_error_null_character: why = "a string holds a NUL character (\\u0000)"; break;
    case json_error_null_byte_in_key: why = "a key holds a NUL character"; break;
    case json_error_duplicate_key: why = "duplicate key: a key appears twice in one object"; break;
    case json_error_numeric_overflow: why = "a number is too large"; break;
    default: why = "not valid JSON"; break;
    }
    snprintf(buf, n, "%s at line %d, column %d", why, e->line, e->column);
    return buf;
}

int jrpc_parse(const char *line, size_t len, json_t **ret_root, char *msg, size_t msg_size)
{
    json_error_t e;
    json_t *root =
        json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
    if (!root) {
        char why[160];
        snprintf(msg, msg_size, "parse error at byte %d: %s", e.position,
                 jrpc_json_error_text(&e, why, sizeof(why)));
        return JRPC_PARSE_ERROR;
    }
    *ret_root = root;
    return 0;
}

static enum jrpc_kind invalid(struct jrpc_msg *m, int code, const char *text)
{
    m->kind = JRPC_KIND_INVALID;
    m->error_code = code;
    snprintf(m->error_msg, sizeof(m->error_msg), "%s", text);
    return m->kind;
}

enum jrpc_kind jrpc_classify(json_t *o, struct jrpc_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(o))
        return invalid(m, JRPC_INVALID_REQUEST, "invalid request: a message must be an object");
    json_t *id = json_object_get(o, "id");
    /* MCP: "the ID MUST be a string or integer" and "MUST NOT be null". An unusable id cannot
     * be echoed back, so the error goes out with id null as JSON-RPC prescribes. */
    bool id_ok = id && (json_is_string(id) || json_is_integer(id));
    if (id_ok)
        m->id = id;
    json_t *v = json_object_get(o, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
        return invalid(m, JRPC_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"");
    if (id && !id_ok)
        return invalid(m, JRPC_INVALID_REQUEST,
                       "invalid request: \"id\" must be a string or an integer");
    json_t *method = json_object_get(o, "method");
    json_t *result = json_object_get(o, "result");
    json_t *error = json_object_get(o, "error");
    if (!method && (result || error)) {
        if (!id_ok)
            return invalid(m, JRPC_INVALID_REQUEST, "invalid response: no id");
        if (result && error)
            return invalid(m, JRPC_INVALID_REQUEST,
                           "invalid response: both \"result\" and \"error\"");
        m->kind = JRPC_KIND_RESPONSE;
        return m->kind;
    }
    if (!json_is_string(method))
        return invalid(m, JRPC_INVALID_REQUEST, "invalid request: \"method\" must be a string");
    json_t *params = json_object_get(o, "params");
    if (params && !json_is_object(params) && !json_is_array(params))
        return invalid(m, JRPC_INVALID_REQUEST,
                       "invalid request: \"params\" must be an object or an array");
    m->method = json_string_value(method);
    m->params = params;
    m->kind = id ? JRPC_KIND_REQUEST : JRPC_KIND_NOTIFICATION;
    return m->kind;
}

json_t *jrpc_result_new(json_t *id, json_t *result)
{
    if (!result)
        return NULL;
    json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "result", result);
    return m;
}

json_t *jrpc_error_new(json_t *id, int code, const char *message, json_t *data)
{
    json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message ? message : "");
    if (!e) {
        /* The message may not be valid UTF-8 (it can quote the client's bytes). */
        e = json_pack("{s:i, s:s}", "code", code, "message", "error");
    }
    if (e && data)
        json_object_set_new(e, "data", data);
    else
        json_decref(data);
    if (!e)
        return NULL;
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

char *jrpc_frame_dump(const json_t *m, size_t *ret_len)
{
    /* Compact output has no raw newline: every newline in a string is escaped, so one message
     * is exactly one line. */
    size_t n = json_dumpb(m, NULL, 0, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    if (n == 0)
        return NULL;
    char *s = malloc(n + 2);
    if (!s)
        return NULL;
    if (json_dumpb(m, s, n, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS)) != n) {
        free(s);
        return NULL;
    }
    s[n] = '\n';
    s[n + 1] = '\0';
    *ret_len = n + 1;
    return s;
}
