/* SPDX-License-Identifier: MIT */
/* errmap.c - the one table from a library error to each surface's answer (errmap.h); its rows
 * are docs/error-handling.md's table. */
#include "errmap.h"

#include <errno.h>
#include <stddef.h>

#include "surface.h"

/* One row: in scope, code (0: any code not matched above it), and for a field: 1 only when the
 * error names one, 0 only when it names none, -1 either way. */
struct row {
    enum errmap_scope scope;
    int code;
    int with_field;
    struct errmap_answer a;
};

#define TOOL ERRMAP_MCP_TOOL_ERROR
#define BUSY_RPC ERRMAP_MCP_RPC_BUSY
#define X EXIT_EXECBOX
#define ANY (-1)
/* serve's "field": the error's own, none, or a fixed name. */
#define OWN NULL
#define NONE ""

static const struct row rows[] = {
    /* A one-off run: the request is at fault unless memory ran out (docs/api.md). */
    {ERRMAP_SCOPE_RUN,
     -ENOMEM,
     ANY,
     {ERRMAP_UNAVAILABLE, 503, "unavailable", NULL, NONE, TOOL, X, false, false}},
    {ERRMAP_SCOPE_RUN,
     0,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},

    /* A call on a session, or the session registry. */
    {ERRMAP_SCOPE_SESSION,
     -EINVAL,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -EPERM,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -EISDIR,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOTDIR,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENAMETOOLONG,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOENT,
     ANY,
     {ERRMAP_NOT_FOUND, 404, "file_not_found", NULL, "path", TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ETIMEDOUT,
     ANY,
     {ERRMAP_EXPIRED, 404, "session_expired", "the session expired (idle or lifetime)", NONE, TOOL,
      X, true, false}},
    {ERRMAP_SCOPE_SESSION,
     -ESHUTDOWN,
     ANY,
     {ERRMAP_ENDED, 404, "session_ended", "the session has ended", NONE, TOOL, X, true, false}},
    {ERRMAP_SCOPE_SESSION,
     -EBUSY,
     ANY,
     {ERRMAP_BUSY, 409, "session_busy", "a cell is already running in this session", NONE, TOOL, X,
      false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOTEMPTY,
     ANY,
     {ERRMAP_CONFLICT, 409, "not_empty", NULL, "path", TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -EAGAIN,
     ANY,
     {ERRMAP_TOO_MANY, 429, "too_many_sessions", NULL, NONE, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -EDQUOT,
     ANY,
     {ERRMAP_QUOTA, 429, "quota_exceeded", NULL, NONE, TOOL, X, false, true}},
    {ERRMAP_SCOPE_SESSION,
     -EFBIG,
     ANY,
     {ERRMAP_TOO_LARGE, 413, "payload_too_large", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOSPC,
     ANY,
     {ERRMAP_NO_SPACE, 507, "insufficient_storage", NULL, NONE, TOOL, X, false, false}},
    /* A field at fault is the request's; without one, this server cannot have sessions. */
    {ERRMAP_SCOPE_SESSION,
     -ENOTSUP,
     1,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOTSUP,
     0,
     {ERRMAP_UNSUPPORTED, 501, "not_implemented", NULL, NONE, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     -ENOMEM,
     ANY,
     {ERRMAP_UNAVAILABLE, 503, "unavailable", "out of memory", NONE, TOOL, X, false, false}},
    {ERRMAP_SCOPE_SESSION,
     0,
     ANY,
     {ERRMAP_INTERNAL, 500, "internal", NULL, NONE, TOOL, X, false, false}},

    /* A surface's own queue of jobs. */
    {ERRMAP_SCOPE_QUEUE,
     -EBUSY,
     ANY,
     {ERRMAP_TOO_MANY, 429, "context_queue_full",
      "the context has the most calls waiting behind its running one", NONE, BUSY_RPC, X, false,
      true}},
    {ERRMAP_SCOPE_QUEUE,
     -EAGAIN,
     ANY,
     {ERRMAP_TOO_MANY, 429, "queue_full", "all workers are busy and the queue is full", NONE,
      BUSY_RPC, X, false, true}},
    {ERRMAP_SCOPE_QUEUE,
     0,
     ANY,
     {ERRMAP_UNAVAILABLE, 503, "draining", "the server is shutting down", NONE, BUSY_RPC, X, false,
      true}},

    /* Reading a request: its body is at fault unless memory ran out. */
    {ERRMAP_SCOPE_REQUEST,
     -ENOMEM,
     ANY,
     {ERRMAP_UNAVAILABLE, 503, "unavailable", "out of memory", NONE, TOOL, X, false, true}},
    {ERRMAP_SCOPE_REQUEST,
     0,
     ANY,
     {ERRMAP_BAD_REQUEST, 400, "bad_request", NULL, OWN, TOOL, X, false, false}},
};

static const char *const class_names[ERRMAP__COUNT] = {
    [ERRMAP_BAD_REQUEST] = "bad_request",
    [ERRMAP_NOT_FOUND] = "not_found",
    [ERRMAP_EXPIRED] = "expired",
    [ERRMAP_ENDED] = "ended",
    [ERRMAP_BUSY] = "busy",
    [ERRMAP_CONFLICT] = "conflict",
    [ERRMAP_TOO_MANY] = "too_many",
    [ERRMAP_QUOTA] = "quota",
    [ERRMAP_TOO_LARGE] = "too_large",
    [ERRMAP_NO_SPACE] = "no_space",
    [ERRMAP_UNSUPPORTED] = "unsupported",
    [ERRMAP_UNAVAILABLE] = "unavailable",
    [ERRMAP_INTERNAL] = "internal",
};

const struct errmap_answer *errmap_answer(enum errmap_scope scope, int code,
                                          const struct execbox_error *e)
{
    bool has_field = e && e->field[0];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *w = &rows[i];
        if (w->scope != scope || (w->code != 0 && w->code != code))
            continue;
        if (w->with_field >= 0 && w->with_field != (int)has_field)
            continue;
        return &w->a;
    }
    return &rows[sizeof(rows) / sizeof(rows[0]) - 1].a; /* not reached: each scope ends in 0 */
}

const char *errmap_class_name(enum errmap_class c)
{
    return c >= 0 && c < ERRMAP__COUNT && class_names[c] ? class_names[c] : "internal";
}

bool errmap_session_lost(int code)
{
    return code < 0 && errmap_answer(ERRMAP_SCOPE_SESSION, code, NULL)->session_lost;
}

void errmap_http_text(const struct errmap_answer *a, const struct execbox_error *e,
                      const char **ret_msg, const char **ret_field)
{
    const char *msg = a->http_msg;
    if (!msg)
        msg = e && e->msg[0] ? e->msg : a->cls == ERRMAP_INTERNAL ? "internal error" : "";
    const char *field = a->http_field;
    if (!field)
        field = e && e->field[0] ? e->field : NULL;
    else if (!field[0])
        field = NULL;
    *ret_msg = msg;
    *ret_field = field;
}
