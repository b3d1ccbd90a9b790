/* SPDX-License-Identifier: MIT */
/* buf.h - a capped output buffer: keeps the first and last bytes of a stream up to a hard
 * limit, drops the middle and counts everything. */
#ifndef EB_BUF_H
#define EB_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"

struct eb_capbuf {
    size_t limit; /* bytes kept at most: head_cap + tail_cap */
    char *head;   /* first head_cap bytes */
    size_t head_len, head_cap;
    char *tail; /* ring of the last tail_cap bytes after the head */
    size_t tail_start, tail_len, tail_cap;
    uint64_t total;    /* bytes appended in all */
    uint64_t streamed; /* bytes passed on live by eb_capbuf_take */
};

/* Prepares b to keep at most limit bytes (half head, half tail). Allocates lazily. */
void eb_capbuf_init(struct eb_capbuf *b, size_t limit);

/* Appends; never fails for lack of room (bytes past the limit are counted and the oldest
 * middle bytes dropped). -ENOMEM only if the first allocation fails. */
int eb_capbuf_append(struct eb_capbuf *b, const char *data, size_t len);

/* True once bytes were dropped. */
bool eb_capbuf_truncated(const struct eb_capbuf *b);

/* A NUL-terminated string of head, a marker line naming the dropped byte count when
 * truncated, and tail. Frees the buffer's storage; b is reset. */
int eb_capbuf_finish(struct eb_capbuf *b, char **ret, size_t *ret_len);

void eb_capbuf_free(struct eb_capbuf *b);

/* One chunk of a streamed run: passed on live to fn (when set) as far as it falls within the
 * first limit bytes of the stream (a byte cut, as the head's), and appended to b in full. What
 * eb_capbuf_append returns. */
int eb_capbuf_take(struct eb_capbuf *b, execbox_output_fn fn, void *userdata,
                   enum execbox_stream which, const char *data, size_t len);

/* At the stream's end: when eb_capbuf_take held bytes back from fn, one note to it naming them,
 * worded as eb_capbuf_finish's marker. Call before eb_capbuf_finish. */
void eb_capbuf_take_end(const struct eb_capbuf *b, execbox_output_fn fn, void *userdata,
                        enum execbox_stream which);

#endif
