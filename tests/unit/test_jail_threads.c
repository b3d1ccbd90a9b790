/* SPDX-License-Identifier: MIT */
/* test_jail_threads.c - the jail from a threaded host: several runs at once on one executor
 * while another thread keeps malloc and stdio locks busy. Everything between clone and exec
 * must be async-signal-safe, or a child inherits a lock held by a thread it does not have and
 * hangs (the run would then end as a timeout instead of printing). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "execbox/execbox.h"

static atomic_int stop;
static struct execbox_executor *ex;

static void *churn(void *arg)
{
    (void)arg;
    char buf[64];
    while (!atomic_load(&stop)) {
        void *p[16];
        for (int i = 0; i < 16; i++)
            p[i] = malloc((size_t)(i + 1) * 100);
        snprintf(buf, sizeof(buf), "%p", p[3]);
        for (int i = 0; i < 16; i++)
            free(p[i]);
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            fputs(buf, f);
            fclose(f);
        }
    }
    return NULL;
}

static void *runner(void *arg)
{
    long ok = 0;
    for (int i = 0; i < 6; i++) {
        struct execbox_policy pol;
        execbox_policy_init(&pol);
        pol.timeout = 10;
        struct execbox_request req = {.language = "bash", .code = "echo ran", .policy = &pol};
        struct execbox_result *res = NULL;
        struct execbox_error err = {0};
        if (execbox_executor_run(ex, &req, &res, &err) == 0 && res->exit_code == 0 &&
            !res->timed_out && strcmp(res->stdout_data, "ran\n") == 0)
            ok++;
        else if (res)
            fprintf(stderr, "run failed: exit %d timed_out %d stderr %s\n", res->exit_code,
                    res->timed_out, res->stderr_data);
        execbox_result_free(res);
    }
    *(long *)arg = ok;
    return NULL;
}

static void test_concurrent_runs_with_busy_threads(void **state)
{
    (void)state;
    pthread_t c[2], r[4];
    long ok[4] = {0};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&c[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&r[i], NULL, runner, &ok[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(r[i], NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ok[i], 6);
}

int main(void)
{
    struct execbox_executor_options o = {.backend = "jail"};
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        printf("skip: the jail cannot run here: %s\n", err.msg);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_runs_with_busy_threads),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    execbox_executor_free(ex);
    return r;
}
