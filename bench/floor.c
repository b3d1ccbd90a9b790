/* SPDX-License-Identifier: MIT */
/* floor.c - the kernel floor of a sandboxed start, for bench/jail.sh: `execbox_floor PROGRAM
 * [ARGS...]` forks, the child unshares the namespaces the jail uses (user, pid, mount, net, ipc,
 * uts, cgroup) and forks again to enter the new pid namespace, and that grandchild execs PROGRAM;
 * the parent waits for both. No mounts, no cgroup, no filters: what any namespace sandbox pays at
 * least. Its exit status is the program's. */
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int wait_for(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: execbox_floor PROGRAM [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                    CLONE_NEWUTS | CLONE_NEWCGROUP) < 0) {
            perror("unshare");
            _exit(127);
        }
        pid_t g = fork(); /* pid 1 of the new pid namespace */
        if (g < 0)
            _exit(127);
        if (g == 0) {
            execv(argv[1], argv + 1);
            _exit(127);
        }
        _exit(wait_for(g));
    }
    return wait_for(pid);
}
