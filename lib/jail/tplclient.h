/* SPDX-License-Identifier: MIT */
/* tplclient.h - the jail's templates, the library's side: a template's start and readiness, the
 * runs forked from it over its request socket (tpl_proto.h), and its end. Private to the jail
 * backend, as box.h is.
 *
 * A template is a sandbox like a warm one, except that its interpreter, after importing the
 * preload, serves requests instead of waiting for code: it runs lib/lang/python_template.py with
 * the helper module (lib/jail/tpl_helper.c), and keeps CAP_SYS_ADMIN and CAP_SETPCAP in its own
 * user namespace (which owns none of the template's other namespaces). Each warm sandbox the pool
 * asks for is then one run forked from it: the library makes the run's cgroup, workspace, /code
 * and pipes, sends them over the template's socket, and gets back the pidfd of the run's init;
 * the run waits, walled, for its code. A run is not the library's child: its pidfd says when it
 * ends, and the template's kernel-side reaping does the rest.
 *
 * Generations: what a fork cannot make unique (CPython's string-hash secret, the address-space
 * layout) is shared by the runs of one template. A template is therefore retired after
 * tpl_max_runs runs or tpl_max_age seconds, whichever comes first; it lives on, unlisted, until
 * the last of its runs is destroyed, since killing it would kill them.
 */
#ifndef EB_JAIL_TPLCLIENT_H
#define EB_JAIL_TPLCLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "jail/box.h"

struct eb_tplproc {
    struct eb_box sb;   /* the template's own sandbox: init (pid 1) and the interpreter */
    int sock;           /* our end of its request socket */
    pthread_mutex_t io; /* one request and its answer at a time */
    struct execbox_policy policy;
    const struct eb_language *lang;
    char preload[256];
    atomic_bool broken; /* gone, or no longer in step with us: forks no more */
};

/* A template for (policy, lang, preload) of j, not started: *ret, and in fds[5] what its
 * interpreter is handed as fds 3..7, in order: the template's end of its request socket (ours
 * to close once the sandbox is started), then j's four sealed memfds (helper module, init
 * program, seccomp filter, font list; made at j's first template, j keeps them). The caller
 * starts (*ret)->sb with them, then waits with eb_tpl_ready. 0 or -errno with err set. */
int eb_tpl_new(struct jail *j, const struct execbox_policy *policy, const struct eb_language *lang,
               const char *preload, struct eb_tplproc **ret, int fds[5], struct execbox_error *err);

/* Waits until the started template's interpreter has imported the preload and says it is ready
 * (EB_TPL_START_TIMEOUT_MS at most). 0 or -errno with err set (what its init reported, if it
 * died first). */
int eb_tpl_ready(struct eb_tplproc *t, struct execbox_error *err);

/* Forks one run from t for pol (the same as t's), a session's when session, walled and waiting
 * for its code: *ret, a box as a warm start's (its init not ours: child.not_ours). A failure to
 * speak with the template marks it broken. 0 or -errno with err set. */
int eb_tpl_fork(struct jail *j, struct eb_tplproc *t, const struct execbox_policy *pol,
                bool session, struct eb_box **ret, struct execbox_error *err);

/* Whether t can still fork: not broken, its init still runs. */
bool eb_tpl_alive(struct eb_tplproc *t);

/* The peak memory of t's cgroup. */
uint64_t eb_tpl_memory(struct eb_tplproc *t);

/* Ends t: its init's death ends its pid namespace, the interpreter too. Frees t. */
void eb_tpl_free(struct eb_tplproc *t);

#endif
