/* SPDX-License-Identifier: MIT */
/* e2b_lines.h - an E2B execute's answer as NDJSON lines (stdout, stderr, result, error, end),
 * streamed through the server's bounded push as the cell runs. */
#ifndef EBSRV_E2B_LINES_H
#define EBSRV_E2B_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2b.h"

/* A partial output line waits for its end up to this size (or the cell's end). */
#define E2B_LINE_MAX 4096

/* One execute's stream. */
struct stream {
    e2b_push_fn push;
    void *ud;
    uint64_t limit;       /* bytes streamed per output stream: the policy's output_limit */
    uint64_t streamed[2]; /* per stream */
    uint64_t dropped;     /* bytes the client was too slow for */
    bool capped[2];
    char carry[2][4]; /* an incomplete UTF-8 sequence at the end of the last chunk */
    size_t carry_len[2];
    char pend[2][E2B_LINE_MAX]; /* the start of a line whose end has not come yet */
    size_t pend_len[2];
};

/* A log line (k: 0 stdout, 1 stderr) of text[0..len). */
void e2b_send_log(struct stream *st, int k, const char *text, size_t len, bool force);

/* Sends the start of a line still waiting for its end (stream k), as a line. */
void e2b_flush_pending(struct stream *st, int k);

/* The cell's on_output: its output as stdout or stderr lines as each line ends, up to the
 * policy's output_limit per stream, invalid UTF-8 replaced and a sequence split between chunks
 * carried over whole. */
void e2b_on_output(void *ud, enum execbox_stream stream, const char *data, size_t len);

/* A result line: one rich output, as E2B names its formats. */
void e2b_send_result(struct stream *st, const struct execbox_rich *rich);

/* An error line: the exception's name, value and traceback. */
void e2b_send_error(struct stream *st, const char *name, const char *value, const char *traceback);

/* The end line, with the execution count when with_count. */
void e2b_send_end(struct stream *st, uint64_t count, bool with_count);

/* The error line of a cell that did not end normally, or none. */
void e2b_send_cell_error(struct stream *st, const struct execbox_result *res, double timeout);

/* The stderr note of a stream that left out dropped bytes for a client too slow to read them. */
void e2b_slow_note(char *buf, size_t n, uint64_t dropped);

#endif
