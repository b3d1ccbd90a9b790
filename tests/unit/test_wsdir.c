/* SPDX-License-Identifier: MIT */
/* test_wsdir.c - directories of a workspace from the host side (wsdir.h): make_dir with its
 * parents and its answers for what is there already, stat and list_dir (sorted, capped), and
 * that no path leaves the workspace: "..", absolute paths and symlinks on the way are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ws/wsdir.h"
#include "ws/wsfile.h"

struct ws {
    char dir[64];
    int fd;
};

static int setup(void **state)
{
    struct ws *w = calloc(1, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "/tmp/test_wsdir.XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    w->fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(w->fd >= 0);
    *state = w;
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static int teardown(void **state)
{
    struct ws *w = *state;
    close(w->fd);
    nftw(w->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(w);
    return 0;
}

static void test_make_dir(void **state)
{
    struct ws *w = *state;
    struct execbox_error err = {0};
    assert_int_equal(eb_ws_mkdir(w->fd, "a/b/c", &err), 0);
    struct execbox_dirent d;
    assert_int_equal(eb_ws_stat(w->fd, "a/b/c", &d, &err), 0);
    assert_int_equal(d.type, EXECBOX_DIRENT_DIR);
    assert_string_equal(d.name, "c");
    assert_int_equal(eb_ws_mkdir(w->fd, "a/b/c", &err), -EEXIST);
    assert_int_equal(eb_ws_mkdir(w->fd, "a/b", &err), -EEXIST);
    assert_int_equal(eb_ws_write(w->fd, "a/f", "xy", 2, 0, &err), 0);
    assert_int_equal(eb_ws_mkdir(w->fd, "a/f", &err), -ENOTDIR);
    assert_int_equal(eb_ws_mkdir(w->fd, "a/f/g", &err), -ENOTDIR);
    assert_int_equal(eb_ws_stat(w->fd, "a/f", &d, &err), 0);
    assert_int_equal(d.type, EXECBOX_DIRENT_FILE);
    assert_int_equal(d.size, 2);
    assert_true(d.mtime_ns > 0);
}

static void test_list_sorted_and_capped(void **state)
{
    struct ws *w = *state;
    struct execbox_error err = {0};
    assert_int_equal(eb_ws_write(w->fd, "zz", "1", 1, 0, &err), 0);
    assert_int_equal(eb_ws_mkdir(w->fd, "mm", &err), 0);
    assert_int_equal(eb_ws_write(w->fd, "aa", "", 0, 0, &err), 0);
    struct execbox_dirent *v = NULL;
    size_t n = 0;
    assert_int_equal(eb_ws_list_dir(w->fd, NULL, 10, &v, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "aa");
    assert_string_equal(v[1].name, "mm");
    assert_int_equal(v[1].type, EXECBOX_DIRENT_DIR);
    assert_string_equal(v[2].name, "zz");
    assert_int_equal(v[2].size, 1);
    free(v);
    v = NULL;
    assert_int_equal(eb_ws_list_dir(w->fd, "", 2, &v, &n, &err), -E2BIG);
    assert_null(v);
    assert_int_equal(eb_ws_list_dir(w->fd, "mm", 10, &v, &n, &err), 0);
    assert_int_equal(n, 0);
    free(v);
    assert_int_equal(eb_ws_list_dir(w->fd, "zz", 10, &v, &n, &err), -ENOTDIR);
    assert_int_equal(eb_ws_list_dir(w->fd, "nope", 10, &v, &n, &err), -ENOENT);
    struct execbox_dirent d;
    assert_int_equal(eb_ws_stat(w->fd, "", &d, &err), 0);
    assert_int_equal(d.type, EXECBOX_DIRENT_DIR);
    assert_int_equal(eb_ws_stat(w->fd, "nope", &d, &err), -ENOENT);
    assert_int_equal(eb_ws_stat(w->fd, "nope/x", &d, &err), -ENOENT);
}

static void test_nothing_outside(void **state)
{
    struct ws *w = *state;
    struct execbox_error err = {0};
    struct execbox_dirent d, *v = NULL;
    size_t n = 0;
    static const char *const bad[] = {"../x", "/etc", "a/../b", "./a", "a//b", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(eb_ws_mkdir(w->fd, bad[i], &err), -EINVAL);
        if (*bad[i]) {
            assert_int_equal(eb_ws_stat(w->fd, bad[i], &d, &err), -EINVAL);
            assert_int_equal(eb_ws_list_dir(w->fd, bad[i], 10, &v, &n, &err), -EINVAL);
        }
    }
    /* A link the guest planted: described itself, never followed. */
    assert_int_equal(symlinkat("/etc", w->fd, "l"), 0);
    assert_int_equal(eb_ws_stat(w->fd, "l", &d, &err), 0);
    assert_int_equal(d.type, EXECBOX_DIRENT_SYMLINK);
    assert_int_equal(eb_ws_stat(w->fd, "l/passwd", &d, &err), -EINVAL);
    assert_string_equal(err.field, "path");
    assert_int_equal(eb_ws_list_dir(w->fd, "l", 10, &v, &n, &err), -EINVAL);
    assert_int_equal(eb_ws_mkdir(w->fd, "l/x", &err), -EINVAL);
    assert_int_equal(eb_ws_mkdir(w->fd, "l", &err), -EINVAL);
    struct stat st;
    assert_int_equal(stat("/etc/x", &st), -1);
}

/* rename: within the workspace only, never through a planted link, and its refusals. */
static void test_rename(void **state)
{
    struct ws *w = *state;
    struct execbox_error err = {0};
    struct execbox_dirent d;
    assert_int_equal(eb_ws_write(w->fd, "a/f.txt", "abc", 3, 1 << 20, &err), 0);
    assert_int_equal(eb_ws_mkdir(w->fd, "b", &err), 0);
    assert_int_equal(eb_ws_rename(w->fd, "a/f.txt", "b/g.txt", &err), 0);
    assert_int_equal(eb_ws_stat(w->fd, "b/g.txt", &d, &err), 0);
    assert_int_equal(d.size, 3);
    assert_int_equal(eb_ws_stat(w->fd, "a/f.txt", &d, &err), -ENOENT);
    assert_int_equal(eb_ws_rename(w->fd, "a/f.txt", "c", &err), -ENOENT);
    assert_int_equal(eb_ws_rename(w->fd, "b", "b/inner", &err), -EINVAL);
    assert_int_equal(eb_ws_rename(w->fd, "b", "nodir/x", &err), -ENOENT); /* no parent made */
    assert_int_equal(eb_ws_write(w->fd, "full/x", "1", 1, 1 << 20, &err), 0);
    assert_int_equal(eb_ws_rename(w->fd, "a", "full", &err), -ENOTEMPTY);
    /* A planted link: never a way out, at either end; the link itself may move. */
    assert_int_equal(symlinkat("/tmp", w->fd, "l"), 0);
    assert_int_equal(eb_ws_rename(w->fd, "b/g.txt", "l/escaped", &err), -EINVAL);
    assert_int_equal(eb_ws_rename(w->fd, "l/anything", "b/x", &err), -EINVAL);
    struct stat st;
    assert_int_equal(stat("/tmp/escaped", &st), -1);
    assert_int_equal(eb_ws_rename(w->fd, "l", "l2", &err), 0);
    assert_int_equal(eb_ws_stat(w->fd, "l2", &d, &err), 0);
    assert_int_equal(d.type, EXECBOX_DIRENT_SYMLINK);
    static const char *const bad[] = {"../x", "/etc/passwd", "a/../b", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(eb_ws_rename(w->fd, bad[i], "b/y", &err), -EINVAL);
        assert_int_equal(eb_ws_rename(w->fd, "b/g.txt", bad[i], &err), -EINVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_make_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_sorted_and_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_outside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
