/* SPDX-License-Identifier: MIT */
/* test_tenants.c - `serve --tokens FILE`: parsing, token matching (literal and sha256:),
 * ceilings within the server's policy, quotas counted by name across a reload, refusals. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "execbox/execbox.h"
#include "httpd/tenants.h"

static char path[64];

static void write_file(const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof(path), "/tmp/eb-tenants-%d", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static struct execbox_policy server_policy(void)
{
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct execbox_error err = {0};
    assert_int_equal(execbox_policy_set(&p, "memory", "1G", &err), 0);
    assert_int_equal(execbox_policy_set(&p, "timeout", "60", &err), 0);
    return p;
}

static void test_parse_and_auth(void **state)
{
    (void)state;
    write_file("# teams\n"
               "alice  alice-token-0123456789  max_sessions=2 max_runs=1 memory=256M timeout=10\n"
               "\n"
               "carol\tcarol-token-0123456789   # defaults\n",
               0600);
    struct execbox_policy sp = server_policy();
    struct tenants *t = NULL;
    struct execbox_error err = {0};
    assert_int_equal(tenants_load(path, &sp, &t, &err), 0);
    struct tenant who;
    assert_true(tenants_auth(t, "alice-token-0123456789", &who));
    assert_string_equal(who.name, "alice");
    assert_int_equal(who.max_sessions, 2);
    assert_int_equal(who.max_runs, 1);
    assert_int_equal(who.ceiling.memory, 256ULL << 20);
    assert_true(who.ceiling.timeout == 10.0);
    assert_true(tenants_auth(t, "carol-token-0123456789", &who));
    assert_string_equal(who.name, "carol");
    assert_int_equal(who.ceiling.memory, 1ULL << 30); /* the server's */
    assert_false(tenants_auth(t, "alice-token-012345678", &who));
    assert_false(tenants_auth(t, "", &who));
    assert_false(tenants_auth(t, NULL, &who));
    tenants_free(t);
}

static void test_sha256_token(void **state)
{
    (void)state;
    /* printf %s bob-token-0123456789 | sha256sum, computed here with the same library. */
    char line[200];
    FILE *p = popen("printf %s bob-token-0123456789 | sha256sum", "r");
    assert_non_null(p);
    char hex[65] = "";
    assert_int_equal(fscanf(p, "%64s", hex), 1);
    pclose(p);
    snprintf(line, sizeof(line), "bob sha256:%s max_runs=3\n", hex);
    write_file(line, 0600);
    struct execbox_policy sp = server_policy();
    struct tenants *t = NULL;
    struct execbox_error err = {0};
    assert_int_equal(tenants_load(path, &sp, &t, &err), 0);
    struct tenant who;
    assert_true(tenants_auth(t, "bob-token-0123456789", &who));
    assert_string_equal(who.name, "bob");
    assert_false(tenants_auth(t, hex, &who)); /* the hash itself is no token */
    tenants_free(t);
}

static void expect_refused(const char *text, mode_t mode, const char *needle)
{
    write_file(text, mode);
    struct execbox_policy sp = server_policy();
    struct tenants *t = NULL;
    struct execbox_error err = {0};
    assert_true(tenants_load(path, &sp, &t, &err) < 0);
    assert_null(t);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' does not say '%s'", err.msg, needle);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refused("alice short\n", 0600, "16 to 256");
    expect_refused("al/ice alice-token-0123456789\n", 0600, "tenant name");
    expect_refused("alice alice-token-0123456789\nalice other-token-0123456789\n", 0600,
                   "named twice");
    expect_refused("alice alice-token-0123456789\nbob alice-token-0123456789\n", 0600,
                   "has the token of tenant alice");
    expect_refused("alice alice-token-0123456789 memory=2G\n", 0600, "above the server");
    expect_refused("alice alice-token-0123456789 bogus=1\n", 0600, "line 1");
    expect_refused("alice alice-token-0123456789 max_runs=x\n", 0600, "whole number");
    expect_refused("alice alice-token-0123456789 workspace=/srv\n", 0600, "server's");
    expect_refused("alice alice-token-0123456789\n", 0644, "chmod 600");
    expect_refused("# nobody\n", 0600, "names no tenant");
    expect_refused("alice sha256:abc\n", 0600, "64 hex");
}

static void test_quotas_and_reload(void **state)
{
    (void)state;
    write_file("alice alice-token-0123456789 max_sessions=1 max_runs=2\n"
               "bob bob-token-0123456789\n",
               0600);
    struct execbox_policy sp = server_policy();
    struct tenants *t = NULL;
    struct execbox_error err = {0};
    assert_int_equal(tenants_load(path, &sp, &t, &err), 0);
    struct tenant a, b;
    assert_true(tenants_auth(t, "alice-token-0123456789", &a));
    assert_true(tenants_auth(t, "bob-token-0123456789", &b));
    const char *q = NULL;
    assert_int_equal(tenants_run_begin(t, &a, &q), 0);
    assert_int_equal(tenants_run_begin(t, &a, &q), 0);
    assert_int_equal(tenants_run_begin(t, &a, &q), -EDQUOT);
    assert_string_equal(q, "max_runs");
    for (int i = 0; i < 5; i++)
        assert_int_equal(tenants_run_begin(t, &b, &q), 0); /* bob has no quota */
    tenants_rejected(t, "alice"); /* a session refused by the registry's count */

    /* A reload that fails changes nothing; one that works keeps what each name holds. */
    write_file("alice alice-token-0123456789 max_runs=nope\n", 0600);
    assert_true(tenants_reload(t, &err) < 0);
    assert_true(tenants_auth(t, "bob-token-0123456789", &b));
    write_file("alice new-alice-token-0123456789 max_runs=3\n", 0600);
    assert_int_equal(tenants_reload(t, &err), 0);
    assert_false(tenants_auth(t, "alice-token-0123456789", &a));
    assert_false(tenants_auth(t, "bob-token-0123456789", &b));
    assert_true(tenants_auth(t, "new-alice-token-0123456789", &a));
    assert_int_equal(tenants_run_begin(t, &a, &q), 0); /* 3 of 3 */
    assert_int_equal(tenants_run_begin(t, &a, &q), -EDQUOT);
    tenants_run_end(t, "alice");
    assert_int_equal(tenants_run_begin(t, &a, &q), 0);

    struct tenant_stats st[4];
    size_t n = tenants_stats(t, st, 4);
    assert_int_equal(n, 2); /* alice from the file, bob still holding runs */
    assert_string_equal(st[0].name, "alice");
    assert_int_equal(st[0].running, 3);
    assert_int_equal(st[0].rejected, 3);
    assert_int_equal(st[0].runs, 4);
    assert_string_equal(st[1].name, "bob");
    assert_int_equal(st[1].running, 5);
    tenants_free(t);
}

static void test_single(void **state)
{
    (void)state;
    struct execbox_policy sp = server_policy();
    struct tenants *t = NULL;
    struct execbox_error err = {0};
    assert_int_equal(tenants_single("T", &sp, &t, &err), 0);
    struct tenant who;
    assert_true(tenants_auth(t, "T", &who));
    assert_string_equal(who.name, "default");
    assert_false(tenants_auth(t, "U", &who));
    assert_true(tenants_reload(t, &err) < 0);
    tenants_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse_and_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sha256_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quotas_and_reload, setup, teardown),
        cmocka_unit_test(test_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
