/* SPDX-License-Identifier: MIT */
/* main.c - execbox-repl: `execbox repl` executes this program (see src/cli/main.c). */
#include "common/surface.h"

int main(int argc, char **argv)
{
    return cmd_repl(argc, argv);
}
