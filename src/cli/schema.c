/* SPDX-License-Identifier: MIT */
/* schema.c - `execbox schema`: the tool definition for MCP, Anthropic or OpenAI. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common/cliopts.h"
#include "execbox/execbox.h"

static void help(FILE *f)
{
    fprintf(f,
            "Usage: execbox schema [--format mcp|anthropic|openai] [--name NAME]\n"
            "                      [--languages python,javascript,bash] [--policy FILE] "
            "[-t SECONDS]\n"
            "                      [-b BACKEND]\n\n"
            "Prints the tool definition an agent registers (default format: mcp).\n"
            "  -f, --format F      mcp (inputSchema, outputSchema), anthropic (input_schema),\n"
            "                      openai (function.parameters)\n"
            "  -n, --name NAME     tool name (default execute_python; execute_code with\n"
            "                      --languages)\n"
            "      --languages L   comma-separated languages: adds a language enum\n"
            "  -t, --timeout S     the maximum timeout a call may ask for\n"
            "      --policy FILE   limits quoted in the description (and its rootfs probed)\n"
            "  -b, --backend NAME  the backend the tool runs on (default %s): for jail,\n"
            "                      subprocess and gvisor the description names the numpy,\n"
            "                      pandas and matplotlib found in the root its Python sees\n",
            EXECBOX_DEFAULT_BACKEND);
}

int cmd_schema(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"name", required_argument, NULL, 'n'},
        {"languages", required_argument, NULL, 'L'},
        {"timeout", required_argument, NULL, 't'},
        {"policy", required_argument, NULL, 'p'},
        {"backend", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    enum execbox_schema_format fmt = EXECBOX_SCHEMA_MCP;
    struct execbox_tool_options o = {0};
    struct execbox_policy pol;
    execbox_policy_init(&pol);
    struct execbox_error err = {0};
    char *langs_buf = NULL;
    const char *langs[8] = {NULL};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:n:t:b:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (execbox_schema_format_parse(optarg, &fmt, &err) < 0) {
                cli_error("--format", &err);
                return 2;
            }
            break;
        case 'n': o.name = optarg; break;
        case 'b': o.backend = optarg; break;
        case 'L': {
            free(langs_buf);
            langs_buf = strdup(optarg);
            size_t n = 0;
            char *save = NULL;
            for (char *t = strtok_r(langs_buf, ",", &save); t && n < 7;
                 t = strtok_r(NULL, ",", &save)) {
                int known = 0;
                for (const char *const *l = execbox_languages(); *l; l++)
                    known |= strcmp(*l, t) == 0;
                if (!known) {
                    fprintf(stderr, "execbox: --languages: unknown language '%s'\n", t);
                    free(langs_buf);
                    return 2;
                }
                langs[n++] = t;
            }
            langs[n] = NULL;
            o.languages = langs;
            break;
        }
        case 't':
            if (execbox_policy_set(&pol, "timeout", optarg, &err) < 0) {
                cli_error("--timeout", &err);
                return 2;
            }
            o.max_timeout = pol.timeout;
            break;
        case 'p':
            if (execbox_policy_load_file(&pol, optarg, &err) < 0) {
                cli_error("--policy", &err);
                return 2;
            }
            break;
        case 'h': help(stdout); return 0;
        default: help(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "execbox: schema: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    o.policy = &pol;
    char *json = NULL;
    int r = execbox_tool_schema(fmt, &o, &json, &err);
    free(langs_buf);
    if (r < 0) {
        cli_error("schema", &err);
        return EXIT_EXECBOX;
    }
    printf("%s\n", json);
    execbox_free(json);
    return 0;
}
