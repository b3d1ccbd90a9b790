/* SPDX-License-Identifier: MIT */
/*
 * pyodide.c - the `pyodide` backend: CPython compiled to WebAssembly (Pyodide, from npm) under
 * Node, run inside the jail.
 *
 * WebAssembly alone is no sandbox here: Pyodide gives Python the whole JS runtime (`import js`,
 * `pyodide.ffi`), and through Node's `process` the host's system calls. So every run is a jail
 * run (the same namespaces, cgroup, seccomp filter, Landlock and read-only root as the jail
 * backend, the same timeout killing the whole sandbox) whose program is `node runner.mjs
 * /code/main.py`; the Pyodide directory is bound read-only into the root at GUEST_DIR.
 *
 * Where Pyodide is: $EXECBOX_PYODIDE_DIR, else EB_PYODIDE_DIR (set at build time: the installed
 * data directory). It holds runner.mjs and main.py (from lib/backends/pyodide/) and
 * node_modules/pyodide, installed with `npm ci` from the committed lock file by
 * lib/backends/pyodide/install.sh.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/util.h"

#ifndef EB_PYODIDE_DIR
#define EB_PYODIDE_DIR "/usr/local/share/execbox/pyodide"
#endif
#define GUEST_DIR "opt/execbox-pyodide" /* relative to the sandbox's root */
#define NODE "/usr/bin/node"

/* Python, as the jail runs it for this backend: node on the runner, the program after it. */
static const struct eb_language pyodide_python = {
    .name = "python",
    .interpreter = NODE,
    .args = {"/" GUEST_DIR "/runner.mjs", NULL},
    .filename = "main.py",
    /* V8 reserves address space for WebAssembly memories that it never touches. */
    .memory_rlimit = RLIMIT_DATA,
    /* Not a program: the jail's warm argv is `INTERPRETER ARGS -c BOOTSTRAP CODE STDIN PRELOAD`,
     * and runner.mjs takes `-c warm` as its warm mode (load Pyodide, wait for the go byte on fd
     * 3, run CODE once). */
    .warm_bootstrap = "warm",
};

struct pyodide {
    void *jail;
    char dir[EXECBOX_PATH_MAX];
};

static const char *pyodide_dir(void)
{
    const char *d = getenv("EXECBOX_PYODIDE_DIR");
    return d && *d ? d : EB_PYODIDE_DIR;
}

/* The pinned Pyodide version from its package.json, or -errno with why it is not usable. */
static int find_pyodide(const char *dir, char *version, size_t size, struct execbox_error *err)
{
    static const char *const need[] = {"runner.mjs", "main.py", "node_modules/pyodide/pyodide.mjs",
                                       "node_modules/pyodide/pyodide.asm.wasm",
                                       "node_modules/pyodide/python_stdlib.zip"};
    char p[EXECBOX_PATH_MAX];
    for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
        if (snprintf(p, sizeof(p), "%s/%s", dir, need[i]) >= (int)sizeof(p))
            return eb_error_set(err, -ENAMETOOLONG, "path too long");
        if (access(p, R_OK) < 0)
            return eb_error_set(err, -ENOENT,
                                "no '%s' in '%s' (install Pyodide there with "
                                "lib/backends/pyodide/install.sh, or set EXECBOX_PYODIDE_DIR)",
                                need[i], dir);
    }
    snprintf(p, sizeof(p), "%s/node_modules/pyodide/package.json", dir);
    json_t *j = json_load_file(p, 0, NULL);
    const char *v = json_string_value(json_object_get(j, "version"));
    snprintf(version, size, "%s", v ? v : "unknown");
    json_decref(j);
    return 0;
}

static int probe(const struct execbox_executor_options *o, struct execbox_check *c)
{
    /* The jail's walls are this backend's walls. */
    eb_backend_jail.probe(o, c);
    bool jail_ok = c->usable;
    bool node_ok = access(NODE, X_OK) == 0;
    eb_check_add(c, "node", node_ok, true, "%s",
                 node_ok ? NODE : NODE " is missing (scripts/deps lists nodejs)");
    char version[64];
    struct execbox_error err = {0};
    const char *dir = pyodide_dir();
    bool py_ok = find_pyodide(dir, version, sizeof(version), &err) == 0;
    if (py_ok)
        eb_check_add(c, "pyodide", true, true, "Pyodide %s in '%s'", version, dir);
    else
        eb_check_add(c, "pyodide", false, true, "%s", err.msg);
    eb_check_add(c, "webassembly", true, false,
                 "CPython in WebAssembly; it exposes the JS runtime, so the jail is the boundary");
    eb_check_add(c, "packages", true, false,
                 "offline: the standard library only; micropip and Pyodide's packages refused");
    snprintf(c->tier, sizeof(c->tier), "WebAssembly (Pyodide) inside the jail: %.60s",
             jail_ok ? "the jail's walls" : "the jail is not usable here");
    c->usable = jail_ok && node_ok && py_ok;
    return c->usable ? 0 : -ENOTSUP;
}

static void pyodide_close(void *state)
{
    struct pyodide *p = state;
    if (!p)
        return;
    if (p->jail)
        eb_backend_jail.close(p->jail);
    free(p);
}

static int pyodide_open(const struct execbox_executor_options *o,
                        const struct execbox_check *report, void **ret_state,
                        struct execbox_error *err)
{
    struct pyodide *p = calloc(1, sizeof(*p));
    if (!p)
        return eb_error_set(err, -ENOMEM, "out of memory");
    char version[64];
    int r = find_pyodide(pyodide_dir(), version, sizeof(version), err);
    if (r == 0 && !realpath(pyodide_dir(), p->dir))
        r = eb_error_set(err, -errno, "'%s': %s", pyodide_dir(), execbox_strerror(-errno));
    if (r == 0)
        r = eb_backend_jail.open(o, report, &p->jail, err);
    if (r == 0)
        r = eb_jail_bind_ro(p->jail, p->dir, GUEST_DIR, err);
    if (r < 0) {
        pyodide_close(p);
        return r;
    }
    *ret_state = p;
    return 0;
}

static int refuse(const struct execbox_policy *policy, const struct eb_language *lang,
                  struct execbox_error *err)
{
    if (strcmp(lang->name, "python") != 0)
        return eb_error_set(err, -ENOTSUP, "the pyodide backend runs python only, not %s",
                            lang->name);
    if (policy->rootfs[0])
        return eb_error_set(err, -ENOTSUP,
                            "the pyodide backend has no --rootfs: its root is the host's system "
                            "directories and Pyodide");
    return 0;
}

/* Every step is the jail's, with Pyodide's entry for python (node loading Pyodide, then the
 * program). A warm sandbox is a whole jail sandbox in which node has loaded Pyodide and waits
 * (lib/core/pool.c asks; it serves one run and is destroyed). Node cannot fork a loaded runtime, so
 * there is no template: every warm sandbox pays a full load, off the caller's path. */
static int pyodide_start(void *state, const struct eb_start *s, struct eb_box **ret,
                         struct execbox_error *err)
{
    struct pyodide *p = state;
    int r = refuse(s->policy, s->lang, err);
    if (r < 0)
        return r;
    if (s->session)
        return eb_error_set(err, -ENOTSUP, "the pyodide backend has no sessions");
    struct eb_start st = *s;
    struct eb_run run;
    st.lang = &pyodide_python;
    st.tpl = NULL;
    if (s->run) {
        run = *s->run;
        run.lang = &pyodide_python;
        st.run = &run;
    }
    return eb_backend_jail.start(p->jail, &st, ret, err);
}

static int pyodide_deliver(void *state, struct eb_box *w, const struct eb_run *run,
                           struct execbox_error *err)
{
    struct pyodide *p = state;
    struct eb_run r = *run;
    r.lang = &pyodide_python;
    return eb_backend_jail.deliver(p->jail, w, &r, err);
}

static int pyodide_wait(void *state, struct eb_box *w, const struct eb_run *run,
                        struct execbox_result *res, struct eb_wait *ret, struct execbox_error *err)
{
    struct pyodide *p = state;
    struct eb_run r = *run;
    r.lang = &pyodide_python;
    return eb_backend_jail.wait(p->jail, w, &r, res, ret, err);
}

static void pyodide_destroy(void *state, struct eb_box *w)
{
    struct pyodide *p = state;
    eb_backend_jail.destroy(p->jail, w);
}

const struct eb_backend_ops eb_backend_pyodide = {
    .name = "pyodide",
    .probe = probe,
    .open = pyodide_open,
    .close = pyodide_close,
    .start = pyodide_start,
    .deliver = pyodide_deliver,
    .wait = pyodide_wait,
    .destroy = pyodide_destroy,
    .warm = true,
    /* No network "allow": the jail's proxy would be the only way out, but nothing in Pyodide
     * can use it (Python's sockets are Emscripten's, os.environ is not node's, and node's
     * fetch ignores HTTP_PROXY), so the executor refuses it rather than pretend. */
};
