/* SPDX-License-Identifier: MIT */
/* main.c - `execbox`: dispatches to one subcommand. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "execbox/execbox.h"

#if defined(HAVE_SERVE) || defined(HAVE_AGENT) || defined(HAVE_REPL)
/* Executes the program that implements a command: next to this binary (a build tree), else
 * in LIBEXECDIR/execbox (an installed tree). Heavy libraries (libcurl, libmicrohttpd and their
 * TLS stacks, libedit and its terminal libraries) stay out of `execbox run` this way. Returns
 * only on failure. */
static int exec_program(const char *name, int argc, char **argv)
{
    char self[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(path, sizeof(path), "%s/%s", self, name);
            if (access(path, X_OK) == 0) {
                argv[0] = path;
                execv(path, argv);
            }
        }
    }
    snprintf(path, sizeof(path), "%s/%s", EXECBOX_LIBEXECDIR, name);
    argv[0] = path;
    execv(path, argv);
    fprintf(stderr, "execbox: cannot run '%s' (%s): %s\n", name, path, strerror(errno));
    (void)argc;
    return EXIT_EXECBOX;
}
#endif
#ifdef HAVE_SERVE
static int run_serve(int argc, char **argv)
{
    return exec_program("execbox-serve", argc, argv);
}
#endif
#ifdef HAVE_AGENT
static int run_agent(int argc, char **argv)
{
    return exec_program("execbox-agent", argc, argv);
}
#endif
#ifdef HAVE_REPL
static int run_repl(int argc, char **argv)
{
    return exec_program("execbox-repl", argc, argv);
}
#endif

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"run", cmd_run, "run code once in a fresh sandbox, print its output or its result"},
#ifdef HAVE_REPL
    {"repl", run_repl, "a Python session in the terminal: state kept between cells"},
#endif
    {"check", cmd_check, "which isolation layers work on this machine, and why not"},
    {"schema", cmd_schema, "print the tool definition an agent registers"},
#ifdef HAVE_MCP
    {"mcp", cmd_mcp, "MCP server on stdio"},
#endif
#ifdef HAVE_SERVE
    {"serve", run_serve, "HTTP service"},
#endif
#ifdef HAVE_AGENT
    {"agent", run_agent, "the self-debugging agent"},
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
