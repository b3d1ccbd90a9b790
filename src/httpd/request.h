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

/* What a body is for: the fields each kind takes. */
enum srv_body_kind {
    SRV_BODY_RUN,     /* POST /v1/execute: code, language, stdin, files, cap, policy fields */
    SRV_BODY_SESSION, /* POST /v1/sessions: language, idle_timeout, rollback, cap, policy
                         fields */
    SRV_BODY_CELL,    /* POST /v1/sessions/{id}/execute: code, language, stdin, files, and of
                         the policy only timeout and output_limit */
};

/* Most input files per request, as the library allows. */
#define SRV_FILES_MAX EXECBOX_INPUT_FILES_MAX

/* One parsed request body. Owns its strings. */
struct srv_run_spec {
    char *code; /* NUL-terminated; JSON strings cannot hold NUL (jansson refuses \u0000) */
    size_t code_len;
    const char *language; /* static, from execbox_languages(); NULL = python */
    char *stdin_data;     /* NULL: no stdin */
    size_t stdin_len;
    struct execbox_policy policy; /* the base policy with the request's limits applied */
    /* "files": placed in /workspace before the code runs; paths and data owned here */
    struct execbox_input_file *files;
    size_t n_files;
    uint64_t files_decoded; /* bit i: files[i].data is the library's (base64), execbox_free it */
    bool rich_results;      /* SRV_BODY_RUN: "rich_results": true (execbox_request.rich_results) */
    /* SRV_BODY_SESSION */
    double idle_timeout; /* 0: not given */
    bool no_rollback;    /* "rollback": false */
};

/* Parses body (len bytes, not necessarily NUL-terminated) against the server's policy, which is
 * both the default and the maximum of every limit. On success fills *ret (release it with
 * srv_run_spec_clear). On a bad request returns -EINVAL (or -ENOMEM), writes the offending
 * field's name to field (empty when the body as a whole is bad) and a message that names it
 * to err. Never reads past len. */
int srv_parse_run(const char *body, size_t len, const struct execbox_policy *server,
                  struct srv_run_spec *ret, char *field, size_t field_size,
                  struct execbox_error *err);

/* Parses a body of the given kind as srv_parse_run does; base is the default and the maximum
 * (the server's policy, or for a cell the session's). */
int srv_parse_body(enum srv_body_kind kind, const char *body, size_t len,
                   const struct execbox_policy *base, struct srv_run_spec *ret, char *field,
                   size_t field_size, struct execbox_error *err);

/* Whether a workspace path (len bytes, already decoded) is one a client may name: 1 to
 * EXECBOX_PATH_MAX - 1 bytes, no NUL, relative, and no empty, "." or ".." part. The library
 * checks again and also refuses symlinks on the way. */
bool srv_workspace_path_ok(const char *path, size_t len);

/* Percent-decodes in[0..len) once into out (size bytes, NUL-terminated; the result may hold
 * NUL bytes, which *ret_len counts). -EINVAL for a malformed escape, -ENAMETOOLONG when out is
 * too small. '+' is left as it is (this is a path, not a query). */
int srv_url_decode(const char *in, size_t len, char *out, size_t size, size_t *ret_len);

/* A Content-Type for a file from its name's extension; application/octet-stream if unknown. */
const char *srv_mime_from_name(const char *path);

/* Frees what *s owns and zeroes it. */
void srv_run_spec_clear(struct srv_run_spec *s);

/* {"error": {"code": code, "message": message[, "field": field]}} as a malloc'd string
 * (NULL on no memory). field may be NULL or "". */
char *srv_error_json(const char *code, const char *message, const char *field);

/* {"error": {"code": "quota_exceeded", "message": message, "quota": quota}} as malloc'd text;
 * NULL on no memory. */
char *srv_quota_json(const char *quota, const char *message);

/* One server-sent event "event: NAME\ndata: JSON\n\n" as a malloc'd string; json must be a
 * single line (jansson's compact output is). NULL on no memory. */
char *srv_sse_frame(const char *event, const char *json, size_t *ret_len);

/* The longest host name (DNS: 253 bytes). */
#define SRV_HOST_NAME_MAX 253

/* Whether name is a host name as --allow-host-header takes it: 1 to SRV_HOST_NAME_MAX of
 * [A-Za-z0-9.-], no port. */
bool srv_host_name_ok(const char *name);

/* Whether a Host header names this server, against DNS rebinding (a page whose own name now
 * resolves to a loopback address makes the browser send that name): an IP literal (a.b.c.d,
 * [v6]), "localhost", or one of names (compared ignoring case and a trailing dot), each with
 * or without ":port". Anything else, an empty value included, is not. */
bool srv_host_allowed(const char *host, const char *const *names, size_t n_names);

/* Whether a client-supplied request id is safe to echo and log: 1 to 64 of [A-Za-z0-9._-]. */
bool srv_request_id_ok(const char *id);

/* Compares a presented token with the expected one in time that depends only on the length of
 * the presented one. */
bool srv_token_equal(const char *presented, const char *expected);

#endif
