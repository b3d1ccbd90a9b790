/* SPDX-License-Identifier: MIT */
/* limits.h - every internal limit and timeout in one place (policy defaults are public, in
 * execbox.h). */
#ifndef EB_LIMITS_H
#define EB_LIMITS_H

/* Policy value ranges accepted from users. */
#define EB_TIMEOUT_MIN 0.001
#define EB_TIMEOUT_MAX 86400.0
/* The jail's start-up sweep of what killed execbox processes left runs at most this often per
 * host (seconds): it reads $TMPDIR and the cgroup tree, too much for every cold start. */
#define EB_SWEEP_INTERVAL 10
/* An `execbox run` trusts the jail's cached wall probe for at most this long (seconds; its key
 * must match too: lib/jail/cache.h); `execbox check` always probes live and refreshes it. */
#define EB_PROBE_CACHE_TTL 60.0
/* A pinned prepared mount namespace (lib/jail/mntpin.h) serves new runs for at most this long
 * (seconds): a host directory's mounts changed meanwhile reach runs within it. */
#define EB_MNTNS_PIN_MAX_AGE 600.0
#define EB_MEMORY_MIN (4ULL << 20)
#define EB_CPUS_MAX 1024.0
#define EB_PIDS_MAX 1000000U
#define EB_OUTPUT_LIMIT_MIN 64ULL
#define EB_OUTPUT_LIMIT_MAX (1ULL << 30)
#define EB_SIZE_MAX (1ULL << 50) /* 1 PiB: anything larger is a typo */

/* A policy file or JSON body larger than this is refused. */
#define EB_POLICY_FILE_MAX (1U << 20)

/* After the guest program exits, how long the parent still drains output that remaining
 * writers hold open before it gives up on them. */
#define EB_DRAIN_GRACE_MS 2000
/* After asking the sandbox's init to kill everything, how long before SIGKILL to it. */
#define EB_KILL_GRACE_MS 500
/* How long a teardown waits for a killed run that is not our child (a template's) to be gone. */
#define EB_KILL_WAIT_MS 5000
/* Read chunk for guest output. */
#define EB_READ_CHUNK 65536
/* After EB_MSG_DONE, what one drain reads before the loop looks at the deadline again: more than
 * a pipe holds (pipe-max-size, 1 MiB by default). */
#define EB_DRAIN_MAX (2U << 20)

/* A template's generation (docs/pool.md): its runs share its string-hash secret and address
 * layout, so it is replaced after this many runs or seconds. 1000 runs keep a template's start
 * (about 0.25 s of CPU with pandas) under 0.3 ms a run; 600 s bound how long any one secret
 * lives whatever the load. */
#define EB_TPL_MAX_RUNS 1000U
#define EB_TPL_MAX_AGE 600.0

/* Files listed from /workspace after a run. */
#define EB_FILES_MAX 256
#define EB_FILES_DEPTH 8

/* Open files the guest may hold. */
#define EB_NOFILE 1024

/* Bytes of a traceback kept in result.error. */
#define EB_TRACEBACK_MAX (64U << 10)

/* The network proxy of a run with network "allow" (lib/jail/netproxy.c), all per run. */
#define EB_PROXY_PORT 3128                /* where the sandbox finds it, on its own loopback */
#define EB_PROXY_BACKLOG 128              /* connections waiting to be accepted */
#define EB_PROXY_CONNS_MAX 64             /* open at once; more get 503 */
#define EB_PROXY_HEAD_MAX 8192            /* request line and headers */
#define EB_PROXY_BUF (128U << 10)         /* bytes in flight per direction per connection */
#define EB_PROXY_HEAD_TIMEOUT_MS 10000    /* to send a whole request head, from accept */
#define EB_PROXY_CONNECT_TIMEOUT_MS 10000 /* lookup and connect, from the request */
#define EB_PROXY_IDLE_TIMEOUT_MS 60000    /* no byte either way for this long ends a tunnel */
#define EB_PROXY_LOOKUPS_MAX 16           /* name lookups queued or in progress */
#define EB_PROXY_ADDRS_MAX 8              /* addresses tried per name */
#define EB_PROXY_LOOKUP_TTL_MS 60000      /* a run reuses a name's addresses this long */

#endif
