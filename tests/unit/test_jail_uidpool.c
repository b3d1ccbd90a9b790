/* SPDX-License-Identifier: MIT */
/* test_jail_uidpool.c - the sandbox uid range and its slots (lib/jail/uidpool.c): a range that
 * overlaps a user, a group or another owner's subordinate range is refused; two pools (as two
 * execbox processes) never hold one slot; a slot put back, or held by a process that died, is
 * free again; a full range says so. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/error.h"
#include "base/util.h"
#include "jail/uidpool.h"

static char dir[64];

static void put(const char *name, const char *text)
{
    char p[128];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/eb-uidpool-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    eb_rm_rf(dir);
    return 0;
}

static int check(uint32_t base, uint32_t count, struct execbox_error *e)
{
    struct eb_uid_range r = {.base = base, .count = count, .source = "test"};
    return eb_uid_range_check(&r, dir, e);
}

static void test_range_checks(void **state)
{
    (void)state;
    struct execbox_error e = {0};
    put("passwd", "root:x:0:0::/root:/bin/sh\nbob:x:3000:3001::/home/bob:/bin/sh\n");
    put("group", "root:x:0:\nstaff:x:5000:\n");
    put("subuid", "bob:100000:65536\nexecbox:2113929216:65536\n");
    assert_int_equal(check(0x7e000000, 65536, &e), 0);
    assert_int_equal(check(2990, 20, &e), -EINVAL); /* bob's uid */
    assert_non_null(strstr(e.msg, "bob"));
    assert_int_equal(check(3001, 1, &e), -EINVAL); /* bob's primary gid */
    assert_non_null(strstr(e.msg, "'bob' in"));
    assert_non_null(strstr(e.msg, "(id 3001)"));
    assert_int_equal(check(4999, 2, &e), -EINVAL); /* group staff */
    assert_non_null(strstr(e.msg, "staff"));
    assert_int_equal(check(160000, 10, &e), -EINVAL); /* bob's subordinate range */
    assert_non_null(strstr(e.msg, "a subordinate range"));
    assert_int_equal(check(65000, 1000, &e), -EINVAL);        /* nobody */
    assert_int_equal(check(0xffffff00U, 0x200, &e), -EINVAL); /* wraps */
    assert_int_equal(check(7000, 0, &e), -EINVAL);
}

static void test_slots_exclusive_and_freed(void **state)
{
    (void)state;
    char lock[128];
    snprintf(lock, sizeof(lock), "%s/uids.lock", dir);
    struct eb_uid_range r = {.base = 7000, .count = 3, .source = "test"};
    struct eb_uid_pool *a = NULL, *b = NULL;
    struct execbox_error e = {0};
    assert_int_equal(eb_uid_pool_open(lock, &r, &a, &e), 0);
    assert_int_equal(eb_uid_pool_open(lock, &r, &b, &e), 0);
    uint32_t s[3], id[3], x, xid;
    assert_int_equal(eb_uid_pool_take(a, &s[0], &id[0], &e), 0);
    assert_int_equal(eb_uid_pool_take(b, &s[1], &id[1], &e), 0);
    assert_int_equal(eb_uid_pool_take(a, &s[2], &id[2], &e), 0);
    assert_true(s[0] != s[1] && s[1] != s[2] && s[0] != s[2]);
    for (int i = 0; i < 3; i++)
        assert_int_equal(id[i], 7000 + s[i]);
    assert_int_equal(eb_uid_pool_take(b, &x, &xid, &e), -EAGAIN); /* full */
    assert_non_null(strstr(e.msg, "in use"));
    eb_uid_pool_put(a, s[0]);
    assert_int_equal(eb_uid_pool_take(b, &x, &xid, &e), 0);
    assert_int_equal(x, s[0]);
    eb_uid_pool_free(a); /* its slot s[2] is free again */
    assert_int_equal(eb_uid_pool_take(b, &x, &xid, &e), 0);
    assert_int_equal(x, s[2]);
    eb_uid_pool_free(b);

    /* A process that dies holding a slot frees it: SIGKILL, no cleanup of ours. */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct eb_uid_pool *c = NULL;
        uint32_t cs, cid;
        if (eb_uid_pool_open(lock, &r, &c, NULL) < 0 || eb_uid_pool_take(c, &cs, &cid, NULL) < 0 ||
            eb_uid_pool_take(c, &cs, &cid, NULL) < 0 || eb_uid_pool_take(c, &cs, &cid, NULL) < 0)
            _exit(1);
        if (write(pfd[1], "x", 1) != 1)
            _exit(1);
        pause();
    }
    char c;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    assert_int_equal(eb_uid_pool_open(lock, &r, &a, &e), 0);
    assert_int_equal(eb_uid_pool_take(a, &x, &xid, &e), -EAGAIN);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(eb_uid_pool_take(a, &x, &xid, &e), 0);
    eb_uid_pool_free(a);
    close(pfd[0]);
    close(pfd[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_checks),
        cmocka_unit_test(test_slots_exclusive_and_freed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
