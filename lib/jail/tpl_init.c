/* SPDX-License-Identifier: MIT */
/* tpl_init.c - the init program of a run forked from a template: pid 1 of the run's pid
 * namespace, exec'd by the template's helper (tpl_helper.c) so that it holds no copy of the
 * template's memory. Its status pipe is fd 3, the library's kill-request pipe fd 4, argv[1] the
 * guest's pid and argv[2] the number n of the host side's cgroup.procs files it holds at fds
 * 6..6+n-1; SIGCHLD arrives blocked. It waits for the guest, kills and reaps everything, leaves
 * the run's cgroup, reports (struct eb_msg) and exits, exactly as a cold run's init does. Linked
 * statically against the libc-only childlib.c. */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "proc/childlib.h"

int main(int argc, char **argv)
{
    /* Not ptrace-able or dumpable by the guest, which runs with our uid. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    char *end = NULL;
    long guest = argc > 1 ? strtol(argv[1], &end, 10) : 0;
    if (guest <= 1 || !end || *end) {
        eb_child_send_error(3, -22, "execbox-init: no guest pid");
        return 127;
    }
    long n_leave = argc > 2 ? strtol(argv[2], &end, 10) : 0;
    if (n_leave < 0 || n_leave > 4 || (argc > 2 && *end)) {
        eb_child_send_error(3, -22, "execbox-init: bad count of cgroup fds");
        return 127;
    }
    int leave[4] = {6, 7, 8, 9};
    /* The template ignores SIGCHLD (the kernel reaps its runs' inits), and an ignored signal
     * stays ignored across exec: eb_child_sigchld_fd puts it back. */
    int sfd = eb_child_sigchld_fd();
    if (sfd < 0) {
        eb_child_send_error(3, sfd, "execbox-init: signalfd");
        return 127;
    }
    eb_init_loop_done((pid_t)guest, sfd, 3, 4, leave, (int)n_leave, true);
}
