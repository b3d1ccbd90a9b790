/* SPDX-License-Identifier: MIT */
/* provider.h - the two wire formats the agent speaks: the Anthropic Messages API and the OpenAI
 * Chat Completions API (and any server compatible with it). The history is kept in the
 * provider's own message format, so the transcript is exactly what was sent. */
#ifndef EBAGENT_PROVIDER_H
#define EBAGENT_PROVIDER_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>

#include "execbox/execbox.h"

/* One tool call the model asked for. */
struct agent_call {
    char *id;       /* the provider's id, echoed back in the result */
    char *name;     /* the tool's name */
    char *code;     /* the program, or NULL when the arguments were unusable */
    double timeout; /* seconds the model asked for, 0 = the policy's */
    char *bad_args; /* why the arguments are unusable (then code is NULL) */
};

/* One reply of the model, parsed. */
struct agent_reply {
    json_t *message; /* the assistant message to append to the history, owned */
    char *text;      /* its text, concatenated ("" if none) */
    struct agent_call *calls;
    size_t n_calls;
    char stop[32]; /* stop_reason / finish_reason as sent ("" if absent) */
    long long input_tokens, output_tokens;
};

/* One tool result going back. */
struct agent_tool_result {
    const char *id;
    const char *content;
    bool is_error;
};

struct agent_provider {
    const char *name;
    const char *key_env;      /* environment variable holding the key */
    const char *default_base; /* base URL when --base-url is not given */
    const char *path;         /* appended to the base URL */
    const char *default_model;
    enum execbox_schema_format schema; /* the tool definition's format */
    /* The history a conversation starts with: the task (and, for OpenAI, the system prompt). */
    json_t *(*start)(const char *system, const char *task);
    /* The request body for the next turn. tools is the array of tool definitions. */
    json_t *(*request)(const char *model, long max_tokens, const char *system, json_t *tools,
                       json_t *history, bool official);
    /* The headers, with the key (NULL: none). Free with curl_slist_free_all. */
    struct curl_slist *(*headers)(const char *key);
    /* Parses a 200 response. -EBADMSG with a message when it is not what the API sends. */
    int (*parse)(json_t *resp, struct agent_reply *ret, char *err, size_t errlen);
    /* Appends the results of one reply's calls, in order, to the history. */
    int (*append_results)(json_t *history, const struct agent_tool_result *res, size_t n);
};

extern const struct agent_provider agent_anthropic;
extern const struct agent_provider agent_openai;

/* The provider called name, or NULL. */
const struct agent_provider *agent_provider_find(const char *name);

/* The API's own error message in an error body ({"error": {"message"}}), or NULL. Borrowed
 * from resp. */
const char *agent_api_error_message(json_t *resp);

void agent_reply_clear(struct agent_reply *r);

#endif
