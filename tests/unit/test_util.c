/* SPDX-License-Identifier: MIT */
/* test_util.c - lib/base/util.c's /proc status field lookup (eb_status_line): a field is found
 * only at the start of a line, the first line included, and a missing field is NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/util.h"

static const char status[] = "Name:\tpython3\n"
                             "Umask:\t0022\n"
                             "SigQ:\t0/31\n"
                             "SigIgn:\t0000000000001000\n"
                             "SigCgt:\t0000000180000002\n"
                             "CapBnd:\t000001ffffffffff\n";

static void test_finds_a_field_at_a_line_start(void **state)
{
    (void)state;
    assert_ptr_equal(eb_status_line(status, "Name:"), status);
    const char *p = eb_status_line(status, "SigCgt:");
    assert_non_null(p);
    assert_int_equal(strncmp(p, "SigCgt:\t0000000180000002\n", 25), 0);
    assert_int_equal(strncmp(eb_status_line(status, "CapBnd:"), "CapBnd:\t000001ff", 16), 0);
}

static void test_a_name_inside_a_line_or_missing_is_not_found(void **state)
{
    (void)state;
    assert_null(eb_status_line(status, "python3"));     /* a value, not a field */
    assert_null(eb_status_line(status, "Ign:"));        /* the end of SigIgn's name */
    assert_null(eb_status_line(status, "NoNewPrivs:")); /* absent */
    assert_null(eb_status_line("", "Name:"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finds_a_field_at_a_line_start),
        cmocka_unit_test(test_a_name_inside_a_line_or_missing_is_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
