/* SPDX-License-Identifier: MIT */
/* lang.h - the language table (interpreter per language) and the guest's scrubbed
 * environment. */
#ifndef EB_LANG_H
#define EB_LANG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include "execbox/execbox.h"

struct eb_language {
    const char *name;        /* "python" */
    const char *interpreter; /* absolute path, executed directly, never through a shell */
    const char *args[4];     /* arguments before the program file, NULL-terminated */
    const char *filename;    /* the program file's name, e.g. "main.py" */
    /* The rlimit that caps memory: RLIMIT_AS, or RLIMIT_DATA for runtimes (node) that reserve
     * gigabytes of address space they never touch. */
    int memory_rlimit;
    /* Warm start: a program (for `interpreter -B -c`) that imports argv[3]'s comma-separated
     * modules, waits for a byte on fd 3, then runs the file argv[1] with stdin from argv[2]
     * exactly as a cold start would; NULL where the language cannot start warm. */
    const char *warm_bootstrap;
    /* Template (lib/jail/tplclient.c, lib/core/template.c): a program that imports the preload once
     * and forks a run per request through the template helper (see lib/lang/python_template.py);
     * NULL where the language has none. */
    const char *template_bootstrap;
    /* Sessions: the template bootstrap can also serve cells (lib/lang/python_session.py). */
    bool sessions;
    /* Fills the result's error from what the program wrote (a traceback); NULL: none. 0 or
     * -ENOMEM. */
    int (*parse_error)(struct execbox_result *r);
};

/* The bootstraps, embedded from lib/lang/ (lang_blobs.c). */
extern const char eb_python_warm_bootstrap[], eb_python_template_bootstrap[];

/* Fills r's error once a run has ended: the language's parse_error, then, when that found
 * nothing, eb_result_default_error (a signal or a non-zero exit). 0 or -ENOMEM. */
int eb_language_fill_error(const struct eb_language *l, struct execbox_result *r);

/* The entry for name (NULL means python), or NULL when unknown. */
const struct eb_language *eb_language_find(const char *name);

#define EB_ENV_MAX 24

/* A scrubbed environment built in the parent, so the child only execs it. */
struct eb_env {
    char *envp[EB_ENV_MAX + 1];
    char storage[6144];
    size_t used, n;
};

/* Fills e: PATH, HOME=home, TMPDIR=tmpdir, LANG=C.UTF-8, unbuffered Python, BLAS/OpenMP
 * threads = ceil(cpus), a writable MPLCONFIGDIR under tmpdir, and the OpenBLAS core-type
 * variables when the host sets them (they keep old OpenBLAS from crashing on some CPUs).
 * Nothing else from the caller's environment. -E2BIG if it does not fit. */
int eb_env_build(struct eb_env *e, const char *home, const char *tmpdir, double cpus);

/* Appends one "NAME=value". */
int eb_env_add(struct eb_env *e, const char *name, const char *value);

#endif
