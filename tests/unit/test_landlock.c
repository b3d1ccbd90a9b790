/* SPDX-License-Identifier: MIT */
/* test_landlock.c - the jail's Landlock wall, applied for real in forked children: writes work
 * beneath the allowed directory and fail with EACCES elsewhere, reads and exec still work, the
 * device sinks stay writable. Exits 77 where the kernel has no Landlock. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "jail/landlock.h"

static char allowed[256], other[256];

static int setup(void **state)
{
    (void)state;
    snprintf(allowed, sizeof(allowed), "%s/eb-ll-allowed-XXXXXX", eb_tmp_dir());
    snprintf(other, sizeof(other), "%s/eb-ll-other-XXXXXX", eb_tmp_dir());
    if (!mkdtemp(allowed) || !mkdtemp(other))
        return -1;
    /* A file outside the allowed directory that the child will try to change. */
    char path[300];
    snprintf(path, sizeof(path), "%s/existing", other);
    return eb_write_file(path, "host data\n", 10, 0644) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    eb_rm_rf(allowed);
    eb_rm_rf(other);
    return 0;
}

/* Each check in the child: which one failed is the exit code (0: all held). */
#define CHECK(n, cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  check %d failed: %s (errno %d %s)\n", n, #cond, errno,              \
                    strerror(errno));                                                              \
            _exit(n);                                                                              \
        }                                                                                          \
    } while (0)

static void restricted_child(void)
{
    char p[300], q[300];
    const char *dirs[] = {allowed, NULL};
    struct execbox_error err = {0};
    int abi = eb_landlock_abi();
    CHECK(1, eb_landlock_apply(dirs, &err) == 0);

    /* Writes outside: refused with EACCES. */
    snprintf(p, sizeof(p), "%s/new", other);
    errno = 0;
    CHECK(2, open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) == -1 && errno == EACCES);
    snprintf(p, sizeof(p), "%s/existing", other);
    errno = 0;
    CHECK(3, open(p, O_WRONLY | O_APPEND | O_CLOEXEC) == -1 && errno == EACCES);
    errno = 0;
    CHECK(4, unlink(p) == -1 && errno == EACCES);
    snprintf(q, sizeof(q), "%s/dir", other);
    errno = 0;
    CHECK(5, mkdir(q, 0755) == -1 && errno == EACCES);
    errno = 0;
    CHECK(6, symlink("/etc/passwd", q) == -1 && errno == EACCES);
    if (abi >= 3) {
        errno = 0;
        CHECK(7, truncate(p, 0) == -1 && errno == EACCES);
    }
    /* Reading outside still works. */
    char buf[16] = {0};
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    CHECK(8, fd >= 0 && read(fd, buf, sizeof(buf)) == 10 && memcmp(buf, "host data\n", 10) == 0);
    close(fd);

    /* Writes inside: create, write, mkdir, rename within, truncate, unlink. */
    snprintf(p, sizeof(p), "%s/file", allowed);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(9, fd >= 0 && write(fd, "ok", 2) == 2);
    close(fd);
    snprintf(q, sizeof(q), "%s/sub", allowed);
    CHECK(10, mkdir(q, 0755) == 0);
    snprintf(q, sizeof(q), "%s/sub/moved", allowed);
    CHECK(11, rename(p, q) == 0);
    CHECK(12, truncate(q, 1) == 0);
    /* Moving a file out of the allowed tree is refused (EACCES, or EXDEV for a reparent). */
    snprintf(p, sizeof(p), "%s/escaped", other);
    errno = 0;
    CHECK(13, rename(q, p) == -1 && (errno == EACCES || errno == EXDEV));
    CHECK(14, unlink(q) == 0);

    /* The sinks stay writable, including with O_TRUNC as shell redirections open them. */
    fd = open("/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    CHECK(15, fd >= 0 && write(fd, "x", 1) == 1);
    close(fd);
    /* Executing a program still works (reading and executing are not restricted). */
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "echo hi > /dev/null && cat /etc/hostname >/dev/null", NULL);
        _exit(127);
    }
    int status = -1;
    CHECK(16, pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0);
    /* A child of the restricted process inherits the restriction. */
    pid = fork();
    if (pid == 0) {
        snprintf(p, sizeof(p), "%s/from-child", other);
        _exit(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) == -1 && errno == EACCES ? 0 : 1);
    }
    CHECK(17, pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0);
    _exit(0);
}

static void test_writes_confined(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        restricted_child();
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* The host side: the file outside is unchanged, nothing escaped. */
    char p[300];
    snprintf(p, sizeof(p), "%s/existing", other);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 10);
    snprintf(p, sizeof(p), "%s/escaped", other);
    assert_int_equal(stat(p, &st), -1);
    snprintf(p, sizeof(p), "%s/new", other);
    assert_int_equal(stat(p, &st), -1);
}

/* The parent (this test process) is not restricted by what its child did. */
static void test_parent_unaffected(void **state)
{
    (void)state;
    char p[300];
    snprintf(p, sizeof(p), "%s/parent-write", other);
    assert_int_equal(eb_write_file(p, "p", 1, 0644), 0);
    assert_int_equal(unlink(p), 0);
}

static int child_apply(const char *const *dirs, int *ret_code, char *msg, size_t n)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        struct execbox_error err = {0};
        eb_landlock_apply(dirs, &err);
        eb_write_all(pfd[1], &err, sizeof(err));
        _exit(0);
    }
    close(pfd[1]);
    struct execbox_error err = {0};
    ssize_t got = eb_read_full(pfd[0], &err, sizeof(err));
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    *ret_code = err.code;
    snprintf(msg, n, "%s", err.msg);
    return got == (ssize_t)sizeof(err) ? 0 : -1;
}

static void test_errors(void **state)
{
    (void)state;
    int code;
    char msg[256];
    const char *missing[] = {"/nonexistent-eb-dir", NULL};
    assert_int_equal(child_apply(missing, &code, msg, sizeof(msg)), 0);
    assert_int_equal(code, -ENOENT);
    assert_non_null(strstr(msg, "landlock"));

    const char *many[EB_LANDLOCK_MAX_DIRS + 2];
    for (size_t i = 0; i < EB_LANDLOCK_MAX_DIRS + 1; i++)
        many[i] = allowed;
    many[EB_LANDLOCK_MAX_DIRS + 1] = NULL;
    assert_int_equal(child_apply(many, &code, msg, sizeof(msg)), 0);
    assert_int_equal(code, -E2BIG);

    const char *file[] = {"/etc/hostname", NULL};
    assert_int_equal(child_apply(file, &code, msg, sizeof(msg)), 0);
    assert_int_equal(code, -ENOTDIR);
}

static void test_probe(void **state)
{
    (void)state;
    char detail[200];
    assert_int_equal(eb_landlock_probe(detail, sizeof(detail)), 0);
    fprintf(stderr, "  probe: %s\n", detail);
    char want[16];
    snprintf(want, sizeof(want), "ABI %d", eb_landlock_abi());
    assert_non_null(strstr(detail, want));
}

int main(void)
{
    char detail[200];
    if (eb_landlock_probe(detail, sizeof(detail)) < 0) {
        printf("skip: %s\n", detail);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writes_confined),
        cmocka_unit_test(test_parent_unaffected),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
