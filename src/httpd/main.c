/* SPDX-License-Identifier: MIT */
/* main.c - execbox-serve: `execbox serve` executes this program (see src/cli/main.c). */
#include "common/surface.h"

int main(int argc, char **argv)
{
    return cmd_serve(argc, argv);
}
