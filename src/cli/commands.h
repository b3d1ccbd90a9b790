/* SPDX-License-Identifier: MIT */
/* commands.h - the subcommands of `execbox`; each returns the process exit status. */
#ifndef EBCLI_COMMANDS_H
#define EBCLI_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_check(int argc, char **argv);
#ifdef HAVE_MCP
int cmd_mcp(int argc, char **argv);
#endif
/* These two are programs of their own (execbox-serve, execbox-agent), executed by `execbox`. */
int cmd_serve(int argc, char **argv);
int cmd_agent(int argc, char **argv);

/* Exit status when execbox itself failed (bad flag, sandbox could not start). */
#define EXIT_EXECBOX 125

#endif
