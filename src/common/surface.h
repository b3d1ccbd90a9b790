/* SPDX-License-Identifier: MIT */
/* surface.h - what the surfaces (mcp, serve, agent, repl) and the `execbox` dispatcher share: the
 * entry point of each surface and the exit status for "execbox itself failed". The CLI
 * (src/cli/) includes this; a surface never includes the CLI's private headers, so the
 * dependencies run CLI -> surface -> common only. */
#ifndef EBCLI_SURFACE_H
#define EBCLI_SURFACE_H

/* Exit status when execbox itself failed (bad flag, bad workspace, sandbox could not start). */
#define EXIT_EXECBOX 125

/* Each surface's command; returns the process exit status. */
#ifdef HAVE_MCP
int cmd_mcp(int argc, char **argv);
#endif
/* These are programs of their own (execbox-serve, execbox-agent, execbox-repl), executed by
 * `execbox`. */
int cmd_serve(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_repl(int argc, char **argv);

#endif
