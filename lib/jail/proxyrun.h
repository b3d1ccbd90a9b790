/* SPDX-License-Identifier: MIT */
/* proxyrun.h - a run's network "allow" wiring: its proxy (netproxy.h) on a listening socket made
 * inside the run's network namespace (netns.h), and the environment that points the guest's
 * HTTP clients at it. */
#ifndef EB_JAIL_PROXYRUN_H
#define EB_JAIL_PROXYRUN_H

#include <stdbool.h>

#include "execbox/execbox.h"
#include "jail/netproxy.h"
#include "model/lang.h"

/* Adds the proxy's address to env, as the guest's HTTP clients look for it (HTTP_PROXY and
 * HTTPS_PROXY in both cases, NO_PROXY empty, NODE_USE_ENV_PROXY). 0 or -errno (env full). */
int eb_proxy_env(struct eb_env *env);

/* Root only (root_mode false: -ENOTSUP with err set). Makes the proxy's listening socket inside
 * the network namespace netns_fd (-1: a new one, returned in *ret_ns; else *ret_ns is netns_fd)
 * and starts a proxy for policy's allow-list on it, in *ret. 0 or -errno with err set (then a
 * namespace made here is closed). */
int eb_proxy_run(bool root_mode, const struct execbox_policy *policy, int netns_fd, int *ret_ns,
                 struct eb_proxy **ret, struct execbox_error *err);

#endif
