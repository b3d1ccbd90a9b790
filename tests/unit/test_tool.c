/* SPDX-License-Identifier: MIT */
/* test_tool.c - the tool definition an agent registers (docs/mcp.md) in its three
 * shapes, and the format names. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "execbox/execbox.h"

static json_t *schema(enum execbox_schema_format f, const struct execbox_tool_options *o)
{
    char *s = NULL;
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_tool_schema(f, o, &s, &err), 0);
    json_error_t je;
    json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        fail_msg("invalid JSON (%s): %s", je.text, s);
    execbox_free(s);
    return j;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("'%s' does not contain '%s'", hay ? hay : "(null)", needle);
}

/* Checks the description and the input schema, common to all three shapes. */
static void check_common(const char *desc, json_t *input, double max_timeout)
{
    assert_contains(desc, "no network");
    assert_contains(desc, "/workspace");
    assert_contains(desc, "numpy");
    assert_contains(desc, "pandas");
    assert_contains(desc, "matplotlib");
    assert_contains(desc, "stdout");
    assert_contains(desc, "stderr");
    assert_contains(desc, "exit_code");
    assert_contains(desc, "execution_time");
    assert_contains(desc, "isolated sandbox");
    assert_string_equal(json_string_value(json_object_get(input, "type")), "object");
    json_t *req = json_object_get(input, "required");
    assert_true(json_is_array(req));
    bool code_required = false;
    for (size_t i = 0; i < json_array_size(req); i++)
        code_required |= strcmp(json_string_value(json_array_get(req, i)), "code") == 0;
    assert_true(code_required);
    json_t *props = json_object_get(input, "properties");
    assert_string_equal(json_string_value(json_object_get(json_object_get(props, "code"), "type")),
                        "string");
    json_t *t = json_object_get(props, "timeout");
    assert_string_equal(json_string_value(json_object_get(t, "type")), "integer");
    assert_true(json_is_integer(json_object_get(t, "maximum")));
    assert_int_equal(json_integer_value(json_object_get(t, "maximum")), (json_int_t)max_timeout);
    /* timeout is optional */
    for (size_t i = 0; i < json_array_size(req); i++)
        assert_string_not_equal(json_string_value(json_array_get(req, i)), "timeout");
}

static void test_mcp(void **state)
{
    (void)state;
    json_t *j = schema(EXECBOX_SCHEMA_MCP, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "execute_python");
    check_common(json_string_value(json_object_get(j, "description")),
                 json_object_get(j, "inputSchema"), 10);
    json_t *out = json_object_get(j, "outputSchema");
    assert_string_equal(json_string_value(json_object_get(out, "type")), "object");
    json_t *oprops = json_object_get(out, "properties");
    static const char *const fields[] = {
        "stdout",       "stderr",       "exit_code",     "execution_time",    "timed_out",
        "oom_killed",   "signal",       "killed_reason", "stdout_truncated",  "stderr_truncated",
        "stdout_bytes", "stderr_bytes", "cpu_time",      "peak_memory_bytes", "error",
        "files",        "backend",      "language",
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (!json_object_get(oprops, fields[i]))
            fail_msg("outputSchema lacks '%s'", fields[i]);
    /* Each file says where it came from, as the result record does (docs/result.md). */
    json_t *fprops =
        json_object_get(json_object_get(json_object_get(oprops, "files"), "items"), "properties");
    json_t *origin = json_object_get(json_object_get(fprops, "origin"), "enum");
    assert_int_equal(json_array_size(origin), 3);
    assert_string_equal(json_string_value(json_array_get(origin, 0)), "input");
    json_t *oreq = json_object_get(out, "required");
    assert_int_equal(json_array_size(oreq), 4);
    assert_true(json_is_object(json_object_get(j, "annotations")));
    assert_null(json_object_get(j, "input_schema"));
    json_decref(j);
}

static void test_anthropic(void **state)
{
    (void)state;
    json_t *j = schema(EXECBOX_SCHEMA_ANTHROPIC, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "execute_python");
    check_common(json_string_value(json_object_get(j, "description")),
                 json_object_get(j, "input_schema"), 10);
    assert_null(json_object_get(j, "inputSchema"));
    assert_int_equal(json_object_size(j), 3);
    json_decref(j);
}

static void test_openai(void **state)
{
    (void)state;
    json_t *j = schema(EXECBOX_SCHEMA_OPENAI, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "type")), "function");
    json_t *f = json_object_get(j, "function");
    assert_string_equal(json_string_value(json_object_get(f, "name")), "execute_python");
    check_common(json_string_value(json_object_get(f, "description")),
                 json_object_get(f, "parameters"), 10);
    json_decref(j);
}

static void test_options(void **state)
{
    (void)state;
    static const char *const langs[] = {"python", "javascript", "bash", NULL};
    struct execbox_policy pol;
    execbox_policy_init(&pol);
    pol.memory = 512ULL << 20;
    struct execbox_tool_options o = {.languages = langs, .max_timeout = 30.7, .policy = &pol};
    json_t *j = schema(EXECBOX_SCHEMA_ANTHROPIC, &o);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "execute_code");
    const char *desc = json_string_value(json_object_get(j, "description"));
    assert_contains(desc, "JavaScript");
    assert_contains(desc, "512 MiB");
    assert_contains(desc, "30.7 s");
    json_t *input = json_object_get(j, "input_schema");
    check_common(desc, input, 30);
    json_t *lang = json_object_get(json_object_get(input, "properties"), "language");
    json_t *en = json_object_get(lang, "enum");
    assert_int_equal(json_array_size(en), 3);
    assert_string_equal(json_string_value(json_array_get(en, 1)), "javascript");
    json_decref(j);
    o.name = "run_it";
    j = schema(EXECBOX_SCHEMA_MCP, &o);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "run_it");
    json_decref(j);
    /* The policy's timeout is the maximum when none is given. */
    pol.timeout = 42;
    struct execbox_tool_options p = {.policy = &pol};
    j = schema(EXECBOX_SCHEMA_OPENAI, &p);
    json_t *t = json_object_get(
        json_object_get(json_object_get(json_object_get(j, "function"), "parameters"),
                        "properties"),
        "timeout");
    assert_int_equal(json_integer_value(json_object_get(t, "maximum")), 42);
    json_decref(j);
}

/* stateful: the description tells the model that state persists and that failed calls roll
 * back, and the outputSchema has the cell fields; the default says neither. */
static void test_stateful(void **state)
{
    (void)state;
    struct execbox_tool_options o = {.stateful = true};
    json_t *j = schema(EXECBOX_SCHEMA_MCP, &o);
    const char *desc = json_string_value(json_object_get(j, "description"));
    check_common(desc, json_object_get(j, "inputSchema"), 10);
    assert_contains(desc, "State persists between calls");
    assert_contains(desc, "rolled back");
    assert_contains(desc, "exactly as they were before that call");
    assert_contains(desc, "state was lost");
    json_t *oprops = json_object_get(json_object_get(j, "outputSchema"), "properties");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(oprops, "execution_count"), "type")),
        "integer");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(oprops, "rolled_back"), "type")),
        "boolean");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(oprops, "results"), "type")), "array");
    assert_non_null(json_object_get(oprops, "stdout"));
    json_decref(j);
    j = schema(EXECBOX_SCHEMA_MCP, NULL);
    desc = json_string_value(json_object_get(j, "description"));
    assert_contains(desc, "nothing persists between calls");
    assert_null(strstr(desc, "rolled back"));
    assert_null(json_object_get(json_object_get(json_object_get(j, "outputSchema"), "properties"),
                                "execution_count"));
    json_decref(j);
}

static void touch_package(const char *root, const char *dir, const char *mod)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s/%s' && : > '%s/%s/%s/__init__.py'", root, dir, mod,
             root, dir, mod);
    assert_int_equal(system(cmd), 0);
}

static char *description(const struct execbox_tool_options *o)
{
    json_t *j = schema(EXECBOX_SCHEMA_MCP, o);
    char *d = strdup(json_string_value(json_object_get(j, "description")));
    json_decref(j);
    return d;
}

/* The description names what the root the sandbox's Python sees has, not a fixed list: a root
 * without the packages says so, one with some names those, and a backend whose image cannot be
 * seen from here names none. */
static void test_packages_of_the_root(void **state)
{
    (void)state;
    char root[] = "/tmp/execbox-tool-XXXXXX";
    assert_non_null(mkdtemp(root));
    char pk[64] = "x";
    assert_int_equal(execbox_python_packages(NULL, root, pk, sizeof(pk)), 1);
    assert_string_equal(pk, "");
    struct execbox_policy pol;
    execbox_policy_init(&pol);
    struct execbox_error err = {0, ""};
    assert_int_equal(execbox_policy_set(&pol, "rootfs", root, &err), 0);
    struct execbox_tool_options o = {.policy = &pol};
    char *d = description(&o);
    assert_contains(d, "standard library only (no numpy, pandas or matplotlib)");
    assert_null(strstr(d, "savefig"));
    free(d);

    touch_package(root, "usr/lib/python3/dist-packages", "numpy");
    assert_int_equal(execbox_python_packages("jail", root, pk, sizeof(pk)), 1);
    assert_string_equal(pk, "numpy");
    touch_package(root, "usr/local/lib/python3.11/site-packages", "matplotlib");
    assert_int_equal(execbox_python_packages("subprocess", root, pk, sizeof(pk)), 1);
    assert_string_equal(pk, "numpy and matplotlib");
    touch_package(root, "usr/lib/python3.11/dist-packages", "pandas");
    assert_int_equal(execbox_python_packages("gvisor", root, pk, sizeof(pk)), 1);
    assert_string_equal(pk, "numpy, pandas and matplotlib");
    d = description(&o);
    assert_contains(d, "Python 3 has numpy, pandas and matplotlib (save figures to /workspace");
    free(d);
    o.stateful = true;
    d = description(&o);
    assert_contains(d, "a figure shown or left open comes back as an image");
    free(d);

    /* A directory without __init__.py is not a package. */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -f '%s/usr/lib/python3/dist-packages/numpy/__init__.py'", root);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(execbox_python_packages(NULL, root, pk, sizeof(pk)), 1);
    assert_string_equal(pk, "pandas and matplotlib");

    o.backend = "docker";
    assert_int_equal(execbox_python_packages("docker", root, pk, sizeof(pk)), 0);
    assert_string_equal(pk, "");
    d = description(&o);
    assert_contains(d, "Python 3 has the packages of the docker backend's image.");
    assert_null(strstr(d, "numpy"));
    free(d);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_format_parse(void **state)
{
    (void)state;
    enum execbox_schema_format f = (enum execbox_schema_format)99;
    assert_int_equal(execbox_schema_format_parse("mcp", &f, NULL), 0);
    assert_int_equal(f, EXECBOX_SCHEMA_MCP);
    assert_int_equal(execbox_schema_format_parse("anthropic", &f, NULL), 0);
    assert_int_equal(f, EXECBOX_SCHEMA_ANTHROPIC);
    assert_int_equal(execbox_schema_format_parse("openai", &f, NULL), 0);
    assert_int_equal(f, EXECBOX_SCHEMA_OPENAI);
    struct execbox_error err = {0, ""};
    f = EXECBOX_SCHEMA_OPENAI;
    assert_int_equal(execbox_schema_format_parse("gemini", &f, &err), -EINVAL);
    assert_contains(err.msg, "'gemini'");
    assert_int_equal(f, EXECBOX_SCHEMA_OPENAI);
    assert_int_equal(execbox_schema_format_parse("", &f, &err), -EINVAL);
    assert_int_equal(execbox_schema_format_parse("MCP", &f, &err), -EINVAL);
    assert_int_equal(execbox_schema_format_parse(NULL, &f, &err), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mcp),
        cmocka_unit_test(test_anthropic),
        cmocka_unit_test(test_openai),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_stateful),
        cmocka_unit_test(test_packages_of_the_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
