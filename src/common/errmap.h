/* SPDX-License-Identifier: MIT */
/* errmap.h - the one mapping from a library error (its code, kind and field, never its message)
 * to what each surface answers: serve's HTTP status and JSON error code, MCP's treatment, the
 * CLI's exit status, and whether a held session was lost (MCP and repl then start a new one).
 * The table is docs/error-handling.md's; every surface takes its decision from here. */
#ifndef EBCLI_ERRMAP_H
#define EBCLI_ERRMAP_H

#include <stdbool.h>

#include "execbox/execbox.h"

/* What an error is, for every surface alike. */
enum errmap_class {
    ERRMAP_BAD_REQUEST = 0, /* the caller's input is wrong (a field, a path, a choice) */
    ERRMAP_NOT_FOUND,       /* the file named does not exist */
    ERRMAP_EXPIRED,         /* the session expired (idle or lifetime): it is lost */
    ERRMAP_ENDED,           /* the session has ended: it is lost */
    ERRMAP_BUSY,            /* a cell is already running in the session */
    ERRMAP_CONFLICT,        /* the target is in a state that forbids it (a non-empty dir) */
    ERRMAP_TOO_MANY,        /* too many sessions, or a full queue: retry later */
    ERRMAP_QUOTA,           /* a tenant's quota is used up */
    ERRMAP_TOO_LARGE,       /* over a size limit */
    ERRMAP_NO_SPACE,        /* the host or the session's workspace is full */
    ERRMAP_UNSUPPORTED,     /* this server (backend, build) cannot do it at all */
    ERRMAP_UNAVAILABLE,     /* out of memory, or the server is shutting down: retry later */
    ERRMAP_INTERNAL,        /* anything else: a bug or an unexpected failure */
    ERRMAP__COUNT,
};

/* Where the error came from: the same errno means different things to a one-off run (the
 * request is at fault for all but memory), a call on a session (file_not_found, expired...),
 * and a surface's own queue (full, or shutting down). */
enum errmap_scope {
    ERRMAP_SCOPE_RUN = 0, /* execbox_executor_run */
    ERRMAP_SCOPE_SESSION, /* execbox_session_* (new, run, files) and the session registry */
    ERRMAP_SCOPE_QUEUE,   /* a surface's job queue (src/common/runner.c): -EAGAIN, -EBUSY (one
                           * serial's waiting calls), -ESHUTDOWN */
    ERRMAP_SCOPE_REQUEST, /* reading a request's body or arguments (a policy, a session's) */
};

/* How MCP answers a tools/call the library refused. */
enum errmap_mcp {
    ERRMAP_MCP_TOOL_ERROR = 0, /* a tool result with isError, the message for the model */
    ERRMAP_MCP_RPC_BUSY,       /* a JSON-RPC error JRPC_SERVER_BUSY (-32000) */
};

/* The answer to one error, for every surface. Strings are static. */
struct errmap_answer {
    enum errmap_class cls;
    int http_status;       /* serve's status */
    const char *http_code; /* serve's JSON "error" code, e.g. "bad_request" */
    /* serve's message: NULL means the error's own message; else this fixed text */
    const char *http_msg;
    /* serve's "field": NULL means the error's own field (none when it has none), "" means
     * none, else this name */
    const char *http_field;
    enum errmap_mcp mcp; /* MCP's treatment */
    int exit_code;       /* the CLI's exit status (EXIT_EXECBOX for every API error) */
    bool session_lost;   /* MCP and repl: the held session is gone; start a new one */
    bool retry;          /* serve: worth a Retry-After */
};

/* The answer to error code (negative errno) with e (may be NULL: no kind, no field) in scope.
 * Never NULL; an unknown code is ERRMAP_INTERNAL. */
const struct errmap_answer *errmap_answer(enum errmap_scope scope, int code,
                                          const struct execbox_error *e);

/* The class's name as docs/error-handling.md writes it ("bad_request", "not_found", ...). */
const char *errmap_class_name(enum errmap_class c);

/* True when code from a session call means the session is lost (expired or ended): the one
 * condition on which MCP and repl start a new session and run the cell again. */
bool errmap_session_lost(int code);

/* serve's message and field for an answer a of error e: the fixed ones, or e's. *ret_field is
 * NULL when no field is named. */
void errmap_http_text(const struct errmap_answer *a, const struct execbox_error *e,
                      const char **ret_msg, const char **ret_field);

#endif
