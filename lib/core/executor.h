/* SPDX-License-Identifier: MIT */
/* executor.h - the executor (execbox.h's struct execbox_executor) as the core's other parts see
 * it: a lifecycle they borrow, a pool, and the backend's probe. */
#ifndef EB_EXECUTOR_H
#define EB_EXECUTOR_H

#include "core/lifecycle.h"

struct eb_pool;

struct execbox_executor {
    struct eb_lifecycle lc;
    struct execbox_check report; /* the backend's probe at open */
    struct eb_pool *pool;        /* NULL without a warm pool */
};

#endif
