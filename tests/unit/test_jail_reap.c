/* SPDX-License-Identifier: MIT */
/* test_jail_reap.c - a run hands its result back before its init has exited (the kernel is
 * still tearing the sandbox's namespaces down); those inits are reaped later, at the next run
 * or close of any executor of the process: a process that makes and frees many executors must
 * not gather zombie children. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "execbox/execbox.h"

/* Our children that are zombies, from /proc/<pid>/stat of each pid in our children lists. */
static int zombies(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0, pid;
    while (fscanf(f, "%d", &pid) == 1) {
        char sp[64], buf[256];
        snprintf(sp, sizeof(sp), "/proc/%d/stat", pid);
        FILE *s = fopen(sp, "r");
        if (s && fgets(buf, sizeof(buf), s)) {
            const char *rp = strrchr(buf, ')');
            if (rp && rp[1] == ' ' && rp[2] == 'Z')
                n++;
        }
        if (s)
            fclose(s);
    }
    fclose(f);
    return n;
}

static void one_run(void)
{
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&o, &ex, &err), 0);
    struct execbox_request req = {.language = "bash", .code = "echo ran"};
    struct execbox_result *res = NULL;
    assert_int_equal(execbox_executor_run(ex, &req, &res, &err), 0);
    assert_int_equal(res->exit_code, 0);
    assert_string_equal(res->stdout_data, "ran\n");
    execbox_result_free(res);
    execbox_executor_free(ex);
}

static void test_many_executors_leave_no_zombies(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++)
        one_run();
    struct timespec ts = {0, 200 * 1000 * 1000L};
    nanosleep(&ts, NULL); /* every init has finished exiting by now */
    one_run();            /* its start reaps them; its own init may still be exiting */
    int z = zombies();
    fprintf(stderr, "  zombies after 9 executors: %d\n", z);
    assert_true(z >= 0 && z <= 1);
}

int main(void)
{
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        printf("skip: the jail cannot run here: %s\n", err.msg);
        return 77;
    }
    execbox_executor_free(ex);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_executors_leave_no_zombies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
