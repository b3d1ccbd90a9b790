/* SPDX-License-Identifier: MIT */
/*
 * e2b.h - private to the e2b backend (e2b.c, e2b_api.c, e2b_exec.c): its limits, the executor's
 * configuration, the client of E2B's REST API and of the sandbox's envd, and the code
 * interpreter's execute stream.
 */
#ifndef EXECBOX_BACKENDS_E2B_H
#define EXECBOX_BACKENDS_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/curl_load.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/limits.h"

/* Limits of this backend. */
#define E2B_DEFAULT_DOMAIN "e2b.app"
#define E2B_DEFAULT_TEMPLATE "code-interpreter-v1"
#define E2B_JUPYTER_PORT 49999               /* the code interpreter's port inside the sandbox */
#define E2B_CONNECT_MS 5000L                 /* connecting to the API or the sandbox */
#define E2B_CALL_MS 30000L                   /* create and delete */
#define E2B_LIFETIME_MARGIN 30               /* the sandbox outlives the run's timeout by this */
#define E2B_LIFETIME_MAX 86400               /* E2B's longest sandbox lifetime (Pro tier) */
#define E2B_BODY_MAX (1U << 20)              /* largest JSON reply to create or delete */
#define E2B_LINE_MAX (8U << 20)              /* largest single NDJSON line of the stream */
#define E2B_FLOOD_FACTOR 16                  /* stream bytes past 16 x output_limit ... */
#define E2B_FLOOD_MIN (64ULL << 20)          /* ... and past 64 MiB in all end the run */
#define E2B_CREATE_TRIES 3                   /* a 429 on create is retried this often in all */
#define E2B_RETRY_AFTER_MAX 5.0              /* longest Retry-After we honour, seconds */
#define E2B_KEY_MAX 256                      /* an API key longer than this is not one */
#define E2B_ENVD_PORT 49983                  /* envd, the sandbox's own API (files, processes) */
#define E2B_WORKSPACE "/home/user/workspace" /* the run's working directory, made per run */
#define E2B_ENVD_USER "Authorization: Basic dXNlcjo=" /* envd acts as "user" (base64 "user:") */
#define E2B_LIST_MAX (8U << 20)                       /* largest ListDir reply */
#define E2B_FILES_MS 30000L                           /* listing and reading the images, in all */
#define E2B_INLINE_TOTAL_MAX (32U << 20)              /* image bytes read inline per run, in all */

/* One executor's configuration: read-only after open(). */
struct e2b_state {
    char api[512];     /* API base URL, no trailing slash */
    char sandbox[512]; /* E2B_SANDBOX_URL, or "" to derive it per sandbox */
    char domain[256];
    char key_header[E2B_KEY_MAX + 16]; /* "X-API-Key: e2b_..." */
    char template_id[128];
};

/* ---- the E2B client (e2b_api.c) ------------------------------------------------------------- */

/* A bounded reply and its Retry-After (seconds, 0 if none). */
/* A bounded reply and its Retry-After (seconds, 0 if none). */
struct reply {
    struct eb_http_body body;
    double retry_after;
};

/* One run's sandbox, as E2B's create answered. */
struct sandbox {
    char id[128];
    char token[256];  /* envdAccessToken, "" when the sandbox is not secured */
    char domain[256]; /* the sandbox's domain, "" = the configured one */
};

/* True when s is 1..max characters of [A-Za-z0-9-_.:/]. */
bool e2b_valid_token(const char *s, size_t max);

/* Sets the options of every request on h: url, protocols, timeouts, no redirects, no signals. */
void e2b_base_options(CURL *h, const char *url, long timeout_ms);

/* Creates the run's sandbox; a 429 is retried (honouring Retry-After) up to
 * E2B_CREATE_TRIES in all. 0 with *sb, or -errno with err saying what E2B answered. */
int e2b_create_sandbox(const struct e2b_state *s, const struct execbox_policy *p,
                       struct sandbox *sb, struct execbox_error *err);

/* Deletes the sandbox; a 404 means it is gone already (its lifetime ran out). 0 or -errno. */
int e2b_delete_sandbox(const struct e2b_state *s, const struct sandbox *sb,
                       struct execbox_error *err);

/* The URL of path on one of the sandbox's ports into url. 0 or -ENAMETOOLONG. */
int e2b_sandbox_url(const struct e2b_state *s, const struct sandbox *sb, int port, const char *path,
                    char *url, size_t size, struct execbox_error *err);

/* The headers of every request to the sandbox, then the n_extra lines of extra. NULL on
 * ENOMEM. */
struct curl_slist *e2b_sandbox_headers(const struct sandbox *sb, int port, const char *const *extra,
                                       size_t n_extra);

/* A JSON body, or NULL on ENOMEM (o is consumed). */
char *e2b_dump(json_t *o);

/* Makes the run's working directory, E2B_WORKSPACE, and a code context in lang whose cwd it
 * is. 0 with ctx set, or -errno. */
int e2b_prepare(const struct e2b_state *s, const struct sandbox *sb, const char *lang, char *ctx,
                size_t size, struct execbox_error *err);

/* Lists the regular files below E2B_WORKSPACE into res->files (sorted, bounded; small images
 * read inline up to inline_max bytes each). 0 or -errno. */
int e2b_list_files(const struct e2b_state *s, const struct sandbox *sb, size_t inline_max,
                   struct execbox_result *res, struct execbox_error *err);

/* ---- the execute stream (e2b_exec.c) -------------------------------------------------------- */

/* The code interpreter's NDJSON stream of one execution, as it arrived. */
struct stream {
    const struct execbox_request *req;
    CURL *h;
    struct eb_capbuf buf[2]; /* stdout, stderr */
    char *line;              /* the line being assembled */
    size_t len, cap;
    uint64_t bytes, flood_at;
    long status;              /* the HTTP status, once the first byte arrived */
    struct eb_http_body body; /* a non-200 reply's body */
    json_t *error;            /* the "error" line, if any */
    bool flooded, ended, unexpected, bad_line, nomem;
};

/* How the execute transfer ended. */
struct exec_outcome {
    bool timed_out, cancelled;
    CURLcode cr;
};

/* Appends text to st's stdout (which 0) or stderr (1), through the request's on_output. 0 or
 * -ENOMEM. */
int e2b_stream_deliver(struct stream *st, int which, const char *text, size_t n);

/* Streams one execution of the run's code in context ctx until it ends, the deadline passes
 * or the cancel fd fires. 0 with *o, or -errno for a failure before the transfer could start. */
int e2b_execute(const struct e2b_state *s, const struct sandbox *sb, const char *ctx,
                const struct eb_run *run, uint64_t deadline_ns, struct stream *st,
                struct exec_outcome *o, struct execbox_error *err);

#endif
