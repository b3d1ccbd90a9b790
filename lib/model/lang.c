/* SPDX-License-Identifier: MIT */
/* lang.c - languages and the guest environment. */
#include "model/lang.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "execbox/execbox.h"
#include "model/result.h"

static const struct eb_language languages[] = {
    /* -B: never write .pyc files into a read-only or shared tree. */
    {.name = "python",
     .interpreter = "/usr/bin/python3",
     .args = {"-B", NULL},
     .filename = "main.py",
     .memory_rlimit = RLIMIT_AS,
     .warm_bootstrap = eb_python_warm_bootstrap,
     .template_bootstrap = eb_python_template_bootstrap,
     .sessions = true,
     .parse_error = eb_parse_python_error},
    {.name = "javascript",
     .interpreter = "/usr/bin/node",
     .args = {NULL},
     .filename = "main.js",
     .memory_rlimit = RLIMIT_DATA,
     .parse_error = eb_parse_node_error},
    /* --noprofile --norc: no host start-up files run before the code. */
    {.name = "bash",
     .interpreter = "/bin/bash",
     .args = {"--noprofile", "--norc", NULL},
     .filename = "main.sh",
     .memory_rlimit = RLIMIT_AS},
};

static const char *const language_names[] = {"python", "javascript", "bash", NULL};

const char *const *execbox_languages(void)
{
    return language_names;
}

void execbox_language_list(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; language_names[i] && used < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", language_names[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

const struct eb_language *eb_language_find(const char *name)
{
    if (!name || !*name)
        name = "python";
    if (strcmp(name, "py") == 0 || strcmp(name, "python3") == 0)
        name = "python";
    else if (strcmp(name, "js") == 0 || strcmp(name, "node") == 0)
        name = "javascript";
    else if (strcmp(name, "sh") == 0)
        name = "bash";
    for (size_t i = 0; i < ARRAY_SIZE(languages); i++)
        if (strcmp(languages[i].name, name) == 0)
            return &languages[i];
    return NULL;
}

int eb_language_fill_error(const struct eb_language *l, struct execbox_result *r)
{
    int rc = l->parse_error ? l->parse_error(r) : 0;
    return rc < 0 ? rc : eb_result_default_error(r);
}

const char *execbox_language_name(const char *name)
{
    const struct eb_language *l = eb_language_find(name);
    return l ? l->name : NULL;
}

int eb_env_add(struct eb_env *e, const char *name, const char *value)
{
    if (e->n >= EB_ENV_MAX)
        return -E2BIG;
    size_t room = sizeof(e->storage) - e->used;
    int n = snprintf(e->storage + e->used, room, "%s=%s", name, value);
    if (n < 0 || (size_t)n >= room)
        return -E2BIG;
    e->envp[e->n++] = e->storage + e->used;
    e->envp[e->n] = NULL;
    e->used += (size_t)n + 1;
    return 0;
}

int eb_env_build(struct eb_env *e, const char *home, const char *tmpdir, double cpus)
{
    memset(e, 0, sizeof(*e));
    char threads[16], mpl[EXECBOX_PATH_MAX];
    snprintf(threads, sizeof(threads), "%d", (int)ceil(cpus > 0 ? cpus : 1));
    snprintf(mpl, sizeof(mpl), "%s/.matplotlib", tmpdir);
    const char *kv[][2] = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", home},
        {"TMPDIR", tmpdir},
        {"LANG", "C.UTF-8"},
        {"LC_ALL", "C.UTF-8"},
        {"PYTHONUNBUFFERED", "1"},
        {"PYTHONDONTWRITEBYTECODE", "1"},
        {"MPLCONFIGDIR", mpl},
        {"MPLBACKEND", "Agg"},
        {"OMP_NUM_THREADS", threads},
        {"OPENBLAS_NUM_THREADS", threads},
        {"MKL_NUM_THREADS", threads},
        {"NUMEXPR_NUM_THREADS", threads},
    };
    for (size_t i = 0; i < ARRAY_SIZE(kv); i++) {
        int r = eb_env_add(e, kv[i][0], kv[i][1]);
        if (r < 0)
            return r;
    }
    static const char *const passthrough[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
    for (size_t i = 0; i < ARRAY_SIZE(passthrough); i++) {
        const char *v = secure_getenv(passthrough[i]);
        if (v && strlen(v) < 64) {
            int r = eb_env_add(e, passthrough[i], v);
            if (r < 0)
                return r;
        }
    }
    return 0;
}
