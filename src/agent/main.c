/* SPDX-License-Identifier: MIT */
/* main.c - execbox-agent: `execbox agent` executes this program (see src/cli/main.c). */
#include "common/surface.h"

int main(int argc, char **argv)
{
    return cmd_agent(argc, argv);
}
