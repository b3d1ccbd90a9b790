/* SPDX-License-Identifier: MIT */
/* tool.c - the tool definition an agent registers (docs/mcp.md), for MCP, Anthropic and
 * OpenAI, and the JSON Schema of the result record. */
#include <errno.h>
#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "model/policy.h"

int execbox_schema_format_parse(const char *s, enum execbox_schema_format *ret,
                                struct execbox_error *err)
{
    if (s && strcmp(s, "mcp") == 0)
        *ret = EXECBOX_SCHEMA_MCP;
    else if (s && strcmp(s, "anthropic") == 0)
        *ret = EXECBOX_SCHEMA_ANTHROPIC;
    else if (s && strcmp(s, "openai") == 0)
        *ret = EXECBOX_SCHEMA_OPENAI;
    else
        return eb_error_set(err, -EINVAL, "unknown schema format '%s' (mcp, anthropic, openai)",
                            s ? s : "");
    return 0;
}

/* Whether Python in root finds package mod: a directory mod with an __init__.py in one of the
 * places Debian's and pip's Pythons look (dist-packages, site-packages, /usr/local). */
static bool has_package(const char *root, const char *mod)
{
    static const char *const dirs[] = {
        "usr/lib/python3/dist-packages",        "usr/lib/python3*/site-packages",
        "usr/lib/python3*/dist-packages",       "usr/local/lib/python3*/site-packages",
        "usr/local/lib/python3*/dist-packages",
    };
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        char pat[EXECBOX_PATH_MAX + 128];
        if (snprintf(pat, sizeof(pat), "%s/%s/%s/__init__.py", root, dirs[i], mod) >=
            (int)sizeof(pat))
            continue;
        glob_t g;
        int r = glob(pat, GLOB_NOSORT, NULL, &g);
        size_t n = r == 0 ? g.gl_pathc : 0;
        globfree(&g);
        if (n > 0)
            return true;
    }
    return false;
}

/* The backends whose Python is the one in the policy's root (or the host's): the others run
 * an image or a machine of their own, whose packages cannot be seen from here. */
static bool root_is_local(const char *backend)
{
    if (!backend || !*backend)
        backend = EXECBOX_DEFAULT_BACKEND;
    return strcmp(backend, "jail") == 0 || strcmp(backend, "subprocess") == 0 ||
           strcmp(backend, "gvisor") == 0;
}

int execbox_python_packages(const char *backend, const char *root, char *buf, size_t n)
{
    static const char *const mods[] = {"numpy", "pandas", "matplotlib"};
    const char *found[ARRAY_SIZE(mods)];
    size_t k = 0;
    if (n == 0)
        return 0;
    buf[0] = '\0';
    if (!root_is_local(backend))
        return 0;
    if (!root || !*root)
        root = "";
    for (size_t i = 0; i < ARRAY_SIZE(mods); i++)
        if (has_package(root, mods[i]))
            found[k++] = mods[i];
    size_t off = 0;
    for (size_t i = 0; i < k && off < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == k ? " and " : ", ";
        int w = snprintf(buf + off, n - off, "%s%s", sep, found[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    return 1;
}

/* What the description says the sandbox's Python has, with the hint about figures. */
static void python_text(const struct execbox_tool_options *o, const struct execbox_policy *pol,
                        char *out, size_t n)
{
    char pk[64];
    if (!execbox_python_packages(o->backend, pol->rootfs, pk, sizeof(pk))) {
        snprintf(out, n, "Python 3 has the packages of the %s backend's image.", o->backend);
        return;
    }
    bool plots = strstr(pk, "matplotlib") != NULL;
    if (!pk[0])
        snprintf(out, n,
                 "Python 3 has its standard library only (no numpy, pandas or "
                 "matplotlib).");
    else if (o->stateful)
        snprintf(out, n, "Python 3 has %s%s.", pk,
                 plots ? " (a figure shown or left open comes back as an image)" : "");
    else
        snprintf(out, n, "Python 3 has %s%s.", pk,
                 plots ? " (save figures to /workspace, e.g. plt.savefig('/workspace/plot.png'))"
                       : "");
}

static void human_size(uint64_t b, char *out, size_t n)
{
    if (b >= (1ULL << 30) && b % (1ULL << 30) == 0)
        snprintf(out, n, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= (1ULL << 20))
        snprintf(out, n, "%llu MiB", (unsigned long long)(b >> 20));
    else
        snprintf(out, n, "%llu KiB", (unsigned long long)(b >> 10));
}

static json_t *result_schema(void)
{
    const char *text =
        "{\"type\":\"object\",\"required\":[\"stdout\",\"stderr\",\"exit_code\","
        "\"execution_time\"],\"properties\":{"
        "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
        "\"exit_code\":{\"type\":\"integer\"},\"execution_time\":{\"type\":\"number\"},"
        "\"timed_out\":{\"type\":\"boolean\"},\"oom_killed\":{\"type\":\"boolean\"},"
        "\"signal\":{\"type\":[\"integer\",\"null\"]},"
        "\"killed_reason\":{\"type\":[\"string\",\"null\"]},"
        "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
        "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"},"
        "\"cpu_time\":{\"type\":[\"number\",\"null\"]},"
        "\"peak_memory_bytes\":{\"type\":[\"integer\",\"null\"]},"
        "\"error\":{\"type\":[\"object\",\"null\"],\"properties\":{"
        "\"name\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"},"
        "\"traceback\":{\"type\":\"string\"}}},"
        "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
        "\"mime\":{\"type\":\"string\"},\"data\":{\"type\":\"string\"},"
        "\"origin\":{\"type\":\"string\",\"enum\":[\"input\",\"changed\",\"created\"]}}}},"
        "\"backend\":{\"type\":\"string\"},\"language\":{\"type\":\"string\"}}}";
    return json_loads(text, 0, NULL);
}

/* The result record of a session cell: the one-shot record plus execution_count, rolled_back
 * and the rich results. */
static json_t *cell_schema(void)
{
    json_t *s = result_schema();
    json_t *props = json_object_get(s, "properties");
    const char *rich =
        "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"text\":{\"type\":\"string\"},\"html\":{\"type\":\"string\"},"
        "\"markdown\":{\"type\":\"string\"},\"svg\":{\"type\":\"string\"},"
        "\"png\":{\"type\":\"string\"},\"jpeg\":{\"type\":\"string\"},"
        "\"latex\":{\"type\":\"string\"},\"json\":{},"
        "\"javascript\":{\"type\":\"string\"},\"is_main_result\":{\"type\":\"boolean\"}}}}";
    if (!props || json_object_set_new(props, "results", json_loads(rich, 0, NULL)) < 0 ||
        json_object_set_new(props, "execution_count", json_pack("{s:s}", "type", "integer")) < 0 ||
        json_object_set_new(props, "rolled_back", json_pack("{s:s}", "type", "boolean")) < 0 ||
        json_object_set_new(props, "results_truncated", json_pack("{s:s}", "type", "boolean")) <
            0 ||
        json_object_set_new(props, "results_dropped", json_pack("{s:s}", "type", "integer")) < 0 ||
        json_object_set_new(props, "results_cut", json_pack("{s:s}", "type", "integer")) < 0 ||
        json_object_set_new(props, "results_file_dropped", json_pack("{s:s}", "type", "boolean")) <
            0) {
        json_decref(s);
        return NULL;
    }
    return s;
}

int execbox_tool_schema(enum execbox_schema_format format, const struct execbox_tool_options *o,
                        char **ret_json, struct execbox_error *err)
{
    struct execbox_tool_options opt = {0};
    if (o)
        opt = *o;
    struct execbox_policy pol;
    if (opt.policy)
        pol = *opt.policy;
    else
        memset(&pol, 0, sizeof(pol));
    eb_policy_resolve(&pol);
    double max_timeout = opt.max_timeout > 0 ? opt.max_timeout : pol.timeout;
    bool multi = opt.languages && opt.languages[0];
    const char *name = opt.name && *opt.name ? opt.name : multi ? "execute_code" : "execute_python";

    char mem[32], tmp[32], out[32];
    human_size(pol.memory, mem, sizeof(mem));
    human_size(pol.tmpfs, tmp, sizeof(tmp));
    human_size(pol.output_limit, out, sizeof(out));
    char net[1024];
    execbox_policy_network_text(&pol, net, sizeof(net));
    char py[192];
    python_text(&opt, &pol, py, sizeof(py));
    char desc[3072];
    if (opt.stateful)
        snprintf(desc, sizeof(desc),
                 "Run %s in an isolated sandbox that keeps its state between calls, like a "
                 "notebook, and return its stdout, stderr, exit_code, execution_time and the value "
                 "of the last expression. Use it to compute exact answers (arithmetic, "
                 "statistics, data transformation, charts) instead of estimating. State persists "
                 "between calls: variables, imports, functions and loaded data from earlier "
                 "calls are still defined, so build on them instead of repeating them. A call "
                 "that fails (an uncaught exception, a non-zero exit, a timeout or a memory kill) "
                 "is rolled back: the variables are exactly as they were before that call, so "
                 "fix the code and run the corrected call in full; files written to /workspace "
                 "are not rolled back. If a result says the session's state was lost, the "
                 "earlier calls' variables are gone: run their setup again. %s %s Files written "
                 "to /workspace are returned. Limits per call: %g s wall clock, %s memory (the "
                 "session's state and files in /tmp and /workspace included), %s /tmp, %s of "
                 "output per stream. A non-zero exit_code means the code failed; read the "
                 "traceback in stderr, fix the code and call again.",
                 multi ? "code (Python, JavaScript via Node.js, or Bash)" : "Python 3 code", net,
                 py, max_timeout, mem, tmp, out);
    else
        snprintf(desc, sizeof(desc),
                 "Run %s in a fresh, isolated sandbox and return its stdout, stderr, exit_code and "
                 "execution_time. Use it to compute exact answers (arithmetic, statistics, data "
                 "transformation, charts) instead of estimating. Each call starts from a clean "
                 "sandbox: nothing persists between calls, so include all imports and data in the "
                 "code. %s %s Files written to /workspace are returned. Print the values you "
                 "need: only printed output comes back. Limits: %g s wall clock, %s memory (files "
                 "in /tmp and /workspace included), %s /tmp, %s of output per stream. A non-zero "
                 "exit_code means the code failed; read the traceback in stderr, fix the code and "
                 "call again.",
                 multi ? "code (Python, JavaScript via Node.js, or Bash)" : "Python 3 code", net,
                 py, max_timeout, mem, tmp, out);

    json_t *props = json_object();
    json_t *required = json_array();
    json_array_append_new(required, json_string("code"));
    json_object_set_new(
        props, "code",
        json_pack("{s:s, s:s}", "type", "string", "description",
                  multi ? "The complete program to run." : "The complete Python program to run."));
    if (multi) {
        json_t *langs = json_array();
        for (size_t i = 0; opt.languages[i]; i++)
            json_array_append_new(langs, json_string(opt.languages[i]));
        json_object_set_new(props, "language",
                            json_pack("{s:s, s:o, s:s}", "type", "string", "enum", langs,
                                      "description", "The language of the code."));
        json_array_append_new(required, json_string("language"));
    }
    json_object_set_new(props, "timeout",
                        json_pack("{s:s, s:i, s:I, s:s}", "type", "integer", "minimum", 1,
                                  "maximum", (json_int_t)floor(max_timeout), "description",
                                  "Wall-clock limit in seconds (optional)."));
    json_t *input =
        json_pack("{s:s, s:o, s:o}", "type", "object", "properties", props, "required", required);
    json_object_set_new(input, "additionalProperties", json_false());

    json_t *tool = NULL;
    switch (format) {
    case EXECBOX_SCHEMA_MCP:
        tool =
            json_pack("{s:s, s:s, s:s, s:o, s:o}", "name", name, "title",
                      multi ? "Execute code" : "Execute Python", "description", desc, "inputSchema",
                      input, "outputSchema", opt.stateful ? cell_schema() : result_schema());
        if (tool)
            json_object_set_new(
                tool, "annotations",
                json_pack("{s:s, s:b, s:b, s:b, s:b}", "title",
                          multi ? "Execute code in a sandbox" : "Execute Python in a sandbox",
                          "readOnlyHint", 0, "destructiveHint", 0, "idempotentHint", 0,
                          "openWorldHint", 0));
        break;
    case EXECBOX_SCHEMA_ANTHROPIC:
        tool =
            json_pack("{s:s, s:s, s:o}", "name", name, "description", desc, "input_schema", input);
        break;
    case EXECBOX_SCHEMA_OPENAI:
        tool = json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function", "function", "name", name,
                         "description", desc, "parameters", input);
        break;
    }
    if (!tool)
        return eb_error_set(err, -ENOMEM, "building the tool schema failed");
    char *s = json_dumps(tool, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(tool);
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory");
    *ret_json = s;
    return 0;
}
