/* SPDX-License-Identifier: MIT */
/* test_tlshello.c - the ClientHello server-name parser: a well-formed hello, every prefix of it,
 * no extensions, no server_name, lengths that overrun what encloses them, names with a NUL or
 * too long, not TLS at all, and every single-byte corruption and random input (run under ASan
 * these prove no read past the buffer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jail/tlshello.h"

static size_t put16(unsigned char *b, size_t o, size_t v)
{
    b[o] = (unsigned char)(v >> 8);
    b[o + 1] = (unsigned char)v;
    return o + 2;
}

/* A ClientHello record naming sni (NULL: extensions without server_name; "" : no extensions
 * block at all). Returns its length. */
static size_t hello(unsigned char *b, const char *sni)
{
    size_t o = 9; /* record header 5, handshake header 4: filled in at the end */
    b[o++] = 3;
    b[o++] = 3;
    memset(b + o, 0xab, 32);
    o += 32;
    b[o++] = 0; /* session id */
    o = put16(b, o, 2);
    b[o++] = 0x13;
    b[o++] = 0x01;
    b[o++] = 1;
    b[o++] = 0; /* null compression */
    if (!sni || *sni) {
        size_t ext_at = o;
        o += 2;
        /* an unrelated extension first: supported_versions */
        o = put16(b, o, 43);
        o = put16(b, o, 3);
        b[o++] = 2;
        b[o++] = 3;
        b[o++] = 4;
        if (sni) {
            size_t n = strlen(sni);
            o = put16(b, o, 0);
            o = put16(b, o, n + 5);
            o = put16(b, o, n + 3);
            b[o++] = 0;
            o = put16(b, o, n);
            memcpy(b + o, sni, n);
            o += n;
        }
        put16(b, ext_at, o - ext_at - 2);
    }
    size_t hs = o - 9;
    b[0] = 22;
    b[1] = 3;
    b[2] = 1;
    put16(b, 3, o - 5);
    b[5] = 1;
    b[6] = (unsigned char)(hs >> 16);
    put16(b, 7, hs & 0xffff);
    return o;
}

static void test_well_formed(void **state)
{
    (void)state;
    unsigned char b[1024];
    char name[256];
    size_t n = hello(b, "Web.Test");
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_FOUND);
    assert_string_equal(name, "Web.Test");
    /* bytes after the record (the rest of a flight) do not matter */
    memset(b + n, 0x17, 100);
    assert_int_equal(eb_tls_sni(b, n + 100, name, sizeof(name)), EB_SNI_FOUND);
    n = hello(b, NULL);
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_NONE);
    n = hello(b, "");
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_NONE);
}

static void test_every_prefix_wants_more(void **state)
{
    (void)state;
    unsigned char b[1024];
    char name[256];
    size_t n = hello(b, "web.test");
    for (size_t k = 0; k < n; k++) {
        unsigned char *copy = malloc(k ? k : 1); /* exact size: ASan sees any overread */
        memcpy(copy, b, k);
        assert_int_equal(eb_tls_sni(copy, k, name, sizeof(name)), EB_SNI_MORE);
        free(copy);
    }
}

static void test_not_tls(void **state)
{
    (void)state;
    char name[256];
    const char *get = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal(eb_tls_sni((const unsigned char *)get, strlen(get), name, sizeof(name)),
                     EB_SNI_NOT_TLS);
    const unsigned char ssh[] = "SSH-2.0-x\r\n";
    assert_int_equal(eb_tls_sni(ssh, 1, name, sizeof(name)), EB_SNI_NOT_TLS);
    /* a handshake record holding something other than a ClientHello */
    unsigned char b[1024];
    size_t n = hello(b, "web.test");
    b[5] = 2;
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_NOT_TLS);
    /* a hello longer than its record (split over records) */
    n = hello(b, "web.test");
    b[6] = 1;
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_NOT_TLS);
}

static void test_bad_names_and_lengths(void **state)
{
    (void)state;
    unsigned char b[2048];
    char name[256];
    size_t n = hello(b, "web.test");
    b[n - 3] = '\0'; /* a NUL inside the name */
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_MALFORMED);
    char longname[300];
    memset(longname, 'a', 299);
    longname[299] = '\0';
    n = hello(b, longname);
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_MALFORMED);
    /* a record length over 2^14 */
    n = hello(b, "web.test");
    put16(b, 3, 16385);
    assert_int_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_MALFORMED);
    /* the name's length runs past its list */
    n = hello(b, "web.test");
    put16(b, n - 10, 200);
    assert_int_not_equal(eb_tls_sni(b, n, name, sizeof(name)), EB_SNI_FOUND);
}

/* Every one-byte corruption and random records: no crash, no read past n (under ASan), and a
 * FOUND name is always NUL-terminated and short. */
static void test_corruptions_and_noise(void **state)
{
    (void)state;
    unsigned char b[1024];
    char name[256];
    size_t n = hello(b, "web.test");
    for (size_t i = 0; i < n; i++) {
        for (int v = 0; v < 256; v += 17) {
            unsigned char *copy = malloc(n);
            memcpy(copy, b, n);
            copy[i] = (unsigned char)v;
            if (eb_tls_sni(copy, n, name, sizeof(name)) == EB_SNI_FOUND)
                assert_true(strlen(name) < 256);
            free(copy);
        }
    }
    srand(7);
    for (int round = 0; round < 20000; round++) {
        size_t k = (size_t)rand() % 600;
        unsigned char *copy = malloc(k ? k : 1);
        for (size_t i = 0; i < k; i++)
            copy[i] = (unsigned char)rand();
        if (k > 5) {
            copy[0] = 22;
            copy[1] = 3;
            put16(copy, 3, k - 5);
        }
        if (k > 6)
            copy[5] = 1;
        if (eb_tls_sni(copy, k, name, sizeof(name)) == EB_SNI_FOUND)
            assert_true(strlen(name) < 256);
        free(copy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_well_formed),
        cmocka_unit_test(test_every_prefix_wants_more),
        cmocka_unit_test(test_not_tls),
        cmocka_unit_test(test_bad_names_and_lengths),
        cmocka_unit_test(test_corruptions_and_noise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
