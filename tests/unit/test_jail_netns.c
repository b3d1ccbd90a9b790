/* SPDX-License-Identifier: MIT */
/* test_jail_netns.c - the pool of fresh network namespaces (lib/jail/netns.c): each fd is a
 * new namespace, a one-shot user (one take) makes exactly one, and a second take starts the
 * refill. Root only (the pool is). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail/netns.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void assert_fresh_netns(int fd)
{
    struct stat ours, theirs;
    assert_true(fd >= 0);
    assert_int_equal(stat("/proc/self/ns/net", &ours), 0);
    assert_int_equal(fstat(fd, &theirs), 0);
    assert_true(ours.st_ino != theirs.st_ino);
}

/* Waits until the pool has made at least n namespaces (each take counts as a demand, so a test
 * takes only once one is there, as a run that finds one does). */
static void wait_made(struct eb_netns_pool *p, int n)
{
    for (int t = 0; t < 400 && eb_netns_pool_made(p) < n; t++)
        sleep_ms(5);
    assert_true(eb_netns_pool_made(p) >= n);
}

/* A one-shot run takes one namespace; the pool makes no second one, however long it lives. */
static void test_one_take_makes_one(void **state)
{
    (void)state;
    struct eb_netns_pool *p = eb_netns_pool_new(2);
    assert_non_null(p);
    wait_made(p, 1);
    int fd = eb_netns_take(p);
    assert_fresh_netns(fd);
    close(fd);
    sleep_ms(100); /* the old pool refilled 20 ms after its first namespace */
    assert_int_equal(eb_netns_pool_made(p), 1);
    eb_netns_pool_free(p);
}

/* A second take starts the refill: the pool fills up to its size again. */
static void test_second_take_refills(void **state)
{
    (void)state;
    struct eb_netns_pool *p = eb_netns_pool_new(2);
    assert_non_null(p);
    wait_made(p, 1);
    int a = eb_netns_take(p);
    assert_fresh_netns(a);
    int b = eb_netns_take(p); /* empty now: the caller would clone its own */
    int made = 0;
    for (int t = 0; t < 400 && (made = eb_netns_pool_made(p)) < 3; t++)
        sleep_ms(5);
    assert_int_equal(made, 3);
    int c = eb_netns_take(p), d = eb_netns_take(p);
    assert_fresh_netns(c);
    assert_fresh_netns(d);
    struct stat sc, sd;
    assert_int_equal(fstat(c, &sc), 0);
    assert_int_equal(fstat(d, &sd), 0);
    assert_true(sc.st_ino != sd.st_ino);
    close(a);
    if (b >= 0)
        close(b);
    close(c);
    close(d);
    eb_netns_pool_free(p);
}

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "skip: the network namespace pool is root only\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_take_makes_one),
        cmocka_unit_test(test_second_take_refills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
