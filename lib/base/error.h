/* SPDX-License-Identifier: MIT */
/* error.h - setting and prefixing struct execbox_error without allocating. */
#ifndef EB_ERROR_H
#define EB_ERROR_H

#include "execbox/execbox.h"

/* Sets err (if not NULL) to code and a printf-style message; returns code (negative errno) so
 * that callers can write `return eb_error_set(err, -EINVAL, "...")`. Async-signal-safe enough
 * for a forked child only through eb_error_set_raw. */
int eb_error_set(struct execbox_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of the existing message; returns err->code (or code if err NULL). */
int eb_error_prefix(struct execbox_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Says what the error already in err is about: kind, and the field at fault (NULL: keep the
 * field set before). A kind other than EXECBOX_ERROR_OTHER set before is kept when kind is
 * EXECBOX_ERROR_INVALID_VALUE (the more precise one wins). Returns err->code, or code if err is
 * NULL or has no code yet. */
int eb_error_about(struct execbox_error *err, int code, enum execbox_error_kind kind,
                   const char *field);

/* Async-signal-safe setter for a forked child: copies a fixed message and appends
 * ": <strerror-like text of code>". No formatting beyond that. */
void eb_error_set_raw(struct execbox_error *err, int code, const char *msg);

/* Clears err. */
void eb_error_clear(struct execbox_error *err);

#endif
