/* SPDX-License-Identifier: MIT */
/* tools.c - the tools of `execbox mcp`: their definitions, and tools/call from its arguments to
 * its reply: validated and queued on the main thread, run by the runner on a worker. */
#include "internal.h"

#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/surface.h"

static void mcp_job_free(struct job *j)
{
    if (!j)
        return;
    json_decref(j->id);
    free(j->code);
    free(j->language);
    json_decref(j->result);
    runner_job_release(&j->rj);
    free(j);
}

static bool id_equal(const void *a, const void *b)
{
    return json_equal((json_t *)a, (json_t *)b);
}

/* The runner's run(): one call, on a worker thread. */
static bool mcp_run(struct runner_job *rj, void *ud)
{
    struct server *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    char idt[64];
    mcp_id_text(j->id, idt, sizeof(idt));
    if (j->kind != TOOL_RUN) {
        bool go = mcp_session_wait_turn(s, j);
        if (go && j->kind == TOOL_RESET) {
            j->result = mcp_session_reset(s);
        } else if (go) {
            struct execbox_request creq = {
                .code = j->code,
                .code_len = j->code_len,
                .policy = &j->policy,
                .cancel = j->rj.cancel,
                .inline_files_max = s->inline_max,
            };
            if (s->verbose)
                mcp_log("call %s: running a cell of %zu bytes", idt, j->code_len);
            j->result = mcp_session_cell(s, j, &creq);
        } else {
            /* Cancelled while it waited (then not answered), or the server is stopping. */
            j->result = mcp_tool_error("the server is stopping; the call was not run");
        }
        mcp_session_dequeue(s, j);
        return go;
    }
    struct execbox_request req = {
        .language = j->language,
        .code = j->code,
        .code_len = j->code_len,
        .policy = &j->policy,
        .cancel = j->rj.cancel,
        .inline_files_max = s->inline_max,
    };
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    if (s->verbose)
        mcp_log("call %s: running %zu bytes of %s", idt, j->code_len,
                j->language ? j->language : "python");
    int r = execbox_executor_run(s->ex, &req, &res, &err);
    if (r < 0) {
        j->result = mcp_api_error(ERRMAP_SCOPE_RUN, r, &err, "run the code");
    } else {
        j->result = mcp_render_result(res, j->policy.timeout, MCP_IMAGES_BUDGET);
        if (s->verbose)
            mcp_log("call %s: exit_code %d in %.3f s", idt, res->exit_code, res->execution_time);
        execbox_result_free(res);
    }
    return true;
}

/* The runner's done(): the id is free again by now; answers the call, unless it was
 * cancelled (MCP: the receiver of a cancellation should not answer the cancelled request). */
static void mcp_done(struct runner_job *rj, enum runner_end end, void *ud)
{
    struct server *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    if (end == RUNNER_DROPPED && j->kind != TOOL_RUN)
        mcp_session_dequeue(s, j); /* it never took its turn */
    if (end != RUNNER_RAN) {
        if (s->verbose && end == RUNNER_CANCELLED) {
            char idt[64];
            mcp_id_text(j->id, idt, sizeof(idt));
            mcp_log("call %s: cancelled, not answered", idt);
        }
        if (j->batch)
            mcp_batch_put(s, j->batch, NULL);
    } else {
        json_t *m = j->result ? jrpc_result_new(j->id, j->result)
                              : jrpc_error_new(j->id, JRPC_INTERNAL_ERROR,
                                               "out of memory rendering the result", NULL);
        j->result = NULL; /* stolen by the reply */
        mcp_reply(s, j->batch, m);
    }
    mcp_job_free(j);
}

const struct runner_ops mcp_runner_ops = {.run = mcp_run, .done = mcp_done, .key_equal = id_equal};

json_t *mcp_tools_list(struct server *s)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < s->n_tools; i++)
        json_array_append(list, s->tools[i].def);
    return list ? json_pack("{s:o}", "tools", list) : NULL;
}

static const struct tool *mcp_tool_find(struct server *s, const char *name)
{
    for (size_t i = 0; i < s->n_tools; i++)
        if (strcmp(s->tools[i].name, name) == 0)
            return &s->tools[i];
    return NULL;
}

/* Checks a call's arguments against the tool's inputSchema and fills the job. 0, or -1 with
 * the reason in msg. */
static int parse_arguments(const struct tool *t, json_t *args, struct job *j, char *msg, size_t n)
{
    const char *key;
    json_t *v;
    if (t->kind == TOOL_RESET) {
        json_object_foreach (args, key, v) {
            snprintf(msg, n, "unknown argument '%.60s' (reset_session takes none)", key);
            return -1;
        }
        return 0;
    }
    json_object_foreach (args, key, v) {
        if (strcmp(key, "code") != 0 && strcmp(key, "timeout") != 0 &&
            !(t->multi && strcmp(key, "language") == 0)) {
            snprintf(msg, n, "unknown argument '%.60s' (%s)", key,
                     t->multi ? "code, language, timeout" : "code, timeout");
            return -1;
        }
    }
    json_t *code = json_object_get(args, "code");
    if (!json_is_string(code)) {
        snprintf(msg, n, "argument 'code' is required and must be a string");
        return -1;
    }
    j->code_len = json_string_length(code);
    if (j->code_len > EXECBOX_CODE_MAX) {
        snprintf(msg, n, "argument 'code' is %zu bytes; the limit is %u", j->code_len,
                 EXECBOX_CODE_MAX);
        return -1;
    }
    j->code = malloc(j->code_len + 1);
    if (!j->code) {
        snprintf(msg, n, "out of memory");
        return -1;
    }
    memcpy(j->code, json_string_value(code), j->code_len + 1);
    if (t->multi) {
        json_t *lang = json_object_get(args, "language");
        bool ok = false;
        for (size_t i = 0; json_is_string(lang) && i < json_array_size(t->langs); i++)
            ok |= json_equal(lang, json_array_get(t->langs, i));
        if (!ok) {
            char *allowed = json_dumps(t->langs, JSON_COMPACT);
            snprintf(msg, n, "argument 'language' is required and must be one of %s",
                     allowed ? allowed : "the listed languages");
            free(allowed);
            return -1;
        }
        j->language = strdup(json_string_value(lang));
        if (!j->language) {
            snprintf(msg, n, "out of memory");
            return -1;
        }
    }
    json_t *to = json_object_get(args, "timeout");
    if (to) {
        double secs = json_number_value(to);
        if (!json_is_number(to) || secs < 1 || secs != floor(secs) || !isfinite(secs)) {
            snprintf(msg, n, "argument 'timeout' must be a whole number of seconds >= 1");
            return -1;
        }
        j->policy.timeout = secs;
    }
    return 0;
}

/* tools/call: validates and queues the call, whose reply then comes from a worker (NULL), or
 * returns the answer to send now (an error). Called from the main thread; b (if any) is held
 * once for this request. */
json_t *mcp_tools_call(struct server *s, json_t *id, json_t *params, struct batch *b)
{
    char msg[512];
    if (!json_is_object(params))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS,
                              "tools/call: params must be an object with name and arguments", NULL);
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, "tools/call: params.name must be a string",
                              NULL);
    const struct tool *t = mcp_tool_find(s, json_string_value(name));
    if (!t) {
        snprintf(msg, sizeof(msg), "tools/call: unknown tool '%.80s'", json_string_value(name));
        return jrpc_error_new(id, JRPC_INVALID_PARAMS, msg, NULL);
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args))
        return jrpc_error_new(id, JRPC_INVALID_PARAMS,
                              "tools/call: params.arguments must be an object", NULL);

    struct job *j = calloc(1, sizeof(*j));
    if (!j || runner_job_init(&j->rj, NULL) < 0 || !(j->id = json_deep_copy(id))) {
        mcp_job_free(j);
        return jrpc_error_new(id, JRPC_INTERNAL_ERROR, "out of memory", NULL);
    }
    j->policy = s->policy;
    j->kind = t->kind;
    json_t *empty = json_object();
    char why[400];
    int r = parse_arguments(t, args ? args : empty, j, why, sizeof(why));
    json_decref(empty);
    if (r < 0) {
        mcp_job_free(j);
        snprintf(msg, sizeof(msg), "%s: %s", t->name, why);
        /* 2025-11-25 made input validation errors tool execution errors, so the model sees
         * them and can fix its call; earlier versions list them as -32602. */
        if (mcp_version_before(s, "2025-11-25"))
            return jrpc_error_new(id, JRPC_INVALID_PARAMS, msg, NULL);
        return jrpc_result_new(id, mcp_tool_error(msg));
    }
    struct execbox_error err = {0};
    if (execbox_policy_check_within(&j->policy, &s->policy, &err) < 0) {
        /* A call sets only its timeout, but name whatever field the library says is over. */
        snprintf(msg, sizeof(msg), "%s: %s; call again with a smaller %s or none", t->name, err.msg,
                 err.field[0] ? err.field : "timeout");
        mcp_job_free(j);
        return jrpc_result_new(id, mcp_tool_error(msg));
    }

    j->batch = b;
    j->rj.key = j->id;
    j->rj.cost = j->code_len;
    if (j->kind != TOOL_RUN)
        mcp_session_enqueue(s, j);
    int r2 = runner_submit(s->runner, &j->rj);
    if (r2 == 0)
        return NULL; /* the reply comes from mcp_done() */
    if (j->kind != TOOL_RUN)
        mcp_session_dequeue(s, j);
    mcp_job_free(j);
    if (r2 == -EEXIST) /* JSON-RPC's own rule, not a library error */
        return jrpc_error_new(id, JRPC_INVALID_REQUEST,
                              "invalid request: the id is in use by a call in progress", NULL);
    /* Full or stopping: the one table (src/common/errmap.c) makes every queue refusal a
     * JSON-RPC "server busy" (unit.errmap holds it to that). */
    return jrpc_error_new(id, JRPC_SERVER_BUSY,
                          "server busy: too many calls in progress; retry later", NULL);
}

/* Adds a tool by its definition (stolen). */
static int tool_add_def(struct server *s, json_t *def, enum tool_kind kind, bool multi)
{
    const char *name = json_string_value(json_object_get(def, "name"));
    if (!name) {
        json_decref(def);
        fprintf(stderr, "execbox mcp: the library's tool schema has no name\n");
        return -1;
    }
    if (mcp_tool_find(s, name)) {
        json_decref(def);
        fprintf(stderr, "execbox mcp: two tools named '%s'\n", name);
        return -1;
    }
    struct tool *t = &s->tools[s->n_tools++];
    t->def = def;
    t->name = strdup(name);
    t->kind = kind;
    t->multi = multi;
    t->langs = json_incref(json_object_get(
        json_object_get(json_object_get(json_object_get(def, "inputSchema"), "properties"),
                        "language"),
        "enum"));
    return t->name ? 0 : -1;
}

static int mcp_tool_add(struct server *s, enum execbox_schema_format fmt,
                        const struct execbox_tool_options *o, enum tool_kind kind)
{
    char *text = NULL;
    struct execbox_error err = {0};
    if (execbox_tool_schema(fmt, o, &text, &err) < 0) {
        cli_error("mcp: tool schema", &err);
        return -1;
    }
    json_t *def = json_loads(text, 0, NULL);
    execbox_free(text);
    return tool_add_def(s, def, kind, o->languages != NULL);
}

/* --stateful: reset_session, which ends the session of the cell tool named cell. */
static int mcp_tool_add_reset(struct server *s, const char *cell)
{
    char desc[512];
    snprintf(desc, sizeof(desc),
             "End the Python session of %s and start over: every variable, import and "
             "definition from earlier calls is forgotten, and files in /workspace are removed. "
             "The next %s call starts in a fresh session. Use it when the state is broken or "
             "a task is done.",
             cell, cell);
    json_t *def = json_pack(
        "{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:s, s:b, s:b, s:b, s:b}}", "name", "reset_session",
        "title", "Reset the Python session", "description", desc, "inputSchema", "type", "object",
        "properties", "additionalProperties", 0, "annotations", "title", "Reset the Python session",
        "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1, "openWorldHint", 0);
    return def ? tool_add_def(s, def, TOOL_RESET, false) : -1;
}

int mcp_tools_setup(struct server *s, const struct cli_sandbox *sb, const struct mcp_options *o)
{
    /* The tools: execute_python unless --languages leaves Python out, and execute_code with a
     * language enum when --languages is given. --tool-name renames the first. */
    bool python = !o->have_langs;
    for (size_t i = 0; o->have_langs && o->langs[i]; i++)
        python |= strcmp(o->langs[i], "python") == 0;
    if (s->stateful && !python) {
        fprintf(stderr, "execbox mcp: --stateful: sessions are Python only, and --languages "
                        "leaves Python out\n");
        return -1;
    }
    struct execbox_tool_options to = {
        .policy = &s->policy, .max_timeout = s->policy.timeout, .backend = sb->exec.backend};
    if (python) {
        /* With --stateful, this tool's calls are cells of the session and reset_session
         * follows it; execute_code stays one fresh sandbox per call. */
        to.name = o->tool_name ? o->tool_name : "execute_python";
        to.stateful = s->stateful;
        if (mcp_tool_add(s, EXECBOX_SCHEMA_MCP, &to, s->stateful ? TOOL_CELL : TOOL_RUN) < 0)
            return -1;
        to.stateful = false;
        if (s->stateful && mcp_tool_add_reset(s, s->tools[0].name) < 0)
            return -1;
    }
    if (o->have_langs) {
        to.name = python || !o->tool_name ? "execute_code" : o->tool_name;
        to.languages = o->langs;
        if (mcp_tool_add(s, EXECBOX_SCHEMA_MCP, &to, TOOL_RUN) < 0)
            return -1;
    }
    return 0;
}
