/* SPDX-License-Identifier: MIT */
/* options.c - `execbox mcp`'s command line: its options, their checks and --help. */
#include "internal.h"

#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopts.h"

/* MCP 2025-11-25: tool names SHOULD be 1-128 characters of A-Z a-z 0-9 _ - . */
static bool mcp_tool_name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 128)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return false;
    return true;
}

static int mcp_parse_size_opt(const char *flag, const char *arg, size_t min, size_t *ret)
{
    uint64_t v = 0;
    struct execbox_error err = {0};
    if (execbox_parse_size(arg, &v, &err) < 0) {
        fprintf(stderr, "execbox mcp: %s: %s\n", flag, err.msg);
        return -1;
    }
    if (v < min || v > (1ULL << 32)) {
        fprintf(stderr, "execbox mcp: %s: '%s' is out of range\n", flag, arg);
        return -1;
    }
    *ret = (size_t)v;
    return 0;
}

static void mcp_help(FILE *f)
{
    fprintf(f,
            "Usage: execbox mcp [OPTIONS]\n\n"
            "Serves the code tool over the Model Context Protocol on stdin/stdout\n"
            "(newline-delimited JSON-RPC 2.0). Logs go to stderr. The sandbox options set each\n"
            "call's limits and the maximum a call's 'timeout' argument may ask for.\n\n"
            "  -n, --tool-name NAME     rename the tool (default execute_python)\n"
            "      --languages L        also offer execute_code with a language enum,\n"
            "                           e.g. python,javascript,bash\n"
            "  -j, --jobs N             calls run in parallel (default: CPUs, at most 8)\n"
            "      --inline-images SIZE largest image returned as image content (default 2M;\n"
            "                           0: none)\n"
            "      --frame-limit SIZE   largest JSON-RPC frame accepted (default 20M)\n"
            "      --stateful           execute_python keeps one Python session per connection:\n"
            "                           variables persist between calls, a failed call is\n"
            "                           rolled back; adds the reset_session tool\n"
            "      --session-idle SECONDS  end the session after this long without a call\n"
            "                           (default 600; the next call starts a new one)\n"
            "  -v, --verbose            log every call to stderr\n"
            "  -h, --help               this text\n\n" CLI_SANDBOX_HELP CLI_POOL_HELP
            "\nStops on EOF (after finishing calls in progress) and on SIGTERM/SIGINT (after\n"
            "cancelling them). See docs/mcp.md.\n");
}

static int mcp_parse_languages(char *buf, const char **langs, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (const char *const *l = execbox_languages(); *l; l++)
            known |= strcmp(*l, t) == 0;
        if (!known) {
            fprintf(stderr, "execbox mcp: --languages: unknown language '%s'\n", t);
            return -1;
        }
        if (n + 1 >= max) {
            fprintf(stderr, "execbox mcp: --languages: too many\n");
            return -1;
        }
        langs[n++] = t;
    }
    langs[n] = NULL;
    if (n == 0) {
        fprintf(stderr, "execbox mcp: --languages: empty list\n");
        return -1;
    }
    return 0;
}

/* Parses argv into s, sb and o, and checks the combination. 0, 1 after --help, or -1. */
int mcp_parse_options(int argc, char **argv, struct server *s, struct cli_sandbox *sb,
                      struct mcp_options *o)
{
    enum {
        OPT_LANGUAGES = CLI_OPT__LAST + 1,
        OPT_INLINE,
        OPT_FRAME_LIMIT,
        OPT_STATEFUL,
        OPT_SESSION_IDLE
    };
    static const struct option longopts[] = {
        CLI_SANDBOX_LONGOPTS,
        CLI_POOL_LONGOPTS,
        {"tool-name", required_argument, NULL, 'n'},
        {"languages", required_argument, NULL, OPT_LANGUAGES},
        {"jobs", required_argument, NULL, 'j'},
        {"inline-images", required_argument, NULL, OPT_INLINE},
        {"frame-limit", required_argument, NULL, OPT_FRAME_LIMIT},
        {"stateful", no_argument, NULL, OPT_STATEFUL},
        {"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, CLI_SANDBOX_SHORTOPTS "n:j:vh", longopts, NULL)) != -1) {
        int r = cli_sandbox_option(sb, c, optarg);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        switch (c) {
        case 'n':
            if (!mcp_tool_name_ok(optarg)) {
                fprintf(stderr,
                        "execbox mcp: --tool-name: '%s' is not 1-128 characters of "
                        "A-Z a-z 0-9 _ - .\n",
                        optarg);
                return -1;
            }
            o->tool_name = optarg;
            break;
        case OPT_LANGUAGES:
            free(o->langs_buf);
            o->langs_buf = strdup(optarg);
            if (!o->langs_buf || mcp_parse_languages(o->langs_buf, o->langs, 8) < 0)
                return -1;
            o->have_langs = true;
            break;
        case 'j': {
            char *end = NULL;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || !end || *end || v < 1 || v > MCP_MAX_JOBS) {
                fprintf(stderr, "execbox mcp: --jobs: '%s' is not a number from 1 to %d\n", optarg,
                        MCP_MAX_JOBS);
                return -1;
            }
            s->n_workers = (unsigned)v;
            break;
        }
        case OPT_INLINE:
            if (mcp_parse_size_opt("--inline-images", optarg, 0, &s->inline_max) < 0)
                return -1;
            break;
        case OPT_FRAME_LIMIT:
            if (mcp_parse_size_opt("--frame-limit", optarg, 4096, &s->frame_limit) < 0)
                return -1;
            break;
        case OPT_STATEFUL: s->stateful = true; break;
        case OPT_SESSION_IDLE: {
            char *end = NULL;
            double v = strtod(optarg, &end);
            if (!*optarg || *end || !(v > 0) || v > EXECBOX_SESSION_LIFETIME_DEFAULT) {
                fprintf(stderr,
                        "execbox mcp: --session-idle: '%s' is not a number of seconds (0 to "
                        "%g]\n",
                        optarg, EXECBOX_SESSION_LIFETIME_DEFAULT);
                return -1;
            }
            s->session_idle = v;
            break;
        }
        case 'v': s->verbose = true; break;
        case 'h': mcp_help(stdout); return 1;
        default: fprintf(stderr, "execbox mcp: see 'execbox mcp --help'\n"); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "execbox mcp: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (cli_sandbox_policy(sb, &s->policy) < 0)
        return -1;
    if (s->session_idle > 0 && !s->stateful) {
        fprintf(stderr, "execbox mcp: --session-idle needs --stateful\n");
        return -1;
    }
    /* A session has a /workspace of its own and no network (execbox_session_new). */
    if (s->stateful && s->policy.workspace[0]) {
        fprintf(stderr, "execbox mcp: --stateful: a session keeps its own /workspace; "
                        "--workspace cannot be used with it\n");
        return -1;
    }
    if (s->stateful && s->policy.network != EXECBOX_NETWORK_NONE) {
        fprintf(stderr, "execbox mcp: --stateful: sessions have no network; --network allow "
                        "cannot be used with it\n");
        return -1;
    }

    return 0;
}
