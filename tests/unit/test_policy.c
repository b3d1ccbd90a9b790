/* SPDX-License-Identifier: MIT */
/* test_policy.c - the security policy: defaults, sizes, every field from text and from JSON
 * (good and bad values, and that a failure changes nothing), policy files, the check against a
 * maximum, and the JSON round trip. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/limits.h"
#include "execbox/execbox.h"
#include "model/hostrule.h"
#include "model/policy.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("'%s' does not contain '%s'", hay, needle);
}

static void test_defaults(void **state)
{
    (void)state;
    struct execbox_policy p;
    memset(&p, 0xAB, sizeof(p));
    execbox_policy_init(&p);
    assert_true(p.timeout == 10.0);
    assert_int_equal(p.memory, 256 * MiB);
    assert_true(p.cpus == 1.0);
    assert_int_equal(p.pids, 64);
    assert_int_equal(p.network, EXECBOX_NETWORK_NONE);
    assert_int_equal(p.tmpfs, 64 * MiB);
    assert_int_equal(p.workspace_size, 256 * MiB);
    assert_int_equal(p.output_limit, 1 * MiB);
    assert_int_equal(p.file_size, 64 * MiB);
    assert_string_equal(p.workspace, "");
    assert_string_equal(p.rootfs, "");
    /* A zeroed policy resolves to the same values. */
    struct execbox_policy z;
    memset(&z, 0, sizeof(z));
    eb_policy_resolve(&z);
    assert_memory_equal(&z, &p, sizeof(p));
}

static void test_parse_size_good(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } cases[] = {
        {"256M", 256 * MiB},    {"1.5G", 3 * GiB / 2}, {"64k", 64 << 10},  {"64K", 64 << 10},
        {"512MiB", 512 * MiB},  {"512mib", 512 * MiB}, {"4096", 4096},     {"0", 0},
        {"4096B", 4096},        {"10KB", 10 << 10},    {"2T", 2ULL << 40}, {" 8M ", 8 * MiB},
        {".5M", 512 << 10},     {"1.5K", 1536},        {"1G", GiB},        {"1GiB", GiB},
        {"18446744", 18446744},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 12345;
        struct execbox_error err = {0, ""};
        int r = execbox_parse_size(cases[i].s, &v, &err);
        if (r != 0)
            fail_msg("'%s': %d %s", cases[i].s, r, err.msg);
        if (v != cases[i].v)
            fail_msg("'%s' gave %llu, want %llu", cases[i].s, (unsigned long long)v,
                     (unsigned long long)cases[i].v);
    }
}

static void test_parse_size_bad(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int code;
    } cases[] = {
        {"", -EINVAL},     {"abc", -EINVAL},    {"-1", -EINVAL},    {"-1M", -EINVAL},
        {"10X", -EINVAL},  {"1.5", -EINVAL},    {"M", -EINVAL},     {"5 M x", -EINVAL},
        {"10MM", -EINVAL}, {"10iB", -EINVAL},   {"inf", -EINVAL},   {"nan", -EINVAL},
        {"2P", -EINVAL},   {"99999T", -ERANGE}, {"1e300", -ERANGE}, {"1e30", -ERANGE},
        {"  ", -EINVAL},   {"5,5M", -EINVAL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 777;
        struct execbox_error err = {0, ""};
        int r = execbox_parse_size(cases[i].s, &v, &err);
        if (r != cases[i].code)
            fail_msg("'%s': got %d, want %d (%s)", cases[i].s, r, cases[i].code, err.msg);
        assert_int_equal(err.code, r);
        assert_int_equal(v, 777); /* ret_ written only on success */
        assert_contains(err.msg, cases[i].s);
    }
    struct execbox_error err = {0, ""};
    uint64_t v;
    assert_int_equal(execbox_parse_size(NULL, &v, &err), -EINVAL);
}

/* Sets key=value on a default policy and expects success; returns the policy. */
static struct execbox_policy set_ok(const char *key, const char *value)
{
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct execbox_error err = {0, ""};
    int r = execbox_policy_set(&p, key, value, &err);
    if (r != 0)
        fail_msg("%s=%s: %d %s", key, value, r, err.msg);
    return p;
}

/* Expects key=value to fail with -EINVAL (or code), the policy unchanged, the message naming
 * the field. */
static void set_bad(const char *key, const char *value, int code, const char *named)
{
    struct execbox_policy p, before;
    execbox_policy_init(&p);
    before = p;
    struct execbox_error err = {0, ""};
    int r = execbox_policy_set(&p, key, value, &err);
    if (r != code)
        fail_msg("%s=%s: got %d, want %d (%s)", key, value, r, code, err.msg);
    assert_int_equal(err.code, code);
    assert_memory_equal(&p, &before, sizeof(p));
    assert_contains(err.msg, named);
}

static void test_set_every_field(void **state)
{
    (void)state;
    assert_true(set_ok("timeout", "2.5").timeout == 2.5);
    assert_true(set_ok("timeout", "0.001").timeout == 0.001);
    assert_true(set_ok("timeout", "86400").timeout == 86400);
    assert_int_equal(set_ok("memory", "512MiB").memory, 512 * MiB);
    assert_int_equal(set_ok("memory", "1.5G").memory, 3 * GiB / 2);
    assert_int_equal(set_ok("memory", "4194304").memory, 4 * MiB);
    assert_true(set_ok("cpus", "0.5").cpus == 0.5);
    assert_true(set_ok("cpus", "16").cpus == 16);
    assert_int_equal(set_ok("pids", "1").pids, 1);
    assert_int_equal(set_ok("pids", "1000000").pids, 1000000);
    assert_int_equal(set_ok("network", "none").network, EXECBOX_NETWORK_NONE);
    assert_int_equal(set_ok("tmpfs", "64k").tmpfs, 64 << 10);
    assert_int_equal(set_ok("workspace_size", "1G").workspace_size, GiB);
    assert_int_equal(set_ok("output_limit", "64").output_limit, 64);
    assert_int_equal(set_ok("output_limit", "1G").output_limit, GiB);
    assert_int_equal(set_ok("file_size", "1").file_size, 1);
    assert_string_equal(set_ok("workspace", "/srv/data").workspace, "/srv/data");
    assert_string_equal(set_ok("rootfs", "/srv/root").rootfs, "/srv/root");
    assert_string_equal(set_ok("workspace", "").workspace, "");
}

static void test_set_dash_and_underscore(void **state)
{
    (void)state;
    assert_int_equal(set_ok("output-limit", "1k").output_limit, 1024);
    assert_int_equal(set_ok("output_limit", "1k").output_limit, 1024);
    assert_int_equal(set_ok("file-size", "2M").file_size, 2 * MiB);
    assert_int_equal(set_ok("workspace-size", "2M").workspace_size, 2 * MiB);
}

static void test_set_relative_path(void **state)
{
    (void)state;
    char cwd[EXECBOX_PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    struct execbox_policy p = set_ok("workspace", ".");
    char *real = realpath(cwd, NULL);
    assert_string_equal(p.workspace, real);
    free(real);
    set_bad("workspace", "no/such/dir/here", -ENOENT, "workspace");
    char longp[EXECBOX_PATH_MAX + 10];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    set_bad("rootfs", longp, -ENAMETOOLONG, "rootfs");
}

static void test_set_bad_values(void **state)
{
    (void)state;
    set_bad("timeout", "", -EINVAL, "timeout");
    set_bad("timeout", "abc", -EINVAL, "timeout");
    set_bad("timeout", "-1", -EINVAL, "timeout");
    set_bad("timeout", "0", -EINVAL, "timeout");
    set_bad("timeout", "86401", -EINVAL, "timeout");
    set_bad("timeout", "nan", -EINVAL, "timeout");
    set_bad("timeout", "inf", -EINVAL, "timeout");
    set_bad("timeout", "5s", -EINVAL, "timeout");
    set_bad("timeout", "1e999", -EINVAL, "timeout");
    set_bad("memory", "", -EINVAL, "memory");
    set_bad("memory", "abc", -EINVAL, "memory");
    set_bad("memory", "-1", -EINVAL, "memory");
    set_bad("memory", "10X", -EINVAL, "memory");
    set_bad("memory", "1.5", -EINVAL, "memory");
    set_bad("memory", "1M", -EINVAL, "memory"); /* below the 4M minimum */
    set_bad("memory", "99999999T", -ERANGE, "memory");
    set_bad("cpus", "0", -EINVAL, "cpus");
    set_bad("cpus", "-2", -EINVAL, "cpus");
    set_bad("cpus", "1025", -EINVAL, "cpus");
    set_bad("cpus", "one", -EINVAL, "cpus");
    set_bad("pids", "0", -EINVAL, "pids");
    set_bad("pids", "-1", -EINVAL, "pids");
    set_bad("pids", "1.5", -EINVAL, "pids");
    set_bad("pids", "", -EINVAL, "pids");
    set_bad("pids", "1000001", -EINVAL, "pids");
    set_bad("pids", "99999999999999999999999", -EINVAL, "pids");
    set_bad("pids", " 5", -EINVAL, "pids");
    set_bad("network", "host", -EINVAL, "network");
    set_bad("network", "bridge", -EINVAL, "network");
    set_bad("network", "", -EINVAL, "network");
    set_bad("tmpfs", "1k", -EINVAL, "tmpfs");
    set_bad("output_limit", "63", -EINVAL, "output_limit");
    set_bad("output-limit", "2G", -EINVAL, "output_limit");
    set_bad("file_size", "0", -EINVAL, "file_size");
    set_bad("workspace_size", "abc", -EINVAL, "workspace_size");
}

static void test_set_unknown_key(void **state)
{
    (void)state;
    set_bad("colour", "blue", -EINVAL, "colour");
    set_bad("", "1", -EINVAL, "unknown");
    set_bad("timeout_", "1", -EINVAL, "timeout_");
    set_bad("a_very_long_key_name_that_is_longer_than_32", "1", -EINVAL, "a_very_long");
    set_bad("Timeout", "1", -EINVAL, "Timeout");
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_policy_set(&p, NULL, "1", &err), -EINVAL);
    assert_int_equal(execbox_policy_set(&p, "timeout", NULL, &err), -EINVAL);
    assert_int_equal(execbox_policy_set(&p, "timeout", "5", NULL), 0); /* err may be NULL */
    assert_int_equal(execbox_policy_set(&p, "timeout", "x", NULL), -EINVAL);
}

static void merge_ok(struct execbox_policy *p, const char *json)
{
    struct execbox_error err = {0, ""};
    int r = execbox_policy_merge_json(p, json, 0, &err);
    if (r != 0)
        fail_msg("%s: %d %s", json, r, err.msg);
}

static void merge_bad(const char *json, size_t len, int code, const char *named)
{
    struct execbox_policy p, before;
    execbox_policy_init(&p);
    p.timeout = 3; /* a non-default value that must survive */
    before = p;
    struct execbox_error err = {0, ""};
    int r = execbox_policy_merge_json(&p, json, len, &err);
    if (r != code)
        fail_msg("%s: got %d, want %d (%s)", json, r, code, err.msg);
    assert_memory_equal(&p, &before, sizeof(p));
    if (named)
        assert_contains(err.msg, named);
}

/* The typed setters: the same policy as the text form, the same checks and error kinds, the
 * policy unchanged on failure, and a type the field does not take refused. */
static void typed_bad(int r, struct execbox_policy *p, const struct execbox_policy *before,
                      const struct execbox_error *err, enum execbox_error_kind kind,
                      const char *field, const char *named)
{
    assert_int_equal(r, -EINVAL);
    assert_memory_equal(p, before, sizeof(*p));
    assert_int_equal(err->kind, kind);
    assert_string_equal(err->field, field);
    assert_contains(err->msg, named);
}

static void test_typed_setters(void **state)
{
    (void)state;
    struct execbox_policy a, b;
    struct execbox_error err = {0, ""};
    execbox_policy_init(&a);
    assert_int_equal(execbox_policy_set_real(&a, "timeout", 2.5, &err), 0);
    assert_int_equal(execbox_policy_set_int(&a, "memory", 300 * (int64_t)MiB, &err), 0);
    assert_int_equal(execbox_policy_set_real(&a, "cpus", 0.5, &err), 0);
    assert_int_equal(execbox_policy_set_int(&a, "pids", 32, &err), 0);
    assert_int_equal(execbox_policy_set_real(&a, "tmpfs", 8.0 * MiB, &err), 0);
    assert_int_equal(execbox_policy_set_string(&a, "workspace_size", "16M", &err), 0);
    assert_int_equal(execbox_policy_set_string(&a, "network", "allow", &err), 0);
    assert_int_equal(execbox_policy_set_string(&a, "allow_hosts", "pypi.org, x.test:81", &err), 0);
    assert_int_equal(execbox_policy_set_string(&a, "allow-ports", "8080", &err), 0);
    assert_int_equal(execbox_policy_set_int(&a, "timeout", 3, &err), 0);
    execbox_policy_init(&b);
    static const char *const text[][2] = {
        {"timeout", "3"},        {"memory", "300M"},
        {"cpus", "0.5"},         {"pids", "32"},
        {"tmpfs", "8M"},         {"workspace_size", "16M"},
        {"network", "allow"},    {"allow_hosts", "pypi.org,x.test:81"},
        {"allow_ports", "8080"},
    };
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        assert_int_equal(execbox_policy_set(&b, text[i][0], text[i][1], &err), 0);
    assert_memory_equal(&a, &b, sizeof(a));

    struct execbox_policy before = a;
    /* Range checks and their kinds, as the text form has them. */
    typed_bad(execbox_policy_set_real(&a, "timeout", 1e6, &err), &a, &before, &err,
              EXECBOX_ERROR_OVER_MAXIMUM, "timeout", "out of range");
    typed_bad(execbox_policy_set_int(&a, "pids", 0, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "pids", "out of range");
    typed_bad(execbox_policy_set_int(&a, "pids", 1 << 30, &err), &a, &before, &err,
              EXECBOX_ERROR_OVER_MAXIMUM, "pids", "out of range");
    typed_bad(execbox_policy_set_int(&a, "output_limit", 2 * (int64_t)GiB, &err), &a, &before, &err,
              EXECBOX_ERROR_OVER_MAXIMUM, "output_limit", "maximum");
    typed_bad(execbox_policy_set_int(&a, "memory", 4096, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "memory", "below the minimum");
    typed_bad(execbox_policy_set_int(&a, "memory", -1, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "memory", "negative");
    typed_bad(execbox_policy_set_real(&a, "memory", 1.5 * MiB + 0.5, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "memory", "whole number");
    typed_bad(execbox_policy_set_real(&a, "pids", 1e30, &err), &a, &before, &err,
              EXECBOX_ERROR_OVER_MAXIMUM, "pids", "out of range");
    /* Types the field does not take. */
    typed_bad(execbox_policy_set_string(&a, "timeout", "2", &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "timeout", "expected a number");
    typed_bad(execbox_policy_set_int(&a, "network", 1, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "network", "expected a string");
    typed_bad(execbox_policy_set_real(&a, "allow_hosts", 1, &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "allow_hosts", "expected an array");
    typed_bad(execbox_policy_set_string(&a, "network", "some", &err), &a, &before, &err,
              EXECBOX_ERROR_INVALID_VALUE, "network", "some");
    /* Unknown fields, and NULLs. */
    assert_int_equal(execbox_policy_set_int(&a, "colour", 1, &err), -EINVAL);
    assert_int_equal(err.kind, EXECBOX_ERROR_UNKNOWN_FIELD);
    assert_string_equal(err.field, "colour");
    assert_int_equal(execbox_policy_set_string(&a, "network", NULL, &err), -EINVAL);
    assert_int_equal(execbox_policy_set_int(NULL, "pids", 1, &err), -EINVAL);
    assert_int_equal(execbox_policy_set_json(&a, "pids", NULL, NULL), -EINVAL);
    assert_memory_equal(&a, &before, sizeof(a));
}

static void test_merge_json(void **state)
{
    (void)state;
    struct execbox_policy p;
    execbox_policy_init(&p);
    merge_ok(&p, "{\"timeout\": 2.5, \"memory\": \"512M\", \"cpus\": 0.5, \"pids\": 10, "
                 "\"network\": \"none\", \"tmpfs\": 1048576, \"workspace_size\": \"1G\", "
                 "\"output-limit\": 65536, \"file_size\": \"1M\", \"workspace\": \"/srv/w\", "
                 "\"rootfs\": \"/srv/r\"}");
    assert_true(p.timeout == 2.5);
    assert_int_equal(p.memory, 512 * MiB);
    assert_true(p.cpus == 0.5);
    assert_int_equal(p.pids, 10);
    assert_int_equal(p.tmpfs, MiB);
    assert_int_equal(p.workspace_size, GiB);
    assert_int_equal(p.output_limit, 65536);
    assert_int_equal(p.file_size, MiB);
    assert_string_equal(p.workspace, "/srv/w");
    assert_string_equal(p.rootfs, "/srv/r");
    /* Fields not named keep their value; an empty object changes nothing. */
    struct execbox_policy before = p;
    merge_ok(&p, "{}");
    assert_memory_equal(&p, &before, sizeof(p));
    merge_ok(&p, "{\"timeout\": 7}");
    assert_true(p.timeout == 7);
    assert_int_equal(p.memory, 512 * MiB);
    /* Whole numbers written as reals are accepted for sizes and counts. */
    merge_ok(&p, "{\"memory\": 268435456.0, \"pids\": 12.0}");
    assert_int_equal(p.memory, 256 * MiB);
    assert_int_equal(p.pids, 12);
    /* len given: bytes past it are ignored. */
    struct execbox_error err = {0, ""};
    const char *s = "{\"pids\": 5}garbage";
    assert_int_equal(execbox_policy_merge_json(&p, s, 11, &err), 0);
    assert_int_equal(p.pids, 5);
}

static void test_merge_json_bad(void **state)
{
    (void)state;
    merge_bad("{\"timeout\": 5, \"memory\": \"bad\"}", 0, -EINVAL, "memory");
    merge_bad("{\"memory\": \"1G\", \"colour\": 1}", 0, -EINVAL, "colour");
    merge_bad("{\"timeout\": true}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": null}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": [1]}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": {}}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": \"5\"}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": -1}", 0, -EINVAL, "timeout");
    merge_bad("{\"timeout\": 0}", 0, -EINVAL, "timeout");
    merge_bad("{\"pids\": 1.5}", 0, -EINVAL, "pids");
    merge_bad("{\"pids\": \"10\"}", 0, -EINVAL, "pids");
    merge_bad("{\"pids\": 1e20}", 0, -EINVAL, "pids");
    merge_bad("{\"memory\": 1.5}", 0, -EINVAL, "memory");
    merge_bad("{\"memory\": -5}", 0, -EINVAL, "memory");
    merge_bad("{\"memory\": false}", 0, -EINVAL, "memory");
    merge_bad("{\"memory\": 1e300}", 0, -ERANGE, "memory");
    merge_bad("{\"network\": 0}", 0, -EINVAL, "network");
    merge_bad("{\"network\": \"host\"}", 0, -EINVAL, "network");
    merge_bad("{\"workspace\": 5}", 0, -EINVAL, "workspace");
    merge_bad("{\"output_limit\": 10}", 0, -EINVAL, "output_limit");
    merge_bad("{\"cpus\": \"2\"}", 0, -EINVAL, "cpus");
    /* Duplicate keys, malformed JSON, not an object, trailing data. */
    merge_bad("{\"timeout\": 5, \"timeout\": 6}", 0, -EINVAL, "duplicate");
    merge_bad("{\"timeout\": 5", 0, -EINVAL, "policy JSON");
    merge_bad("{timeout: 5}", 0, -EINVAL, "policy JSON");
    merge_bad("", 0, -EINVAL, NULL);
    merge_bad("[]", 0, -EINVAL, "object");
    merge_bad("5", 0, -EINVAL, NULL);
    merge_bad("\"x\"", 0, -EINVAL, NULL);
    merge_bad("{} {}", 0, -EINVAL, NULL);
    merge_bad("{\"timeout\": 5}\0{", 16, -EINVAL, NULL);
    struct execbox_policy p;
    execbox_policy_init(&p);
    assert_int_equal(execbox_policy_merge_json(&p, NULL, 0, NULL), -EINVAL);
    /* Too big. */
    size_t n = EB_POLICY_FILE_MAX + 16;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    merge_bad(big, 0, -EFBIG, NULL);
    free(big);
}

static char tmpdir[64];

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_load_file(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/execbox-test-policy-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char good[128], bad[128], big[128], missing[128];
    snprintf(good, sizeof(good), "%s/good.json", tmpdir);
    snprintf(bad, sizeof(bad), "%s/bad.json", tmpdir);
    snprintf(big, sizeof(big), "%s/big.json", tmpdir);
    snprintf(missing, sizeof(missing), "%s/missing.json", tmpdir);
    const char *g = "{\"timeout\": 3, \"memory\": \"128M\"}\n";
    write_file(good, g, strlen(g));
    const char *b = "{\"timeout\": \"soon\"}";
    write_file(bad, b, strlen(b));
    size_t n = EB_POLICY_FILE_MAX + 1;
    char *blob = malloc(n);
    assert_non_null(blob);
    memset(blob, ' ', n);
    blob[0] = '{';
    blob[n - 1] = '}';
    write_file(big, blob, n);
    free(blob);

    struct execbox_policy p, before;
    execbox_policy_init(&p);
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_policy_load_file(&p, good, &err), 0);
    assert_true(p.timeout == 3);
    assert_int_equal(p.memory, 128 * MiB);
    before = p;
    assert_int_equal(execbox_policy_load_file(&p, missing, &err), -ENOENT);
    assert_contains(err.msg, missing);
    assert_int_equal(execbox_policy_load_file(&p, big, &err), -EFBIG);
    assert_contains(err.msg, big);
    assert_int_equal(execbox_policy_load_file(&p, bad, &err), -EINVAL);
    assert_contains(err.msg, bad);
    assert_contains(err.msg, "timeout");
    assert_int_equal(execbox_policy_load_file(&p, tmpdir, &err) < 0, 1); /* a directory */
    assert_memory_equal(&p, &before, sizeof(p));
    unlink(good);
    unlink(bad);
    unlink(big);
    rmdir(tmpdir);
}

static void within_bad(const char *key, const char *value, const char *named)
{
    struct execbox_policy max, req;
    execbox_policy_init(&max);
    execbox_policy_init(&req);
    assert_int_equal(execbox_policy_set(&req, key, value, NULL), 0);
    struct execbox_error err = {0, ""};
    int r = execbox_policy_check_within(&req, &max, &err);
    if (r != -EPERM)
        fail_msg("%s=%s: got %d (%s)", key, value, r, err.msg);
    assert_contains(err.msg, named);
}

static void test_check_within(void **state)
{
    (void)state;
    struct execbox_policy max, req;
    execbox_policy_init(&max);
    memset(&req, 0, sizeof(req)); /* zero fields count as defaults */
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), 0);
    execbox_policy_init(&req);
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), 0);
    /* Asking for less is fine. */
    req.timeout = 1;
    req.memory = 64 * MiB;
    req.pids = 2;
    req.cpus = 0.25;
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), 0);
    within_bad("timeout", "11", "timeout");
    within_bad("memory", "257M", "memory");
    within_bad("cpus", "1.5", "cpus");
    within_bad("pids", "65", "pids");
    within_bad("tmpfs", "65M", "tmpfs");
    within_bad("workspace_size", "1G", "workspace_size");
    within_bad("output_limit", "2M", "output_limit");
    within_bad("file_size", "65M", "file_size");
    within_bad("workspace", "/srv", "workspace");
    within_bad("rootfs", "/srv", "rootfs");
}

/* Every limit above the maximum is lowered to it, the others kept; host paths are not limits
 * and are left for check_within to refuse. */
static void test_cap(void **state)
{
    (void)state;
    static const char *const above[][2] = {
        {"timeout", "11"}, {"memory", "257M"},       {"cpus", "1.5"},        {"pids", "65"},
        {"tmpfs", "65M"},  {"workspace_size", "1G"}, {"output_limit", "2M"}, {"file_size", "65M"},
    };
    struct execbox_policy max, req;
    execbox_policy_init(&max);
    execbox_policy_init(&req);
    for (size_t i = 0; i < sizeof(above) / sizeof(above[0]); i++)
        assert_int_equal(execbox_policy_set(&req, above[i][0], above[i][1], NULL), 0);
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), -EPERM);
    execbox_policy_cap(&req, &max);
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), 0);
    assert_memory_equal(&req, &max, sizeof(req));
    /* lower values stay */
    execbox_policy_init(&req);
    req.timeout = 1;
    req.memory = 64 * MiB;
    execbox_policy_cap(&req, &max);
    assert_true(req.timeout == 1 && req.memory == 64 * MiB);
    /* zero counts as the default, on both sides */
    struct execbox_policy zero;
    memset(&zero, 0, sizeof(zero));
    execbox_policy_set(&req, "timeout", "30", NULL);
    execbox_policy_cap(&req, &zero);
    assert_true(req.timeout == EXECBOX_DEFAULT_TIMEOUT);
    execbox_policy_set(&req, "workspace", "/srv", NULL);
    execbox_policy_cap(&req, &max);
    assert_int_equal(execbox_policy_check_within(&req, &max, NULL), -EPERM);
}

static void test_to_json_round_trip(void **state)
{
    (void)state;
    struct execbox_policy p, q;
    execbox_policy_init(&p);
    assert_int_equal(execbox_policy_set(&p, "timeout", "2.5", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "memory", "300M", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "cpus", "0.5", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "pids", "17", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "output_limit", "4k", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "workspace", "/srv/w", NULL), 0);
    char *s = NULL;
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_policy_to_json(&p, &s, &err), 0);
    assert_non_null(s);
    assert_contains(s, "\"timeout\": 2.5");
    assert_contains(s, "\"memory\": 314572800");
    assert_contains(s, "\"network\": \"none\"");
    assert_contains(s, "\"rootfs\": null");
    memset(&q, 0, sizeof(q));
    int r = execbox_policy_merge_json(&q, s, 0, &err);
    if (r != 0)
        fail_msg("round trip of %s: %s", s, err.msg);
    assert_memory_equal(&p, &q, sizeof(p));
    execbox_free(s);
    /* Defaults round trip too (workspace and rootfs null). */
    execbox_policy_init(&p);
    assert_int_equal(execbox_policy_to_json(&p, &s, &err), 0);
    memset(&q, 0, sizeof(q));
    r = execbox_policy_merge_json(&q, s, 0, &err);
    if (r != 0)
        fail_msg("round trip of %s: %s", s, err.msg);
    assert_memory_equal(&p, &q, sizeof(p));
    execbox_free(s);
}

/* What each error is about, as fields a program reads instead of the message (issue: serve
 * once matched "unknown policy field" in the text and cut the field's name out of it). */
static void expect_kind(const struct execbox_error *err, enum execbox_error_kind kind,
                        const char *field)
{
    if (err->kind != kind || strcmp(err->field, field) != 0)
        fail_msg("%s: kind %d field '%s', want kind %d field '%s'", err->msg, err->kind, err->field,
                 kind, field);
}

static void test_error_kinds(void **state)
{
    (void)state;
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct execbox_error err = {0};
    assert_int_equal(execbox_policy_set(&p, "colour", "blue", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_UNKNOWN_FIELD, "colour");
    assert_int_equal(execbox_policy_set(&p, "memory", "lots", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_INVALID_VALUE, "memory");
    assert_int_equal(execbox_policy_set(&p, "timeout", "0", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_INVALID_VALUE, "timeout");
    assert_int_equal(execbox_policy_set(&p, "timeout", "1e9", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "timeout");
    assert_int_equal(execbox_policy_set(&p, "pids", "99999999", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "pids");
    assert_int_equal(execbox_policy_set(&p, "output_limit", "2G", &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "output_limit");
    /* A later error of another kind replaces the earlier one entirely. */
    assert_int_equal(execbox_policy_merge_json(&p, "{\"network\": \"host\"}", 0, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_INVALID_VALUE, "network");
    assert_int_equal(execbox_policy_merge_json(&p, "{\"cpus\": true}", 0, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_INVALID_VALUE, "cpus");
    assert_int_equal(execbox_policy_merge_json(&p, "{\"cpus\": 1, \"zz\": 1}", 0, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_UNKNOWN_FIELD, "zz");
    assert_int_equal(execbox_policy_merge_json(&p, "{\"timeout\": 5", 0, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_MALFORMED, "");
    assert_int_equal(execbox_policy_merge_json(&p, "[]", 0, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_MALFORMED, "");
    /* The JSON library's own wording never reaches the message. */
    static const char *const malformed[] = {"{\"rootfs\": \"a\\u0000b\"}", "{\"a\": 1, \"a\": 2}",
                                            "{x}", "{\"timeout\": 1} 2", "\"\xff\""};
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        assert_int_equal(execbox_policy_merge_json(&p, malformed[i], 0, &err), -EINVAL);
        expect_kind(&err, EXECBOX_ERROR_MALFORMED, "");
        if (strstr(err.msg, "JSON_") || strstr(err.msg, " near ") || strstr(err.msg, "'['"))
            fail_msg("the JSON library's wording leaks: %s", err.msg);
    }
    /* Over the caller's maximum. */
    struct execbox_policy max, req;
    execbox_policy_init(&max);
    max.timeout = 5;
    max.memory = 128ULL << 20;
    req = max;
    req.timeout = 6;
    assert_int_equal(execbox_policy_check_within(&req, &max, &err), -EPERM);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "timeout");
    req = max;
    req.memory = 256ULL << 20;
    assert_int_equal(execbox_policy_check_within(&req, &max, &err), -EPERM);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "memory");
    req = max;
    req.file_size = 1ULL << 40;
    assert_int_equal(execbox_policy_check_within(&req, &max, &err), -EPERM);
    expect_kind(&err, EXECBOX_ERROR_OVER_MAXIMUM, "file_size");
    /* A success leaves err alone; a plain error has no kind. */
    assert_int_equal(execbox_parse_size("x", &(uint64_t){0}, &err), -EINVAL);
    expect_kind(&err, EXECBOX_ERROR_OTHER, "");
}

static void host_ok(const char *entry, const char *canon)
{
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct execbox_error err = {0, ""};
    if (execbox_policy_set(&p, "allow_host", entry, &err) != 0)
        fail_msg("'%s' refused: %s", entry, err.msg);
    assert_string_equal(p.allow_hosts[0], canon);
    assert_string_equal(p.allow_hosts[1], "");
}

static void host_bad(const char *entry)
{
    struct execbox_policy p, before;
    execbox_policy_init(&p);
    before = p;
    struct execbox_error err = {0, ""};
    if (execbox_policy_set(&p, "allow-host", entry, &err) != -EINVAL)
        fail_msg("'%s' accepted as '%s'", entry, p.allow_hosts[0]);
    assert_contains(err.msg, "allow_hosts");
    assert_memory_equal(&p, &before, sizeof(p));
}

static void test_network_fields(void **state)
{
    (void)state;
    struct execbox_policy p;
    execbox_policy_init(&p);
    assert_int_equal(p.network, EXECBOX_NETWORK_NONE);
    assert_int_equal(execbox_policy_set(&p, "network", "allow", NULL), 0);
    assert_int_equal(p.network, EXECBOX_NETWORK_ALLOW);
    host_ok("PyPI.org.", "pypi.org");
    host_ok("*.Example.com:443", "*.example.com:443");
    host_ok("10.1.2.3/8", "10.0.0.0/8");
    host_ok("203.0.113.7", "203.0.113.7");
    host_ok("203.0.113.7:8080", "203.0.113.7:8080");
    host_ok("2001:db8::1", "2001:db8::1");
    host_ok("[2001:db8::1]:8443", "[2001:db8::1]:8443");
    host_ok("[fd00::/8]", "fd00::/8");
    host_ok("localhost:8000", "localhost:8000");
    host_bad("*");
    host_bad("*.com"); /* a whole top-level domain is not an allow-list */
    host_bad("a b");
    host_bad("");
    host_bad("1.2.3.4/33");
    host_bad("pypi.org:0");
    host_bad("pypi.org:70000");
    host_bad("pypi.org:http");
    host_bad("[::1");
    host_bad("[::1]x");
    host_bad("0x7f.1");     /* inet_aton would read these as 127.0.0.1 */
    host_bad("2130706433"); /* ... and 127.0.0.1 */
    host_bad("a..b");
    host_bad("http://pypi.org");
    /* A list replaces, --allow-host appends, repeats are kept once. */
    assert_int_equal(execbox_policy_set(&p, "allow_hosts", "a.test, b.test,a.test", NULL), 0);
    assert_string_equal(p.allow_hosts[0], "a.test");
    assert_string_equal(p.allow_hosts[1], "b.test");
    assert_string_equal(p.allow_hosts[2], "");
    assert_int_equal(execbox_policy_set(&p, "allow_host", "c.test", NULL), 0);
    assert_string_equal(p.allow_hosts[2], "c.test");
    assert_int_equal(execbox_policy_set(&p, "allow_ports", "8080,443", NULL), 0);
    assert_int_equal(p.allow_ports[0], 8080);
    assert_int_equal(p.allow_ports[1], 443);
    assert_int_equal(p.allow_ports[2], 0);
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_policy_set(&p, "allow_ports", "80,0", &err), -EINVAL);
    assert_int_equal(p.allow_ports[0], 8080); /* unchanged */
    /* JSON arrays; a bad item changes nothing. */
    assert_int_equal(
        execbox_policy_merge_json(&p,
                                  "{\"network\": \"allow\", \"allow_hosts\": "
                                  "[\"x.test\", \"*.y.test:81\"], \"allow_ports\": [81]}",
                                  0, &err),
        0);
    assert_string_equal(p.allow_hosts[0], "x.test");
    assert_string_equal(p.allow_hosts[1], "*.y.test:81");
    assert_string_equal(p.allow_hosts[2], "");
    assert_int_equal(p.allow_ports[0], 81);
    assert_int_equal(execbox_policy_merge_json(&p, "{\"allow_hosts\": [\"ok.test\", 5]}", 0, &err),
                     -EINVAL);
    assert_string_equal(p.allow_hosts[0], "x.test");
    assert_int_equal(execbox_policy_merge_json(&p, "{\"allow_ports\": [99999]}", 0, &err), -EINVAL);
    /* At most EXECBOX_ALLOW_HOSTS_MAX entries (two are there already). */
    for (int i = 0; i < EXECBOX_ALLOW_HOSTS_MAX - 2; i++) {
        char h[32];
        snprintf(h, sizeof(h), "h%d.test", i);
        assert_int_equal(execbox_policy_set(&p, "allow_host", h, &err), 0);
    }
    assert_int_equal(execbox_policy_set(&p, "allow_host", "one-too-many.test", &err), -E2BIG);
}

static void within(const char *max_hosts, const char *req_hosts, const char *req_ports, int want)
{
    struct execbox_policy max, req;
    execbox_policy_init(&max);
    execbox_policy_init(&req);
    assert_int_equal(execbox_policy_set(&max, "network", "allow", NULL), 0);
    assert_int_equal(execbox_policy_set(&max, "allow_hosts", max_hosts, NULL), 0);
    assert_int_equal(execbox_policy_set(&req, "network", "allow", NULL), 0);
    assert_int_equal(execbox_policy_set(&req, "allow_hosts", req_hosts, NULL), 0);
    if (req_ports)
        assert_int_equal(execbox_policy_set(&req, "allow_ports", req_ports, NULL), 0);
    struct execbox_error err = {0, ""};
    int r = execbox_policy_check_within(&req, &max, &err);
    if (r != want)
        fail_msg("%s within %s: %d (%s), wanted %d", req_hosts, max_hosts, r, err.msg, want);
}

static void test_network_within(void **state)
{
    (void)state;
    const char *max = "pypi.org,*.example.com,10.0.0.0/8,api.test:8443";
    within(max, "pypi.org", NULL, 0);
    within(max, "a.example.com,*.b.example.com,*.example.com", NULL, 0);
    within(max, "10.1.0.0/16,10.2.3.4:443", NULL, 0);
    within(max, "api.test:8443", NULL, 0);
    within(max, "files.pypi.org", NULL, -EPERM);
    within(max, "example.com", NULL, -EPERM); /* the wildcard is not its apex */
    within(max, "*.com.example.com.evil", NULL, -EPERM);
    within(max, "10.0.0.0/7", NULL, -EPERM);
    within(max, "11.0.0.1", NULL, -EPERM);
    within(max, "api.test", NULL, -EPERM); /* ports 80 and 443: the host has 8443 only */
    within(max, "pypi.org:8080", NULL, -EPERM);
    within(max, "pypi.org", "22", -EPERM);
    within(max, "pypi.org", "443", 0);
    /* "allow" is more than "none"; "none" is within anything. */
    struct execbox_policy none, allow;
    execbox_policy_init(&none);
    execbox_policy_init(&allow);
    assert_int_equal(execbox_policy_set(&allow, "network", "allow", NULL), 0);
    assert_int_equal(execbox_policy_check_within(&allow, &none, NULL), -EPERM);
    assert_int_equal(execbox_policy_check_within(&none, &allow, NULL), 0);
}

static bool matches(const char *entry, const char *host, uint16_t port)
{
    struct eb_host_rule r;
    struct eb_target t;
    assert_int_equal(eb_host_rule_parse(entry, &r, NULL), 0);
    if (eb_target_parse(host, &t) < 0)
        return false;
    const uint16_t ports[EXECBOX_ALLOW_PORTS_MAX] = {0};
    return eb_host_rule_matches(&r, ports, &t, port);
}

static const char *special(const char *addr)
{
    uint8_t a[16];
    if (inet_pton(AF_INET, addr, a) == 1)
        return eb_addr_special(AF_INET, a);
    assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
    return eb_addr_special(AF_INET6, a);
}

static void test_host_rules(void **state)
{
    (void)state;
    assert_true(matches("pypi.org", "PYPI.org.", 443));
    assert_false(matches("pypi.org", "pypi.org", 22));
    assert_false(matches("pypi.org", "evilpypi.org", 443));
    assert_true(matches("*.example.com", "a.b.example.com", 80));
    assert_false(matches("*.example.com", "example.com", 80));
    assert_false(matches("*.example.com", "badexample.com", 80));
    assert_true(matches("10.0.0.0/8", "10.200.1.1", 80));
    assert_false(matches("10.0.0.0/8", "11.0.0.1", 80));
    assert_false(matches("10.0.0.0/8", "ten.test", 80)); /* a range never matches a name */
    assert_false(matches("localhost", "127.0.0.1", 80)); /* nor a name an address */
    assert_true(matches("[::1]:8080", "::1", 8080));
    assert_false(matches("[::1]:8080", "::1", 80));
    assert_false(matches("pypi.org", "0x7f.1", 443));
    assert_string_equal(special("169.254.169.254"), "cloud metadata");
    assert_string_equal(special("100.100.100.200"), "cloud metadata");
    assert_string_equal(special("168.63.129.16"), "cloud metadata");
    assert_string_equal(special("fd00:ec2::254"), "cloud metadata");
    assert_string_equal(special("127.1.2.3"), "loopback");
    assert_string_equal(special("::1"), "loopback");
    assert_string_equal(special("::ffff:127.0.0.1"), "loopback");
    assert_string_equal(special("64:ff9b::a00:1"), "private");
    assert_string_equal(special("10.1.1.1"), "private");
    assert_string_equal(special("172.31.255.255"), "private");
    assert_string_equal(special("192.168.0.1"), "private");
    assert_string_equal(special("100.64.0.1"), "private");
    assert_string_equal(special("fc00::1"), "private");
    assert_string_equal(special("169.254.1.1"), "link-local");
    assert_string_equal(special("fe80::1"), "link-local");
    assert_string_equal(special("224.0.0.1"), "multicast");
    assert_string_equal(special("ff02::1"), "multicast");
    assert_string_equal(special("0.0.0.0"), "reserved");
    assert_string_equal(special("::"), "reserved");
    assert_string_equal(special("255.255.255.255"), "reserved");
    assert_null(special("172.32.0.1"));
    assert_null(special("8.8.8.8"));
    assert_null(special("203.0.113.5"));
    assert_null(special("2606:4700::1111"));
    /* An explicit entry names a special address, and so does a range within its class. */
    struct eb_host_rule r;
    uint8_t a[4] = {10, 9, 9, 9};
    const uint16_t ports[EXECBOX_ALLOW_PORTS_MAX] = {0};
    assert_int_equal(eb_host_rule_parse("10.0.0.0/8", &r, NULL), 0);
    assert_true(eb_host_rule_covers_addr(&r, ports, AF_INET, a, 443));
    assert_false(eb_host_rule_covers_addr(&r, ports, AF_INET, a, 22));
    assert_int_equal(eb_host_rule_parse("private.test", &r, NULL), 0);
    assert_false(eb_host_rule_covers_addr(&r, ports, AF_INET, a, 443));
}

static bool covers(const char *entry, const char *addr)
{
    struct eb_host_rule r;
    uint8_t a[16];
    int family = AF_INET;
    const uint16_t ports[EXECBOX_ALLOW_PORTS_MAX] = {0};
    assert_int_equal(eb_host_rule_parse(entry, &r, NULL), 0);
    if (inet_pton(AF_INET, addr, a) != 1) {
        assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
        family = AF_INET6;
    }
    return eb_host_rule_covers_addr(&r, ports, family, a, 443);
}

/* A catch-all range (or any range wider than a special class) is "the internet": it must not
 * open loopback, private, link-local or the metadata service (the review's attack was
 * --allow-host 0.0.0.0/0:PORT reaching a host service on 127.0.0.1 and 169.254.169.254). */
static void test_wide_ranges_do_not_name_special_addresses(void **state)
{
    (void)state;
    static const char *const special_addrs[] = {
        "127.0.0.1",       "127.255.0.9", "10.9.9.9",        "172.16.0.1",     "192.168.1.1",
        "100.64.0.1",      "169.254.1.1", "169.254.169.254", "169.254.170.2",  "168.63.129.16",
        "100.100.100.200", "0.0.0.0",     "224.0.0.1",       "255.255.255.255"};
    for (size_t i = 0; i < sizeof(special_addrs) / sizeof(special_addrs[0]); i++)
        assert_false(covers("0.0.0.0/0", special_addrs[i]));
    assert_false(covers("0.0.0.0/1", "127.0.0.1"));
    assert_false(covers("0.0.0.0/1", "10.9.9.9"));
    assert_false(covers("128.0.0.0/1", "169.254.169.254"));
    assert_false(covers("128.0.0.0/1", "192.168.1.1"));
    assert_false(covers("169.254.0.0/16", "169.254.169.254")); /* metadata is its own class */
    assert_false(covers("168.0.0.0/8", "168.63.129.16"));
    assert_false(covers("127.0.0.0/7", "127.0.0.1"));
    assert_false(covers("172.0.0.0/8", "172.16.0.1"));
    /* What names them: an address, a range within the class. */
    assert_true(covers("127.0.0.1", "127.0.0.1"));
    assert_true(covers("127.0.0.0/8", "127.0.0.1"));
    assert_true(covers("10.0.0.0/8", "10.9.9.9"));
    assert_true(covers("10.9.0.0/16", "10.9.9.9"));
    assert_true(covers("169.254.0.0/16", "169.254.1.1"));
    assert_true(covers("169.254.169.254", "169.254.169.254"));
    assert_true(covers("168.63.129.16", "168.63.129.16"));
    /* Public addresses: any range holding them. */
    assert_true(covers("0.0.0.0/0", "8.8.8.8"));
    assert_true(covers("203.0.113.0/24", "203.0.113.5"));
    /* IPv6: ::/0 names none of loopback, link-local, unique-local, metadata or the mapped and
     * NAT64 forms of special IPv4 addresses. */
    static const char *const special6[] = {"::1",
                                           "fe80::1",
                                           "fc00::1",
                                           "fd12:3456::1",
                                           "fd00:ec2::254",
                                           "::ffff:127.0.0.1",
                                           "::ffff:169.254.169.254",
                                           "::ffff:10.0.0.1",
                                           "64:ff9b::7f00:1",
                                           "::",
                                           "ff02::1"};
    for (size_t i = 0; i < sizeof(special6) / sizeof(special6[0]); i++)
        assert_false(covers("::/0", special6[i]));
    assert_false(covers("[::/1]:443", "::1"));
    assert_false(covers("[::/1]:443", "::ffff:127.0.0.1"));
    assert_false(covers("[::/1]:443", "64:ff9b::7f00:1"));
    assert_false(covers("fc00::/6", "fc00::1"));
    assert_false(covers("fe80::/9", "fe80::1"));
    assert_false(covers("fd00::/8", "fd00:ec2::254"));
    assert_false(covers("::ffff:0:0/96", "::ffff:127.0.0.1"));
    assert_false(covers("::ffff:127.0.0.0/103", "::ffff:127.0.0.1"));
    assert_true(covers("::1", "::1"));
    assert_true(covers("fe80::/10", "fe80::1"));
    assert_true(covers("fc00::/7", "fd12:3456::1"));
    assert_true(covers("fd00:ec2::254", "fd00:ec2::254"));
    assert_true(covers("::ffff:127.0.0.0/104", "::ffff:127.0.0.1"));
    assert_true(covers("::ffff:127.0.0.1", "::ffff:127.0.0.1"));
    assert_true(covers("::/0", "2606:4700::1111"));
}

static void test_network_json(void **state)
{
    (void)state;
    struct execbox_policy p, q;
    execbox_policy_init(&p);
    assert_int_equal(execbox_policy_set(&p, "network", "allow", NULL), 0);
    assert_int_equal(execbox_policy_set(&p, "allow_hosts", "pypi.org,10.0.0.0/8:81", NULL), 0);
    char *s = NULL;
    assert_int_equal(execbox_policy_to_json(&p, &s, NULL), 0);
    assert_contains(s, "\"network\": \"allow\"");
    assert_contains(s, "\"allow_hosts\": [\"pypi.org\", \"10.0.0.0/8:81\"]");
    memset(&q, 0, sizeof(q));
    assert_int_equal(execbox_policy_merge_json(&q, s, 0, NULL), 0);
    assert_memory_equal(&p, &q, sizeof(p));
    execbox_free(s);
    assert_int_equal(execbox_policy_set(&p, "allow_ports", "8080", NULL), 0);
    assert_int_equal(execbox_policy_to_json(&p, &s, NULL), 0);
    memset(&q, 0, sizeof(q));
    assert_int_equal(execbox_policy_merge_json(&q, s, 0, NULL), 0);
    assert_memory_equal(&p, &q, sizeof(p));
    execbox_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_parse_size_good),
        cmocka_unit_test(test_parse_size_bad),
        cmocka_unit_test(test_set_every_field),
        cmocka_unit_test(test_set_dash_and_underscore),
        cmocka_unit_test(test_set_relative_path),
        cmocka_unit_test(test_set_bad_values),
        cmocka_unit_test(test_set_unknown_key),
        cmocka_unit_test(test_typed_setters),
        cmocka_unit_test(test_merge_json),
        cmocka_unit_test(test_merge_json_bad),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_check_within),
        cmocka_unit_test(test_to_json_round_trip),
        cmocka_unit_test(test_error_kinds),
        cmocka_unit_test(test_network_fields),
        cmocka_unit_test(test_network_within),
        cmocka_unit_test(test_host_rules),
        cmocka_unit_test(test_wide_ranges_do_not_name_special_addresses),
        cmocka_unit_test(test_network_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
