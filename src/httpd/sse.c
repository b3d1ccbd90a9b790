/* SPDX-License-Identifier: MIT */
/* sse.c - the streamed answer of a run: server-sent events (or E2B's NDJSON lines) in a
 * bounded buffer that a worker fills and libmicrohttpd's reader drains. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for len more bytes at the end of the job's stream buffer: what the client has
 * already been sent is dropped from its front first, so that the buffer holds only what is
 * still to be sent (a client that keeps up a little at a time never drains it fully, and a
 * buffer that only grew would hold every byte ever streamed). Called with j->lock held. */
static bool sse_reserve(struct job *j, size_t len)
{
    size_t pending = j->stream.len - j->stream.off;
    if (j->stream.off &&
        (j->stream.off >= j->stream.cap / 2 || j->stream.cap - j->stream.len < len)) {
        memmove(j->stream.buf, j->stream.buf + j->stream.off, pending);
        j->stream.off = 0;
        j->stream.len = pending;
    }
    if (j->stream.cap - j->stream.len >= len)
        return true;
    size_t cap = j->stream.cap ? j->stream.cap : SRV_SSE_BUF_MIN;
    while (cap < j->stream.len + len)
        cap *= 2;
    char *nb = realloc(j->stream.buf, cap);
    if (!nb)
        return false;
    j->stream.buf = nb;
    j->stream.cap = cap;
    return true;
}

/* Appends a frame to the job's stream and wakes its connection; false when it was dropped
 * (the client is more than SRV_SSE_PENDING_MAX behind; a forced frame is never dropped for
 * that). Called with j->lock held. */
bool sse_push(struct job *j, const char *frame, size_t len, bool force)
{
    if ((!force && j->stream.len - j->stream.off + len > SRV_SSE_PENDING_MAX) ||
        !sse_reserve(j, len))
        return false;
    memcpy(j->stream.buf + j->stream.len, frame, len);
    j->stream.len += len;
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    return true;
}

/* e2b_run's push: an NDJSON line into the same bounded stream as the server-sent events. */
bool sse_e2b_push(void *ud, const char *line, size_t len, bool force)
{
    struct job *j = ud;
    pthread_mutex_lock(&j->lock);
    bool kept = sse_push(j, line, len, force);
    pthread_mutex_unlock(&j->lock);
    return kept;
}

bool sse_event(struct job *j, const char *event, const char *json, bool force)
{
    size_t n;
    char *f = srv_sse_frame(event, json, &n);
    if (!f)
        return false;
    pthread_mutex_lock(&j->lock);
    bool kept = sse_push(j, f, n, force);
    pthread_mutex_unlock(&j->lock);
    free(f);
    return kept;
}

/* The note that output was dropped from the stream, as one stderr event that is never
 * dropped itself. Called with j->lock held. */
void sse_dropped_note(struct job *j)
{
    char note[200];
    snprintf(note, sizeof(note),
             "{\"data\":\"\\n[execbox: %llu bytes of output were not streamed: the client read "
             "too slowly]\\n\"}",
             (unsigned long long)j->stream.dropped);
    size_t n;
    char *f = srv_sse_frame("stderr", note, &n);
    if (f)
        sse_push(j, f, n, true);
    free(f);
}

/* The run's on_output: one "stdout" or "stderr" event per chunk, as {"data": "..."} with any
 * invalid UTF-8 replaced and a sequence split between chunks carried over whole. */
void sse_on_output(void *ud, enum execbox_stream stream, const char *data, size_t len)
{
    struct job *j = ud;
    int k = stream == EXECBOX_STREAM_STDERR ? 1 : 0;
    size_t total = j->stream.carry_len[k] + len;
    char *joined = malloc(total ? total : 1);
    if (!joined)
        return;
    memcpy(joined, j->stream.carry[k], j->stream.carry_len[k]);
    memcpy(joined + j->stream.carry_len[k], data, len);
    size_t keep = 0, clen = 0;
    char *clean = execbox_utf8_sanitize(joined, total, &clen, &keep);
    if (clean) {
        memcpy(j->stream.carry[k], joined + total - keep, keep);
        j->stream.carry_len[k] = keep;
        json_t *o = clen ? json_pack("{s:s%}", "data", clean, clen) : NULL;
        char *s =
            o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS)) : NULL;
        if (clen && (!s || !sse_event(j, k ? "stderr" : "stdout", s, false)))
            j->stream.dropped += clen; /* only the worker's thread counts it */
        free(s);
        json_decref(o);
        execbox_free(clean);
    }
    free(joined);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct job *j = cls;
    pthread_mutex_lock(&j->lock);
    ssize_t r;
    if (j->stream.len > j->stream.off) {
        size_t n = j->stream.len - j->stream.off;
        if (n > max)
            n = max;
        memcpy(buf, j->stream.buf + j->stream.off, n);
        j->stream.off += n;
        if (j->stream.off == j->stream.len) {
            /* All sent: the buffer starts over, and a large one goes back to the system. */
            j->stream.off = j->stream.len = 0;
            if (j->stream.cap > SRV_SSE_BUF_MIN) {
                free(j->stream.buf);
                j->stream.buf = NULL;
                j->stream.cap = 0;
            }
        }
        r = (ssize_t)n;
    } else if (j->stream.done) {
        r = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing to send yet: park the connection until the worker has more (returning 0
         * without suspending would make libmicrohttpd spin). */
        j->suspended = true;
        MHD_suspend_connection(j->conn);
        r = 0;
    }
    pthread_mutex_unlock(&j->lock);
    return r;
}

static void sse_free(void *cls)
{
    job_unref(cls);
}

enum MHD_Result sse_respond(struct job *j, struct MHD_Connection *c)
{
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, job_ref(j), sse_free);
    if (!resp) {
        job_unref(j);
        /* The worker still runs it; the connection will be closed. */
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            j->req.route == R_E2B ? e2b_stream_ctype(j->e2b.op)
                                                  : "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Request-Id", j->req.id);
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    if (j->req.close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    srv_add_cors_headers(j, resp);
    enum MHD_Result ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    pthread_mutex_lock(&j->lock);
    j->status = 200;
    pthread_mutex_unlock(&j->lock);
    return ret;
}
