/* SPDX-License-Identifier: MIT */
/* provider.c - the Anthropic Messages API and the OpenAI Chat Completions API: request bodies,
 * headers, parsing replies into tool calls, and tool results in each one's own format. */
#include "provider.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANTHROPIC_VERSION "2023-06-01"

void agent_reply_clear(struct agent_reply *r)
{
    json_decref(r->message);
    free(r->text);
    for (size_t i = 0; i < r->n_calls; i++) {
        free(r->calls[i].id);
        free(r->calls[i].name);
        free(r->calls[i].code);
        free(r->calls[i].bad_args);
    }
    free(r->calls);
    memset(r, 0, sizeof(*r));
}

const char *agent_api_error_message(json_t *resp)
{
    json_t *e = json_object_get(resp, "error");
    if (json_is_string(e))
        return json_string_value(e);
    const char *m = json_string_value(json_object_get(e, "message"));
    if (m)
        return m;
    return json_string_value(json_object_get(resp, "message"));
}

/* Appends s to a growing text (NULL-safe). 0 or -ENOMEM. */
static int text_append(char **text, const char *s)
{
    size_t a = *text ? strlen(*text) : 0, b = strlen(s);
    char *n = realloc(*text, a + b + 1);
    if (!n)
        return -ENOMEM;
    memcpy(n + a, s, b + 1);
    *text = n;
    return 0;
}

/* Fills code/timeout/bad_args of one call from its input object. */
static int call_from_input(struct agent_call *c, json_t *input)
{
    const char *why = NULL;
    json_t *code = json_object_get(input, "code");
    json_t *timeout = json_object_get(input, "timeout");
    if (!json_is_object(input))
        why = "the arguments are not a JSON object";
    else if (!json_is_string(code))
        why = "the arguments have no string 'code'";
    else if (timeout && !json_is_null(timeout) && !json_is_number(timeout))
        why = "'timeout' is not a number";
    if (why) {
        c->bad_args = strdup(why);
        return c->bad_args ? 0 : -ENOMEM;
    }
    c->code = strndup(json_string_value(code), json_string_length(code));
    if (timeout && json_is_number(timeout))
        c->timeout = json_number_value(timeout);
    return c->code ? 0 : -ENOMEM;
}

static struct agent_call *calls_alloc(size_t n)
{
    return n ? calloc(n, sizeof(struct agent_call)) : NULL;
}

/* ---- Anthropic Messages API ---------------------------------------------------------------- */

static json_t *anthropic_start(const char *system, const char *task)
{
    (void)system; /* a top-level field of each request, not a message */
    return json_pack("[{s:s, s:s}]", "role", "user", "content", task);
}

static json_t *anthropic_request(const char *model, long max_tokens, const char *system,
                                 json_t *tools, json_t *history, bool official)
{
    (void)official;
    return json_pack("{s:s, s:I, s:s, s:O, s:O}", "model", model, "max_tokens",
                     (json_int_t)max_tokens, "system", system, "tools", tools, "messages", history);
}

static struct curl_slist *add_header(struct curl_slist *l, const char *h)
{
    if (!l)
        return NULL;
    struct curl_slist *n = curl_slist_append(l, h);
    if (!n)
        curl_slist_free_all(l);
    return n;
}

static struct curl_slist *key_header(struct curl_slist *l, const char *prefix, const char *key)
{
    if (!l || !key)
        return l;
    size_t n = strlen(prefix) + strlen(key) + 1;
    char *h = malloc(n);
    if (!h) {
        curl_slist_free_all(l);
        return NULL;
    }
    snprintf(h, n, "%s%s", prefix, key);
    l = add_header(l, h);
    /* The key must not linger in freed heap memory longer than needed. */
    explicit_bzero(h, n);
    free(h);
    return l;
}

static struct curl_slist *anthropic_headers(const char *key)
{
    struct curl_slist *l = curl_slist_append(NULL, "content-type: application/json");
    l = add_header(l, "accept: application/json");
    l = add_header(l, "anthropic-version: " ANTHROPIC_VERSION);
    /* libcurl sends "Expect: 100-continue" for large bodies; some proxies mishandle it. */
    l = add_header(l, "Expect:");
    return key_header(l, "x-api-key: ", key);
}

static int anthropic_parse(json_t *resp, struct agent_reply *ret, char *err, size_t errlen)
{
    json_t *content = json_object_get(resp, "content");
    const char *type = json_string_value(json_object_get(resp, "type"));
    if (!json_is_array(content) || (type && strcmp(type, "message") != 0)) {
        snprintf(err, errlen, "the reply is not a message with a content array");
        return -EBADMSG;
    }
    struct agent_reply r = {0};
    size_t n_tools = 0, i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *bt = json_string_value(json_object_get(b, "type"));
        if (bt && strcmp(bt, "tool_use") == 0)
            n_tools++;
    }
    r.calls = calls_alloc(n_tools);
    r.text = strdup("");
    if ((n_tools && !r.calls) || !r.text)
        goto nomem;
    json_array_foreach (content, i, b) {
        const char *bt = json_string_value(json_object_get(b, "type"));
        if (!bt)
            continue;
        if (strcmp(bt, "text") == 0) {
            const char *t = json_string_value(json_object_get(b, "text"));
            if (t && text_append(&r.text, t) < 0)
                goto nomem;
        } else if (strcmp(bt, "tool_use") == 0) {
            const char *id = json_string_value(json_object_get(b, "id"));
            const char *name = json_string_value(json_object_get(b, "name"));
            if (!id || !name) {
                agent_reply_clear(&r);
                snprintf(err, errlen, "a tool_use block has no id or name");
                return -EBADMSG;
            }
            struct agent_call *c = &r.calls[r.n_calls++];
            c->id = strdup(id);
            c->name = strdup(name);
            if (!c->id || !c->name || call_from_input(c, json_object_get(b, "input")) < 0)
                goto nomem;
        }
    }
    snprintf(r.stop, sizeof(r.stop), "%s",
             json_string_value(json_object_get(resp, "stop_reason")) ?: "");
    json_t *usage = json_object_get(resp, "usage");
    r.input_tokens = json_integer_value(json_object_get(usage, "input_tokens"));
    r.output_tokens = json_integer_value(json_object_get(usage, "output_tokens"));
    /* The assistant turn goes back verbatim: tool_use ids must match their results. */
    r.message = json_pack("{s:s, s:O}", "role", "assistant", "content", content);
    if (!r.message)
        goto nomem;
    *ret = r;
    return 0;
nomem:
    agent_reply_clear(&r);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

static int anthropic_append_results(json_t *history, const struct agent_tool_result *res, size_t n)
{
    /* All results of one reply go in the one user message that follows it, in order. */
    json_t *blocks = json_array();
    for (size_t i = 0; blocks && i < n; i++)
        if (json_array_append_new(blocks, json_pack("{s:s, s:s, s:s, s:b}", "type", "tool_result",
                                                    "tool_use_id", res[i].id, "content",
                                                    res[i].content, "is_error", res[i].is_error)) <
            0) {
            json_decref(blocks);
            return -ENOMEM;
        }
    if (!blocks || json_array_append_new(
                       history, json_pack("{s:s, s:o}", "role", "user", "content", blocks)) < 0)
        return -ENOMEM;
    return 0;
}

const struct agent_provider agent_anthropic = {
    .name = "anthropic",
    .key_env = "ANTHROPIC_API_KEY",
    .default_base = "https://api.anthropic.com",
    .path = "/v1/messages",
    .default_model = "claude-sonnet-4-5",
    .schema = EXECBOX_SCHEMA_ANTHROPIC,
    .start = anthropic_start,
    .request = anthropic_request,
    .headers = anthropic_headers,
    .parse = anthropic_parse,
    .append_results = anthropic_append_results,
};

/* ---- OpenAI Chat Completions API ----------------------------------------------------------- */

static json_t *openai_start(const char *system, const char *task)
{
    return json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system", "content", system, "role",
                     "user", "content", task);
}

static json_t *openai_request(const char *model, long max_tokens, const char *system, json_t *tools,
                              json_t *history, bool official)
{
    (void)system; /* the first message of the history */
    /* api.openai.com wants max_completion_tokens (max_tokens is refused by its reasoning
     * models); compatible servers (llama.cpp, vLLM, Ollama) know max_tokens. */
    return json_pack("{s:s, s:O, s:O, s:I}", "model", model, "messages", history, "tools", tools,
                     official ? "max_completion_tokens" : "max_tokens", (json_int_t)max_tokens);
}

static struct curl_slist *openai_headers(const char *key)
{
    struct curl_slist *l = curl_slist_append(NULL, "content-type: application/json");
    l = add_header(l, "accept: application/json");
    l = add_header(l, "Expect:");
    return key_header(l, "authorization: Bearer ", key);
}

static int openai_parse(json_t *resp, struct agent_reply *ret, char *err, size_t errlen)
{
    json_t *choice = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(msg)) {
        snprintf(err, errlen, "the reply has no choices[0].message");
        return -EBADMSG;
    }
    json_t *content = json_object_get(msg, "content");
    json_t *tool_calls = json_object_get(msg, "tool_calls");
    if (tool_calls && !json_is_null(tool_calls) && !json_is_array(tool_calls)) {
        snprintf(err, errlen, "tool_calls is not an array");
        return -EBADMSG;
    }
    size_t n_tools = json_array_size(tool_calls), i;
    struct agent_reply r = {0};
    r.calls = calls_alloc(n_tools);
    r.text = strdup(json_is_string(content) ? json_string_value(content) : "");
    /* A clean copy of the assistant message: only the fields every compatible server takes. */
    r.message = json_pack("{s:s, s:O}", "role", "assistant", "content",
                          json_is_string(content) ? content : json_null());
    json_t *echo = json_array();
    if ((n_tools && !r.calls) || !r.text || !r.message || !echo)
        goto nomem;
    json_t *tc;
    json_array_foreach (tool_calls, i, tc) {
        json_t *fn = json_object_get(tc, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_t *args = json_object_get(fn, "arguments");
        if (!name) {
            json_decref(echo);
            agent_reply_clear(&r);
            snprintf(err, errlen, "a tool call has no function name");
            return -EBADMSG;
        }
        struct agent_call *c = &r.calls[r.n_calls++];
        const char *id = json_string_value(json_object_get(tc, "id"));
        char made[32];
        if (!id || !*id) {
            /* Some local servers leave ids out; one is made up so the result can match. */
            snprintf(made, sizeof(made), "call_execbox_%zu", i);
            id = made;
        }
        c->id = strdup(id);
        c->name = strdup(name);
        if (!c->id || !c->name)
            goto nomem;
        /* arguments is a JSON *string*; a few servers send the object itself. */
        json_t *input = NULL;
        char *args_text = NULL;
        if (json_is_string(args)) {
            json_error_t jerr;
            input = json_loadb(json_string_value(args), json_string_length(args), 0, &jerr);
            if (!input) {
                char why[300];
                snprintf(why, sizeof(why), "the arguments are not valid JSON: %s", jerr.text);
                c->bad_args = strdup(why);
                if (!c->bad_args)
                    goto nomem;
            }
            args_text = strdup(json_string_value(args));
        } else if (json_is_object(args)) {
            input = json_incref(args);
            args_text = json_dumps(args, JSON_COMPACT);
        } else {
            c->bad_args = strdup("the arguments are missing");
            args_text = strdup("");
            if (!c->bad_args)
                goto nomem;
        }
        int rr = input ? call_from_input(c, input) : 0;
        json_decref(input);
        json_t *e = args_text
                        ? json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", c->id, "type", "function",
                                    "function", "name", name, "arguments", args_text)
                        : NULL;
        free(args_text);
        if (rr < 0 || !e || json_array_append_new(echo, e) < 0)
            goto nomem;
    }
    if (r.n_calls && json_object_set(r.message, "tool_calls", echo) < 0)
        goto nomem;
    json_decref(echo);
    echo = NULL;
    snprintf(r.stop, sizeof(r.stop), "%s",
             json_string_value(json_object_get(choice, "finish_reason")) ?: "");
    json_t *usage = json_object_get(resp, "usage");
    r.input_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
    r.output_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
    *ret = r;
    return 0;
nomem:
    json_decref(echo);
    agent_reply_clear(&r);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

static int openai_append_results(json_t *history, const struct agent_tool_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(history,
                                  json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                                            res[i].id, "content", res[i].content)) < 0)
            return -ENOMEM;
    return 0;
}

const struct agent_provider agent_openai = {
    .name = "openai",
    .key_env = "OPENAI_API_KEY",
    .default_base = "https://api.openai.com/v1",
    .path = "/chat/completions",
    .default_model = "gpt-4.1",
    .schema = EXECBOX_SCHEMA_OPENAI,
    .start = openai_start,
    .request = openai_request,
    .headers = openai_headers,
    .parse = openai_parse,
    .append_results = openai_append_results,
};

const struct agent_provider *agent_provider_find(const char *name)
{
    if (name && strcmp(name, "anthropic") == 0)
        return &agent_anthropic;
    if (name && strcmp(name, "openai") == 0)
        return &agent_openai;
    return NULL;
}
