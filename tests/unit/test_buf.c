/* SPDX-License-Identifier: MIT */
/* test_buf.c - the capped head+tail output buffer: caps, counts, the marker line, limits at
 * both ends of the accepted range, many small appends against one large one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "limits.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
