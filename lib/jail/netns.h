/* SPDX-License-Identifier: MIT */
/* netns.h - a small pool of empty network namespaces, made ahead of time by a helper thread,
 * each handed out once (never reused) so that creating one is off the caller's path. Root
 * only: joining a namespace owned by the host's user namespace needs CAP_SYS_ADMIN there. */
#ifndef EB_JAIL_NETNS_H
#define EB_JAIL_NETNS_H

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

#endif
