/* SPDX-License-Identifier: MIT */
/* commands.h - the CLI's own subcommands of `execbox` (private to src/cli/); each returns the
 * process exit status. The surfaces' commands are declared in common/surface.h. */
#ifndef EBCLI_COMMANDS_H
#define EBCLI_COMMANDS_H

#include "common/surface.h"

int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif
