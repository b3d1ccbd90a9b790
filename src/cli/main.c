/* SPDX-License-Identifier: MIT */
/* main.c - `execbox`: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "execbox/execbox.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "run code once in a fresh sandbox, print its output or its result"},
    {"check", cmd_check, "which isolation layers work on this machine, and why not"},
    {"schema", cmd_schema, "print the tool definition an agent registers"},
#ifdef HAVE_MCP
    {"mcp", cmd_mcp, "MCP server on stdio"},
#endif
#ifdef HAVE_SERVE
    {"serve", cmd_serve, "HTTP service"},
#endif
#ifdef HAVE_AGENT
    {"agent", cmd_agent, "the self-debugging agent"},
#endif
};

static void usage(FILE *f)
{
    fprintf(f,
            "execbox %s - run untrusted code for LLM agents in fresh, disposable sandboxes\n\n"
            "Usage: execbox COMMAND [OPTIONS]\n\nCommands:\n",
            execbox_version());
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'execbox COMMAND --help' describes one command. 'execbox --version' prints the "
               "version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("execbox %s\n", execbox_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "execbox: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
