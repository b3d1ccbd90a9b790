/* SPDX-License-Identifier: MIT */
/* test_traceback.c - Python's and node's uncaught exceptions parsed from stderr into
 * result.error, the cases that must not be taken for one, and the error of a signal or a
 * non-zero exit without one. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "model/result.h"

static struct execbox_result *make(const char *stderr_text, int exit_code)
{
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    r->stderr_data = strdup(stderr_text);
    assert_non_null(r->stderr_data);
    r->stderr_len = strlen(stderr_text);
    r->exit_code = exit_code;
    return r;
}

static void expect_error(const char *text, const char *name, const char *value,
                         const char *tb_start)
{
    struct execbox_result *r = make(text, 1);
    assert_int_equal(eb_parse_python_error(r), 0);
    if (!r->error_name)
        fail_msg("no error parsed from:\n%s", text);
    assert_string_equal(r->error_name, name);
    assert_string_equal(r->error_value, value);
    assert_non_null(r->error_traceback);
    if (strncmp(r->error_traceback, tb_start, strlen(tb_start)) != 0)
        fail_msg("traceback starts with '%.60s', want '%s'", r->error_traceback, tb_start);
    execbox_result_free(r);
}

static void expect_none(const char *text, int exit_code)
{
    struct execbox_result *r = make(text, exit_code);
    assert_int_equal(eb_parse_python_error(r), 0);
    if (r->error_name)
        fail_msg("error '%s' parsed from:\n%s", r->error_name, text);
    execbox_result_free(r);
}

static const char name_error[] = "Traceback (most recent call last):\n"
                                 "  File \"/workspace/main.py\", line 1, in <module>\n"
                                 "    print(x)\n"
                                 "          ^\n"
                                 "NameError: name 'x' is not defined\n";

static void test_name_error(void **state)
{
    (void)state;
    expect_error(name_error, "NameError", "name 'x' is not defined", "Traceback (most recent");
    struct execbox_result *r = make(name_error, 1);
    assert_int_equal(eb_parse_python_error(r), 0);
    /* The whole traceback, without the trailing newline. */
    assert_int_equal(strlen(r->error_traceback), strlen(name_error) - 1);
    execbox_result_free(r);
}

static void test_output_before_traceback(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof(text), "warning: something\nValueError: not this one\n%s", name_error);
    expect_error(text, "NameError", "name 'x' is not defined", "Traceback (most recent");
}

static void test_chained(void **state)
{
    (void)state;
    const char *t = "Traceback (most recent call last):\n"
                    "  File \"main.py\", line 2, in <module>\n"
                    "    1/0\n"
                    "ZeroDivisionError: division by zero\n"
                    "\n"
                    "During handling of the above exception, another exception occurred:\n"
                    "\n"
                    "Traceback (most recent call last):\n"
                    "  File \"main.py\", line 4, in <module>\n"
                    "    raise ValueError(\"bad\")\n"
                    "ValueError: bad\n";
    expect_error(t, "ValueError", "bad", "Traceback (most recent");
    struct execbox_result *r = make(t, 1);
    assert_int_equal(eb_parse_python_error(r), 0);
    /* The whole chain is kept: the model needs the cause. */
    assert_non_null(strstr(r->error_traceback, "ZeroDivisionError"));
    assert_non_null(strstr(r->error_traceback, "During handling"));
    execbox_result_free(r);
}

static void test_syntax_error(void **state)
{
    (void)state;
    const char *t = "  File \"/tmp/execbox-run-x/main.py\", line 1\n"
                    "    def f(\n"
                    "         ^\n"
                    "SyntaxError: '(' was never closed\n";
    expect_error(t, "SyntaxError", "'(' was never closed", "  File \"/tmp/execbox-run-x/main.py");
    const char *ind = "  File \"main.py\", line 2\n"
                      "    y = 2\n"
                      "IndentationError: unexpected indent\n";
    expect_error(ind, "IndentationError", "unexpected indent", "  File \"main.py\", line 2");
}

static void test_qualified_name(void **state)
{
    (void)state;
    const char *t = "Traceback (most recent call last):\n"
                    "  File \"main.py\", line 3, in <module>\n"
                    "    pd.read_csv(io.StringIO(s))\n"
                    "pandas.errors.ParserError: Error tokenizing data. C error: Expected 1 "
                    "fields in line 3, saw 2\n";
    expect_error(t, "pandas.errors.ParserError",
                 "Error tokenizing data. C error: Expected 1 fields in line 3, saw 2", "Traceback");
    const char *m = "Traceback (most recent call last):\n"
                    "  File \"main.py\", line 3, in <module>\n"
                    "__main__.MyError: custom\n";
    expect_error(m, "__main__.MyError", "custom", "Traceback");
}

static void test_no_value(void **state)
{
    (void)state;
    expect_error("Traceback (most recent call last):\n"
                 "  File \"main.py\", line 1, in <module>\n"
                 "    raise KeyboardInterrupt\n"
                 "KeyboardInterrupt\n",
                 "KeyboardInterrupt", "", "Traceback");
    expect_error("Traceback (most recent call last):\n"
                 "  File \"main.py\", line 1, in <module>\n"
                 "RuntimeError\n\n",
                 "RuntimeError", "", "Traceback");
}

static void test_multiline_value(void **state)
{
    (void)state;
    expect_error("Traceback (most recent call last):\n"
                 "  File \"main.py\", line 1, in <module>\n"
                 "ValueError: first line\nsecond line\n",
                 "ValueError", "first line\nsecond line", "Traceback");
}

static void test_system_exit_is_not_an_error(void **state)
{
    (void)state;
    /* sys.exit("bye") prints its message and exits 1, with no traceback. */
    expect_none("bye\n", 1);
    expect_none("error: the input was empty\n", 1);
    expect_none("ValueError: looks like one but no traceback\n", 1);
}

static void test_exit_code_not_one(void **state)
{
    (void)state;
    /* Only an uncaught exception exits 1; a traceback printed by a program that then exits
     * with another status is the program's business. */
    expect_none(name_error, 0);
    expect_none(name_error, 2);
    expect_none(name_error, 137);
}

static void test_not_exceptions(void **state)
{
    (void)state;
    expect_none("", 1);
    expect_none("\n\n", 1);
    expect_none("Traceback (most recent call last):\n  File \"main.py\", line 1\n", 1);
    expect_none("Traceback (most recent call last):\n  File \"main.py\", line 1\n\n1 + 2 = 3\n", 1);
    /* An error already set (a SandboxError, a Timeout) is never replaced. */
    struct execbox_result *r = make(name_error, 1);
    assert_int_equal(eb_result_set_error(r, "SandboxError", "x", ""), 0);
    assert_int_equal(eb_parse_python_error(r), 0);
    assert_string_equal(r->error_name, "SandboxError");
    execbox_result_free(r);
}

static void test_truncated_stderr(void **state)
{
    (void)state;
    /* A deep recursion: the traceback is far longer than the output limit, so the middle is
     * dropped and a marker put in its place. The exception at the end is still found. */
    struct eb_capbuf b;
    eb_capbuf_init(&b, 4096);
    const char *hdr = "Traceback (most recent call last):\n";
    assert_int_equal(eb_capbuf_append(&b, hdr, strlen(hdr)), 0);
    char frame[128];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(frame, sizeof(frame), "  File \"main.py\", line %d, in f\n    f()\n", i);
        assert_int_equal(eb_capbuf_append(&b, frame, (size_t)n), 0);
    }
    const char *last = "RecursionError: maximum recursion depth exceeded\n";
    assert_int_equal(eb_capbuf_append(&b, last, strlen(last)), 0);
    assert_true(eb_capbuf_truncated(&b));
    struct execbox_result *r = eb_result_new("subprocess", "python");
    assert_non_null(r);
    assert_int_equal(eb_capbuf_finish(&b, &r->stderr_data, &r->stderr_len), 0);
    assert_non_null(strstr(r->stderr_data, "bytes omitted"));
    r->exit_code = 1;
    assert_int_equal(eb_parse_python_error(r), 0);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "RecursionError");
    assert_string_equal(r->error_value, "maximum recursion depth exceeded");
    assert_non_null(strstr(r->error_traceback, "bytes omitted"));
    execbox_result_free(r);
}

static void test_huge_traceback_capped(void **state)
{
    (void)state;
    size_t frames = 20000;
    size_t cap = frames * 64 + 256;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t n = (size_t)snprintf(t, cap, "Traceback (most recent call last):\n");
    for (size_t i = 0; i < frames; i++)
        n += (size_t)snprintf(t + n, cap - n, "  File \"main.py\", line %zu, in f\n", i);
    n += (size_t)snprintf(t + n, cap - n, "RecursionError: deep\n");
    struct execbox_result *r = make(t, 1);
    assert_int_equal(eb_parse_python_error(r), 0);
    assert_string_equal(r->error_name, "RecursionError");
    assert_true(strlen(r->error_traceback) <= 64 * 1024);
    assert_non_null(strstr(r->error_traceback, "RecursionError: deep"));
    execbox_result_free(r);
    free(t);
}

static void test_keyboard_interrupt_by_sigint(void **state)
{
    (void)state;
    /* A cold interpreter ends an uncaught KeyboardInterrupt by SIGINT (exit 130), not exit 1. */
    const char *t = "Traceback (most recent call last):\n"
                    "  File \"/code/main.py\", line 1, in <module>\n"
                    "    raise KeyboardInterrupt\n"
                    "KeyboardInterrupt\n";
    struct execbox_result *r = make(t, 130);
    r->signal = SIGINT;
    assert_int_equal(eb_parse_python_error(r), 0);
    assert_non_null(r->error_name);
    assert_string_equal(r->error_name, "KeyboardInterrupt");
    assert_string_equal(r->error_value, "");
    assert_string_equal(r->error_traceback, "Traceback (most recent call last):\n"
                                            "  File \"/code/main.py\", line 1, in <module>\n"
                                            "    raise KeyboardInterrupt\n"
                                            "KeyboardInterrupt");
    execbox_result_free(r);
    /* Another signal with a traceback printed before it is not an exception's end. */
    r = make(t, 139);
    r->signal = SIGSEGV;
    assert_int_equal(eb_parse_python_error(r), 0);
    assert_null(r->error_name);
    execbox_result_free(r);
}

static void expect_node(const char *text, const char *name, const char *value, const char *tb)
{
    struct execbox_result *r = make(text, 1);
    assert_int_equal(eb_parse_node_error(r), 0);
    if (!r->error_name)
        fail_msg("no error parsed from:\n%s", text);
    assert_string_equal(r->error_name, name);
    assert_string_equal(r->error_value, value);
    assert_string_equal(r->error_traceback, tb);
    execbox_result_free(r);
}

#define NODE_TRAILER "\nNode.js v20.20.2\n"

static void test_node_error(void **state)
{
    (void)state;
    const char *tb = "/code/main.js:1\n"
                     "throw new Error(\"boom\")\n"
                     "^\n"
                     "\n"
                     "Error: boom\n"
                     "    at Object.<anonymous> (/code/main.js:1:7)\n"
                     "    at node:internal/main/run_main_module:28:49";
    char t[1024];
    snprintf(t, sizeof(t), "some output\n%s\n" NODE_TRAILER, tb);
    expect_node(t, "Error", "boom", tb);
    /* A TypeError thrown from inside a function, with node's internal frames. */
    expect_node("/code/main.js:1\n"
                "function f(){ null.x }\n"
                "                   ^\n\n"
                "TypeError: Cannot read properties of null (reading 'x')\n"
                "    at f (/code/main.js:1:20)\n"
                "    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n" NODE_TRAILER,
                "TypeError", "Cannot read properties of null (reading 'x')",
                "/code/main.js:1\n"
                "function f(){ null.x }\n"
                "                   ^\n\n"
                "TypeError: Cannot read properties of null (reading 'x')\n"
                "    at f (/code/main.js:1:20)\n"
                "    at Module._compile (node:internal/modules/cjs/loader:1521:14)");
}

static void test_node_internal_and_props(void **state)
{
    (void)state;
    /* Thrown inside node (a "node:" location), with a code and the error's own properties. */
    const char *tb = "node:internal/errors:541\n"
                     "      throw error;\n"
                     "      ^\n\n"
                     "TypeError [ERR_INVALID_ARG_TYPE]: The \"path\" argument must be of type "
                     "string. Received undefined\n"
                     "    at Object.openSync (node:fs:571:10)\n"
                     "    at node:internal/main/run_main_module:28:49 {\n"
                     "  code: 'ERR_INVALID_ARG_TYPE'\n"
                     "}";
    char t[1024];
    snprintf(t, sizeof(t), "%s\n" NODE_TRAILER, tb);
    expect_node(t, "TypeError", "The \"path\" argument must be of type string. Received undefined",
                tb);
    /* A message over several lines ends at the first frame. */
    expect_node("node:internal/modules/cjs/loader:1143\n"
                "  throw err;\n"
                "  ^\n\n"
                "Error: Cannot find module 'nope'\n"
                "Require stack:\n"
                "- /code/main.js\n"
                "    at Module._resolveFilename (node:internal/modules/cjs/loader:1140:15) {\n"
                "  code: 'MODULE_NOT_FOUND'\n"
                "}\n" NODE_TRAILER,
                "Error", "Cannot find module 'nope'\nRequire stack:\n- /code/main.js",
                "node:internal/modules/cjs/loader:1143\n"
                "  throw err;\n"
                "  ^\n\n"
                "Error: Cannot find module 'nope'\n"
                "Require stack:\n"
                "- /code/main.js\n"
                "    at Module._resolveFilename (node:internal/modules/cjs/loader:1140:15) {\n"
                "  code: 'MODULE_NOT_FOUND'\n"
                "}");
    /* A syntax error: several carets. */
    expect_node("/code/main.js:1\nfunction (\n^^^^^^^^\n\n"
                "SyntaxError: Function statements require a function name\n"
                "    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n" NODE_TRAILER,
                "SyntaxError", "Function statements require a function name",
                "/code/main.js:1\nfunction (\n^^^^^^^^\n\n"
                "SyntaxError: Function statements require a function name\n"
                "    at wrapSafe (node:internal/modules/cjs/loader:1464:18)");
    /* An Error without a stack, as node inspects it: "[Name: message] {". */
    expect_node("node:internal/process/promises:289\n"
                "            triggerUncaughtException(err, true /* fromPromise */);\n"
                "            ^\n\n"
                "[UnhandledPromiseRejection: The promise rejected with the reason \"x\".] {\n"
                "  code: 'ERR_UNHANDLED_REJECTION'\n"
                "}\n" NODE_TRAILER,
                "UnhandledPromiseRejection", "The promise rejected with the reason \"x\".",
                "node:internal/process/promises:289\n"
                "            triggerUncaughtException(err, true /* fromPromise */);\n"
                "            ^\n\n"
                "[UnhandledPromiseRejection: The promise rejected with the reason \"x\".] {\n"
                "  code: 'ERR_UNHANDLED_REJECTION'\n"
                "}");
    /* An Error without a message. */
    expect_node("/code/main.js:1\nthrow new RangeError()\n^\n\nRangeError\n"
                "    at Object.<anonymous> (/code/main.js:1:7)\n" NODE_TRAILER,
                "RangeError", "",
                "/code/main.js:1\nthrow new RangeError()\n^\n\nRangeError\n"
                "    at Object.<anonymous> (/code/main.js:1:7)");
}

static void test_node_uncaught_values(void **state)
{
    (void)state;
    /* A thrown value that is not an Error: node prints it bare, without frames. */
    expect_node(
        "/code/main.js:1\nthrow 42\n^\n42\n"
        "(Use `node --trace-uncaught ...` to show where the exception was thrown)\n" NODE_TRAILER,
        "Uncaught", "42",
        "/code/main.js:1\nthrow 42\n^\n42\n"
        "(Use `node --trace-uncaught ...` to show where the exception was thrown)");
    expect_node("/code/main.js:1\nthrow \"Boom\"\n^\nBoom\n"
                "(Use `node --trace-uncaught ...` to show where the exception was thrown)\n",
                "Uncaught", "Boom",
                "/code/main.js:1\nthrow \"Boom\"\n^\nBoom\n"
                "(Use `node --trace-uncaught ...` to show where the exception was thrown)");
    expect_node("/code/main.js:1\nthrow {a: 1}\n^\n{ a: 1 }\n" NODE_TRAILER, "Uncaught", "{ a: 1 }",
                "/code/main.js:1\nthrow {a: 1}\n^\n{ a: 1 }");
    /* The REPL's "Uncaught" prefix. */
    expect_node("/code/main.js:2\n  x.y()\n  ^\n\nUncaught ReferenceError: x is not defined\n"
                "    at /code/main.js:2:3\n",
                "ReferenceError", "x is not defined",
                "/code/main.js:2\n  x.y()\n  ^\n\nUncaught ReferenceError: x is not defined\n"
                "    at /code/main.js:2:3");
}

static void expect_no_node(const char *text, int exit_code)
{
    struct execbox_result *r = make(text, exit_code);
    assert_int_equal(eb_parse_node_error(r), 0);
    if (r->error_name)
        fail_msg("error '%s' parsed from:\n%s", r->error_name, text);
    execbox_result_free(r);
}

static void test_node_not_exceptions(void **state)
{
    (void)state;
    const char *t = "/code/main.js:1\nthrow new Error(\"boom\")\n^\n\nError: boom\n"
                    "    at Object.<anonymous> (/code/main.js:1:7)\n" NODE_TRAILER;
    /* process.exit(n) after printing one, or exit 0. */
    expect_no_node(t, 0);
    expect_no_node(t, 3);
    /* console.error(err) prints the stack without the location and caret lines. */
    expect_no_node("Error: boom\n    at Object.<anonymous> (/code/main.js:1:7)\n", 1);
    expect_no_node("", 1);
    expect_no_node("^\n", 1);
    expect_no_node("/code/main.js:1\nthrow x\n^\n", 1);
    expect_no_node("/code/main.js:1\nthrow x\n^\n\n\n" NODE_TRAILER, 1);
}

static void expect_default(int exit_code, int sig, const char *name, const char *value)
{
    struct execbox_result *r = eb_result_new("jail", "bash");
    assert_non_null(r);
    r->exit_code = exit_code;
    r->signal = sig;
    assert_int_equal(eb_result_default_error(r), 0);
    if (!name) {
        assert_null(r->error_name);
    } else {
        assert_non_null(r->error_name);
        assert_string_equal(r->error_name, name);
        assert_string_equal(r->error_value, value);
        assert_string_equal(r->error_traceback, "");
    }
    execbox_result_free(r);
}

static void test_default_error(void **state)
{
    (void)state;
    expect_default(0, 0, NULL, NULL);
    expect_default(3, 0, "ExitStatus", "exit status 3");
    expect_default(1, 0, "ExitStatus", "exit status 1");
    expect_default(139, SIGSEGV, "Signal", "killed by SIGSEGV (segmentation fault)");
    expect_default(134, SIGABRT, "Signal", "killed by SIGABRT (aborted)");
    expect_default(137, SIGKILL, "Signal", "killed by SIGKILL (killed)");
    expect_default(159, SIGSYS, "Signal", "killed by SIGSYS (bad system call)");
    expect_default(128 + 40, 40, "Signal", "killed by signal 40");
    char buf[64];
    assert_string_equal(eb_signal_describe(SIGFPE, buf, sizeof(buf)),
                        "SIGFPE (floating-point exception)");
    /* Our own kills and an error already there are left as they are. */
    struct execbox_result *r = eb_result_new("jail", "python");
    r->exit_code = 137;
    r->signal = SIGKILL;
    r->killed_reason = EXECBOX_KILLED_CANCELLED;
    assert_int_equal(eb_result_default_error(r), 0);
    assert_null(r->error_name);
    r->killed_reason = EXECBOX_KILLED_NONE;
    r->timed_out = true;
    assert_int_equal(eb_result_default_error(r), 0);
    assert_null(r->error_name);
    r->timed_out = false;
    r->oom_killed = true;
    assert_int_equal(eb_result_default_error(r), 0);
    assert_null(r->error_name);
    r->oom_killed = false;
    assert_int_equal(eb_result_set_error(r, "ValueError", "bad", "Traceback"), 0);
    assert_int_equal(eb_result_default_error(r), 0);
    assert_string_equal(r->error_name, "ValueError");
    execbox_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_error),
        cmocka_unit_test(test_output_before_traceback),
        cmocka_unit_test(test_chained),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_qualified_name),
        cmocka_unit_test(test_no_value),
        cmocka_unit_test(test_multiline_value),
        cmocka_unit_test(test_system_exit_is_not_an_error),
        cmocka_unit_test(test_exit_code_not_one),
        cmocka_unit_test(test_not_exceptions),
        cmocka_unit_test(test_truncated_stderr),
        cmocka_unit_test(test_huge_traceback_capped),
        cmocka_unit_test(test_keyboard_interrupt_by_sigint),
        cmocka_unit_test(test_node_error),
        cmocka_unit_test(test_node_internal_and_props),
        cmocka_unit_test(test_node_uncaught_values),
        cmocka_unit_test(test_node_not_exceptions),
        cmocka_unit_test(test_default_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
