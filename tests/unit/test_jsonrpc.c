/* SPDX-License-Identifier: MIT */
/* test_jsonrpc.c - the JSON-RPC framing of src/common/jsonrpc.c: lines split across reads,
 * CRLF, empty lines, oversized lines dropped without losing the next frame, the last line at
 * EOF; the classifier's verdicts and error codes; replies that are exactly one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonrpc.h"

#define MAX_FRAMES 16

struct seen {
    int n;
    char *line[MAX_FRAMES];
    size_t dropped[MAX_FRAMES];
};

static int collect(void *ud, const char *line, size_t len, size_t dropped)
{
    struct seen *s = ud;
    assert_true(s->n < MAX_FRAMES);
    s->line[s->n] = line ? strndup(line, len) : NULL;
    s->dropped[s->n] = dropped;
    s->n++;
    return 0;
}

static void seen_free(struct seen *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->line[i]);
}

/* Feeds text one byte at a time or all at once: the frames must be the same. */
static void feed(struct jrpc_reader *r, const char *text, size_t step, struct seen *s)
{
    size_t n = strlen(text);
    for (size_t off = 0; off < n; off += step)
        assert_int_equal(
            jrpc_reader_feed(r, text + off, off + step > n ? n - off : step, collect, s), 0);
}

static void test_split_and_crlf(void **state)
{
    (void)state;
    for (size_t step = 1; step <= 7; step += 6) {
        struct jrpc_reader r;
        jrpc_reader_init(&r, 64);
        struct seen s = {0};
        feed(&r, "{\"a\":1}\n\n\r\n{\"b\":2}\r\n{\"c\"", step, &s);
        assert_int_equal(s.n, 2);
        assert_string_equal(s.line[0], "{\"a\":1}");
        assert_string_equal(s.line[1], "{\"b\":2}");
        assert_int_equal(jrpc_reader_finish(&r, collect, &s), 0);
        assert_int_equal(s.n, 3);
        assert_string_equal(s.line[2], "{\"c\"");
        seen_free(&s);
        jrpc_reader_release(&r);
    }
}

static void test_oversized_line(void **state)
{
    (void)state;
    struct jrpc_reader r;
    jrpc_reader_init(&r, 8);
    struct seen s = {0};
    /* Exactly at the limit passes; one more byte is dropped, in pieces or at once. */
    feed(&r, "12345678\n123456789\nok\n", 1, &s);
    feed(&r, "abcdefghijklm", 5, &s);
    assert_null(r.buf); /* nothing of an oversized line is kept while it goes on */
    feed(&r, "nopqrstuvwxyz\nlast", 5, &s);
    assert_int_equal(jrpc_reader_finish(&r, collect, &s), 0);
    assert_int_equal(s.n, 5);
    assert_string_equal(s.line[0], "12345678");
    assert_null(s.line[1]);
    assert_int_equal(s.dropped[1], 9);
    assert_string_equal(s.line[2], "ok");
    assert_null(s.line[3]);
    assert_int_equal(s.dropped[3], 26);
    assert_string_equal(s.line[4], "last");
    seen_free(&s);
    jrpc_reader_release(&r);
}

static int stop_at_second(void *ud, const char *line, size_t len, size_t dropped)
{
    (void)line, (void)len, (void)dropped;
    return ++*(int *)ud == 2 ? -42 : 0;
}

static void test_callback_stops_feed(void **state)
{
    (void)state;
    struct jrpc_reader r;
    jrpc_reader_init(&r, 64);
    int count = 0;
    assert_int_equal(jrpc_reader_feed(&r, "a\nb\nc\n", 6, stop_at_second, &count), -42);
    assert_int_equal(count, 2);
    jrpc_reader_release(&r);
}

static enum jrpc_kind classify_text(const char *text, struct jrpc_msg *m, json_t **root)
{
    char msg[128];
    assert_int_equal(jrpc_parse(text, strlen(text), root, msg, sizeof(msg)), 0);
    return jrpc_classify(*root, m);
}

static void test_classify(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        enum jrpc_kind kind;
        bool has_id;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", JRPC_KIND_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"m\",\"params\":[]}", JRPC_KIND_REQUEST,
         true},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", JRPC_KIND_NOTIFICATION, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", JRPC_KIND_RESPONSE, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1}}", JRPC_KIND_RESPONSE, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1,\"error\":{}}", JRPC_KIND_INVALID, true},
        {"{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"m\"}", JRPC_KIND_INVALID, true},
        {"{\"id\":4,\"method\":\"m\"}", JRPC_KIND_INVALID, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", JRPC_KIND_INVALID, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", JRPC_KIND_INVALID, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", JRPC_KIND_INVALID, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}", JRPC_KIND_INVALID, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"m\",\"params\":\"s\"}", JRPC_KIND_INVALID,
         true},
        {"{\"jsonrpc\":\"2.0\",\"result\":{}}", JRPC_KIND_INVALID, false},
        {"[1]", JRPC_KIND_INVALID, false},
        {"\"text\"", JRPC_KIND_INVALID, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jrpc_msg m;
        json_t *root = NULL;
        enum jrpc_kind k = classify_text(cases[i].text, &m, &root);
        if (k != cases[i].kind || (m.id != NULL) != cases[i].has_id)
            fail_msg("case %zu '%s': kind %d id %p", i, cases[i].text, k, (void *)m.id);
        if (k == JRPC_KIND_INVALID) {
            assert_int_equal(m.error_code, JRPC_INVALID_REQUEST);
            assert_true(strlen(m.error_msg) > 0);
        }
        json_decref(root);
    }
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"{", "nope", "{\"a\":1,\"a\":2}", "{\"a\":1} x", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *root = NULL;
        char msg[128] = "";
        assert_int_equal(jrpc_parse(bad[i], strlen(bad[i]), &root, msg, sizeof(msg)),
                         JRPC_PARSE_ERROR);
        assert_null(root);
        assert_non_null(strstr(msg, "parse error"));
        /* our words, never the JSON library's ("... near '...'", its option names) */
        assert_null(strstr(msg, " near "));
        assert_null(strstr(msg, "JSON_"));
    }
    /* NUL inside a string is allowed (the code is passed on with its length). */
    const char nul[] = "{\"s\":\"a\\u0000b\"}";
    json_t *root = NULL;
    char msg[128];
    assert_int_equal(jrpc_parse(nul, sizeof(nul) - 1, &root, msg, sizeof(msg)), 0);
    assert_int_equal(json_string_length(json_object_get(root, "s")), 3);
    json_decref(root);
}

static void test_replies_are_one_line(void **state)
{
    (void)state;
    json_t *id = json_integer(9);
    json_t *r = jrpc_result_new(id, json_pack("{s:s}", "text", "two\nlines"));
    size_t len = 0;
    char *line = jrpc_frame_dump(r, &len);
    assert_non_null(line);
    assert_int_equal(line[len - 1], '\n');
    assert_null(memchr(line, '\n', len - 1));
    assert_true(strncmp(line, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":", 33) == 0);
    free(line);
    json_decref(r);
    json_t *e = jrpc_error_new(NULL, JRPC_METHOD_NOT_FOUND, "method 'x' not found", NULL);
    line = jrpc_frame_dump(e, &len);
    assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32601,"
                              "\"message\":\"method 'x' not found\"}}\n");
    free(line);
    json_decref(e);
    /* A message that is not valid UTF-8 still yields a valid error. */
    e = jrpc_error_new(id, JRPC_INVALID_PARAMS, "bad \xff byte", NULL);
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "error"), "code")),
                     JRPC_INVALID_PARAMS);
    json_decref(e);
    json_decref(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_and_crlf),      cmocka_unit_test(test_oversized_line),
        cmocka_unit_test(test_callback_stops_feed), cmocka_unit_test(test_classify),
        cmocka_unit_test(test_parse_errors),        cmocka_unit_test(test_replies_are_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
