/* SPDX-License-Identifier: MIT */
/*
 * test_template.c - the executor's template registry (lib/core/template.c) over a fake backend
 * whose template starts are held until the test lets them finish: generations end at their
 * bound, the successor of a generation is started ahead in its last quarter (or earlier, when
 * the rest of the generation would pass quicker than a start) while the old one goes on forking,
 * and no run between the two finds no template.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/error.h"
#include "core/template.h"
#include "execbox/execbox.h"
#include "model/lang.h"

/* The fake backend's template: a number, and whether it was stopped. */
struct eb_tplproc {
    int id;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, stopped, in_start; /* under mu */
static bool hold;                      /* starts wait until released (under mu) */
static bool fail_next;                 /* the next start fails (under mu) */
static long start_ms;                  /* how long a start takes */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

static int fake_start(void *state, const struct execbox_policy *policy,
                      const struct eb_language *lang, const char *preload, struct eb_tplproc **ret,
                      struct execbox_error *err)
{
    (void)state, (void)policy, (void)lang, (void)preload;
    pthread_mutex_lock(&mu);
    in_start++;
    pthread_cond_broadcast(&cv);
    while (hold)
        pthread_cond_wait(&cv, &mu);
    in_start--;
    if (start_ms)
        sleep_ms(start_ms);
    bool fail = fail_next;
    fail_next = false;
    int id = fail ? 0 : ++started;
    pthread_mutex_unlock(&mu);
    if (fail)
        return eb_error_set(err, -EIO, "the fake start failed");
    struct eb_tplproc *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->id = id;
    *ret = t;
    return 0;
}

static void fake_stop(void *state, struct eb_tplproc *t)
{
    (void)state;
    pthread_mutex_lock(&mu);
    stopped++;
    pthread_mutex_unlock(&mu);
    free(t);
}

static bool fake_alive(struct eb_tplproc *t)
{
    (void)t;
    return true;
}

static const struct eb_backend_ops fake_ops = {
    .name = "fake",
    .template_start = fake_start,
    .template_stop = fake_stop,
    .template_alive = fake_alive,
};

static struct execbox_policy policy;
static const struct eb_language *python;

static int setup(void **state)
{
    (void)state;
    execbox_policy_init(&policy);
    python = eb_language_find("python");
    started = stopped = in_start = 0;
    hold = fail_next = false;
    start_ms = 0;
    return python ? 0 : -1;
}

static struct eb_templates *registry(unsigned max_runs)
{
    struct eb_templates *ts = NULL;
    struct execbox_error err = {0, ""};
    assert_int_equal(eb_templates_new(&fake_ops, NULL, max_runs, 0, &ts, &err), 0);
    return ts;
}

static struct eb_template *acquire(struct eb_templates *ts)
{
    bool none = true;
    struct execbox_error err = {0, ""};
    struct eb_template *t = eb_template_acquire(ts, &policy, python, "", &none, &err);
    assert_non_null(t);
    assert_false(none);
    return t;
}

static int id_of(struct eb_template *t)
{
    return eb_template_box(t)->id;
}

/* A generation of 8 runs with every acquire in line: the successor is started at the 7th (the
 * last quarter: runs 7 and 8), and takes the old one's place at once; the old one is stopped
 * with its last reference. */
static void test_successor_started_in_last_quarter(void **state)
{
    (void)state;
    struct eb_templates *ts = registry(8);
    struct eb_template *held[8];
    for (int i = 0; i < 6; i++) {
        held[i] = acquire(ts);
        assert_int_equal(id_of(held[i]), 1);
    }
    assert_int_equal(started, 1);
    held[6] = acquire(ts); /* run 7 of generation 1: generation 2 is started for it */
    assert_int_equal(id_of(held[6]), 2);
    assert_int_equal(started, 2);
    struct execbox_pool_stats st = {0};
    eb_templates_stats(ts, &st);
    assert_int_equal(st.templates, 1);
    assert_int_equal(st.templates_started, 2);
    assert_int_equal(st.templates_retired, 1);
    /* eb_template_find, a run that will not wait, now forks from the successor. */
    struct eb_template *f = eb_template_find(ts, &policy, python, "");
    assert_non_null(f);
    assert_int_equal(id_of(f), 2);
    eb_template_release(ts, f);
    assert_int_equal(stopped, 0); /* generation 1 lives on while its sandboxes do */
    for (int i = 0; i < 6; i++)
        eb_template_release(ts, held[i]);
    assert_int_equal(stopped, 1);
    eb_template_release(ts, held[6]);
    eb_templates_free(ts);
    assert_int_equal(stopped, 2);
}

struct acquirer {
    struct eb_templates *ts;
    struct eb_template *t;
};

static void *acquire_thread(void *arg)
{
    struct acquirer *a = arg;
    a->t = acquire(a->ts);
    return NULL;
}

/* While the successor starts (held), runs that will not wait still find the old generation,
 * up to its bound and no further; once the successor is ready it is the one found. */
static void test_old_generation_forks_while_successor_starts(void **state)
{
    (void)state;
    struct eb_templates *ts = registry(8);
    struct eb_template *first = acquire(ts);
    for (int i = 0; i < 5; i++)
        eb_template_release(ts, acquire(ts)); /* runs 2-6 */
    pthread_mutex_lock(&mu);
    hold = true;
    pthread_mutex_unlock(&mu);
    struct acquirer a = {.ts = ts};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, acquire_thread, &a), 0); /* run 7: renews */
    /* Within 10 s the renewing acquire is in the backend's start (not returned without one). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (in_start == 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    int starting = in_start;
    pthread_mutex_unlock(&mu);
    if (!starting) {
        hold = false; /* under no lock: the thread is not in a start */
        pthread_join(th, NULL);
        fail_msg("run 7 of 8 started no successor");
    }
    /* Run 8, the last of generation 1, from the old template; then the bound holds. */
    struct eb_template *f = eb_template_find(ts, &policy, python, "");
    assert_non_null(f);
    assert_int_equal(id_of(f), 1);
    eb_template_release(ts, f);
    assert_null(eb_template_find(ts, &policy, python, ""));
    pthread_mutex_lock(&mu);
    hold = false;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(id_of(a.t), 2);
    f = eb_template_find(ts, &policy, python, "");
    assert_non_null(f);
    assert_int_equal(id_of(f), 2);
    eb_template_release(ts, f);
    struct execbox_pool_stats st = {0};
    eb_templates_stats(ts, &st);
    assert_int_equal(st.templates, 1);
    assert_int_equal(st.templates_started, 2);
    eb_template_release(ts, a.t);
    eb_template_release(ts, first);
    assert_int_equal(stopped, 1);
    eb_templates_free(ts);
    assert_int_equal(stopped, 2);
}

/* A successor whose start fails leaves the old generation to its end, asked for once; the
 * acquire after the bound starts the next generation as usual. */
static void test_failed_successor_keeps_old_to_its_bound(void **state)
{
    (void)state;
    struct eb_templates *ts = registry(8);
    for (int i = 0; i < 6; i++)
        eb_template_release(ts, acquire(ts));
    pthread_mutex_lock(&mu);
    fail_next = true;
    pthread_mutex_unlock(&mu);
    struct eb_template *t = acquire(ts); /* run 7: the successor fails, generation 1 serves */
    assert_int_equal(id_of(t), 1);
    eb_template_release(ts, t);
    t = acquire(ts); /* run 8: no second attempt within the generation */
    assert_int_equal(id_of(t), 1);
    eb_template_release(ts, t);
    assert_int_equal(started, 1);
    t = acquire(ts); /* past the bound: generation 2 */
    assert_int_equal(id_of(t), 2);
    eb_template_release(ts, t);
    assert_int_equal(stopped, 1);
    eb_templates_free(ts);
    assert_int_equal(stopped, 2);
}

/* A start of 50 ms, a second of idleness, then forks far quicker than that (300 in well under
 * 30 ms): the rest of the 1000-run generation would pass before a successor is ready, so it is
 * started as soon as the rate is read (a quarter: run 251), long before the last quarter (run
 * 751), and only once. The rate is the recent one: over the generation's whole age, idleness
 * included, it would be 250 runs a second and start nothing. */
static void test_successor_led_by_the_rate_of_forks(void **state)
{
    (void)state;
    start_ms = 50;
    struct eb_templates *ts = registry(1000);
    eb_template_release(ts, acquire(ts));
    sleep_ms(1000);
    for (int i = 1; i < 300; i++)
        eb_template_release(ts, acquire(ts));
    assert_int_equal(started, 2);
    struct eb_template *f = eb_template_find(ts, &policy, python, "");
    assert_non_null(f);
    assert_int_equal(id_of(f), 2);
    eb_template_release(ts, f);
    eb_templates_free(ts);
}

/* The same start with a fork every 10 ms: the rest of a 100-run generation takes longer than
 * six starts until near its end, so the successor is not started before run 50 (the rate's
 * rule would need a start over 80 ms there), and is by the last quarter (run 76). */
static void test_successor_not_led_by_slow_forks(void **state)
{
    (void)state;
    start_ms = 50;
    struct eb_templates *ts = registry(100);
    int first_of_2 = 0;
    for (int i = 1; i <= 76; i++) {
        struct eb_template *t = acquire(ts);
        if (id_of(t) == 2 && !first_of_2)
            first_of_2 = i;
        eb_template_release(ts, t);
        sleep_ms(10);
    }
    assert_int_equal(started, 2);
    assert_true(first_of_2 >= 50);
    eb_templates_free(ts);
}

/* Small generations (under 4 runs) have no last quarter to speak of: each ends at its bound. */
static void test_small_generation_ends_at_bound(void **state)
{
    (void)state;
    struct eb_templates *ts = registry(2);
    int ids[5];
    for (int i = 0; i < 5; i++) {
        struct eb_template *t = acquire(ts);
        ids[i] = id_of(t);
        eb_template_release(ts, t);
    }
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 2);
    assert_int_equal(ids[3], 2);
    assert_int_equal(ids[4], 3);
    eb_templates_free(ts);
    assert_int_equal(stopped, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_successor_started_in_last_quarter, setup),
        cmocka_unit_test_setup(test_old_generation_forks_while_successor_starts, setup),
        cmocka_unit_test_setup(test_failed_successor_keeps_old_to_its_bound, setup),
        cmocka_unit_test_setup(test_small_generation_ends_at_bound, setup),
        cmocka_unit_test_setup(test_successor_led_by_the_rate_of_forks, setup),
        cmocka_unit_test_setup(test_successor_not_led_by_slow_forks, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
