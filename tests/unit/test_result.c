/* SPDX-License-Identifier: MIT */
/* test_result.c - the result record as JSON: every field of docs/result.md with its type,
 * invalid UTF-8 made valid, files with inline base64, the degraded list, sandbox errors. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include <cmocka.h>

#include "base/text.h"
#include "model/result.h"

static char *dup_bytes(const char *d, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memcpy(s, d, n);
    s[n] = '\0';
    return s;
}

static json_t *to_json(const struct execbox_result *r, unsigned flags)
{
    char *s = NULL;
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_result_to_json(r, flags, &s, &err), 0);
    json_error_t je;
    /* JSON_ALLOW_NUL: a NUL byte in output is a legal \u0000 escape. */
    json_t *o = json_loads(s, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
    if (!o)
        fail_msg("invalid JSON (%s): %s", je.text, s);
    execbox_free(s);
    return o;
}

static void test_every_field(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    json_t *o = to_json(r, 0);
    /* A fresh result: every documented field, with its null/empty form. */
    static const char *const order[] = {
        "stdout",       "stderr",       "exit_code",     "execution_time",    "timed_out",
        "oom_killed",   "signal",       "killed_reason", "stdout_truncated",  "stderr_truncated",
        "stdout_bytes", "stderr_bytes", "cpu_time",      "peak_memory_bytes", "error",
        "files",        "backend",      "language",      "results",
    };
    assert_int_equal(json_object_size(o), sizeof(order) / sizeof(order[0]));
    /* The order of docs/result.md (the four core fields first). */
    void *it = json_object_iter(o);
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++, it = json_object_iter_next(o, it))
        assert_string_equal(json_object_iter_key(it), order[i]);
    assert_string_equal(json_string_value(json_object_get(o, "stdout")), "");
    assert_true(json_is_integer(json_object_get(o, "exit_code")));
    assert_true(json_is_real(json_object_get(o, "execution_time")));
    assert_true(json_is_false(json_object_get(o, "timed_out")));
    assert_true(json_is_null(json_object_get(o, "signal")));
    assert_true(json_is_null(json_object_get(o, "killed_reason")));
    assert_true(json_is_null(json_object_get(o, "cpu_time")));
    assert_true(json_is_null(json_object_get(o, "peak_memory_bytes")));
    assert_true(json_is_null(json_object_get(o, "error")));
    assert_int_equal(json_array_size(json_object_get(o, "files")), 0);
    assert_string_equal(json_string_value(json_object_get(o, "backend")), "subprocess");
    assert_null(json_object_get(o, "degraded"));
    json_decref(o);

    /* Every field set. */
    r->stdout_data = strdup("42\n");
    r->stdout_len = 3;
    r->stderr_data = strdup("warn\n");
    r->stderr_len = 5;
    r->stdout_bytes = 5000000000ULL; /* past 32 bits */
    r->stderr_bytes = 5;
    r->stdout_truncated = true;
    r->exit_code = 137;
    r->execution_time = 1.25;
    r->timed_out = true;
    r->oom_killed = true;
    r->signal = 9;
    r->killed_reason = EXECBOX_KILLED_MEMORY;
    r->cpu_time = 0.5;
    r->peak_memory_bytes = 9437184;
    assert_int_equal(eb_result_set_error(r, "MemoryLimit", "too much", "tb"), 0);
    o = to_json(r, 0);
    assert_string_equal(json_string_value(json_object_get(o, "stdout")), "42\n");
    assert_string_equal(json_string_value(json_object_get(o, "stderr")), "warn\n");
    assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 5000000000LL);
    assert_int_equal(json_integer_value(json_object_get(o, "stderr_bytes")), 5);
    assert_true(json_is_true(json_object_get(o, "stdout_truncated")));
    assert_true(json_is_false(json_object_get(o, "stderr_truncated")));
    assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 137);
    assert_true(json_real_value(json_object_get(o, "execution_time")) == 1.25);
    assert_true(json_is_true(json_object_get(o, "timed_out")));
    assert_true(json_is_true(json_object_get(o, "oom_killed")));
    assert_int_equal(json_integer_value(json_object_get(o, "signal")), 9);
    assert_string_equal(json_string_value(json_object_get(o, "killed_reason")), "memory");
    assert_true(json_real_value(json_object_get(o, "cpu_time")) == 0.5);
    assert_int_equal(json_integer_value(json_object_get(o, "peak_memory_bytes")), 9437184);
    json_t *e = json_object_get(o, "error");
    assert_true(json_is_object(e));
    assert_string_equal(json_string_value(json_object_get(e, "name")), "MemoryLimit");
    assert_string_equal(json_string_value(json_object_get(e, "value")), "too much");
    assert_string_equal(json_string_value(json_object_get(e, "traceback")), "tb");
    json_decref(o);
    execbox_result_free(r);
}

/* Rich outputs: every MIME field that is set, is_main_result always, the cell fields only in a
 * session; the record parses back with the same outputs; oversized or malformed lists are cut
 * or refused. */
static void test_rich_results(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("jail", "python");
    assert_non_null(r);
    json_error_t je;
    json_t *a = json_loads("[{\"text\": \"42\", \"is_main_result\": true}, {\"png\": \"iVBO\", "
                           "\"text\": \"<Figure>\"}, {\"html\": \"<b>\\u00ff</b>\"}]",
                           0, &je);
    assert_non_null(a);
    struct execbox_error err = {0, ""};
    assert_int_equal(eb_result_rich_from_array(a, r, &err), 0);
    assert_int_equal(r->n_results, 3);
    assert_true(r->results[0].is_main_result);
    assert_string_equal(r->results[1].png, "iVBO");
    assert_null(r->results[1].html);
    r->in_session = true;
    r->execution_count = 7;
    r->rolled_back = true;
    json_t *o = to_json(r, 0);
    json_t *res = json_object_get(o, "results");
    assert_int_equal(json_array_size(res), 3);
    json_t *first = json_array_get(res, 0);
    assert_int_equal(json_object_size(first), 2); /* text and is_main_result, nothing null */
    assert_true(json_is_true(json_object_get(first, "is_main_result")));
    assert_true(json_is_false(json_object_get(json_array_get(res, 1), "is_main_result")));
    assert_int_equal(json_integer_value(json_object_get(o, "execution_count")), 7);
    assert_true(json_is_true(json_object_get(o, "rolled_back")));
    struct execbox_result *back = eb_result_new("remote", "python");
    assert_int_equal(eb_result_from_object(o, back, &err), 0);
    assert_int_equal(back->n_results, 3);
    assert_string_equal(back->results[2].html, "<b>\xc3\xbf</b>");
    execbox_result_free(back);
    json_decref(o);
    /* Not of that shape: refused. */
    json_t *bad = json_loads("[{\"text\": 1}]", 0, &je);
    assert_int_equal(eb_result_rich_from_array(bad, r, &err), -EBADMSG);
    json_decref(bad);
    json_decref(a);
    /* More than EXECBOX_RICH_MAX: cut, and said. */
    json_t *many = json_array();
    for (int i = 0; i < EXECBOX_RICH_MAX + 5; i++)
        json_array_append_new(many, json_pack("{s:s}", "text", "x"));
    struct execbox_result *m = eb_result_new("jail", "python");
    assert_int_equal(eb_result_rich_from_array(many, m, &err), 0);
    assert_int_equal(m->n_results, EXECBOX_RICH_MAX);
    assert_true(m->results_truncated);
    json_decref(many);
    execbox_result_free(m);
    execbox_result_free(r);
}

static void test_killed_reason_names(void **state)
{
    (void)state;
    assert_null(execbox_killed_reason_name(EXECBOX_KILLED_NONE));
    assert_string_equal(execbox_killed_reason_name(EXECBOX_KILLED_TIMEOUT), "timeout");
    assert_string_equal(execbox_killed_reason_name(EXECBOX_KILLED_MEMORY), "memory");
    assert_string_equal(execbox_killed_reason_name(EXECBOX_KILLED_OUTPUT_LIMIT), "output_limit");
    assert_string_equal(execbox_killed_reason_name(EXECBOX_KILLED_CPU), "cpu");
    assert_string_equal(execbox_killed_reason_name(EXECBOX_KILLED_CANCELLED), "cancelled");
}

/* stdout = bytes; expects the JSON string to equal want (UTF-8). */
static void check_utf8(const char *bytes, size_t n, const char *want, size_t want_len)
{
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    r->stdout_data = dup_bytes(bytes, n);
    r->stdout_len = n;
    r->stderr_data = dup_bytes(bytes, n);
    r->stderr_len = n;
    json_t *o = to_json(r, 0);
    json_t *s = json_object_get(o, "stdout");
    if (json_string_length(s) != want_len || memcmp(json_string_value(s), want, want_len) != 0)
        fail_msg("sanitised to %zu bytes '%s', want %zu", json_string_length(s),
                 json_string_value(s), want_len);
    assert_int_equal(json_string_length(json_object_get(o, "stderr")), want_len);
    json_decref(o);
    execbox_result_free(r);
}

#define FFFD "\xEF\xBF\xBD"
#define CHECK(in, out) check_utf8(in, sizeof(in) - 1, out, sizeof(out) - 1)

static void test_invalid_utf8(void **state)
{
    (void)state;
    CHECK("plain ascii", "plain ascii");
    CHECK("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80",
          "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK("a\x80z", "a" FFFD "z");                  /* lone continuation */
    CHECK("\xBF\xBF", FFFD FFFD);                   /* two of them */
    CHECK("\xC0\x80", FFFD FFFD);                   /* overlong NUL */
    CHECK("\xC1\xBF", FFFD FFFD);                   /* overlong 2-byte */
    CHECK("\xE0\x80\xAF", FFFD FFFD FFFD);          /* overlong 3-byte '/' */
    CHECK("\xF0\x80\x80\xAF", FFFD FFFD FFFD FFFD); /* overlong 4-byte */
    CHECK("\xED\xA0\x80", FFFD FFFD FFFD);          /* high surrogate U+D800 */
    CHECK("\xED\xBF\xBF", FFFD FFFD FFFD);          /* low surrogate U+DFFF */
    CHECK("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* above U+10FFFF */
    CHECK("\xF5\x80", FFFD FFFD);                   /* never a lead byte */
    CHECK("\xFE\xFF", FFFD FFFD);
    CHECK("x\xE2\x82", "x" FFFD FFFD); /* truncated at the end */
    CHECK("\xE2\x82x", FFFD FFFD "x"); /* truncated in the middle */
    CHECK("\xF0\x9F\x98", FFFD FFFD FFFD);
    CHECK("\xED\x9F\xBF", "\xED\x9F\xBF");         /* U+D7FF: just below surrogates */
    CHECK("\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"); /* U+10FFFF: the last one */
    CHECK("a\0b", "a\0b");                         /* NUL kept, escaped in JSON */
}

static void test_invalid_utf8_everywhere(void **state)
{
    (void)state;
    /* Every byte value in every position: the JSON always parses and is valid UTF-8. */
    unsigned char bytes[256 * 3];
    for (int i = 0; i < 256; i++) {
        bytes[i * 3] = (unsigned char)i;
        bytes[i * 3 + 1] = (unsigned char)(255 - i);
        bytes[i * 3 + 2] = (unsigned char)(i ^ 0x80);
    }
    struct execbox_result *r = eb_result_new("x", "python");
    assert_non_null(r);
    r->stdout_data = dup_bytes((const char *)bytes, sizeof(bytes));
    r->stdout_len = sizeof(bytes);
    assert_int_equal(eb_result_set_error(r, "E\xFF", "v\x80", "t\xC0"), 0);
    r->files = calloc(1, sizeof(*r->files));
    assert_non_null(r->files);
    r->n_files = 1;
    r->files[0].path = strdup("bad\xFFname.txt");
    r->files[0].mime = strdup("text/plain");
    json_t *o = to_json(r, EXECBOX_JSON_PRETTY);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "error"), "name")),
                        "E" FFFD);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "files"), 0), "path")),
        "bad" FFFD "name.txt");
    json_decref(o);
    execbox_result_free(r);
}

static void test_sanitize_direct(void **state)
{
    (void)state;
    size_t n = 99;
    char *s = execbox_utf8_sanitize("", 0, &n, NULL);
    assert_non_null(s);
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    free(s);
    /* Worst case: every byte replaced, three times the length. */
    char bad[1000];
    memset(bad, 0xFF, sizeof(bad));
    s = execbox_utf8_sanitize(bad, sizeof(bad), &n, NULL);
    assert_int_equal(n, 3000);
    assert_int_equal(s[3000], '\0');
    free(s);
}

/* A stream cut in the middle of a character: with ret_pending the partial tail is held back
 * for the next chunk (as serve's live output does), without it every stray byte is replaced. */
static void test_sanitize_pending(void **state)
{
    (void)state;
    size_t n, pending;
    char *s = execbox_utf8_sanitize("a\xE2\x82", 3, &n, &pending);
    assert_string_equal(s, "a");
    assert_int_equal(n, 1);
    assert_int_equal(pending, 2);
    execbox_free(s);
    s = execbox_utf8_sanitize("\xE2\x82\xAC!", 4, &n, &pending); /* the carried bytes + more */
    assert_string_equal(s, "\xE2\x82\xAC!");
    assert_int_equal(pending, 0);
    execbox_free(s);
    s = execbox_utf8_sanitize("a\xE2\x82", 3, &n, NULL);
    assert_string_equal(s, "a\xEF\xBF\xBD\xEF\xBF\xBD");
    execbox_free(s);
    /* Invalid (not merely incomplete) at the end is replaced, never held back. */
    s = execbox_utf8_sanitize("a\xC0", 2, &n, &pending);
    assert_string_equal(s, "a\xEF\xBF\xBD");
    assert_int_equal(pending, 0);
    execbox_free(s);
    s = execbox_utf8_sanitize("\xF0\x9F\x98", 3, &n, &pending); /* 3 of 4 bytes */
    assert_string_equal(s, "");
    assert_int_equal(pending, 3);
    execbox_free(s);
}

static void test_base64(void **state)
{
    (void)state;
    static const char *const rfc4648[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < 7; i++) {
        char *s = execbox_base64((const unsigned char *)rfc4648[i][0], strlen(rfc4648[i][0]));
        assert_string_equal(s, rfc4648[i][1]);
        free(s);
    }
    const unsigned char hi[] = {0xFF, 0xFE, 0xFD};
    char *s = execbox_base64(hi, 3);
    assert_string_equal(s, "//79");
    free(s);
}

static void test_files(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    r->files = calloc(2, sizeof(*r->files));
    assert_non_null(r->files);
    r->n_files = 2;
    r->files[0].path = strdup("data/out.csv");
    r->files[0].mime = strdup("text/csv");
    r->files[0].size = 12345;
    r->files[1].path = strdup("plot.png");
    r->files[1].mime = strdup("image/png");
    static const unsigned char png[] = "\x89PNG\r\n\x1a\nrest";
    r->files[1].data = malloc(sizeof(png) - 1);
    assert_non_null(r->files[1].data);
    memcpy(r->files[1].data, png, sizeof(png) - 1);
    r->files[1].data_len = sizeof(png) - 1;
    r->files[1].size = sizeof(png) - 1;
    r->files[1].origin = EXECBOX_FILE_INPUT;
    r->files_truncated = true;
    json_t *o = to_json(r, 0);
    json_t *files = json_object_get(o, "files");
    assert_int_equal(json_array_size(files), 2);
    json_t *f0 = json_array_get(files, 0), *f1 = json_array_get(files, 1);
    assert_string_equal(json_string_value(json_object_get(f0, "path")), "data/out.csv");
    assert_int_equal(json_integer_value(json_object_get(f0, "size")), 12345);
    assert_string_equal(json_string_value(json_object_get(f0, "mime")), "text/csv");
    assert_string_equal(json_string_value(json_object_get(f0, "origin")), "created");
    assert_string_equal(json_string_value(json_object_get(f1, "origin")), "input");
    assert_null(json_object_get(f0, "data"));
    assert_string_equal(json_string_value(json_object_get(f1, "mime")), "image/png");
    assert_string_equal(json_string_value(json_object_get(f1, "data")), "iVBORw0KGgpyZXN0");
    assert_true(json_is_true(json_object_get(o, "files_truncated")));
    json_decref(o);
    /* NO_FILE_DATA leaves the bytes out but keeps the listing. */
    o = to_json(r, EXECBOX_JSON_NO_FILE_DATA);
    f1 = json_array_get(json_object_get(o, "files"), 1);
    assert_null(json_object_get(f1, "data"));
    assert_string_equal(json_string_value(json_object_get(f1, "path")), "plot.png");
    json_decref(o);
    /* The jansson value is the same record as the text (what MCP and the agent embed). */
    json_t *v = NULL;
    struct execbox_error err = {0, ""};
    for (unsigned flags = 0; flags <= EXECBOX_JSON_NO_FILE_DATA;
         flags += EXECBOX_JSON_NO_FILE_DATA) {
        assert_int_equal(execbox_result_to_jansson(r, flags, &v, &err), 0);
        o = to_json(r, flags);
        assert_true(json_equal(v, o));
        json_decref(o);
        json_decref(v);
    }
    assert_int_equal(execbox_result_to_jansson(NULL, 0, &v, &err), -EINVAL);
    assert_int_equal(execbox_result_to_jansson(r, 0, NULL, &err), -EINVAL);
    execbox_result_free(r);
}

/* A record read back (what the remote backend does with another execbox's answer) writes out
 * exactly as it came in; malformed ones are refused naming the field. */
static void test_from_object_round_trip(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("jail", "python");
    assert_non_null(r);
    r->stdout_data = strdup("out\n");
    r->stdout_len = 4;
    r->stderr_data = strdup("Traceback...\nValueError: x\n");
    r->stderr_len = strlen(r->stderr_data);
    r->stdout_bytes = 4000;
    r->stderr_bytes = r->stderr_len;
    r->stdout_truncated = true;
    r->exit_code = 137;
    r->signal = 9;
    r->oom_killed = true;
    r->killed_reason = EXECBOX_KILLED_MEMORY;
    r->execution_time = 1.25;
    r->cpu_time = 0.5;
    r->peak_memory_bytes = 1 << 20;
    assert_int_equal(eb_result_set_error(r, "MemoryLimit", "over", "tb"), 0);
    r->files = calloc(1, sizeof(*r->files));
    r->n_files = 1;
    r->files[0].path = strdup("a.png");
    r->files[0].mime = strdup("image/png");
    r->files[0].data = (unsigned char *)strdup("\x89PNG!");
    r->files[0].data_len = 5;
    r->files[0].size = 5;
    r->files[0].origin = EXECBOX_FILE_CHANGED;
    assert_int_equal(eb_result_add_degraded(r, "seccomp"), 0);
    json_t *o = eb_result_to_object(r, 0);
    struct execbox_result *back = eb_result_new("jail", "python");
    struct execbox_error err = {0, ""};
    assert_int_equal(eb_result_from_object(o, back, &err), 0);
    json_t *o2 = eb_result_to_object(back, 0);
    assert_true(json_equal(o, o2));
    json_decref(o2);
    execbox_result_free(back);

    static const char *const bad[] = {
        "[]",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":\"0\",\"execution_time\":0}",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0}",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,\"execution_time\":0,"
        "\"killed_reason\":\"bored\"}",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,\"execution_time\":0,"
        "\"files\":[{\"path\":\"a\",\"size\":1,\"data\":\"!!!!\"}]}",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,\"execution_time\":0,"
        "\"files\":[{\"path\":\"a\",\"size\":1,\"origin\":\"borrowed\"}]}",
        "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":999,\"execution_time\":0}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        back = eb_result_new("remote", "python");
        assert_int_equal(eb_result_from_object(j, back, &err), -EBADMSG);
        assert_true(err.msg[0] != 0);
        execbox_result_free(back);
        json_decref(j);
    }
    json_decref(o);
    execbox_result_free(r);
}

static void test_base64_decode(void **state)
{
    (void)state;
    static const char *const in[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "iVBORw0KGgpyZXN0"};
    static const char *const out[] = {"", "f", "fo", "foo", "foob", "\x89PNG\r\n\x1a\nrest"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        unsigned char *d = NULL;
        size_t n = 0;
        assert_int_equal(eb_base64_decode(in[i], strlen(in[i]), &d, &n), 0);
        assert_int_equal(n, strlen(out[i]));
        assert_memory_equal(d, out[i], n);
        char *again = execbox_base64(d, n);
        assert_string_equal(again, in[i]);
        free(again);
        free(d);
    }
    static const char *const bad[] = {"Zg=", "Z===", "Zg=a", "=Zg=", "Zm9v!A==", "Zg==Zg=="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        unsigned char *d = NULL;
        size_t n = 0;
        assert_int_equal(eb_base64_decode(bad[i], strlen(bad[i]), &d, &n), -EBADMSG);
    }
}

static void test_degraded(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("jail", "python");
    assert_non_null(r);
    assert_int_equal(eb_result_add_degraded(r, "seccomp"), 0);
    assert_int_equal(eb_result_add_degraded(r, "landlock"), 0);
    json_t *o = to_json(r, 0);
    json_t *d = json_object_get(o, "degraded");
    assert_int_equal(json_array_size(d), 2);
    assert_string_equal(json_string_value(json_array_get(d, 0)), "seccomp");
    assert_string_equal(json_string_value(json_array_get(d, 1)), "landlock");
    json_decref(o);
    execbox_result_free(r);
}

static void test_sandbox_error(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    r->stderr_data = strdup("partial");
    r->stderr_len = 7;
    r->stderr_bytes = 7;
    assert_int_equal(eb_result_sandbox_error(r, "cannot execute interpreter '/nope'"), 0);
    assert_int_equal(r->exit_code, 1);
    assert_string_equal(r->error_name, "SandboxError");
    assert_string_equal(r->error_value, "cannot execute interpreter '/nope'");
    assert_string_equal(r->stderr_data, "partial\nexecbox: cannot execute interpreter '/nope'\n");
    assert_int_equal(r->stderr_len, strlen(r->stderr_data));
    assert_int_equal(r->stderr_bytes, r->stderr_len);
    /* On an empty stderr, no leading newline. */
    struct execbox_result *q = eb_result_new("subprocess", "python");
    assert_int_equal(eb_result_sandbox_error(q, "fork failed"), 0);
    assert_string_equal(q->stderr_data, "execbox: fork failed\n");
    execbox_result_free(q);
    execbox_result_free(r);
}

static void test_pretty_and_args(void **state)
{
    (void)state;
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    char *s = NULL;
    assert_int_equal(execbox_result_to_json(r, EXECBOX_JSON_PRETTY, &s, NULL), 0);
    assert_non_null(strstr(s, "\n  \"stdout\": \"\""));
    execbox_free(s);
    assert_int_equal(execbox_result_to_json(r, 0, &s, NULL), 0);
    assert_null(strchr(s, '\n'));
    execbox_free(s);
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_result_to_json(NULL, 0, &s, &err), -EINVAL);
    assert_int_equal(execbox_result_to_json(r, 0, NULL, &err), -EINVAL);
    execbox_result_free(r);
    assert_null(execbox_result_free(NULL));
}

static void test_oom_rule(void **state)
{
    (void)state;
    struct execbox_policy p;
    execbox_policy_init(&p);
    /* The program died of SIGKILL and the cgroup saw an OOM kill: an OOM kill. */
    struct execbox_result *r = eb_result_new("jail", "python");
    r->signal = SIGKILL;
    r->exit_code = 137;
    char files[160];
    assert_ptr_equal(eb_oom_files_detail(files, sizeof(files), 180U << 20, 0), files);
    assert_int_equal(eb_result_apply_oom(r, &p, 1, files, "detail"), 1);
    assert_true(r->oom_killed);
    assert_int_equal(r->killed_reason, EXECBOX_KILLED_MEMORY);
    assert_string_equal(r->error_name, "MemoryLimit");
    assert_non_null(strstr(r->error_value, "256 MiB"));
    assert_non_null(strstr(r->error_value, "; detail"));
    /* The cap covers the files of its tmpfs: their share and where, beside the limit. */
    assert_non_null(strstr(r->error_value, "limit of 256 MiB (of which 180 MiB were files in "
                                           "/tmp and /dev/shm) and was killed"));
    execbox_result_free(r);
    assert_null(eb_oom_files_detail(files, sizeof(files), 4096, 4096));
    assert_ptr_equal(eb_oom_files_detail(files, sizeof(files), 0, 40U << 20), files);
    assert_string_equal(files, "of which 40 MiB were files in /workspace");
    assert_ptr_equal(eb_oom_files_detail(files, sizeof(files), 20U << 20, 40U << 20), files);
    assert_string_equal(files, "of which 60 MiB were files: 20 MiB in /tmp and /dev/shm, "
                               "40 MiB in /workspace");
    /* Another process was OOM-killed; the program lived on and exited: its status stands. */
    r = eb_result_new("jail", "python");
    r->exit_code = 0;
    assert_int_equal(eb_result_apply_oom(r, &p, 1, NULL, NULL), 0);
    assert_false(r->oom_killed);
    assert_null(r->error_name);
    execbox_result_free(r);
    /* SIGKILL without an OOM kill, or our own deadline's SIGKILL: not memory. */
    r = eb_result_new("jail", "python");
    r->signal = SIGKILL;
    assert_int_equal(eb_result_apply_oom(r, &p, 0, NULL, NULL), 0);
    r->timed_out = true;
    assert_int_equal(eb_result_apply_oom(r, &p, 3, NULL, NULL), 0);
    r->timed_out = false;
    r->killed_reason = EXECBOX_KILLED_CANCELLED;
    assert_int_equal(eb_result_apply_oom(r, &p, 3, NULL, NULL), 0);
    assert_false(r->oom_killed);
    execbox_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_rich_results),
        cmocka_unit_test(test_killed_reason_names),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_invalid_utf8_everywhere),
        cmocka_unit_test(test_sanitize_direct),
        cmocka_unit_test(test_sanitize_pending),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_degraded),
        cmocka_unit_test(test_sandbox_error),
        cmocka_unit_test(test_pretty_and_args),
        cmocka_unit_test(test_from_object_round_trip),
        cmocka_unit_test(test_base64_decode),
        cmocka_unit_test(test_oom_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
