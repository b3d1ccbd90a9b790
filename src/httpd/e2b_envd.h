/* SPDX-License-Identifier: MIT */
/* e2b_envd.h - the part of E2B's envd (the daemon inside an E2B sandbox) that E2B's SDK needs for
 * sandbox.files and sandbox.commands, under /e2b/ next to the code-interpreter routes (e2b.h):
 * envd's HTTP GET/POST /files?path=, the Connect RPC (JSON form) methods of filesystem.Filesystem
 * (Stat, ListDir, MakeDir, Remove) and process.Process (Start, a server stream; SendSignal).
 *
 * Everything works in the default Python context's session (e2b.h): files in its workspace,
 * with the paths of the session file routes (a path relative to /workspace, given as
 * /workspace/..., /home/user/... or relative), commands as cells of that session, inside its
 * sandbox. Called by e2b.c only. */
#ifndef EBSRV_E2B_ENVD_H
#define EBSRV_E2B_ENVD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "e2b.h"

#define E2B_ENVD_FS "filesystem.Filesystem"
#define E2B_ENVD_PROC "process.Process"
#define E2B_CONNECT_STREAM_CTYPE "application/connect+json"
/* Entries one ListDir returns, all depths together, and the deepest it goes. */
#define E2B_ENVD_LIST_MAX 10000
#define E2B_ENVD_DEPTH_MAX 16
/* Files in one upload. */
#define E2B_ENVD_PARTS_MAX 64
/* Entries one recursive Remove deletes. */
#define E2B_ENVD_REMOVE_MAX 100000
/* Commands running at once (SendSignal finds them by pid). */
#define E2B_ENVD_PROCS_MAX 64

/* Routes an envd path: -1 when sub is not one (e2b_route goes on), else as e2b_route. */
int e2b_envd_route(const char *method, const char *sub, struct e2b_call *call,
                   const char **ret_allow);
/* Whether the op is envd's. */
bool e2b_envd_op(enum e2b_op op);
/* Whether the envd op's body is sent as application/json (Connect's unary calls). */
bool e2b_envd_json_body(enum e2b_op op);
/* As e2b_prepare, for an envd op. */
int e2b_envd_prepare(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                     struct e2b_answer *ret);
/* As e2b_run, for an envd op. */
void e2b_envd_run(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel,
                  e2b_push_fn push, void *ud, struct e2b_answer *ret, struct e2b_outcome *out);
/* The cells that set execute's env_vars (an object of strings) for the cell between them, and
 * put them back as they were. 0; -EINVAL with the reason in msg; -ENOMEM. */
int e2b_envd_env_cells(json_t *env, char **ret_setup, char **ret_restore, char *msg,
                       size_t msg_size);
/* Frees call->envd. */
void e2b_envd_clear(struct e2b_call *call);

/* From e2b.c: takes the default Python context for the call (its session in call->sess and,
 * when cell, its cell; a context still to be made in call->ctx with call->create). 0, or 1
 * with the answer (plain text) in *ret. */
int e2b_default_context(struct e2b *e, struct e2b_call *call, bool cell, struct e2b_answer *ret);
/* Counts n more cells of ours in the call's context (their executions are not the client's);
 * returns how many there have been since its session started. */
uint64_t e2b_hidden_cells(struct e2b *e, struct e2b_call *call, uint64_t n);
/* On the worker: makes the context's session when the call must (and claims its cell when
 * cell). 0, or an HTTP status with the reason in err. */
int e2b_context_ready(struct e2b *e, struct e2b_call *call, bool cell, struct execbox_error *err);

#endif
