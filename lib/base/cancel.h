/* SPDX-License-Identifier: MIT */
/* cancel.h - the fd behind a cancellation token (readable once fired). */
#ifndef EB_CANCEL_H
#define EB_CANCEL_H

#include "execbox/execbox.h"

/* -1 for NULL. The fd stays readable once fired (never drained), so one token cancels for
 * good. */
int eb_cancel_fd(const struct execbox_cancel *c);

#endif
