/* SPDX-License-Identifier: MIT */
/* test_runner.c - the surfaces' job runner (src/common/runner.c): a full queue refuses, a
 * queued job cancelled never runs and is dropped at once, a running job cancelled is killed
 * through its execbox_cancel token (a real sandbox on the subprocess backend), drain waits for
 * the jobs in flight within its deadline, stop joins with a deadline, keys and cost bound
 * admission, and every accepted job ends exactly once. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/runner.h"
#include "execbox/execbox.h"

/* A test job: either waits on the fixture's gate, or runs a real sandbox. */
struct tjob {
    struct runner_job rj;
    bool sandbox;
    int ran;   /* run() calls */
    int ended; /* done() calls */
    enum runner_end end;
    enum execbox_killed_reason killed; /* sandbox: how the run ended */
    double run_s;
    int order; /* when run() began, 1 for the first of the test */
};

/* run() calls begun, and how many jobs of serial "K" were inside run() at once at most. */
static int begun, k_inside, k_most;

struct fixture {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;   /* the gate */
    int waiting; /* gated jobs inside run() */
    struct execbox_executor *ex;
    struct runner *r;
    struct runner *cancel_all_from_done; /* a done() that calls back into the runner */
};

static struct fixture fx;

static bool t_run(struct runner_job *rj, void *ud)
{
    struct fixture *f = ud;
    struct tjob *j = container_of(rj, struct tjob, rj);
    __atomic_add_fetch(&j->ran, 1, __ATOMIC_SEQ_CST);
    j->order = __atomic_add_fetch(&begun, 1, __ATOMIC_SEQ_CST);
    bool k = rj->serial && strcmp(rj->serial, "K") == 0;
    if (k) {
        int n = __atomic_add_fetch(&k_inside, 1, __ATOMIC_SEQ_CST);
        if (n > __atomic_load_n(&k_most, __ATOMIC_SEQ_CST))
            __atomic_store_n(&k_most, n, __ATOMIC_SEQ_CST);
        usleep(20000); /* long enough for a second one to be taken, were it allowed */
    }
    if (j->sandbox) {
        struct execbox_policy p;
        execbox_policy_init(&p);
        p.timeout = 30;
        const char *code = "import time\ntime.sleep(30)\n";
        struct execbox_request req = {
            .code = code, .code_len = strlen(code), .policy = &p, .cancel = rj->cancel};
        struct execbox_result *res = NULL;
        struct execbox_error err = {0};
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (execbox_executor_run(f->ex, &req, &res, &err) == 0) {
            j->killed = res->killed_reason;
            execbox_result_free(res);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        j->run_s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        return true;
    }
    pthread_mutex_lock(&f->lock);
    f->waiting++;
    pthread_cond_broadcast(&f->cond);
    while (!f->open)
        pthread_cond_wait(&f->cond, &f->lock);
    f->waiting--;
    pthread_mutex_unlock(&f->lock);
    if (k)
        __atomic_sub_fetch(&k_inside, 1, __ATOMIC_SEQ_CST);
    return true;
}

static void t_done(struct runner_job *rj, enum runner_end end, void *ud)
{
    struct fixture *f = ud;
    struct tjob *j = container_of(rj, struct tjob, rj);
    j->end = end;
    __atomic_add_fetch(&j->ended, 1, __ATOMIC_SEQ_CST);
    if (f->cancel_all_from_done) {
        struct runner *r = f->cancel_all_from_done;
        f->cancel_all_from_done = NULL;
        runner_cancel_all(r); /* must not deadlock: done() runs with no runner lock held */
    }
}

static const struct runner_ops ops = {.run = t_run, .done = t_done};

static void gate_open(struct fixture *f)
{
    pthread_mutex_lock(&f->lock);
    f->open = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

/* Waits (at most 10 s) until n gated jobs are inside run(). */
static void wait_gated(struct fixture *f, int n)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    pthread_mutex_lock(&f->lock);
    while (f->waiting < n)
        if (pthread_cond_timedwait(&f->cond, &f->lock, &dl) == ETIMEDOUT)
            break;
    int w = f->waiting;
    pthread_mutex_unlock(&f->lock);
    assert_int_equal(w, n);
}

/* Waits (at most 10 s) until the job has ended n times: done() follows the runner's books. */
static void wait_ended(struct tjob *j, int n)
{
    for (int i = 0; i < 1000 && __atomic_load_n(&j->ended, __ATOMIC_SEQ_CST) < n; i++)
        usleep(10000);
    assert_int_equal(__atomic_load_n(&j->ended, __ATOMIC_SEQ_CST), n);
}

static struct runner *start(unsigned workers, size_t queue, size_t max_cost)
{
    struct runner_config c = {.workers = workers, .queue = queue, .max_cost = max_cost};
    struct runner *r = NULL;
    struct execbox_error err = {0};
    assert_int_equal(runner_new(&c, &ops, &fx, &r, &err), 0);
    fx.r = r;
    return r;
}

static void job_init(struct tjob *j)
{
    memset(j, 0, sizeof(*j));
    assert_int_equal(runner_job_init(&j->rj, NULL), 0);
}

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof(fx));
    pthread_mutex_init(&fx.lock, NULL);
    pthread_cond_init(&fx.cond, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gate_open(&fx);
    runner_free(fx.r);
    execbox_executor_free(fx.ex);
    pthread_cond_destroy(&fx.cond);
    pthread_mutex_destroy(&fx.lock);
    return 0;
}

static void test_queue_full_rejected(void **state)
{
    (void)state;
    struct runner *r = start(1, 1, 0);
    struct tjob a, b, c;
    job_init(&a);
    job_init(&b);
    job_init(&c);
    assert_int_equal(runner_submit(r, &a.rj), 0);
    wait_gated(&fx, 1);
    assert_int_equal(runner_submit(r, &b.rj), 0);
    /* one running and one waiting: a worker plus a queue slot, all taken */
    assert_int_equal(runner_submit(r, &c.rj), -EAGAIN);
    struct runner_stats st;
    runner_get_stats(r, &st);
    assert_int_equal(st.running, 1);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.accepted, 2);
    assert_int_equal(st.rejected, 1);
    gate_open(&fx);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&a, 1);
    wait_ended(&b, 1);
    /* the refused job stayed ours: never ran, never ended */
    assert_int_equal(c.ran, 0);
    assert_int_equal(c.ended, 0);
    assert_int_equal(a.end, RUNNER_RAN);
    assert_int_equal(b.end, RUNNER_RAN);
    runner_get_stats(r, &st);
    assert_int_equal(st.ran, 2);
    assert_int_equal(st.queued + st.running, 0);
    /* room again */
    assert_int_equal(runner_submit(r, &c.rj), 0);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    assert_int_equal(runner_stop(r, 10000), 0);
    assert_int_equal(c.ended, 1);
    runner_job_release(&a.rj);
    runner_job_release(&b.rj);
    runner_job_release(&c.rj);
}

static void test_cancel_queued(void **state)
{
    (void)state;
    struct runner *r = start(1, 4, 0);
    struct tjob a, b, c;
    job_init(&a);
    job_init(&b);
    job_init(&c);
    assert_int_equal(runner_submit(r, &a.rj), 0);
    wait_gated(&fx, 1);
    assert_int_equal(runner_submit(r, &b.rj), 0);
    assert_int_equal(runner_submit(r, &c.rj), 0);
    /* dropped at once, before the worker is free: done() has run when cancel returns */
    assert_int_equal(runner_cancel(r, &b.rj), RUNNER_UNQUEUED);
    assert_int_equal(b.ended, 1);
    assert_int_equal(b.end, RUNNER_DROPPED);
    /* cancelling it again finds nothing */
    assert_int_equal(runner_cancel(r, &b.rj), RUNNER_NOT_LIVE);
    gate_open(&fx);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&c, 1);
    assert_int_equal(b.ran, 0);
    assert_int_equal(b.ended, 1);
    assert_int_equal(c.ran, 1);
    assert_int_equal(c.end, RUNNER_RAN);
    struct runner_stats st;
    runner_get_stats(r, &st);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.ran, 2);
    runner_job_release(&a.rj);
    runner_job_release(&b.rj);
    runner_job_release(&c.rj);
}

static void test_cancel_running_kills_sandbox(void **state)
{
    (void)state;
    struct execbox_executor_options o = {.backend = "subprocess"};
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &fx.ex, &err) < 0) {
        print_message("skipped: subprocess backend: %s\n", err.msg);
        skip();
    }
    struct runner *r = start(1, 1, 0);
    struct tjob a;
    job_init(&a);
    a.sandbox = true;
    assert_int_equal(runner_submit(r, &a.rj), 0);
    /* wait until it runs, then give the sandbox a moment to start */
    for (int i = 0; i < 1000 && !__atomic_load_n(&a.ran, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    assert_int_equal(a.ran, 1);
    usleep(300000);
    assert_int_equal(runner_cancel(r, &a.rj), RUNNER_FIRED);
    /* the 30 s sleep is killed long before its timeout */
    assert_int_equal(runner_wait_idle(r, 15000), 0);
    assert_int_equal(runner_stop(r, 10000), 0);
    assert_int_equal(a.ended, 1);
    assert_int_equal(a.end, RUNNER_CANCELLED);
    assert_int_equal(a.killed, EXECBOX_KILLED_CANCELLED);
    assert_true(a.run_s < 20);
    struct runner_stats st;
    runner_get_stats(r, &st);
    assert_int_equal(st.cancelled, 1);
    runner_job_release(&a.rj);
}

/* Opens the gate after a while, from another thread. */
static void *open_later(void *arg)
{
    usleep(300000);
    gate_open(arg);
    return NULL;
}

static void test_drain_waits_with_deadline(void **state)
{
    (void)state;
    struct runner *r = start(2, 2, 0);
    struct tjob a, b, c, d;
    job_init(&a);
    job_init(&b);
    job_init(&c);
    job_init(&d);
    assert_int_equal(runner_submit(r, &a.rj), 0);
    assert_int_equal(runner_submit(r, &b.rj), 0);
    wait_gated(&fx, 2);
    assert_int_equal(runner_submit(r, &c.rj), 0); /* queued: still runs after the drain */
    runner_drain(r);
    assert_int_equal(runner_submit(r, &d.rj), -ESHUTDOWN);
    /* the deadline holds while jobs are in flight */
    assert_int_equal(runner_wait_idle(r, 200), -ETIMEDOUT);
    assert_int_equal(a.ended + b.ended + c.ended, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, open_later, &fx), 0);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    pthread_join(t, NULL);
    wait_ended(&a, 1);
    wait_ended(&b, 1);
    wait_ended(&c, 1);
    assert_int_equal(a.end, RUNNER_RAN);
    assert_int_equal(b.end, RUNNER_RAN);
    assert_int_equal(c.end, RUNNER_RAN);
    assert_int_equal(a.ended + b.ended + c.ended, 3);
    assert_int_equal(d.ran + d.ended, 0);
    struct runner_stats st;
    runner_get_stats(r, &st);
    assert_true(st.draining);
    runner_job_release(&a.rj);
    runner_job_release(&b.rj);
    runner_job_release(&c.rj);
    runner_job_release(&d.rj);
}

static void test_stop_deadline(void **state)
{
    (void)state;
    struct runner *r = start(1, 2, 0);
    struct tjob a, b;
    job_init(&a);
    job_init(&b);
    assert_int_equal(runner_submit(r, &a.rj), 0);
    wait_gated(&fx, 1);
    assert_int_equal(runner_submit(r, &b.rj), 0);
    /* a gated run ignores its token: stop gives up at its deadline, the queued job is dropped */
    assert_int_equal(runner_stop(r, 200), -ETIMEDOUT);
    assert_int_equal(b.ended, 1);
    assert_int_equal(b.end, RUNNER_DROPPED);
    assert_int_equal(a.ended, 0);
    gate_open(&fx);
    assert_int_equal(runner_stop(r, 10000), 0);
    assert_int_equal(a.ended, 1);
    assert_int_equal(a.end, RUNNER_CANCELLED); /* it was asked to stop while running */
    runner_job_release(&a.rj);
    runner_job_release(&b.rj);
}

static void test_key_and_cost(void **state)
{
    (void)state;
    struct runner *r = start(1, 8, 100);
    struct tjob a, b, c, d;
    job_init(&a);
    job_init(&b);
    job_init(&c);
    job_init(&d);
    static const int k1 = 1, k2 = 2;
    a.rj.key = &k1;
    a.rj.cost = 60;
    b.rj.key = &k1;
    c.rj.key = &k2;
    c.rj.cost = 41;
    d.rj.key = &k2;
    d.rj.cost = 40;
    assert_int_equal(runner_submit(r, &a.rj), 0);
    wait_gated(&fx, 1);
    assert_int_equal(runner_submit(r, &b.rj), -EEXIST);
    assert_int_equal(runner_submit(r, &c.rj), -EAGAIN); /* 60 + 41 > 100 */
    assert_int_equal(runner_submit(r, &d.rj), 0);       /* 60 + 40 fits */
    assert_int_equal(runner_cancel_key(r, &k2), RUNNER_UNQUEUED);
    assert_int_equal(d.end, RUNNER_DROPPED);
    assert_int_equal(runner_cancel_key(r, &k2), RUNNER_NOT_LIVE);
    gate_open(&fx);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&a, 1);
    /* the key and the cost are free again */
    assert_int_equal(runner_submit(r, &b.rj), 0);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&b, 1);
    runner_job_release(&a.rj);
    runner_job_release(&b.rj);
    runner_job_release(&c.rj);
    runner_job_release(&d.rj);
}

/* Jobs of one serial run one at a time in submission order, however many workers are idle;
 * others pass them; past serial_queue waiting ones a job of that serial is refused. */
static void test_serial(void **state)
{
    (void)state;
    struct runner_config cfg = {.workers = 3, .queue = 8, .serial_queue = 2};
    struct runner *r = NULL;
    assert_int_equal(runner_new(&cfg, &ops, &fx, &r, NULL), 0);
    fx.r = r;
    begun = k_inside = k_most = 0;
    struct tjob a, b, c, d, e, f;
    struct tjob *all[] = {&a, &b, &c, &d, &e, &f};
    for (size_t i = 0; i < 6; i++)
        job_init(all[i]);
    char k1[] = "K", k2[] = "K", k3[] = "K", k4[] = "K"; /* equal strings, not one pointer */
    a.rj.serial = k1;
    b.rj.serial = k2;
    d.rj.serial = k3;
    e.rj.serial = k4;
    f.rj.serial = "L";
    assert_int_equal(runner_submit(r, &a.rj), 0);
    wait_gated(&fx, 1);
    assert_int_equal(runner_submit(r, &b.rj), 0); /* waits behind a */
    assert_int_equal(runner_submit(r, &c.rj), 0); /* no serial: passes b */
    assert_int_equal(runner_submit(r, &f.rj), 0); /* another serial: not held back */
    wait_gated(&fx, 3);
    assert_int_equal(__atomic_load_n(&b.ran, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(runner_submit(r, &d.rj), 0);      /* b and d wait: serial_queue 2 */
    assert_int_equal(runner_submit(r, &e.rj), -EBUSY); /* a third would pass it */
    struct runner_stats st;
    runner_get_stats(r, &st);
    assert_int_equal(st.running, 3);
    assert_int_equal(st.queued, 2);
    gate_open(&fx);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    for (size_t i = 0; i < 6; i++)
        if (all[i] != &e)
            wait_ended(all[i], 1);
    assert_int_equal(e.ran, 0);
    assert_int_equal(k_most, 1);
    assert_true(a.order < b.order && b.order < d.order);
    assert_true(c.order < b.order && f.order < b.order);
    /* Nothing of K is live now: it is taken again at once. */
    assert_int_equal(runner_submit(r, &e.rj), 0);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&e, 1);
    for (size_t i = 0; i < 6; i++)
        runner_job_release(&all[i]->rj);
}

static void test_cancel_all_reentrant(void **state)
{
    (void)state;
    struct runner *r = start(1, 8, 0);
    struct tjob j[5];
    for (int i = 0; i < 5; i++)
        job_init(&j[i]);
    assert_int_equal(runner_submit(r, &j[0].rj), 0);
    wait_gated(&fx, 1);
    for (int i = 1; i < 5; i++)
        assert_int_equal(runner_submit(r, &j[i].rj), 0);
    /* the first dropped job's done() calls runner_cancel_all again: no deadlock, no double end */
    fx.cancel_all_from_done = r;
    assert_int_equal(runner_cancel(r, &j[1].rj), RUNNER_UNQUEUED);
    for (int i = 1; i < 5; i++) {
        assert_int_equal(j[i].ended, 1);
        assert_int_equal(j[i].end, RUNNER_DROPPED);
        assert_int_equal(j[i].ran, 0);
    }
    gate_open(&fx);
    assert_int_equal(runner_wait_idle(r, 10000), 0);
    wait_ended(&j[0], 1);
    assert_int_equal(j[0].end, RUNNER_CANCELLED);
    for (int i = 0; i < 5; i++)
        runner_job_release(&j[i].rj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_full_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_running_kills_sandbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_waits_with_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_and_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_all_reentrant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serial, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
