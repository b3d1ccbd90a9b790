/* SPDX-License-Identifier: MIT */
/* backend.c - the registry of compiled-in backends. */
#include "backends/backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

static const struct eb_backend_ops *const registry[] = {
#ifdef HAVE_JAIL
    &eb_backend_jail,
#endif
    &eb_backend_subprocess,
#ifdef HAVE_DOCKER
    &eb_backend_docker,
#endif
#ifdef HAVE_REMOTE
    &eb_backend_remote,
#endif
#ifdef HAVE_E2B
    &eb_backend_e2b,
#endif
#ifdef HAVE_PYODIDE
    &eb_backend_pyodide,
#endif
#ifdef HAVE_GVISOR
    &eb_backend_gvisor,
#endif
    &eb_backend_firecracker,
};

static const char *const names[] = {
#ifdef HAVE_JAIL
    "jail",
#endif
    "subprocess",
#ifdef HAVE_DOCKER
    "docker",
#endif
#ifdef HAVE_REMOTE
    "remote",
#endif
#ifdef HAVE_E2B
    "e2b",
#endif
#ifdef HAVE_PYODIDE
    "pyodide",
#endif
#ifdef HAVE_GVISOR
    "gvisor",
#endif
    NULL, /* firecracker is designed, not built: `check -b firecracker` only, not listed */
};

const char *const *execbox_backends(void)
{
    return names;
}

const struct eb_backend_ops *eb_backend_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(registry); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

void eb_check_add(struct execbox_check *c, const char *name, bool ok, bool required,
                  const char *fmt, ...)
{
    if (c->n_walls >= EXECBOX_CHECK_MAX_WALLS)
        return;
    struct execbox_wall *w = &c->walls[c->n_walls++];
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->ok = ok;
    w->required = required;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->detail, sizeof(w->detail), fmt, ap);
    va_end(ap);
}
