/* SPDX-License-Identifier: MIT */
/* cancel.c - a cancellation token backed by an eventfd, so a run can poll it with its pipes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/cancel.h"
#include "base/error.h"

struct execbox_cancel {
    int fd;
};

int execbox_cancel_new(struct execbox_cancel **ret, struct execbox_error *err)
{
    struct execbox_cancel *c = malloc(sizeof(*c));
    if (!c)
        return eb_error_set(err, -ENOMEM, "out of memory");
    c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->fd < 0) {
        int e = -errno;
        free(c);
        return eb_error_set(err, e, "eventfd: %s", execbox_strerror(e));
    }
    *ret = c;
    return 0;
}

void execbox_cancel_fire(struct execbox_cancel *c)
{
    /* write(2) is async-signal-safe; a full counter (EAGAIN) is already "fired". */
    uint64_t one = 1;
    if (c)
        (void)!write(c->fd, &one, sizeof(one));
}

struct execbox_cancel *execbox_cancel_free(struct execbox_cancel *c)
{
    if (c) {
        close(c->fd);
        free(c);
    }
    return NULL;
}

int eb_cancel_fd(const struct execbox_cancel *c)
{
    return c ? c->fd : -1;
}
