/* SPDX-License-Identifier: MIT */
/* test_jail_cache.c - the jail's probe cache (lib/jail/cache.c): a report comes back only from
 * a file of ours (owner, mode 0600, one link, not a symlink, in a directory nobody else can
 * write), under the same key, and while young enough; anything else is a miss. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail/cache.h"

static char dir[64], file[96];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/eb-cache-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(file, sizeof(file), "%s/.probe", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(file);
    char other[128];
    snprintf(other, sizeof(other), "%s/other", dir);
    unlink(other);
    rmdir(dir);
    return 0;
}

static struct execbox_check sample(void)
{
    struct execbox_check c;
    memset(&c, 0, sizeof(c));
    snprintf(c.backend, sizeof(c.backend), "jail");
    c.usable = true;
    snprintf(c.tier, sizeof(c.tier), "full");
    c.n_walls = 2;
    snprintf(c.walls[0].name, sizeof(c.walls[0].name), "seccomp");
    c.walls[0].ok = true;
    c.walls[0].required = true;
    snprintf(c.walls[1].name, sizeof(c.walls[1].name), "landlock");
    return c;
}

static void test_round_trip(void **state)
{
    (void)state;
    struct execbox_check c = sample(), got;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    memset(&got, 0x55, sizeof(got));
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), 0);
    assert_memory_equal(&got, &c, sizeof(c));
    /* Stored again: replaced, never a second name. */
    c.walls[1].ok = true;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), 0);
    assert_true(got.walls[1].ok);
}

static void test_too_old(void **state)
{
    (void)state;
    struct execbox_check c = sample(), got;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    usleep(2000);
    memset(&got, 0x55, sizeof(got));
    assert_int_equal(eb_probe_cache_load(dir, 0.001, &got), -ESTALE);
    assert_int_equal(got.backend[0], 0x55); /* untouched on failure */
}

static void test_other_key(void **state)
{
    (void)state;
    struct execbox_check c = sample(), got;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    /* The key follows the report, the magic and the time; change one byte of it. */
    int fd = open(file, O_RDWR);
    assert_true(fd >= 0);
    off_t at = (off_t)sizeof(struct execbox_check) + 16 + 8 + 4 + 20;
    char b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 1;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -ESTALE);
}

static void test_not_ours(void **state)
{
    (void)state;
    struct execbox_check c = sample(), got;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    /* Readable by others is a file we did not write. */
    assert_int_equal(chmod(file, 0644), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EPERM);
    assert_int_equal(chmod(file, 0600), 0);
    /* A second link: someone else may hold a name for it. */
    char other[128];
    snprintf(other, sizeof(other), "%s/other", dir);
    assert_int_equal(link(file, other), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EPERM);
    assert_int_equal(unlink(other), 0);
    /* A symlink to a valid file is not followed. */
    assert_int_equal(rename(file, other), 0);
    assert_int_equal(symlink(other, file), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EPERM);
    assert_int_equal(unlink(file), 0);
    assert_int_equal(rename(other, file), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), 0);
    if (geteuid() == 0) {
        /* Another owner. */
        assert_int_equal(chown(file, 65534, 65534), 0);
        assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EPERM);
        assert_int_equal(chown(file, 0, 0), 0);
    }
    /* A directory others may write into: neither read nor written. */
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EPERM);
    assert_int_equal(eb_probe_cache_store(dir, &c), -EPERM);
    assert_int_equal(chmod(dir, 0700), 0);
    /* Truncated. */
    assert_int_equal(truncate(file, 100), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -EINVAL);
}

static void test_build_id(void **state)
{
    (void)state;
    char a[80], b[80];
    eb_build_id(a, sizeof(a));
    eb_build_id(b, sizeof(b));
    assert_string_equal(a, b);
    assert_true(strlen(a) >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_old, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_ours, setup, teardown),
        cmocka_unit_test(test_build_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
