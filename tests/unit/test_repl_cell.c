/* SPDX-License-Identifier: MIT */
/* test_repl_cell.c - `execbox repl`'s cell rules (when a cell needs another line) and its
 * base64 decoder (src/repl/cell.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "execbox/execbox.h"
#include "repl/cell.h"

static bool more(const char *s)
{
    return repl_cell_continues(s, strlen(s));
}

static void test_continues(void **state)
{
    (void)state;
    /* Complete at once. */
    assert_false(more("x = 1"));
    assert_false(more("print('a:')"));
    assert_false(more("x = 1  # comment:"));
    assert_false(more("s = 'unclosed ("));
    assert_false(more("x = [1,\n2]"));
    /* A block: until an empty line. */
    assert_true(more("def f():"));
    assert_true(more("if x:  # why"));
    assert_true(more("def f():\n    return 1"));
    assert_false(more("for i in y:\n    pass\n  ")); /* blanks only: an empty line */
    assert_false(more("def f():\n    return 1\n"));
    assert_true(more("@decorator"));
    assert_true(more("@decorator\ndef f(): pass"));
    assert_false(more("@decorator\ndef f(): pass\n"));
    /* Open brackets, strings and backslashes. */
    assert_true(more("x = (1,"));
    assert_true(more("x = {'a': [1,\n"));
    assert_true(more("s = '''one"));
    assert_true(more("s = \"\"\"one\n)\n"));
    assert_false(more("s = '''one\ntwo'''"));
    assert_true(more("x = 1 + \\"));
    assert_false(more("s = '(' + \"[\" + '\\'{'"));
    assert_false(more("x = ')'  # ("));
}

static void test_base64(void **state)
{
    (void)state;
    size_t n = 0;
    unsigned char *d = execbox_base64_decode("aGVsbG8=", 8, &n);
    assert_non_null(d);
    assert_int_equal(n, 5);
    assert_memory_equal(d, "hello", 5);
    free(d);
    d = execbox_base64_decode("iVBO\nRw0K", 9, &n);
    assert_non_null(d);
    assert_int_equal(n, 6);
    assert_memory_equal(d, "\x89PNG\r\n", 6);
    free(d);
    d = execbox_base64_decode("", 0, &n);
    assert_non_null(d);
    assert_int_equal(n, 0);
    free(d);
    assert_null(execbox_base64_decode("aGV*bG8=", 8, &n));
    assert_null(execbox_base64_decode("aG=Vs", 5, &n));
    assert_null(execbox_base64_decode("aGVsb", 5, &n)); /* a last quantum of 6 bits */
    assert_null(execbox_base64_decode("aGVs\nb", 6, &n));
}

static bool is_exit(const char *s)
{
    return repl_cell_is_exit(s, strlen(s));
}

static void test_is_exit(void **state)
{
    (void)state;
    assert_true(is_exit("exit()"));
    assert_true(is_exit("  quit() "));
    assert_true(is_exit("exit(3);"));
    assert_true(is_exit("sys.exit(n + 1)"));
    assert_true(is_exit("raise SystemExit"));
    assert_true(is_exit("raise SystemExit(2)"));
    assert_false(is_exit("exit"));
    assert_false(is_exit("exit(0) if done else None"));
    assert_false(is_exit("exits()"));
    assert_false(is_exit("raise SystemExitError()"));
    assert_false(is_exit("x = 1\nexit()"));
    assert_false(is_exit("print(exit)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_continues),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_is_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
