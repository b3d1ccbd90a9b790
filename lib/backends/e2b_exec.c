/* SPDX-License-Identifier: MIT */
/*
 * e2b_exec.c - the e2b backend's execute stream: POST {sandbox}/execute with the run's code and
 * its NDJSON reply (lines typed stdout, stderr, result, error, end_of_execution, ...) into the
 * capped output, followed on a multi handle against the deadline and the cancel fd, with a
 * flood and an overlong line cut off. The stream comes from a sandbox the guest controls.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "backends/e2b.h"
#include "base/buf.h"
#include "base/cancel.h"
#include "base/error.h"
#include "base/util.h"

int e2b_stream_deliver(struct stream *st, int which, const char *text, size_t n)
{
    return eb_capbuf_take(&st->buf[which], st->req->on_output, st->req->userdata,
                          which == 0 ? EXECBOX_STREAM_STDOUT : EXECBOX_STREAM_STDERR, text, n);
}

/* One NDJSON line of the code interpreter. false stops the transfer. */
static bool take_line(struct stream *st, const char *p, size_t n)
{
    if (n == 0)
        return true;
    json_t *j = json_loadb(p, n, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type) {
        json_decref(j);
        st->bad_line = true;
        return false;
    }
    bool ok = true;
    if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
        json_t *t = json_object_get(j, "text");
        if (json_is_string(t) &&
            e2b_stream_deliver(st, type[3] == 'o' ? 0 : 1, json_string_value(t),
                               json_string_length(t)) < 0)
            ok = !(st->nomem = true);
    } else if (strcmp(type, "error") == 0) {
        json_decref(st->error);
        st->error = json_incref(j);
    } else if (strcmp(type, "end_of_execution") == 0) {
        st->ended = true;
    } else if (strcmp(type, "unexpected_end_of_execution") == 0) {
        st->unexpected = true;
    }
    /* "result" (rich display data of the last expression) and "number_of_executions" carry
     * nothing a one-shot run's record has a field for. */
    json_decref(j);
    return ok;
}

static size_t stream_write(char *p, size_t size, size_t n, void *ud)
{
    struct stream *st = ud;
    size_t len = size * n;
    if (!st->status)
        curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &st->status);
    if (st->status != 200)
        return eb_http_body_write(p, size, n, &st->body);
    st->bytes += len;
    if (st->bytes > st->flood_at) {
        st->flooded = true;
        return 0;
    }
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t k = nl ? (size_t)(nl - (p + i)) : len - i;
        if (st->len + k > E2B_LINE_MAX) {
            st->bad_line = true;
            return 0;
        }
        if (st->len + k + 1 > st->cap) {
            size_t cap = st->cap ? st->cap : 4096;
            while (cap < st->len + k + 1)
                cap *= 2;
            char *d = realloc(st->line, cap);
            if (!d) {
                st->nomem = true;
                return 0;
            }
            st->line = d;
            st->cap = cap;
        }
        memcpy(st->line + st->len, p + i, k);
        st->len += k;
        i += k;
        if (nl) {
            i++;
            bool go = take_line(st, st->line, st->len);
            st->len = 0;
            if (!go)
                return 0;
        }
    }
    return len;
}

static int execute_body(const struct eb_run *run, const char *ctx, char **ret,
                        struct execbox_error *err)
{
    json_t *code = json_stringn(run->code, run->code_len);
    if (!code)
        return eb_error_set(err, -EINVAL, "the e2b backend sends code as JSON: it must be UTF-8");
    /* The context carries the language and the working directory. */
    char *j = e2b_dump(json_pack("{s:o, s:s, s:{}}", "code", code, "context_id", ctx, "env_vars"));
    if (!j)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret = j;
    return 0;
}

/* Streams one execution until it ends, the deadline passes or the cancel fd fires. 0 with *o,
 * or -errno for a failure before the transfer could start. */
int e2b_execute(const struct e2b_state *s, const struct sandbox *sb, const char *ctx,
                const struct eb_run *run, uint64_t deadline_ns, struct stream *st,
                struct exec_outcome *o, struct execbox_error *err)
{
    char url[2048];
    int r = e2b_sandbox_url(s, sb, E2B_JUPYTER_PORT, "/execute", url, sizeof(url), err);
    if (r < 0)
        return r;
    _cleanup_free_ char *body = NULL;
    r = execute_body(run, ctx, &body, err);
    if (r < 0)
        return r;
    static const char *const ctype[] = {"Content-Type: application/json"};
    struct curl_slist *hdrs = e2b_sandbox_headers(sb, E2B_JUPYTER_PORT, ctype, ARRAY_SIZE(ctype));
    if (!hdrs)
        return eb_error_set(err, -ENOMEM, "out of memory");
    CURLM *m = curl_multi_init();
    st->h = curl_easy_init();
    if (!m || !st->h) {
        curl_slist_free_all(hdrs);
        if (m)
            curl_multi_cleanup(m);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    /* The transfer's own timeout is a backstop a second past the deadline: the deadline
     * itself is enforced below, where it is told apart from a failure. */
    uint64_t now = eb_now_ns();
    long left_ms = deadline_ns > now ? (long)((deadline_ns - now) / 1000000) : 0;
    e2b_base_options(st->h, url, left_ms + 1000);
    curl_easy_setopt(st->h, CURLOPT_POST, 1L);
    curl_easy_setopt(st->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(st->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(st->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(st->h, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(st->h, CURLOPT_WRITEDATA, st);
    curl_multi_add_handle(m, st->h);
    int cancel_fd = eb_cancel_fd(run->req->cancel);
    o->cr = CURLE_OK;
    for (;;) {
        int running = 0;
        curl_multi_perform(m, &running);
        int left;
        CURLMsg *msg;
        bool done = false;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE) {
                o->cr = msg->data.result;
                done = true;
            }
        if (done || !running)
            break;
        now = eb_now_ns();
        if (now >= deadline_ns) {
            o->timed_out = true;
            break;
        }
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        int ms = (int)((deadline_ns - now) / 1000000) + 1;
        int fired = 0;
        curl_multi_poll(m, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                        ms > 1000 ? 1000 : ms, &fired);
        if (cancel_fd >= 0 && extra.revents) {
            o->cancelled = true;
            break;
        }
    }
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &st->status);
    curl_multi_remove_handle(m, st->h);
    curl_multi_cleanup(m);
    curl_easy_cleanup(st->h);
    st->h = NULL;
    curl_slist_free_all(hdrs);
    return 0;
}
