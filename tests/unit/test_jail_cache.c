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
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "jail/cache.h"

static char dir[64], file[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/eb-cache-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    file[0] = '\0';
    return 0;
}

/* The probe files in dir: how many, and the path of the last one seen in file. */
static int probe_files(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, ".probe-", 7) == 0) {
            snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static int teardown(void **state)
{
    (void)state;
    chmod(dir, 0700);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0)) {
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
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
    assert_int_equal(probe_files(), 1);
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
    assert_int_equal(probe_files(), 1);
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
    assert_int_equal(probe_files(), 1);
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
    assert_int_equal(probe_files(), 1);
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

/* Another key (here: a lower hard core limit, as another user's or build's would differ) gets a
 * file of its own: the first key's report stays. The sweep removes what is too old for any key. */
static void test_one_file_per_key(void **state)
{
    (void)state;
    struct execbox_check c = sample(), got;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_CORE, &rl), 0);
    rlim_t was = rl.rlim_max;
    rl.rlim_max = was == RLIM_INFINITY ? (rlim_t)1 << 40 : was - 1;
    if (rl.rlim_cur > rl.rlim_max)
        rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_CORE, &rl), 0);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), -ENOENT);
    c.walls[1].ok = true;
    assert_int_equal(eb_probe_cache_store(dir, &c), 0);
    assert_int_equal(probe_files(), 2);
    assert_int_equal(eb_probe_cache_load(dir, 60, &got), 0);
    assert_true(got.walls[1].ok);
    assert_int_equal(eb_probe_cache_sweep(dir, 60), 0); /* both young */
    struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
    assert_int_equal(utimensat(AT_FDCWD, file, old, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(eb_probe_cache_sweep(dir, 60), 1);
    assert_int_equal(probe_files(), 1);
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
        /* Last: it lowers this process's hard core limit. */
        cmocka_unit_test_setup_teardown(test_one_file_per_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
