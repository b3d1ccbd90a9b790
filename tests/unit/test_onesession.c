/* SPDX-License-Identifier: MIT */
/* test_onesession.c - the one session a surface holds (src/common/onesession.c), against fake
 * library calls: lazy open, the single restart when a session is lost, why a loss is told and
 * when, a failed start keeping its loss to tell, a session that ends with its cell, close. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/onesession.h"

/* The fake library: one session object at a time, scripted answers. */
static struct fake {
    int opened, freed, ran;
    int open_fail;     /* next opens fail with this code (0: succeed) */
    int run_codes[4];  /* the answers of successive runs (0: a result) */
    bool alive_before; /* info before a run says alive */
    bool alive_after;  /* info after a successful run says alive */
    bool oom;          /* a result is an OOM */
    bool expired_idle; /* a dead session expired for idleness */
    bool in_run;       /* between run's start and its info */
    char events[64];   /* one letter per event: F forgotten, S started, A attempt, R ran */
    int told[ONESESSION_PREVIOUS_OOM + 1];
} fk;

static int sess_obj; /* the fake session's address */

static int f_open(struct execbox_executor *ex, const struct execbox_session_options *so,
                  struct execbox_session **ret, struct execbox_error *err)
{
    (void)ex;
    (void)so;
    if (fk.open_fail) {
        snprintf(err->msg, sizeof(err->msg), "cannot start");
        return fk.open_fail;
    }
    fk.opened++;
    *ret = (struct execbox_session *)&sess_obj;
    return 0;
}

static int f_run(struct execbox_session *s, const struct execbox_request *req,
                 struct execbox_result **ret, struct execbox_error *err)
{
    (void)req;
    assert_ptr_equal(s, &sess_obj);
    int code = fk.run_codes[fk.ran++];
    if (code < 0) {
        snprintf(err->msg, sizeof(err->msg), "run failed");
        return code;
    }
    *ret = calloc(1, sizeof(**ret));
    (*ret)->oom_killed = fk.oom;
    fk.in_run = true;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void f_info(struct execbox_session *s, struct execbox_session_info *ret)
{
    assert_ptr_equal(s, &sess_obj);
    double now = now_s();
    bool alive = fk.in_run ? fk.alive_after : fk.alive_before;
    fk.in_run = false;
    *ret = (struct execbox_session_info){.alive = alive, .created_at = now - 100};
    if (!alive && fk.expired_idle) {
        ret->last_used_at = now - 60;
        ret->expires_at = now - 30; /* idle 30 s */
    }
}

static struct execbox_session *f_free(struct execbox_session *s)
{
    assert_ptr_equal(s, &sess_obj);
    fk.freed++;
    return NULL;
}

static const struct onesession_ops fake_ops = {f_open, f_run, f_info, f_free};

static void on_event(void *ud, enum onesession_event ev, const struct onesession_lost *l)
{
    (void)ud;
    static const char letters[] = {'F', 'S', 'A', 'R'};
    size_t n = strlen(fk.events);
    if (n + 1 < sizeof(fk.events))
        fk.events[n] = letters[ev];
    if (ev == ONESESSION_ATTEMPT && l)
        fk.told[l->why]++;
    if (ev == ONESESSION_FORGOTTEN)
        assert_non_null(l);
}

static struct execbox_policy pol;

static void setup_holder(struct onesession *h, double idle)
{
    memset(&fk, 0, sizeof(fk));
    fk.alive_before = fk.alive_after = true;
    struct execbox_session_options so = {.policy = &pol, .idle_timeout = idle};
    onesession_init(h, NULL, &so, &fake_ops);
    h->on_event = on_event;
}

static int cell(struct onesession *h, struct onesession_cell *c)
{
    struct execbox_request req = {.code = "x", .code_len = 1};
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    int r = onesession_run(h, &req, &res, c, &err);
    if (r == 0) {
        assert_non_null(res);
        execbox_result_free(res);
    } else {
        assert_null(res);
        assert_true(err.msg[0]);
    }
    return r;
}

/* Nothing opens before the first cell; cells share the one session. */
static void test_lazy_and_shared(void **state)
{
    (void)state;
    struct onesession h;
    setup_holder(&h, 0);
    assert_int_equal(fk.opened, 0);
    struct onesession_cell c;
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(fk.opened, 1);
    assert_int_equal(c.lost.why, ONESESSION_NOT_LOST);
    assert_false(c.ended);
    assert_string_equal(fk.events, "SARAR");
    assert_true(onesession_close(&h));
    assert_false(onesession_close(&h));
    assert_int_equal(fk.freed, 1);
}

/* A session lost under the cell (-ESHUTDOWN, -ETIMEDOUT): forgotten, and the cell runs once
 * more in a new one that says the state was lost; a second loss is the caller's error. */
static void test_lost_runs_once_more(void **state)
{
    (void)state;
    static const int lost_codes[] = {-ESHUTDOWN, -ETIMEDOUT};
    for (size_t i = 0; i < 2; i++) {
        struct onesession h;
        setup_holder(&h, 0);
        fk.run_codes[0] = lost_codes[i];
        struct onesession_cell c;
        assert_int_equal(cell(&h, &c), 0);
        assert_int_equal(fk.opened, 2);
        assert_int_equal(fk.freed, 1);
        assert_int_equal(fk.ran, 2);
        assert_int_equal(c.lost.why, ONESESSION_PROCESS);
        assert_int_equal(fk.told[ONESESSION_PROCESS], 1);
        assert_string_equal(fk.events, "SARFSAR");
        onesession_close(&h);
    }
    struct onesession h;
    setup_holder(&h, 0);
    fk.run_codes[0] = -ESHUTDOWN;
    fk.run_codes[1] = -ESHUTDOWN;
    struct onesession_cell c;
    assert_int_equal(cell(&h, &c), -ESHUTDOWN);
    assert_int_equal(fk.ran, 2); /* never a third attempt */
    assert_false(c.start_failed);
    onesession_close(&h);
}

/* Any other error is the cell's: no new session. */
static void test_other_errors_not_retried(void **state)
{
    (void)state;
    static const int codes[] = {-EINVAL, -EBUSY, -ENOMEM, -EIO};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        struct onesession h;
        setup_holder(&h, 0);
        fk.run_codes[0] = codes[i];
        struct onesession_cell c;
        assert_int_equal(cell(&h, &c), codes[i]);
        assert_int_equal(fk.ran, 1);
        assert_int_equal(fk.opened, 1);
        assert_int_equal(fk.freed, 0);
        onesession_close(&h);
    }
}

/* A session found dead before the cell: forgotten first, the loss told with the attempt (idle
 * expiry names the idle timeout). */
static void test_dead_before_cell(void **state)
{
    (void)state;
    struct onesession h;
    setup_holder(&h, 30);
    struct onesession_cell c;
    assert_int_equal(cell(&h, &c), 0);
    fk.alive_before = false;
    fk.expired_idle = true;
    memset(fk.events, 0, sizeof(fk.events));
    /* The dead one is forgotten before the new one opens; the new one answers alive after its
     * cell (the check before a cell is made once, on the old one). */
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(c.lost.why, ONESESSION_IDLE);
    assert_true(c.lost.idle == 30);
    assert_int_equal(fk.told[ONESESSION_IDLE], 1);
    assert_int_equal(fk.opened, 2);
    assert_string_equal(fk.events, "FSAR");
    onesession_close(&h);
}

/* A failed start keeps the loss for the next cell, which tells it once. */
static void test_failed_start_keeps_loss(void **state)
{
    (void)state;
    struct onesession h;
    setup_holder(&h, 0);
    struct onesession_cell c;
    assert_int_equal(cell(&h, &c), 0);
    fk.alive_before = false;
    fk.open_fail = -ENOMEM;
    assert_int_equal(cell(&h, &c), -ENOMEM);
    assert_true(c.start_failed);
    assert_int_equal(c.lost.why, ONESESSION_PROCESS);
    assert_int_equal(fk.told[ONESESSION_PROCESS], 0);
    fk.open_fail = 0;
    fk.alive_before = true;
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(c.lost.why, ONESESSION_PROCESS);
    assert_int_equal(fk.told[ONESESSION_PROCESS], 1);
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(c.lost.why, ONESESSION_NOT_LOST);
    assert_int_equal(fk.told[ONESESSION_PROCESS], 1);
    onesession_close(&h);
}

/* A session that ends with its cell (an OOM): forgotten at once, the next cell starts a new
 * one and is told why; a close forgets a pending loss. */
static void test_ended_with_cell(void **state)
{
    (void)state;
    struct onesession h;
    setup_holder(&h, 0);
    fk.alive_after = false;
    fk.oom = true;
    struct onesession_cell c;
    assert_int_equal(cell(&h, &c), 0);
    assert_true(c.ended);
    assert_true(c.oom);
    assert_int_equal(fk.freed, 1);
    assert_null(h.session);
    assert_int_equal(h.pending.why, ONESESSION_PREVIOUS_OOM);
    fk.alive_after = true;
    fk.oom = false;
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(c.lost.why, ONESESSION_PREVIOUS_OOM);
    assert_int_equal(fk.told[ONESESSION_PREVIOUS_OOM], 1);
    assert_int_equal(fk.opened, 2);

    fk.alive_after = false;
    assert_int_equal(cell(&h, &c), 0);
    assert_int_equal(h.pending.why, ONESESSION_PREVIOUS);
    assert_false(onesession_close(&h)); /* none open, but the loss is forgotten */
    assert_int_equal(h.pending.why, ONESESSION_NOT_LOST);
    struct onesession zero = {0};
    assert_false(onesession_close(&zero));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lazy_and_shared),          cmocka_unit_test(test_lost_runs_once_more),
        cmocka_unit_test(test_other_errors_not_retried), cmocka_unit_test(test_dead_before_cell),
        cmocka_unit_test(test_failed_start_keeps_loss),  cmocka_unit_test(test_ended_with_cell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
