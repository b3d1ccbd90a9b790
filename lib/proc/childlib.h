/* SPDX-License-Identifier: MIT */
/* childlib.h - what a sandbox's own processes run: the init's wait-kill-reap-report loop, the fd
 * sweep and the guest's rlimits. libc and raw syscalls only, no allocation: async-signal-safe,
 * so that a process forked from a threaded host may call it, and small enough to link into the
 * template's helper module and the template runs' init program, which carry no more of the
 * library than this. */
#ifndef EB_CHILDLIB_H
#define EB_CHILDLIB_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/proc.h"

/* Sends one EB_MSG_ERROR (code, msg) on fd: one atomic write. */
void eb_child_send_error(int fd, int code, const char *msg);

/* Sends e as it is (a set-up step's own error) as EB_MSG_ERROR on fd. Async-signal-safe. */
void eb_child_send_err(int fd, const struct execbox_error *e);

/* An init's SIGCHLD as a non-blocking signalfd, with SIGCHLD set to its default and blocked (so
 * that children are neither auto-reaped nor lost between forks). The fd, or -errno. */
int eb_child_sigchld_fd(void);

/* The sandbox init's loop once the guest exists: waits (SIGCHLD through the signalfd sfd, which
 * the caller made with SIGCHLD blocked) until the guest exits or ctl_fd becomes readable or
 * hangs up (the parent asks for, or needs, the end); then kills every other process of the
 * sandbox (kill(-1) as pid 1 of its pid namespace, else its children's process groups), reaps
 * them all, sends EB_MSG_EXIT with the guest's status and the CPU and memory of everything
 * reaped on status_fd, and _exit(0)s. */
__attribute__((noreturn)) void eb_init_loop(pid_t guest, int sfd, int status_fd, int ctl_fd);

/* eb_init_loop, and once every other process is reaped and before EB_MSG_EXIT, init moves itself
 * out of the run's cgroup by writing "0" to each of the n leave_fds (cgroup.procs files of the
 * host side, opened by the parent: the kernel checks the opener's credentials and cgroup
 * namespace). The run's cgroup is then empty when the parent reads EB_MSG_EXIT, so the parent
 * can remove it and hand the result back without waiting for init's own exit (the teardown of
 * the sandbox's namespaces). A write that fails changes nothing but that wait. */
__attribute__((noreturn)) void eb_init_loop_leave(pid_t guest, int sfd, int status_fd, int ctl_fd,
                                                  const int *leave_fds, int n);

/* A template run's guest, once its program is over and its output flushed, names its main
 * thread EB_DONE_COMM followed by its exit status in decimal and stops itself (SIGSTOP): its
 * report to its init (lib/lang/python_run.py), which Landlock's signal scope would not let it
 * send as a signal. */
#define EB_DONE_COMM "execbox-done"

/* eb_init_loop_leave; with done_guest, a guest that stops with its report (EB_DONE_COMM) ends
 * the run: init looks for any other process of its pid namespace, and when there is none,
 * nothing of the run can write anywhere any more (the guest is stopped, every thread of it), so
 * it SIGKILLs the guest and sends EB_MSG_DONE with the reported status at once, and only then
 * reaps the guest (whose exit, the teardown of its memory, is what a report after it would wait
 * for), leaves the cgroup and exits without another message. With another process it goes on
 * as eb_init_loop_leave, kills everything and reports the status the guest reported. A guest
 * that stops without the report stays stopped, as in a cold run. */
__attribute__((noreturn)) void eb_init_loop_done(pid_t guest, int sfd, int status_fd, int ctl_fd,
                                                 const int *leave_fds, int n, bool done_guest);

/* The guest's rlimits: no core dumps, file size, open files (EB_NOFILE), CPU seconds (0: none),
 * and memory_rlimit (RLIMIT_AS or RLIMIT_DATA, -1: none) capped at memory. 0 or -errno. */
int eb_child_rlimits(uint64_t file_size, uint64_t cpu_seconds, int memory_rlimit, uint64_t memory);

/* Attaches the detached mount fd on dst (a path in the caller's mount namespace). cover_ro: fd
 * is a writable mount that the library goes on writing through, and the kernel could not give
 * it a read-only clone while detached (open_tree(OPEN_TREE_CLONE) of a detached mount needs
 * Linux 6.15): it is attached, a clone of it is made there, made read-only, nosuid, nodev and
 * noexec, and mounted over it, so the sandbox sees only the read-only view and no path leads to
 * the writable one (a covered mount is reached only by unmounting what covers it, which needs
 * a capability the guest never has). 0 or -errno. */
int eb_attach_mount(int fd, const char *dst, bool cover_ro);

#endif
