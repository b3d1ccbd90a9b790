/* SPDX-License-Identifier: MIT */
/* e2b_api.h - the part of E2B's control plane (api.e2b.app) that the SDK's Sandbox class calls
 * when E2B_API_URL names `execbox serve` (http://HOST:PORT/e2b[/TOKEN]): create, connect, get
 * info, list, set the timeout of and kill a sandbox. An execbox "sandbox" is a scope, not a
 * machine: the SDK sends its id (E2b-Sandbox-Id) and access token (X-Access-Token) with every
 * envd and code-interpreter call, and each sandbox has its own default context and contexts
 * (made at their first use, within its tenant), ended with it. Called by e2b.c only. */
#ifndef EBSRV_E2B_API_H
#define EBSRV_E2B_API_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "e2b.h"

/* Most sandboxes a server keeps at once (ended and timed-out ones are dropped first). */
#define E2B_SANDBOXES_MAX 1024
/* A sandbox's timeout when create names none, and the longest one may ask (E2B's: 300 s, and
 * 24 h on its largest plan). */
#define E2B_SANDBOX_TIMEOUT_DEFAULT 300
#define E2B_SANDBOX_TIMEOUT_MAX 86400
/* What create and connect say envd is: the SDK's newest feature gate (octet-stream uploads). */
#define E2B_ENVD_VERSION "0.5.7"
/* The id the SDK sends in its debug mode: the tenant's shared scope, as without a sandbox. */
#define E2B_DEBUG_SANDBOX_ID "debug_sandbox_id"

struct e2b_sandboxes;

int e2b_sandboxes_new(struct e2b_sandboxes **ret);
/* Accepts NULL; returns NULL. */
struct e2b_sandboxes *e2b_sandboxes_free(struct e2b_sandboxes *t);

/* Routes a control-plane path: -1 when sub is not one (e2b_route goes on), else as e2b_route. */
int e2b_api_route(const char *method, const char *sub, struct e2b_call *call,
                  const char **ret_allow);
/* Whether the op is the control plane's; whether it has a JSON body (create, timeout,
 * connect) rather than being answered at once (info, list, kill). */
bool e2b_api_op(enum e2b_op op);
bool e2b_api_has_body(enum e2b_op op);
/* Answers a control-plane call (body NULL for those without one). 0, or -ENOMEM. */
int e2b_api_answer(struct e2b *e, struct e2b_call *call, const char *body, size_t len,
                   struct e2b_answer *ret);

/* Puts a call that is not the control plane's in its sandbox (call->sandbox) from the headers
 * e2b_call_request kept: none or the debug id is the tenant's shared scope; a sandbox of the
 * call's tenant that has not ended, with its access token, is its own. 0, or 1 with the answer
 * in *ret (401 for a wrong token, 404 for an unknown or ended sandbox), or -ENOMEM. */
int e2b_api_enter(struct e2b *e, struct e2b_call *call, struct e2b_answer *ret);

/* From e2b.c: the server's sandboxes and policy; ends every context of (owner, sandbox) and its
 * session. */
struct e2b_sandboxes *e2b_sandboxes_of(struct e2b *e);
const struct execbox_policy *e2b_policy_of(struct e2b *e);
void e2b_end_sandbox_contexts(struct e2b *e, const char *owner, const char *sandbox);
/* From e2b.c: its answers, so that every route words them alike. */
int e2b_json_answer(struct e2b_answer *a, int status, json_t *o);
int e2b_empty_answer(struct e2b_answer *a, int status);

#endif
