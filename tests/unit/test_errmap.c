/* SPDX-License-Identifier: MIT */
/* test_errmap.c - the one error table (src/common/errmap.c): every class, the answers serve
 * gave before the table existed (status, code, message, field), MCP's treatment through
 * mcp_api_error (src/mcp/render.c), the CLI's exit status, and the session-lost condition. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/errmap.h"
#include "common/surface.h"
#include "execbox/execbox.h"
#include "mcp/mcp.h"

static struct execbox_error mkerr(int code, const char *msg, const char *field)
{
    struct execbox_error e = {.code = code};
    snprintf(e.msg, sizeof(e.msg), "%s", msg);
    snprintf(e.field, sizeof(e.field), "%s", field ? field : "");
    return e;
}

/* What serve answered for one error, as src/httpd/v1.c wrote it out by hand before. */
struct want {
    enum errmap_scope scope;
    int code;
    const char *field_in; /* the error's field, or NULL */
    enum errmap_class cls;
    int status;
    const char *http_code;
    const char *msg;   /* NULL: the error's own message ("the message") */
    const char *field; /* the field serve names, or NULL */
};

static const struct want wants[] = {
    /* a one-off run: 503 for memory, else 400 with the error's field */
    {ERRMAP_SCOPE_RUN, -ENOMEM, NULL, ERRMAP_UNAVAILABLE, 503, "unavailable", NULL, NULL},
    {ERRMAP_SCOPE_RUN, -EINVAL, "timeout", ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, "timeout"},
    {ERRMAP_SCOPE_RUN, -ENOTSUP, NULL, ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, NULL},
    {ERRMAP_SCOPE_RUN, -ENOSPC, NULL, ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, NULL},
    /* a session call */
    {ERRMAP_SCOPE_SESSION, -EINVAL, "code", ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, "code"},
    {ERRMAP_SCOPE_SESSION, -EPERM, NULL, ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -EISDIR, NULL, ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -ENOTDIR, NULL, ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -ENAMETOOLONG, "path", ERRMAP_BAD_REQUEST, 400, "bad_request", NULL,
     "path"},
    {ERRMAP_SCOPE_SESSION, -ENOENT, NULL, ERRMAP_NOT_FOUND, 404, "file_not_found", NULL, "path"},
    {ERRMAP_SCOPE_SESSION, -ETIMEDOUT, NULL, ERRMAP_EXPIRED, 404, "session_expired",
     "the session expired (idle or lifetime)", NULL},
    {ERRMAP_SCOPE_SESSION, -ESHUTDOWN, NULL, ERRMAP_ENDED, 404, "session_ended",
     "the session has ended", NULL},
    {ERRMAP_SCOPE_SESSION, -EBUSY, NULL, ERRMAP_BUSY, 409, "session_busy",
     "a cell is already running in this session", NULL},
    {ERRMAP_SCOPE_SESSION, -ENOTEMPTY, NULL, ERRMAP_CONFLICT, 409, "not_empty", NULL, "path"},
    {ERRMAP_SCOPE_SESSION, -EAGAIN, "x", ERRMAP_TOO_MANY, 429, "too_many_sessions", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -EDQUOT, NULL, ERRMAP_QUOTA, 429, "quota_exceeded", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -EFBIG, "size", ERRMAP_TOO_LARGE, 413, "payload_too_large", NULL,
     "size"},
    {ERRMAP_SCOPE_SESSION, -ENOSPC, NULL, ERRMAP_NO_SPACE, 507, "insufficient_storage", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -ENOTSUP, "language", ERRMAP_BAD_REQUEST, 400, "bad_request", NULL,
     "language"},
    {ERRMAP_SCOPE_SESSION, -ENOTSUP, NULL, ERRMAP_UNSUPPORTED, 501, "not_implemented", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -ENOMEM, NULL, ERRMAP_UNAVAILABLE, 503, "unavailable", "out of memory",
     NULL},
    {ERRMAP_SCOPE_SESSION, -EIO, NULL, ERRMAP_INTERNAL, 500, "internal", NULL, NULL},
    {ERRMAP_SCOPE_SESSION, -EXDEV, "f", ERRMAP_INTERNAL, 500, "internal", NULL, NULL},
    /* the job queue */
    {ERRMAP_SCOPE_QUEUE, -EAGAIN, NULL, ERRMAP_TOO_MANY, 429, "queue_full",
     "all workers are busy and the queue is full", NULL},
    {ERRMAP_SCOPE_QUEUE, -EBUSY, NULL, ERRMAP_TOO_MANY, 429, "context_queue_full",
     "the context has the most calls waiting behind its running one", NULL},
    {ERRMAP_SCOPE_QUEUE, -ESHUTDOWN, NULL, ERRMAP_UNAVAILABLE, 503, "draining",
     "the server is shutting down", NULL},
    /* a request's body */
    {ERRMAP_SCOPE_REQUEST, -ENOMEM, NULL, ERRMAP_UNAVAILABLE, 503, "unavailable", "out of memory",
     NULL},
    {ERRMAP_SCOPE_REQUEST, -EINVAL, "memory", ERRMAP_BAD_REQUEST, 400, "bad_request", NULL,
     "memory"},
};

static void test_serve_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
        const struct want *w = &wants[i];
        struct execbox_error e = mkerr(w->code, "the message", w->field_in);
        const struct errmap_answer *a = errmap_answer(w->scope, w->code, &e);
        const char *msg, *field;
        errmap_http_text(a, &e, &msg, &field);
        char where[64];
        snprintf(where, sizeof(where), "row %zu (code %d)", i, w->code);
        if (a->cls != w->cls || a->http_status != w->status || strcmp(a->http_code, w->http_code))
            fail_msg("%s: %s %d %s", where, errmap_class_name(a->cls), a->http_status,
                     a->http_code);
        assert_string_equal(msg, w->msg ? w->msg : "the message");
        if (w->field)
            assert_string_equal(field, w->field);
        else
            assert_null(field);
    }
}

/* Every class has a name and at least one row; every API error is the CLI's EXIT_EXECBOX. */
static void test_every_class(void **state)
{
    (void)state;
    bool seen[ERRMAP__COUNT] = {false};
    static const int codes[] = {-EINVAL, -EPERM,     -EISDIR,    -ENOTDIR, -ENAMETOOLONG,
                                -ENOENT, -ETIMEDOUT, -ESHUTDOWN, -EBUSY,   -ENOTEMPTY,
                                -EAGAIN, -EDQUOT,    -EFBIG,     -ENOSPC,  -ENOTSUP,
                                -ENOMEM, -EIO,       -EEXIST};
    for (int scope = ERRMAP_SCOPE_RUN; scope <= ERRMAP_SCOPE_REQUEST; scope++)
        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
            for (int f = 0; f < 2; f++) {
                struct execbox_error e = mkerr(codes[i], "m", f ? "timeout" : NULL);
                const struct errmap_answer *a = errmap_answer(scope, codes[i], &e);
                assert_non_null(a);
                seen[a->cls] = true;
                assert_int_equal(a->exit_code, EXIT_EXECBOX);
                assert_true(a->http_status >= 400 && a->http_status < 600);
                assert_non_null(a->http_code);
            }
    for (int c = 0; c < ERRMAP__COUNT; c++) {
        if (!seen[c])
            fail_msg("class %s has no row", errmap_class_name(c));
        assert_string_not_equal(errmap_class_name(c), "");
    }
    assert_string_equal(errmap_class_name(ERRMAP_NO_SPACE), "no_space");
    assert_string_equal(errmap_class_name(ERRMAP__COUNT), "internal");
    /* NULL error: no field, the fixed or empty message. */
    const struct errmap_answer *a = errmap_answer(ERRMAP_SCOPE_SESSION, -EIO, NULL);
    const char *msg, *field;
    errmap_http_text(a, NULL, &msg, &field);
    assert_string_equal(msg, "internal error");
    assert_null(field);
}

/* The condition on which MCP and repl start a new session: expired or ended, nothing else. */
static void test_session_lost(void **state)
{
    (void)state;
    assert_true(errmap_session_lost(-ETIMEDOUT));
    assert_true(errmap_session_lost(-ESHUTDOWN));
    static const int others[] = {0, -EINVAL, -EBUSY, -ENOMEM, -EIO, -ENOENT, -EAGAIN};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        assert_false(errmap_session_lost(others[i]));
}

static const char *tool_text(json_t *r)
{
    assert_true(json_is_true(json_object_get(r, "isError")));
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

/* MCP: a library error is a tool error with the message; a queue refusal says busy. */
static void test_mcp_answers(void **state)
{
    (void)state;
    struct execbox_error e = mkerr(-EINVAL, "bad code", "code");
    json_t *r = mcp_api_error(ERRMAP_SCOPE_RUN, -EINVAL, &e, "run the code");
    assert_string_equal(tool_text(r), "execbox could not run the code: bad code");
    json_decref(r);
    e = mkerr(-ENOTSUP, "the x backend has no sessions (the jail has)", NULL);
    r = mcp_api_error(ERRMAP_SCOPE_SESSION, -ENOTSUP, &e, "start a Python session");
    assert_string_equal(tool_text(r), "execbox could not start a Python session: the x backend "
                                      "has no sessions (the jail has)");
    json_decref(r);
    for (int code = -EAGAIN, k = 0; k < 2; k++, code = -ESHUTDOWN) {
        assert_int_equal(errmap_answer(ERRMAP_SCOPE_QUEUE, code, NULL)->mcp, ERRMAP_MCP_RPC_BUSY);
        e = mkerr(code, "full", NULL);
        r = mcp_api_error(ERRMAP_SCOPE_QUEUE, code, &e, "run the code");
        assert_string_equal(tool_text(r), "server busy: too many calls in progress; retry later");
        json_decref(r);
    }
    /* Runs and session calls are never JSON-RPC errors. */
    for (int code = -1; code > -140; code--) {
        assert_int_equal(errmap_answer(ERRMAP_SCOPE_RUN, code, NULL)->mcp, ERRMAP_MCP_TOOL_ERROR);
        assert_int_equal(errmap_answer(ERRMAP_SCOPE_SESSION, code, NULL)->mcp,
                         ERRMAP_MCP_TOOL_ERROR);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_answers),
        cmocka_unit_test(test_every_class),
        cmocka_unit_test(test_session_lost),
        cmocka_unit_test(test_mcp_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
