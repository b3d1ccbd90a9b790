/* SPDX-License-Identifier: MIT */
/* request.h - the wire format of `execbox serve`, kept free of HTTP so that it can be fuzzed:
 * parsing a POST /v1/execute body into a run, error bodies, and server-sent event frames. */
#ifndef EBSRV_REQUEST_H
#define EBSRV_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "execbox/execbox.h"

/* Deepest JSON nesting accepted in a request body; a run request is flat, so anything deeper
 * is hostile and refused before jansson recurses into it. */
#define SRV_JSON_DEPTH_MAX 32

/* One parsed POST /v1/execute body. Owns its strings. */
struct srv_run_spec {
    char *code; /* NUL-terminated; JSON strings cannot hold NUL (jansson refuses \u0000) */
    size_t code_len;
    const char *language; /* static, from execbox_languages(); NULL = python */
    char *stdin_data;     /* NULL: no stdin */
    size_t stdin_len;
    struct execbox_policy policy; /* the server's policy with the request's limits applied */
};

/* Parses body (len bytes, not necessarily NUL-terminated) against the server's policy, which is
 * both the default and the maximum of every limit. On success fills *ret (release it with
 * srv_run_spec_clear). On a bad request returns -EINVAL (or -ENOMEM), writes the offending
 * field's name to field (empty when the body as a whole is bad) and a message that names it
 * to err. Never reads past len. */
int srv_parse_run(const char *body, size_t len, const struct execbox_policy *server,
                  struct srv_run_spec *ret, char *field, size_t field_size,
                  struct execbox_error *err);

/* Frees what *s owns and zeroes it. */
void srv_run_spec_clear(struct srv_run_spec *s);

/* {"error": {"code": code, "message": message[, "field": field]}} as a malloc'd string
 * (NULL on no memory). field may be NULL or "". */
char *srv_error_json(const char *code, const char *message, const char *field);

/* One server-sent event "event: NAME\ndata: JSON\n\n" as a malloc'd string; json must be a
 * single line (jansson's compact output is). NULL on no memory. */
char *srv_sse_frame(const char *event, const char *json, size_t *ret_len);

/* Whether a client-supplied request id is safe to echo and log: 1 to 64 of [A-Za-z0-9._-]. */
bool srv_request_id_ok(const char *id);

/* Compares a presented token with the expected one in time that depends only on the length of
 * the presented one. */
bool srv_token_equal(const char *presented, const char *expected);

#endif
