/* SPDX-License-Identifier: MIT */
/* test_agent_provider.c - the agent's wire formats (parsing replies, answering tool calls) and
 * its Retry-After parsing, without a network. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "agent/http.h"
#include "agent/provider.h"

static json_t *parse_json(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s", e.text);
    return j;
}

static void test_retry_after(void **state)
{
    (void)state;
    assert_int_equal(agent_http_retry_after_ms("1"), 1000);
    assert_int_equal(agent_http_retry_after_ms(" 2 "), 2000);
    assert_int_equal(agent_http_retry_after_ms("0.25"), 250);
    assert_int_equal(agent_http_retry_after_ms("0"), 0);
    assert_int_equal(agent_http_retry_after_ms(NULL), -1);
    assert_int_equal(agent_http_retry_after_ms("soon"), -1);
    assert_int_equal(agent_http_retry_after_ms("-3"), -1);
    assert_int_equal(agent_http_retry_after_ms("5 apples"), -1);
    assert_int_equal(agent_http_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
    char date[64];
    time_t t = time(NULL) + 30;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    long ms = agent_http_retry_after_ms(date);
    assert_true(ms >= 28000 && ms <= 30000);
}

static void test_anthropic_parse(void **state)
{
    (void)state;
    json_t *resp = parse_json(
        "{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
        "{\"type\":\"text\",\"text\":\"Let me \"},{\"type\":\"text\",\"text\":\"compute.\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_A\",\"name\":\"execute_python\","
        "\"input\":{\"code\":\"print(1)\",\"timeout\":3}},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_B\",\"name\":\"execute_python\","
        "\"input\":{\"script\":\"print(2)\"}}],"
        "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":11,\"output_tokens\":7}}");
    struct agent_reply r = {0};
    char err[256];
    assert_int_equal(agent_anthropic.parse(resp, &r, err, sizeof(err)), 0);
    assert_string_equal(r.text, "Let me compute.");
    assert_string_equal(r.stop, "tool_use");
    assert_int_equal(r.input_tokens, 11);
    assert_int_equal(r.output_tokens, 7);
    assert_int_equal(r.n_calls, 2);
    assert_string_equal(r.calls[0].id, "toolu_A");
    assert_string_equal(r.calls[0].code, "print(1)");
    assert_true(r.calls[0].timeout == 3);
    assert_null(r.calls[1].code);
    assert_non_null(strstr(r.calls[1].bad_args, "'code'"));
    /* The reply goes back verbatim. */
    assert_string_equal(json_string_value(json_object_get(r.message, "role")), "assistant");
    assert_true(
        json_equal(json_object_get(r.message, "content"), json_object_get(resp, "content")));

    /* Both results in one user message, in order, errors flagged. */
    json_t *history = json_array();
    struct agent_tool_result res[] = {{"toolu_A", "{\"exit_code\":0}", false},
                                      {"toolu_B", "Error: bad", true}};
    assert_int_equal(agent_anthropic.append_results(history, res, 2), 0);
    json_t *expect = parse_json(
        "[{\"role\":\"user\",\"content\":["
        "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_A\",\"content\":\"{\\\"exit_code\\\":0}"
        "\","
        "\"is_error\":false},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_B\",\"content\":\"Error: bad\","
        "\"is_error\":true}]}]");
    assert_true(json_equal(history, expect));
    json_decref(expect);
    json_decref(history);
    agent_reply_clear(&r);
    json_decref(resp);

    /* Not a message, or a tool_use without an id: refused, not guessed. */
    const char *bad[] = {
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}",
        "{\"type\":\"message\",\"content\":\"text\"}",
        "{\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"name\":\"execute_python\","
        "\"input\":{}}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        resp = parse_json(bad[i]);
        assert_int_equal(agent_anthropic.parse(resp, &r, err, sizeof(err)), -EBADMSG);
        json_decref(resp);
    }
}

static void test_openai_parse(void **state)
{
    (void)state;
    json_t *resp = parse_json(
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":["
        "{\"id\":\"call_A\",\"type\":\"function\",\"function\":{\"name\":\"execute_python\","
        "\"arguments\":\"{\\\"code\\\": \\\"print(1)\\\"}\"}},"
        "{\"id\":\"call_B\",\"type\":\"function\",\"function\":{\"name\":\"execute_python\","
        "\"arguments\":\"{\\\"code\\\": \\\"print(\"}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"execute_python\","
        "\"arguments\":{\"code\":\"print(3)\"}}}]},"
        "\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":5,\"total_tokens\":25}}");
    struct agent_reply r = {0};
    char err[256];
    assert_int_equal(agent_openai.parse(resp, &r, err, sizeof(err)), 0);
    assert_string_equal(r.stop, "tool_calls");
    assert_int_equal(r.input_tokens, 20);
    assert_int_equal(r.output_tokens, 5);
    assert_int_equal(r.n_calls, 3);
    assert_string_equal(r.calls[0].code, "print(1)");
    /* Malformed arguments: a tool error later, not a crash now. */
    assert_null(r.calls[1].code);
    assert_non_null(strstr(r.calls[1].bad_args, "not valid JSON"));
    /* A missing id is made up, and the echoed message carries it. */
    assert_string_equal(r.calls[2].code, "print(3)");
    assert_non_null(r.calls[2].id);
    json_t *tc = json_object_get(r.message, "tool_calls");
    assert_int_equal(json_array_size(tc), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tc, 2), "id")),
                        r.calls[2].id);
    /* arguments go back as a string, even when the server sent an object. */
    assert_true(json_is_string(
        json_object_get(json_object_get(json_array_get(tc, 2), "function"), "arguments")));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(tc, 1), "function"), "arguments")),
                        "{\"code\": \"print(");
    assert_null(json_object_get(r.message, "refusal"));
    assert_true(json_is_null(json_object_get(r.message, "content")));

    json_t *history = json_array();
    struct agent_tool_result res[] = {{"call_A", "ok", false}, {"call_B", "Error: x", true}};
    assert_int_equal(agent_openai.append_results(history, res, 2), 0);
    json_t *expect =
        parse_json("[{\"role\":\"tool\",\"tool_call_id\":\"call_A\",\"content\":\"ok\"},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"call_B\",\"content\":\"Error: x\"}]");
    assert_true(json_equal(history, expect));
    json_decref(expect);
    json_decref(history);
    agent_reply_clear(&r);
    json_decref(resp);

    const char *bad[] = {
        "{\"choices\":[]}",
        "{\"object\":\"chat.completion\"}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":{}}}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\","
        "\"function\":{\"arguments\":\"{}\"}}]}}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        resp = parse_json(bad[i]);
        assert_int_equal(agent_openai.parse(resp, &r, err, sizeof(err)), -EBADMSG);
        json_decref(resp);
    }
}

static void test_requests_and_errors(void **state)
{
    (void)state;
    json_t *tools = parse_json("[{\"name\":\"execute_python\"}]");
    json_t *h = agent_openai.start("SYS", "TASK");
    json_t *req = agent_openai.request("m", 100, "SYS", tools, h, true);
    assert_int_equal(json_integer_value(json_object_get(req, "max_completion_tokens")), 100);
    assert_null(json_object_get(req, "max_tokens"));
    json_decref(req);
    req = agent_openai.request("m", 100, "SYS", tools, h, false);
    assert_int_equal(json_integer_value(json_object_get(req, "max_tokens")), 100);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(req, "messages"), 0), "content")),
                        "SYS");
    json_decref(req);
    json_decref(h);
    h = agent_anthropic.start("SYS", "TASK");
    assert_int_equal(json_array_size(h), 1);
    req = agent_anthropic.request("m", 100, "SYS", tools, h, true);
    assert_string_equal(json_string_value(json_object_get(req, "system")), "SYS");
    assert_int_equal(json_integer_value(json_object_get(req, "max_tokens")), 100);
    json_decref(req);
    json_decref(h);
    json_decref(tools);

    json_t *e = parse_json("{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
                           "\"message\":\"bad thing\"}}");
    assert_string_equal(agent_api_error_message(e), "bad thing");
    json_decref(e);
    e = parse_json("{\"error\":\"plain\"}");
    assert_string_equal(agent_api_error_message(e), "plain");
    json_decref(e);

    /* The key is in exactly one header of each provider. */
    struct curl_slist *l = agent_anthropic.headers("K1");
    int n_key = 0;
    for (struct curl_slist *p = l; p; p = p->next)
        n_key += strcmp(p->data, "x-api-key: K1") == 0;
    assert_int_equal(n_key, 1);
    curl_slist_free_all(l);
    l = agent_openai.headers(NULL);
    for (struct curl_slist *p = l; p; p = p->next)
        assert_null(strcasestr(p->data, "authorization"));
    curl_slist_free_all(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_anthropic_parse),
        cmocka_unit_test(test_openai_parse),
        cmocka_unit_test(test_requests_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
