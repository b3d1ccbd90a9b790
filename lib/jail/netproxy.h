/* SPDX-License-Identifier: MIT */
/* netproxy.h - one run's egress proxy (network "allow", docs/network.md). The sandbox's only way
 * out is a TCP socket listening at 127.0.0.1:3128 inside its own network namespace, made by
 * eb_netns_proxy_listen() (lib/jail/netns.h) and accepted on here, on the host side. The proxy
 * speaks HTTP/1.1 proxying: CONNECT host:port tunnels and absolute-form plain-HTTP requests
 * ("GET http://host/path"), applies the policy's allow-list to the name and port asked for,
 * resolves names itself, checks every resolved address again (loopback, private, link-local,
 * multicast and metadata addresses only when an entry names them), answers refusals with a 403
 * and a one-line reason, and records every attempt for the result's egress list.
 *
 * Each run has its own proxy: one event-loop thread (epoll) and, when a name must be looked up,
 * one resolver thread; connection counts, buffers, lookups and time are bounded per run (see
 * limits.h), so one run's clients cannot starve another run's. Nothing of it outlives
 * eb_proxy_stop() but a lookup already inside getaddrinfo(), which finishes on its own and
 * is dropped. */
#ifndef EB_NETPROXY_H
#define EB_NETPROXY_H

#include "execbox/execbox.h"

struct eb_proxy;

/* Starts a proxy for the allow-list of *policy (copied) on listen_fd, a listening TCP socket
 * (taken: closed by eb_proxy_stop, or here on failure). */
int eb_proxy_start(const struct execbox_policy *policy, int listen_fd, struct eb_proxy **ret,
                   struct execbox_error *err);

/* Stops the proxy: every connection is closed and the thread joined. With res, the egress
 * record is moved into it (has_egress set). Accepts NULL. */
void eb_proxy_stop(struct eb_proxy *p, struct execbox_result *res);

#endif
