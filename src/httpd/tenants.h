/* SPDX-License-Identifier: MIT */
/* tenants.h - `execbox serve --tokens FILE`: who may call the server, and how much each may
 * hold. Each line of the file is a tenant: a name, a token (or its SHA-256), and optional
 * quotas (open sessions, concurrent runs) and policy ceilings (any policy field, lowered from
 * the server's). A tenant sees only its own sessions; its runs are bounded by its ceilings and
 * quotas. The file is read again on tenants_reload (SIGHUP): the new lines apply to requests
 * that arrive after it, while work under the old ones finishes as it was; what a tenant holds
 * (its sessions and runs) carries over by name. The format: docs/tenants.md.
 *
 * Thread-safety: every call is thread-safe. */
#ifndef EBCLI_TENANTS_H
#define EBCLI_TENANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"

#define TENANT_NAME_MAX 64     /* letters, digits, '_', '-', '.' */
#define TENANTS_MAX 1024       /* lines that name a tenant */
#define TENANTS_FILE_MAX 65536 /* bytes */
#define TENANT_TOKEN_MIN 16    /* a literal token's shortest length */
#define TENANT_TOKEN_MAX 256

/* What a request's tenant is, copied at authentication (a reload never changes it under a
 * running request). */
struct tenant {
    char name[TENANT_NAME_MAX + 1];
    struct execbox_policy ceiling; /* the server's policy lowered by the tenant's line */
    unsigned max_sessions;         /* 0: only the server's own cap */
    unsigned max_runs;             /* concurrent runs and cells; 0: only the server's */
};

/* Per-tenant counters (for /metrics). */
struct tenant_stats {
    char name[TENANT_NAME_MAX + 1];
    uint64_t runs;     /* runs and cells admitted */
    uint64_t rejected; /* requests refused by a quota (429) */
    unsigned running;  /* runs and cells running now */
};

struct tenants;

/* Reads path with server (the server's policy: defaults and maxima) as every tenant's starting
 * ceiling. 0, or -errno with err naming the line and what is wrong with it. */
int tenants_load(const char *path, const struct execbox_policy *server, struct tenants **ret,
                 struct execbox_error *err);

/* A single tenant named "default" for the one --token (its ceiling the server's). */
int tenants_single(const char *token, const struct execbox_policy *server, struct tenants **ret,
                   struct execbox_error *err);

/* Reads the file again. On any error nothing changes (err says why) and the old lines stay. */
int tenants_reload(struct tenants *t, struct execbox_error *err);

void tenants_free(struct tenants *t);

/* The tenant whose token is presented (every tenant's hash is compared, so the time taken says
 * nothing about which or how close): true with *ret filled, or false. */
bool tenants_auth(struct tenants *t, const char *presented, struct tenant *ret);

/* The run quota: counts one more run (or cell) running for the tenant and returns 0, or -EDQUOT
 * (at max_runs: nothing counted, the refusal counted) with *quota "max_runs";
 * tenants_run_end gives it back. Counted by name, across reloads. (Sessions are counted by
 * the session registry, which holds them: sess_options.owner_max.) */
int tenants_run_begin(struct tenants *t, const struct tenant *who, const char **quota);
void tenants_run_end(struct tenants *t, const char *name);

/* Counts a request a quota refused. */
void tenants_rejected(struct tenants *t, const char *name);

/* Up to n tenants' counters into ret (in file order; those no longer in the file after a
 * reload last); the number written. */
size_t tenants_stats(struct tenants *t, struct tenant_stats *ret, size_t n);

#endif
