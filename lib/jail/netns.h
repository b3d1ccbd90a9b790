/* SPDX-License-Identifier: MIT */
/* netns.h - a small pool of empty network namespaces, made ahead of time by a helper thread,
 * each handed out once (never reused) so that creating one is off the caller's path. Root
 * only: joining a namespace owned by the host's user namespace needs CAP_SYS_ADMIN there. */
#ifndef EB_JAIL_NETNS_H
#define EB_JAIL_NETNS_H

#include <stddef.h>

struct eb_netns_pool;

/* Starts a pool of up to size namespaces. NULL when it cannot (then runs clone their own). One
 * namespace is made at once; the pool refills to size only after a second take, so that a
 * one-shot run makes exactly the namespace it uses. */
struct eb_netns_pool *eb_netns_pool_new(int size);

/* An fd of a fresh, never used network namespace (the caller owns and closes it), or -1 when
 * the pool is empty right now. Thread-safe. */
int eb_netns_take(struct eb_netns_pool *p);

void eb_netns_pool_free(struct eb_netns_pool *p);

/* How many namespaces the pool has made so far (tests). */
int eb_netns_pool_made(struct eb_netns_pool *p);

/* The way out of a run with network "allow" (docs/network.md): in the network namespace
 * netns_fd (or, when it is -1, in a new empty one), brings loopback up and makes a TCP socket
 * listening at 127.0.0.1:port, for the proxy to accept on from the host. The socket belongs to
 * that namespace for good (a socket stays in the namespace it was made in), so the sandbox can
 * reach it and nothing else: no interface but loopback, no route, no address outside it.
 * *ret_netns_fd: netns_fd itself, or the new namespace (the caller owns it); *ret_listen_fd:
 * the listening socket (non-blocking, close-on-exec). Done in a short-lived thread, so that no
 * caller's thread ever changes namespace. Root only (joining needs CAP_SYS_ADMIN). Usable by
 * a cold run before its clone, or by a template before forking a run into the namespace. */
int eb_netns_proxy_listen(int netns_fd, unsigned short port, int *ret_netns_fd, int *ret_listen_fd,
                          char *why, size_t why_size);

#endif
