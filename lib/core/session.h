/* SPDX-License-Identifier: MIT */
/* session.h - what the run pipeline needs of sessions: a one-shot run with rich results is one
 * cell in a session's sandbox (its interpreter collects the rich outputs), started for it and
 * ended with it. */
#ifndef EB_SESSION_H
#define EB_SESSION_H

#include "core/lifecycle.h"
#include "core/pipeline.h"

/* Runs the prepared one-shot request (req->rich_results) as one cell: execbox_executor_run's
 * contract. A sandbox that cannot start is the result's SandboxError, as for any run. */
int eb_session_oneshot(const struct eb_lifecycle *lc, const struct execbox_request *req,
                       const struct eb_prepared *p, struct execbox_result **ret,
                       struct execbox_error *err);

#endif
