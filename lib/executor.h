/* SPDX-License-Identifier: MIT */
/* executor.h - what other parts of the library (sessions) need of an executor. */
#ifndef EB_EXECUTOR_H
#define EB_EXECUTOR_H

#include "backend.h"

/* The executor's backend, its state and the preload its warm sandboxes import (borrowed). */
void eb_executor_parts(struct execbox_executor *ex, const struct eb_backend_ops **ret_ops,
                       void **ret_state, const char **ret_preload);

/* Names in res the walls this executor runs without (allow_degraded). */
int eb_executor_add_degraded(const struct execbox_executor *ex, struct execbox_result *res);

#endif
