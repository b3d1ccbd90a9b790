/* SPDX-License-Identifier: MIT */
/* buf.c - capped head+tail output buffer. */
#include "base/buf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eb_capbuf_init(struct eb_capbuf *b, size_t limit)
{
    memset(b, 0, sizeof(*b));
    b->limit = limit;
    b->head_cap = limit - limit / 2;
    b->tail_cap = limit / 2;
}

static int grow_head(struct eb_capbuf *b, size_t need)
{
    /* Grow geometrically up to head_cap so small outputs stay small. */
    size_t cap = 4096;
    while (cap < need)
        cap *= 2;
    if (cap > b->head_cap)
        cap = b->head_cap;
    char *h = realloc(b->head, cap ? cap : 1);
    if (!h)
        return -ENOMEM;
    b->head = h;
    return 0;
}

int eb_capbuf_append(struct eb_capbuf *b, const char *data, size_t len)
{
    b->total += len;
    if (b->head_len < b->head_cap) {
        size_t n = b->head_cap - b->head_len;
        if (n > len)
            n = len;
        if (grow_head(b, b->head_len + n) < 0)
            return -ENOMEM;
        memcpy(b->head + b->head_len, data, n);
        b->head_len += n;
        data += n;
        len -= n;
    }
    if (len == 0 || b->tail_cap == 0)
        return 0;
    if (!b->tail) {
        b->tail = malloc(b->tail_cap);
        if (!b->tail)
            return -ENOMEM;
    }
    if (len >= b->tail_cap) {
        memcpy(b->tail, data + len - b->tail_cap, b->tail_cap);
        b->tail_start = 0;
        b->tail_len = b->tail_cap;
        return 0;
    }
    for (size_t i = 0; i < len;) {
        size_t end = (b->tail_start + b->tail_len) % b->tail_cap;
        size_t room = b->tail_cap - end;
        size_t n = len - i < room ? len - i : room;
        memcpy(b->tail + end, data + i, n);
        i += n;
        b->tail_len += n;
        if (b->tail_len > b->tail_cap) {
            b->tail_start = (b->tail_start + (b->tail_len - b->tail_cap)) % b->tail_cap;
            b->tail_len = b->tail_cap;
        }
    }
    return 0;
}

bool eb_capbuf_truncated(const struct eb_capbuf *b)
{
    return b->total > b->head_len + b->tail_len;
}

/* The line that stands for n dropped bytes, in out (128 bytes); its length. */
static size_t omitted_note(uint64_t n, char *out, size_t size)
{
    int k = snprintf(out, size, "\n[... execbox: %" PRIu64 " bytes omitted ...]\n", n);
    return k < 0 ? 0 : (size_t)k < size ? (size_t)k : size - 1;
}

int eb_capbuf_take(struct eb_capbuf *b, execbox_output_fn fn, void *userdata,
                   enum execbox_stream which, const char *data, size_t len)
{
    if (fn && b->streamed < b->limit) {
        size_t n = b->limit - b->streamed < len ? (size_t)(b->limit - b->streamed) : len;
        if (n)
            fn(userdata, which, data, n);
        b->streamed += n;
    }
    return eb_capbuf_append(b, data, len);
}

void eb_capbuf_take_end(const struct eb_capbuf *b, execbox_output_fn fn, void *userdata,
                        enum execbox_stream which)
{
    if (!fn || b->total == b->streamed)
        return;
    char note[128];
    size_t n = omitted_note(b->total - b->streamed, note, sizeof(note));
    fn(userdata, which, note, n);
}

int eb_capbuf_finish(struct eb_capbuf *b, char **ret, size_t *ret_len)
{
    char marker[128] = "";
    uint64_t dropped = b->total - b->head_len - b->tail_len;
    size_t mlen = dropped ? omitted_note(dropped, marker, sizeof(marker)) : 0;
    size_t len = b->head_len + mlen + b->tail_len;
    char *s = malloc(len + 1);
    if (!s)
        return -ENOMEM;
    if (b->head_len)
        memcpy(s, b->head, b->head_len);
    memcpy(s + b->head_len, marker, mlen);
    size_t off = b->head_len + mlen;
    for (size_t i = 0; i < b->tail_len; i++)
        s[off + i] = b->tail[(b->tail_start + i) % b->tail_cap];
    s[len] = '\0';
    eb_capbuf_free(b);
    *ret = s;
    *ret_len = len;
    return 0;
}

void eb_capbuf_free(struct eb_capbuf *b)
{
    free(b->head);
    free(b->tail);
    size_t limit = b->limit;
    eb_capbuf_init(b, limit);
}
