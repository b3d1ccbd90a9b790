/* SPDX-License-Identifier: MIT */
/* respond.c - queueing a job's answer with libmicrohttpd: the headers every answer carries,
 * bodies from memory, downloads from a file, error and JSON bodies. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t srv_retry_after(struct srv *s)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    double wait = st.avg_run_s * (double)(st.queued + 1) / (double)st.workers;
    size_t secs = (size_t)wait + 1;
    return secs > SRV_RETRY_AFTER_MAX ? SRV_RETRY_AFTER_MAX : secs;
}

/* A page of an allowed origin may read the answer; every answer varies with Origin. */
void srv_add_cors_headers(struct job *j, struct MHD_Response *r)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    if (!j->req.cors)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, j->req.origin);
    if (j->req.preflight) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "POST, GET, HEAD, PUT, DELETE");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, Accept, X-Request-Id");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "X-Request-Id, Retry-After");
}

static const char *allowed_methods(enum route r)
{
    switch (r) {
    case R_EXECUTE:
    case R_SESSION_EXECUTE: return "POST";
    case R_SESSIONS: return "GET, HEAD, POST";
    case R_SESSION: return "GET, HEAD, DELETE";
    case R_SESSION_FILE: return "GET, HEAD, PUT, DELETE";
    default: return "GET, HEAD";
    }
}

/* Adds the headers every answer carries and queues it. */
static enum MHD_Result queue_answer(struct job *j, struct MHD_Connection *c, int status,
                                    const char *ctype, struct MHD_Response *r, size_t retry_secs)
{
    if (status != 204)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "X-Request-Id", j->req.id);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (retry_secs) {
        char v[16];
        snprintf(v, sizeof(v), "%zu", retry_secs);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"execbox\"");
    srv_add_cors_headers(j, r);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
                                j->req.allow ? j->req.allow : allowed_methods(j->req.route));
    /* Bytes of a sandbox's file are the code's, not ours: never sniffed, never run as a page
     * of this origin. */
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (j->req.route == R_SESSION_FILE)
        MHD_add_response_header(r, "Content-Security-Policy", "sandbox; default-src 'none'");
    /* Leaving or draining: no connection is kept, so the client's next request opens a new
     * one, which a load balancer sends elsewhere. */
    if (j->req.close || __atomic_load_n(&j->srv->draining, __ATOMIC_RELAXED) ||
        __atomic_load_n(&j->srv->leaving, __ATOMIC_RELAXED))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    j->status = status;
    j->state = J_ANSWERED;
    return ok;
}

/* Queues a response whose body (malloc'd, freed by free_fn) is handed over. */
enum MHD_Result srv_respond(struct job *j, struct MHD_Connection *c, int status, const char *ctype,
                            char *body, size_t len, void (*free_fn)(void *), size_t retry_secs)
{
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, body, free_fn);
    if (!r) {
        free_fn(body);
        return MHD_NO;
    }
    return queue_answer(j, c, status, ctype, r, retry_secs);
}

/* A download's reader: the next block of the file, read at the offset libmicrohttpd asks for
 * into its one buffer of SRV_FILE_BLOCK bytes. A file that shrank under the download (a cell
 * truncated it) ends the response with an error: the connection is closed, and the client sees
 * a body shorter than its Content-Length rather than a wait. */
static ssize_t file_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    int fd = (int)(intptr_t)cls;
    ssize_t n;
    do
        n = pread(fd, buf, max, (off_t)pos);
    while (n < 0 && errno == EINTR);
    return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_close(void *cls)
{
    close((int)(intptr_t)cls);
}

/* Queues a download sent from the file itself (fd, handed over): it is read a block at a time
 * as the client takes it, so that the server holds one block of it per connection however
 * large it is and however slowly the client reads. size is what is sent (its size when
 * opened). */
enum MHD_Result srv_respond_file(struct job *j, struct MHD_Connection *c, const char *ctype, int fd,
                                 uint64_t size)
{
    struct MHD_Response *r = MHD_create_response_from_callback(size, SRV_FILE_BLOCK, file_read,
                                                               (void *)(intptr_t)fd, file_close);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    return queue_answer(j, c, 200, ctype, r, 0);
}

enum MHD_Result srv_respond_error(struct job *j, struct MHD_Connection *c, int status,
                                  const char *code, const char *message, const char *field,
                                  size_t retry_secs)
{
    char *body = srv_error_json(code, message, field);
    if (!body)
        return MHD_NO;
    return srv_respond(j, c, status, "application/json", body, strlen(body), free, retry_secs);
}

enum MHD_Result srv_respond_quota(struct job *j, struct MHD_Connection *c, const char *quota,
                                  const char *message, size_t retry_secs)
{
    char *body = srv_quota_json(quota, message);
    if (!body)
        return MHD_NO;
    return srv_respond(j, c, 429, "application/json", body, strlen(body), free, retry_secs);
}

enum MHD_Result srv_respond_json(struct job *j, struct MHD_Connection *c, int status, json_t *o)
{
    char *body = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                   JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_decref(o);
    if (!body)
        return MHD_NO;
    return srv_respond(j, c, status, "application/json", body, strlen(body), free, 0);
}
