/* SPDX-License-Identifier: MIT */
/* test_buf.c - the capped head+tail output buffer: caps, counts, the marker line, limits at
 * both ends of the accepted range, many small appends against one large one; the live view a
 * streaming caller is given (eb_capbuf_take). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/limits.h"

/* Byte i of a deterministic stream: easy to check which bytes were kept. */
static char pat(uint64_t i)
{
    return (char)('a' + (i * 7 + i / 26) % 26);
}

static void fill(char *d, uint64_t from, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = pat(from + i);
}

/* Checks a finished buffer of a stream of total bytes under limit. */
static void check_finished(const char *s, size_t len, uint64_t total, size_t limit)
{
    size_t head = limit - limit / 2, tail = limit / 2;
    if (total <= limit) {
        assert_int_equal(len, total);
        for (size_t i = 0; i < len; i++)
            assert_int_equal(s[i], pat(i));
        assert_int_equal(s[len], '\0');
        return;
    }
    char marker[128];
    snprintf(marker, sizeof(marker), "\n[... execbox: %llu bytes omitted ...]\n",
             (unsigned long long)(total - limit));
    size_t mlen = strlen(marker);
    assert_int_equal(len, head + mlen + tail);
    for (size_t i = 0; i < head; i++)
        assert_int_equal(s[i], pat(i));
    assert_memory_equal(s + head, marker, mlen);
    for (size_t i = 0; i < tail; i++)
        assert_int_equal(s[head + mlen + i], pat(total - tail + i));
    assert_int_equal(s[len], '\0');
}

static void run_stream(size_t limit, uint64_t total, size_t chunk)
{
    struct eb_capbuf b;
    eb_capbuf_init(&b, limit);
    char *d = malloc(chunk);
    assert_non_null(d);
    for (uint64_t off = 0; off < total;) {
        size_t n = total - off < chunk ? (size_t)(total - off) : chunk;
        fill(d, off, n);
        assert_int_equal(eb_capbuf_append(&b, d, n), 0);
        off += n;
    }
    free(d);
    assert_int_equal(b.total, total);
    assert_int_equal(eb_capbuf_truncated(&b), total > limit);
    char *s = NULL;
    size_t len = 0;
    assert_int_equal(eb_capbuf_finish(&b, &s, &len), 0);
    check_finished(s, len, total, limit);
    free(s);
    /* finish resets the buffer: it can be freed again safely. */
    assert_int_equal(b.total, 0);
    eb_capbuf_free(&b);
}

static void test_empty(void **state)
{
    (void)state;
    struct eb_capbuf b;
    eb_capbuf_init(&b, 1024);
    assert_false(eb_capbuf_truncated(&b));
    char *s = NULL;
    size_t len = 99;
    assert_int_equal(eb_capbuf_finish(&b, &s, &len), 0);
    assert_non_null(s);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    free(s);
}

static void test_under_and_at_limit(void **state)
{
    (void)state;
    run_stream(1024, 1, 1);
    run_stream(1024, 1023, 100);
    run_stream(1024, 1024, 1024);
    run_stream(1024, 1024, 1);
}

static void test_just_over_limit(void **state)
{
    (void)state;
    run_stream(1024, 1025, 1);
    run_stream(1024, 1025, 1025);
    run_stream(1024, 1025, 7);
}

static void test_far_over_limit(void **state)
{
    (void)state;
    run_stream(1000, 1000000, 1);
    run_stream(1000, 1000000, 333);
    run_stream(1000, 1000000, 1000000);
    run_stream(1001, 123457, 4096); /* odd limit: head one byte larger than tail */
}

static void test_many_small_vs_one_huge(void **state)
{
    (void)state;
    /* The same stream in 1-byte appends and in one append must give the same text. */
    size_t limit = 4096;
    uint64_t total = 100000;
    char *all = malloc(total);
    assert_non_null(all);
    fill(all, 0, total);
    struct eb_capbuf a, b;
    eb_capbuf_init(&a, limit);
    eb_capbuf_init(&b, limit);
    for (uint64_t i = 0; i < total; i++)
        assert_int_equal(eb_capbuf_append(&a, all + i, 1), 0);
    assert_int_equal(eb_capbuf_append(&b, all, total), 0);
    char *sa, *sb;
    size_t la, lb;
    assert_int_equal(eb_capbuf_finish(&a, &sa, &la), 0);
    assert_int_equal(eb_capbuf_finish(&b, &sb, &lb), 0);
    assert_int_equal(la, lb);
    assert_memory_equal(sa, sb, la);
    check_finished(sa, la, total, limit);
    free(sa);
    free(sb);
    free(all);
}

static void test_tail_wraps_at_every_offset(void **state)
{
    (void)state;
    /* Chunk sizes that are not divisors of the tail exercise every ring wrap position. */
    for (size_t chunk = 1; chunk < 40; chunk++)
        run_stream(64, 1000 + chunk, chunk);
}

static void test_min_limit(void **state)
{
    (void)state;
    assert_int_equal(EB_OUTPUT_LIMIT_MIN, 64);
    run_stream(EB_OUTPUT_LIMIT_MIN, 63, 63);
    run_stream(EB_OUTPUT_LIMIT_MIN, 64, 1);
    run_stream(EB_OUTPUT_LIMIT_MIN, 65, 65);
    run_stream(EB_OUTPUT_LIMIT_MIN, 1 << 20, 4096);
}

static void test_max_limit(void **state)
{
    (void)state;
    /* A 1 GiB limit must not allocate 1 GiB up front: small output stays small. */
    struct eb_capbuf b;
    eb_capbuf_init(&b, EB_OUTPUT_LIMIT_MAX);
    assert_int_equal(b.head_cap + b.tail_cap, EB_OUTPUT_LIMIT_MAX);
    assert_int_equal(eb_capbuf_append(&b, "hello", 5), 0);
    assert_null(b.tail);
    assert_false(eb_capbuf_truncated(&b));
    char *s;
    size_t len;
    assert_int_equal(eb_capbuf_finish(&b, &s, &len), 0);
    assert_string_equal(s, "hello");
    free(s);
    /* A few MB under the 1 GiB limit: kept whole. */
    run_stream(EB_OUTPUT_LIMIT_MAX, 3 << 20, 65536);
}

static void test_counts_past_4g(void **state)
{
    (void)state;
    /* The total is 64-bit: counting past 4 GiB of output must not wrap. */
    struct eb_capbuf b;
    eb_capbuf_init(&b, 64);
    size_t chunk = 1 << 20;
    char *d = calloc(1, chunk);
    assert_non_null(d);
    for (int i = 0; i < 4097; i++)
        assert_int_equal(eb_capbuf_append(&b, d, chunk), 0);
    assert_int_equal(b.total, 4097ULL << 20);
    assert_true(eb_capbuf_truncated(&b));
    char *s;
    size_t len;
    assert_int_equal(eb_capbuf_finish(&b, &s, &len), 0);
    assert_non_null(strstr(s + 32, "4296015808 bytes omitted"));
    free(s);
    free(d);
}

static void test_zero_length_append(void **state)
{
    (void)state;
    struct eb_capbuf b;
    eb_capbuf_init(&b, 64);
    assert_int_equal(eb_capbuf_append(&b, "", 0), 0);
    assert_int_equal(b.total, 0);
    assert_false(eb_capbuf_truncated(&b));
    eb_capbuf_free(&b);
}

/* What a streaming caller was given, per stream. */
struct seen {
    char data[2][4096];
    size_t len[2];
    int calls[2];
};

static void on_output(void *ud, enum execbox_stream which, const char *data, size_t len)
{
    struct seen *v = ud;
    int k = which == EXECBOX_STREAM_STDERR;
    assert_true(v->len[k] + len <= sizeof(v->data[k]));
    memcpy(v->data[k] + v->len[k], data, len);
    v->len[k] += len;
    v->calls[k]++;
}

static void take_stream(size_t limit, uint64_t total, size_t chunk, struct seen *v)
{
    struct eb_capbuf b;
    eb_capbuf_init(&b, limit);
    char d[1000];
    assert_true(chunk <= sizeof(d));
    for (uint64_t off = 0; off < total;) {
        size_t n = total - off < chunk ? (size_t)(total - off) : chunk;
        fill(d, off, n);
        assert_int_equal(eb_capbuf_take(&b, on_output, v, EXECBOX_STREAM_STDOUT, d, n), 0);
        off += n;
    }
    eb_capbuf_take_end(&b, on_output, v, EXECBOX_STREAM_STDOUT);
    /* The buffered record is the same as without a caller. */
    char *s = NULL;
    size_t len = 0;
    assert_int_equal(eb_capbuf_finish(&b, &s, &len), 0);
    check_finished(s, len, total, limit);
    free(s);
}

static void test_take_streams_up_to_the_limit(void **state)
{
    (void)state;
    size_t chunks[] = {1, 7, 100, 1000};
    for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
        /* Under and at the limit: every byte, no note. */
        struct seen v = {0};
        take_stream(1024, 1024, chunks[c], &v);
        assert_int_equal(v.len[0], 1024);
        for (size_t i = 0; i < 1024; i++)
            assert_int_equal(v.data[0][i], pat(i));
        /* Over it: the first limit bytes, then one note naming the rest. */
        struct seen w = {0};
        take_stream(1024, 100000, chunks[c], &w);
        const char *note = "\n[... execbox: 98976 bytes omitted ...]\n";
        assert_int_equal(w.len[0], 1024 + strlen(note));
        for (size_t i = 0; i < 1024; i++)
            assert_int_equal(w.data[0][i], pat(i));
        assert_memory_equal(w.data[0] + 1024, note, strlen(note));
        assert_int_equal(w.len[1], 0);
    }
}

static void test_take_cuts_inside_a_chunk(void **state)
{
    (void)state;
    /* The cut falls where the limit does, inside a chunk and inside a UTF-8 sequence as the
     * head's does; later chunks are held back whole; the note comes only at the end. */
    struct seen v = {0};
    struct eb_capbuf b;
    eb_capbuf_init(&b, 63);
    const char *text = "..............................................................\xc3\xa9x";
    size_t n = strlen(text);
    assert_int_equal(eb_capbuf_take(&b, on_output, &v, EXECBOX_STREAM_STDERR, text, n), 0);
    assert_int_equal(eb_capbuf_take(&b, on_output, &v, EXECBOX_STREAM_STDERR, "more", 4), 0);
    assert_int_equal(v.len[1], 63);
    assert_int_equal(v.calls[1], 1);
    assert_memory_equal(v.data[1], text, 63);
    eb_capbuf_take_end(&b, on_output, &v, EXECBOX_STREAM_STDERR);
    const char *note = "\n[... execbox: 6 bytes omitted ...]\n";
    assert_int_equal(v.len[1], 63 + strlen(note));
    assert_memory_equal(v.data[1] + 63, note, strlen(note));
    assert_int_equal(v.calls[1], 2);
    assert_int_equal(v.len[0], 0);
    assert_int_equal(b.total, n + 4);
    eb_capbuf_free(&b);
    /* Without a caller nothing is passed on and no note is made. */
    eb_capbuf_init(&b, 64);
    assert_int_equal(eb_capbuf_take(&b, NULL, NULL, EXECBOX_STREAM_STDOUT, "abc", 3), 0);
    eb_capbuf_take_end(&b, NULL, NULL, EXECBOX_STREAM_STDOUT);
    assert_int_equal(b.total, 3);
    eb_capbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_under_and_at_limit),
        cmocka_unit_test(test_just_over_limit),
        cmocka_unit_test(test_far_over_limit),
        cmocka_unit_test(test_many_small_vs_one_huge),
        cmocka_unit_test(test_tail_wraps_at_every_offset),
        cmocka_unit_test(test_min_limit),
        cmocka_unit_test(test_max_limit),
        cmocka_unit_test(test_counts_past_4g),
        cmocka_unit_test(test_zero_length_append),
        cmocka_unit_test(test_take_streams_up_to_the_limit),
        cmocka_unit_test(test_take_cuts_inside_a_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
