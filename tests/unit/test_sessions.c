/* SPDX-License-Identifier: MIT */
/* test_sessions.c - the session registry (src/common/sessions.c) without a sandbox: idle
 * timeouts checked and capped, ISO 8601 times, unknown and malformed ids found nowhere, a
 * backend without sessions refusing every create without using up --max-sessions, and a closed
 * registry refusing new sessions. The sessions themselves are tested end to end over HTTP
 * (tests/integration/sessions.py). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/sessions.h"
#include "execbox/execbox.h"

struct fixture {
    struct execbox_executor *ex;
    struct sess_registry *r;
};

static int setup(void **state)
{
    static struct fixture f;
    struct execbox_executor_options eo = {.backend = "subprocess"};
    struct execbox_error err = {0};
    assert_int_equal(execbox_executor_new(&eo, &f.ex, &err), 0);
    struct sess_config cfg = {.exec = f.ex, .max_sessions = 2, .idle_max = 100};
    assert_int_equal(sess_registry_new(&cfg, &f.r, &err), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    f->r = sess_registry_free(f->r);
    f->ex = execbox_executor_free(f->ex);
    return 0;
}

static void test_idle_check(void **state)
{
    struct fixture *f = *state;
    struct execbox_error err = {0};
    double v = -1;
    /* The default (600) is capped by the maximum (100). */
    assert_int_equal(sess_idle_check(f->r, 0, &v, &err), 0);
    assert_true(v == 100);
    assert_int_equal(sess_idle_check(f->r, 1, &v, &err), 0);
    assert_true(v == 1);
    assert_int_equal(sess_idle_check(f->r, 100, &v, &err), 0);
    const double bad[] = {0.5, 1.5, -3, 101, NAN, INFINITY};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        v = -1;
        assert_int_equal(sess_idle_check(f->r, bad[i], &v, &err), -EINVAL);
        assert_true(v == -1); /* ret_ written only on success */
        assert_string_equal(err.field, "idle_timeout");
        assert_true(err.msg[0] != '\0');
    }
    memset(&err, 0, sizeof(err));
    sess_idle_check(f->r, 101, &v, &err);
    assert_int_equal(err.kind, EXECBOX_ERROR_OVER_MAXIMUM);
}

static void test_iso_time(void **state)
{
    (void)state;
    char buf[32];
    sess_iso_time(0, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    sess_iso_time(1796148000.9, buf, sizeof(buf));
    assert_string_equal(buf, "2026-12-01T18:00:00Z");
}

static void test_unknown_ids(void **state)
{
    struct fixture *f = *state;
    const char *ids[] = {NULL,
                         "",
                         "short",
                         "AAAAAAAAAAAAAAAAAAAAAA",
                         "AAAAAAAAAAAAAAAAAAAAAAA",
                         "../../../../etc/passwd"};
    bool called = false;
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        assert_null(sess_get(f->r, ids[i]));
        assert_int_equal(sess_remove(f->r, ids[i], NULL, &called), -ENOENT);
    }
    assert_false(called);
    struct sess_summary v[2];
    assert_int_equal(sess_list(f->r, NULL, v, 2), 0);
}

static void test_create_refused_leaks_no_slot(void **state)
{
    struct fixture *f = *state;
    struct execbox_policy p;
    execbox_policy_init(&p);
    struct sess_options o = {.policy = &p, .surface = "test"};
    /* More attempts than --max-sessions: each is the backend's refusal, never -EAGAIN. */
    for (int i = 0; i < 5; i++) {
        struct execbox_error err = {0};
        struct sess *s = NULL;
        assert_int_equal(sess_create(f->r, &o, &s, &err), -ENOTSUP);
        assert_null(s);
        assert_true(err.msg[0] != '\0');
    }
    struct execbox_error err = {0};
    struct sess *s = NULL;
    o.idle_timeout = 1000; /* checked before the backend is asked */
    assert_int_equal(sess_create(f->r, &o, &s, &err), -EINVAL);
    assert_string_equal(err.field, "idle_timeout");
    struct sess_stats st;
    sess_get_stats(f->r, &st);
    assert_int_equal(st.open, 0);
    assert_int_equal(st.created, 0);
    assert_int_equal(st.expired, 0);
}

static void test_closed_refuses(void **state)
{
    struct fixture *f = *state;
    sess_close_all(f->r);
    struct sess_options o = {0};
    struct execbox_error err = {0};
    struct sess *s = NULL;
    assert_int_equal(sess_create(f->r, &o, &s, &err), -ESHUTDOWN);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idle_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iso_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_refused_leaks_no_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
