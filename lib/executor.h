/* SPDX-License-Identifier: MIT */
/* executor.h - what other parts of the library (sessions) need of an executor. */
#ifndef EB_EXECUTOR_H
#define EB_EXECUTOR_H

#include "backend.h"

/* The executor's backend, its state and the preload its warm sandboxes import (borrowed). */
void eb_executor_parts(struct execbox_executor *ex, const struct eb_backend_ops **ret_ops,
                       void **ret_state, const char **ret_preload);

/* The request's code length (code_len, or strlen), checked with its stdin against
 * EXECBOX_CODE_MAX and EXECBOX_STDIN_MAX: 0, or -E2BIG with err set. */
int eb_request_sizes(const struct execbox_request *req, size_t *ret_code_len,
                     struct execbox_error *err);

/* Names in res the walls this executor runs without (allow_degraded). */
int eb_executor_add_degraded(const struct execbox_executor *ex, struct execbox_result *res);

/* A one-shot run with rich results (execbox_request.rich_results): a session of one cell,
 * started, run and freed. Same contract as execbox_executor_run; policy is resolved. */
int eb_session_oneshot(struct execbox_executor *ex, const struct execbox_request *req,
                       const struct execbox_policy *policy, struct execbox_result **ret,
                       struct execbox_error *err);

#endif
