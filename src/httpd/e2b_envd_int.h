/* SPDX-License-Identifier: MIT */
/* e2b_envd_int.h - what the two halves of envd's wire share: e2b_envd.c (routes, bodies,
 * answers, paths) and e2b_envd_run.c (the files and commands work on the session). */
#ifndef EBSRV_E2B_ENVD_INT_H
#define EBSRV_E2B_ENVD_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "e2b_envd.h"
#include "e2b_lines.h"

/* The workspace as paths in answers say it; E2B's home directory is taken to mean it. */
#define WS_ROOT "/workspace"
#define WS_HOME "/home/user"
#define JSON_CTYPE "application/json"
/* Connect's stream envd_envelope: a flags byte and a 32-bit big-endian length. */
#define ENV_HDR 5
#define ENV_END 0x02
#define ENV_COMPRESSED 0x01

struct part {
    char *path; /* workspace path */
    size_t off; /* of its bytes in body */
    size_t len;
};

/* What an envd call's body asked for. */
struct envd {
    char path[EXECBOX_PATH_MAX]; /* workspace path; "" is the workspace itself */
    char dest[EXECBOX_PATH_MAX]; /* Move: where to */
    unsigned depth;              /* ListDir */
    char *body;                  /* an upload's bytes */
    struct part parts[E2B_ENVD_PARTS_MAX];
    size_t n_parts;
    char *code; /* Start: the cell that runs the command */
    int signal; /* SendSignal */
    unsigned pid;
};

/* Connect's error codes. */
enum code {
    C_INVALID = 0,
    C_NOT_FOUND,
    C_EXISTS,
    C_PRECONDITION,
    C_EXHAUSTED,
    C_ABORTED,
    C_UNIMPLEMENTED,
    C_UNAVAILABLE,
    C_DEADLINE,
    C_INTERNAL,
};

/* An answer of status and ctype with o (stolen) as its JSON body. 0 or -ENOMEM. */
int envd_dump_answer(struct e2b_answer *a, int status, const char *ctype, json_t *o);

/* s as a JSON string, its bytes made valid UTF-8; NULL on no memory. */
json_t *envd_clean_string(const char *s);

/* Connect's code for a negative errno, and for an HTTP status. */
enum code envd_code_of_errno(int r);
enum code envd_code_of_status(int status);

/* One stream envelope (flags, then o's JSON, stolen) as malloc'd bytes of *ret_len. */
char *envd_envelope(unsigned flags, json_t *o, size_t *ret_len);

/* Connect's error object {"code", "message"}. */
json_t *envd_error_json(enum code c, const char *msg);

/* An error as the op's wire says it: envd's HTTP {"code", "message"}; a unary Connect error
 * (its status, {"code", "message"}); a Connect stream's end with the error. code_or_status is
 * an HTTP status for the file routes, else a Connect code. Returns 1 (the call is answered), or
 * -ENOMEM. */
__attribute__((format(printf, 4, 5))) int envd_fail(struct e2b_answer *a, enum e2b_op op,
                                                    int code_or_status, const char *fmt, ...);

/* The op's answer for an API error r (err's message): unary as JSON, a stream as its end
 * message. 0 or -ENOMEM. */
int envd_fail_errno(struct e2b_answer *a, enum e2b_op op, int r, const struct execbox_error *err);

/* A workspace path as answers show it (/workspace/...). */
json_t *envd_shown_path(const char *rel);

#endif
