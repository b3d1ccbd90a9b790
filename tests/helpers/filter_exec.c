/* SPDX-License-Identifier: MIT */
/* filter_exec.c - test helper: `eb_filter_exec DIR[:DIR...] PROGRAM [ARGS...]` confines writes
 * beneath the DIRs with Landlock (where the kernel has it), installs the jail's seccomp filter and
 * execs PROGRAM. It puts the two filters, and nothing else of the jail, in front of real
 * interpreters, so tests/integration/jail_syscalls.py can check them against real workloads on any
 * branch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jail/landlock.h"
#include "jail/seccomp.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: eb_filter_exec DIR[:DIR...] PROGRAM [ARGS...]\n");
        return 2;
    }
    struct execbox_error err = {0};
    struct eb_seccomp f = {0};
    if (eb_seccomp_prepare(&f, &err) < 0) {
        fprintf(stderr, "eb_filter_exec: %s\n", err.msg);
        return 125;
    }
    const char *dirs[EB_LANDLOCK_MAX_DIRS + 1] = {NULL};
    size_t n = 0;
    char *save = NULL;
    for (char *d = strtok_r(argv[1], ":", &save); d && n < EB_LANDLOCK_MAX_DIRS;
         d = strtok_r(NULL, ":", &save))
        dirs[n++] = d;
    int r = eb_landlock_apply(dirs, &err);
    if (r >= 0 || r == -EOPNOTSUPP)
        r = eb_seccomp_apply(&f, &err);
    if (r < 0) {
        fprintf(stderr, "eb_filter_exec: %s\n", err.msg);
        eb_seccomp_release(&f);
        return 125;
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "eb_filter_exec: exec '%s': %s\n", argv[2], strerror(errno));
    eb_seccomp_release(&f);
    return 127;
}
