/* SPDX-License-Identifier: MIT */
/* dispatch.c - the JSON-RPC side of `execbox mcp`: frames in (one message or a batch), the
 * methods answered on the main thread (initialize, ping, tools/list, notifications/cancelled),
 * and every frame out (one writer at a time). */
#include "internal.h"

#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"

/* The protocol versions we speak, newest first: initialize echoes the client's when it is
 * one of these, else answers the newest. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                "2024-11-05"};

__attribute__((format(printf, 1, 2))) void mcp_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "execbox mcp: %s\n", line);
}

/* A short printable rendering of a request id for logs. */
void mcp_id_text(const json_t *id, char *out, size_t n)
{
    if (json_is_integer(id))
        snprintf(out, n, "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(out, n, "'%.40s'", json_string_value(id));
    else
        snprintf(out, n, "null");
}

/* Writes one message as one line. Steals m. A failed write (the client went away) stops the
 * server: there is nobody left to answer. */
static void mcp_send_frame(struct server *s, json_t *m)
{
    if (!m) {
        mcp_log("out of memory building a reply");
        return;
    }
    size_t len = 0;
    char *line = jrpc_frame_dump(m, &len);
    json_decref(m);
    if (!line) {
        mcp_log("out of memory writing a reply");
        return;
    }
    bool broke = false;
    pthread_mutex_lock(&s->write_lock);
    if (!s->out_broken) {
        int r = cli_write_all(s->out_fd, line, len);
        if (r < 0) {
            mcp_log("writing to stdout: %s; stopping", execbox_strerror(r));
            s->out_broken = broke = true;
        }
    }
    pthread_mutex_unlock(&s->write_lock);
    free(line);
    if (broke)
        mcp_request_stop(s);
}

/* Counts one more outstanding request in a batch. Caller holds s->lock. */
static void batch_hold(struct batch *b)
{
    if (b)
        b->pending++;
}

/* Answers one request of a batch (m may be NULL: no answer, e.g. cancelled); sends the
 * batch's array when it was the last. Steals m. Must be called without s->lock. */
void mcp_batch_put(struct server *s, struct batch *b, json_t *m)
{
    pthread_mutex_lock(&s->lock);
    if (m && json_array_append_new(b->replies, m) < 0)
        mcp_log("out of memory building a batch reply");
    bool done = --b->pending == 0;
    pthread_mutex_unlock(&s->lock);
    if (!done)
        return;
    if (json_array_size(b->replies) > 0)
        mcp_send_frame(s, b->replies); /* a batch of notifications only gets no answer */
    else
        json_decref(b->replies);
    free(b);
}

/* Sends a reply to a request, directly or as part of its batch. Steals m. */
void mcp_reply(struct server *s, struct batch *b, json_t *m)
{
    if (b)
        mcp_batch_put(s, b, m);
    else
        mcp_send_frame(s, m);
}

/* True when the negotiated version is older than v (both "YYYY-MM-DD"; "" is the newest). */
bool mcp_version_before(struct server *s, const char *v)
{
    pthread_mutex_lock(&s->lock);
    bool before = s->version[0] && strcmp(s->version, v) < 0;
    pthread_mutex_unlock(&s->lock);
    return before;
}

static json_t *do_initialize(struct server *s, json_t *params, int *code, char *msg, size_t n)
{
    json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_object(params) || !json_is_string(pv)) {
        *code = JRPC_INVALID_PARAMS;
        snprintf(msg, n, "initialize: params.protocolVersion must be a string");
        return NULL;
    }
    const char *chosen = protocol_versions[0];
    for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++)
        if (strcmp(json_string_value(pv), protocol_versions[i]) == 0)
            chosen = protocol_versions[i];
    pthread_mutex_lock(&s->lock);
    snprintf(s->version, sizeof(s->version), "%s", chosen);
    pthread_mutex_unlock(&s->lock);
    const char *client =
        json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name"));
    mcp_log("client '%.60s' connected, protocol %s (asked for '%.20s')", client ? client : "?",
            chosen, json_string_value(pv));
    char net[1024], instructions[1536];
    execbox_policy_network_text(&s->policy, net, sizeof(net));
    if (s->stateful)
        snprintf(instructions, sizeof(instructions),
                 "Runs Python in an isolated sandbox (backend '%s') that keeps its state between "
                 "calls of %s, like a notebook: variables, imports and definitions from earlier "
                 "calls stay defined. A call that fails is rolled back: the variables are as "
                 "before it. %s starts over with a fresh state.%s %s Limits per call: %g s wall "
                 "clock (a call may ask for less).",
                 execbox_executor_backend(s->ex), s->tools[0].name, s->tools[1].name,
                 s->n_tools > 2 ? " execute_code calls start clean every time." : "", net,
                 s->policy.timeout);
    else
        snprintf(instructions, sizeof(instructions),
                 "Runs code in a fresh, isolated sandbox (backend '%s') and returns its stdout, "
                 "stderr and exit code. Every call starts clean: nothing persists between calls. "
                 "%s Limits per call: %g s wall clock (a call may ask for less).",
                 execbox_executor_backend(s->ex), net, s->policy.timeout);
    return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", chosen,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "execbox",
                     "title", "execbox code sandbox", "version", execbox_version(), "instructions",
                     instructions);
}

static void do_cancelled(struct server *s, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    if (!json_is_string(rid) && !json_is_integer(rid))
        return; /* MCP: an unknown or invalid requestId is ignored */
    const char *reason = json_string_value(json_object_get(params, "reason"));
    char idt[64];
    mcp_id_text(rid, idt, sizeof(idt));
    /* A running call is killed and mcp_done() stays silent; a queued one is dropped; a session
     * call still waiting for its turn is skipped when the turn comes. */
    enum runner_cancelled rc = runner_cancel_key(s->runner, rid);
    if (rc == RUNNER_FIRED && s->stateful)
        mcp_session_skip(s, rid);
    if (rc != RUNNER_NOT_LIVE)
        mcp_log("call %s cancelled by the client%s%.100s", idt, reason ? ": " : "",
                reason ? reason : "");
}

static json_t *do_request(struct server *s, const struct jrpc_msg *msg, struct batch *b)
{
    json_t *id = msg->id;
    char text[200];
    if (msg->params && !json_is_object(msg->params)) {
        snprintf(text, sizeof(text), "%.80s: params must be an object", msg->method);
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, text, NULL);
    }
    if (strcmp(msg->method, "tools/call") == 0)
        return mcp_tools_call(s, id, msg->params, b);
    if (strcmp(msg->method, "ping") == 0)
        return jrpc_result_new(id, json_object());
    if (strcmp(msg->method, "tools/list") == 0)
        return jrpc_result_new(id, mcp_tools_list(s));
    if (strcmp(msg->method, "initialize") == 0) {
        if (b)
            return jrpc_error_new(id, JRPC_INVALID_REQUEST,
                                  "invalid request: initialize must not be part of a batch", NULL);
        int code = 0;
        json_t *r = do_initialize(s, msg->params, &code, text, sizeof(text));
        return r ? jrpc_result_new(id, r) : jrpc_error_new(id, code, text, NULL);
    }
    snprintf(text, sizeof(text), "method '%.80s' not found", msg->method);
    return jrpc_error_new(id, JRPC_METHOD_NOT_FOUND, text, NULL);
}

/* One message (a whole frame, or one element of a batch). */
static void handle_message(struct server *s, json_t *m, struct batch *b)
{
    struct jrpc_msg msg;
    json_t *answer = NULL;
    switch (jrpc_classify(m, &msg)) {
    case JRPC_KIND_INVALID:
        answer = jrpc_error_new(msg.id, msg.error_code, msg.error_msg, NULL);
        break;
    case JRPC_KIND_RESPONSE:
        /* We send no requests, so there is nothing to match it to. */
        if (s->verbose)
            mcp_log("ignoring a response from the client");
        return;
    case JRPC_KIND_NOTIFICATION:
        if (strcmp(msg.method, "notifications/cancelled") == 0)
            do_cancelled(s, msg.params);
        else if (s->verbose)
            mcp_log("notification '%.60s'", msg.method);
        return;
    case JRPC_KIND_REQUEST:
        if (b) {
            /* Held until answered: by mcp_reply() below, or by the worker for a queued call. */
            pthread_mutex_lock(&s->lock);
            batch_hold(b);
            pthread_mutex_unlock(&s->lock);
        }
        answer = do_request(s, &msg, b);
        if (!answer)
            return; /* queued */
        break;
    }
    if (b && msg.kind == JRPC_KIND_INVALID) {
        pthread_mutex_lock(&s->lock);
        batch_hold(b);
        pthread_mutex_unlock(&s->lock);
    }
    mcp_reply(s, b, answer);
}

/* A JSON-RPC batch. MCP 2025-03-26 required servers to accept them; 2025-06-18 removed
 * batching, so for newer versions (and before initialize) the whole array is refused. */
static void handle_batch(struct server *s, json_t *arr)
{
    pthread_mutex_lock(&s->lock);
    char version[16];
    memcpy(version, s->version, sizeof(version));
    pthread_mutex_unlock(&s->lock);
    char text[240];
    if (json_array_size(arr) == 0) {
        mcp_send_frame(
            s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, "invalid request: empty batch", NULL));
        return;
    }
    if (!version[0] || strcmp(version, "2025-06-18") >= 0) {
        snprintf(text, sizeof(text),
                 "invalid request: JSON-RPC batches are not supported in protocol version %s "
                 "(MCP removed batching in 2025-06-18); send one message per line",
                 version[0] ? version : "negotiation (initialize first)");
        mcp_send_frame(s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, text, NULL));
        return;
    }
    struct batch *b = calloc(1, sizeof(*b));
    if (!b || !(b->replies = json_array())) {
        free(b);
        mcp_send_frame(s, jrpc_error_new(NULL, JRPC_INTERNAL_ERROR, "out of memory", NULL));
        return;
    }
    b->pending = 1; /* our own hold while dispatching, so that no worker sends it early */
    size_t i;
    json_t *m;
    json_array_foreach (arr, i, m)
        handle_message(s, m, b);
    mcp_batch_put(s, b, NULL);
}

int mcp_on_frame(void *ud, const char *line, size_t len, size_t dropped)
{
    struct server *s = ud;
    char text[256];
    if (!line) {
        snprintf(text, sizeof(text),
                 "invalid request: frame of %zu bytes exceeds the limit of %zu bytes; it was "
                 "discarded",
                 dropped, s->frame_limit);
        mcp_log("%s", text);
        mcp_send_frame(s, jrpc_error_new(NULL, JRPC_INVALID_REQUEST, text, NULL));
        return 0;
    }
    json_t *root = NULL;
    if (jrpc_parse(line, len, &root, text, sizeof(text)) < 0) {
        if (s->verbose)
            mcp_log("%s", text);
        mcp_send_frame(s, jrpc_error_new(NULL, JRPC_PARSE_ERROR, text, NULL));
        return 0;
    }
    if (json_is_array(root))
        handle_batch(s, root);
    else
        handle_message(s, root, NULL);
    json_decref(root);
    return 0;
}
