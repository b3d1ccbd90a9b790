/* SPDX-License-Identifier: MIT */
/* sessions.h - the registry of live sessions that the surfaces share (`execbox serve`'s
 * /v1/sessions, its E2B routes): ids, a reference count per session so that none is freed while
 * a call uses it, a "cell accepted" flag (one cell at a time, decided before the cell is even
 * queued), a cap on how many are open, and a thread of its own that ends sessions past their
 * idle timeout or lifetime and frees ended ones.
 *
 * Lifecycle: sess_create() makes a session and returns it with a reference for the caller;
 * sess_get() finds one by id and takes a reference; sess_put() drops one. The registry itself
 * holds one while the session is listed. sess_remove(), expiry and sess_registry_free() unlist
 * it and end it (execbox_session_kill) on the registry's thread; it is freed
 * (execbox_session_free) on that thread once the last reference is gone, so a sess_put() never
 * blocks and may be called from any thread.
 *
 * Thread-safety: every call is thread-safe. Lock order: the registry's lock is innermost; no
 * callback of the registry runs with it held. */
#ifndef EBCLI_SESSIONS_H
#define EBCLI_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"

/* An id: 128 random bits as unpadded base64url (22 characters of [A-Za-z0-9_-]). */
#define SESS_ID_LEN 22
#define SESS_ID_SIZE (SESS_ID_LEN + 1)

/* Defaults of struct sess_config. */
#define SESS_MAX_DEFAULT 16U
#define SESS_IDLE_DEFAULT 600.0
#define SESS_IDLE_MAX_DEFAULT 3600.0
#define SESS_LIFETIME_DEFAULT 86400.0
/* Longest owner name (a tenant's, src/httpd/tenants.h). */
#define SESS_OWNER_MAX 64
/* Largest --max-sessions accepted. */
#define SESS_MAX_LIMIT 4096U

struct sess_config {
    struct execbox_executor *exec; /* borrowed; outlives the registry */
    size_t max_sessions;           /* open at once, all surfaces together; 0: SESS_MAX_DEFAULT */
    double idle_default;           /* idle timeout when a caller gives none; 0: 600 s */
    double idle_max;               /* most idle timeout a caller may ask for; 0: 3600 s */
    double lifetime;               /* hard lifetime of every session; 0: 86400 s */
};

/* What a caller asks of a new session. */
struct sess_options {
    const char *language;                /* NULL: python */
    const struct execbox_policy *policy; /* already checked against the server's maxima; copied.
                                            Its workspace is ignored (sessions get a fresh one) */
    bool no_rollback;    /* an uncaught exception keeps the cell's partial effects */
    double idle_timeout; /* seconds, 1..idle_max; 0: idle_default */
    const char *surface; /* static label of the surface that made it ("http", "e2b"); listed,
                            never interpreted; NULL: "" */
    const char *owner;   /* who may find it (sess_get_owned); copied, cut to SESS_OWNER_MAX;
                            NULL: "" */
    size_t owner_max;    /* sessions the owner may hold listed or being created; 0: no cap */
};

/* One listed session, as sess_list() reports it. */
struct sess_summary {
    char id[SESS_ID_SIZE];
    const char *surface;              /* as given to sess_create */
    struct execbox_session_info info; /* the library's snapshot */
    double idle_timeout;              /* seconds */
    bool cell_accepted;               /* a cell is queued or running (sess_cell_begin) */
    bool no_rollback;                 /* as given to sess_create */
};

/* The registry's counters (for /metrics). */
struct sess_stats {
    size_t open;                /* listed now (creating ones not counted) */
    uint64_t created;           /* sess_create succeeded */
    uint64_t expired;           /* ended by the idle timeout or the lifetime */
    uint64_t cells;             /* cells that ran (sess_cell_end with a result) */
    uint64_t cells_rolled_back; /* ... of which rolled back */
};

struct sess_registry;
struct sess;

/* Starts the registry and its thread. 0, or a negative errno with err set. */
int sess_registry_new(const struct sess_config *cfg, struct sess_registry **ret,
                      struct execbox_error *err);

/* Ends every session and waits for them to be freed; no call may be in progress (every
 * reference dropped). Accepts NULL; returns NULL. */
struct sess_registry *sess_registry_free(struct sess_registry *r);

/* Refuses new sessions from now on (sess_create: -ESHUTDOWN) and ends every listed session
 * (as sess_remove does); cells that run go on until their session is killed under them. For a
 * drain: call it once the surface has stopped taking calls. */
void sess_close_all(struct sess_registry *r);

/* The effective idle timeout for a request's value (0: the default), or -EINVAL (field
 * "idle_timeout") when it is not whole seconds from 1 to idle_max. For surfaces that validate
 * before queueing; sess_create checks again. */
int sess_idle_check(const struct sess_registry *r, double idle_timeout, double *ret,
                    struct execbox_error *err);

/* Creates a session (blocks while its sandbox starts: call it from a worker). On success *ret
 * holds a reference for the caller. -EAGAIN when max_sessions are open or being created,
 * -EDQUOT when o->owner_max of the owner's are,
 * -ESHUTDOWN after sess_close_all, -EINVAL for a bad idle_timeout, or what
 * execbox_session_new returned (-ENOTSUP: the backend, language or policy cannot have
 * sessions; err names the field when one is at fault). */
int sess_create(struct sess_registry *r, const struct sess_options *o, struct sess **ret,
                struct execbox_error *err);

/* Finds a listed session by id and takes a reference; NULL when unknown, removed, ended or
 * past its expiry (an expired one is ended now). */
struct sess *sess_get(struct sess_registry *r, const char *id);

/* sess_get, finding only a session of owner (NULL: any): another owner's id is as unknown. */
struct sess *sess_get_owned(struct sess_registry *r, const char *id, const char *owner);

/* Takes another reference on a session the caller holds. Returns s. */
struct sess *sess_ref(struct sess *s);

/* Drops a reference. Accepts NULL; returns NULL. Never blocks on the session. */
struct sess *sess_put(struct sess *s);

/* The session's id, its library object (for execbox_session_run and the file calls), the
 * policy it was made with (workspace cleared), its idle timeout, and its surface label. Valid
 * while the caller holds a reference. */
const char *sess_id(const struct sess *s);
struct execbox_session *sess_session(struct sess *s);
const struct execbox_policy *sess_policy(const struct sess *s);
double sess_idle_timeout(const struct sess *s);
const char *sess_surface(const struct sess *s);

/* A snapshot as sess_list gives it. */
void sess_summarize(struct sess *s, struct sess_summary *ret);

/* Claims the session's one cell: call before queueing a cell, so that a second one is refused
 * at once. 0, -EBUSY when a cell is already accepted, -ESHUTDOWN when the session was removed
 * or ended. While claimed, the session does not expire. */
int sess_cell_begin(struct sess *s);

/* Releases the claim. res: the cell's result (counted in the stats), or NULL when the cell did
 * not run (refused by the queue, its client left, an API error). Refreshes the expiry. */
void sess_cell_end(struct sess *s, const struct execbox_result *res);

/* Unlists the session with this id and ends it on the registry's thread; done(ud), when not
 * NULL, is called there once execbox_session_kill has returned (a cell running in it then
 * returns as cancelled). 0, or -ENOENT when no such session is listed (done is not called). */
int sess_remove(struct sess_registry *r, const char *id, void (*done)(void *ud), void *ud);

/* Fills up to max summaries of listed sessions (of one surface, or all when surface is NULL),
 * oldest first; returns how many there are in all (may exceed max). */
size_t sess_list(struct sess_registry *r, const char *surface, struct sess_summary *out,
                 size_t max);

/* sess_list of owner's sessions only (NULL: everyone's). */
size_t sess_list_owned(struct sess_registry *r, const char *surface, const char *owner,
                       struct sess_summary *out, size_t max);

void sess_get_stats(struct sess_registry *r, struct sess_stats *ret);

/* Unix time as ISO 8601 UTC, whole seconds: "2026-12-01T18:00:00Z". buf of at least 21. */
void sess_iso_time(double unix_seconds, char *buf, size_t size);

#endif
