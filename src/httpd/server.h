/* SPDX-License-Identifier: MIT */
/* server.h - the HTTP service behind `execbox serve`: libmicrohttpd in front, a bounded queue
 * feeding a pool of worker threads, each running one sandbox at a time. */
#ifndef EBSRV_SERVER_H
#define EBSRV_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "execbox/execbox.h"

struct srv_config {
    struct execbox_policy policy;  /* defaults and maxima of every request's limits */
    struct execbox_executor *exec; /* borrowed; outlives the server */
    const char *token;             /* the one --token (E2B's paths carry it); NULL: none */
    /* Who may call (tenants.h: --tokens FILE, or --token as one tenant); NULL: anyone. Borrowed;
     * outlives the server. A request's bearer token names its tenant, whose sessions alone it
     * sees and whose ceilings and quotas bound it. */
    struct tenants *tenants;
    size_t workers;  /* concurrent sandboxes */
    size_t queue;    /* requests that may wait for a worker */
    size_t max_body; /* largest request body, bytes */
    /* Origins (as browsers send them: "https://app.example:8443") whose pages may call us; a
     * request with any other Origin header gets 403. None by default; "*" allows any. */
    const char *const *allow_origins; /* borrowed; outlives the server */
    size_t n_allow_origins;
    /* Against DNS rebinding when there is no token: true makes a request whose Host header is
     * not an IP literal, "localhost" or one of allow_hosts (the listen address's name and
     * --allow-host-header's) get 421 on every route. With a token the token is the defence. */
    bool check_host;
    const char *const *allow_hosts; /* borrowed; outlives the server */
    size_t n_allow_hosts;
    int listen_fd; /* bound, listening socket; the server takes it */
    /* Sessions (/v1/sessions, docs/sessions.md): 0 fields take the defaults of
     * common/sessions.h. */
    size_t max_sessions;     /* open at once; more get 429 */
    double session_idle_max; /* most idle_timeout a client may ask for, seconds */
    double session_idle;     /* idle_timeout when a client gives none (at most the above) */
    double session_lifetime; /* hard lifetime of every session, seconds */
};

struct srv;

/* Starts the daemon and its threads. On failure the listen fd is closed. */
int srv_start(const struct srv_config *cfg, struct srv **ret, struct execbox_error *err);

/* Starts leaving: /v1/health answers 503 ("draining") so that load balancers and readiness
 * probes take this instance out, while runs are still accepted and answered (each answer
 * closes its connection). srv_quiesce() follows after the grace period. */
void srv_leave(struct srv *s);

/* Stops accepting connections (the listen socket is closed) and answers any new request on an
 * open connection with 503; what was accepted goes on. */
void srv_quiesce(struct srv *s);

/* True when nothing is queued, running, or still being answered. */
bool srv_idle(struct srv *s);

/* Kills every running sandbox and drops what is queued (used on a second signal); ends every
 * session. */
void srv_cancel_all(struct srv *s);

/* Ends every session (their cells, if any still run, are killed): the drain's last step, once
 * srv_idle(), or at once when forced. Sessions are refused from then on. */
void srv_close_sessions(struct srv *s);

/* Stops the daemon and the threads and frees everything. Accepts NULL. */
void srv_stop(struct srv *s);

/* Writes one JSON log line {"time", "level", "event", "message"} to stderr. */
void srv_log(const char *level, const char *event, const char *message);

#endif
