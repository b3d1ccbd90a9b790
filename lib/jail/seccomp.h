/* SPDX-License-Identifier: MIT */
/* seccomp.h - the jail's syscall filter: built with libseccomp at build time (eb_seccomp_gen
 * writes the BPF program into seccomp_bpf.h), installed with one raw syscall in the child as the
 * last step before execve.
 *
 * Lifecycle: eb_seccomp_prepare() once per executor (a copy of the compiled program; it
 * allocates, so it must not run between fork and exec of a threaded process); eb_seccomp_apply() in
 * each forked child (async-signal- safe); eb_seccomp_release() when the executor closes. The filter
 * allows by default and makes the calls listed in docs/seccomp.md fail with EPERM (clone3 with
 * ENOSYS, so that libc falls back to clone, whose flags a filter can inspect); any other
 * architecture (i386 via int 0x80, x32) kills the process. */
#ifndef EB_JAIL_SECCOMP_H
#define EB_JAIL_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>

#include "execbox/execbox.h"

/* Hard limit on the exported program; the kernel's own limit for a classic BPF program. */
#define EB_SECCOMP_MAX_INSNS BPF_MAXINSNS

struct eb_seccomp {
    struct sock_fprog prog;    /* points into insns; what eb_seccomp_apply() installs */
    struct sock_filter *insns; /* owned, at most EB_SECCOMP_MAX_INSNS entries; NULL when empty */
};

/* The filter as BPF in f (zeroed or released before): a copy of the program compiled at build
 * time, so no run pays for libseccomp. Parent only: it allocates. 0, or -errno with err set; f is
 * untouched on failure. */
int eb_seccomp_prepare(struct eb_seccomp *f, struct execbox_error *err);

/* Build time and tests only (seccomp.c compiled with EB_SECCOMP_COMPILER, linked with
 * libseccomp): builds the rules with libseccomp and exports them as BPF into f, and the number
 * of unconditionally denied calls into *ret_n_denied. What eb_seccomp_gen writes, and what a test
 * compares the library's program with. 0, or -errno with err set; f is untouched on failure. */
int eb_seccomp_compile(struct eb_seccomp *f, size_t *ret_n_denied, struct execbox_error *err);

/* Installs f in the calling thread, setting PR_SET_NO_NEW_PRIVS first (which the kernel requires
 * of an unprivileged caller, and which we want anyway). Async-signal-safe: two syscalls and no
 * allocation, so a forked child of a threaded process may call it. 0, or -errno with err set
 * through eb_error_set_raw(). */
int eb_seccomp_apply(const struct eb_seccomp *f, struct execbox_error *err);

/* Frees what prepare allocated; f is zeroed. Accepts a zeroed or already released f. */
void eb_seccomp_release(struct eb_seccomp *f);

/* `execbox check` line: asks the kernel, without forking or installing anything (it runs on
 * every executor open), whether it has seccomp filter mode and the actions the filter uses.
 * Writes a one-line description to detail. 0 when the wall is available, or -ENOTSUP. */
int eb_seccomp_probe(char *detail, size_t n);

#endif
