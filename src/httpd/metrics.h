/* SPDX-License-Identifier: MIT */
/* metrics.h - the counters behind GET /metrics, in Prometheus' text format. Thread-safe. */
#ifndef EBSRV_METRICS_H
#define EBSRV_METRICS_H

#include <pthread.h>
#include <stdbool.h>

#include "common/sessions.h"
#include "execbox/execbox.h"
#include <stddef.h>
#include <stdint.h>

enum srv_outcome {
    SRV_OUTCOME_OK = 0, /* exit code 0 */
    SRV_OUTCOME_ERROR,  /* anything else: non-zero exit, uncaught exception, sandbox error */
    SRV_OUTCOME_TIMEOUT,
    SRV_OUTCOME_OOM,
    SRV_OUTCOME__COUNT,
};

#define SRV_LATENCY_BUCKETS 14

struct srv_metrics {
    pthread_mutex_t lock;
    uint64_t by_status[600]; /* HTTP responses by status code (499: client went away) */
    uint64_t runs[SRV_OUTCOME__COUNT];
    uint64_t cancelled;      /* runs killed because their client disconnected */
    uint64_t egress_allowed; /* network allow: proxy connections the allow-list let through */
    uint64_t egress_refused; /* ... and those it refused (403) */
    uint64_t latency_count;
    double latency_sum;
    uint64_t latency_bucket[SRV_LATENCY_BUCKETS]; /* not cumulative; the last is +Inf */
};

/* The gauges sampled at render time. */
struct srv_gauges {
    size_t queue_depth, queue_capacity, in_flight, workers;
    /* the job runner's counters (common/runner.h) */
    uint64_t jobs_accepted, jobs_rejected, jobs_ran, jobs_cancelled, jobs_dropped;
    bool draining;
    const char *backend;
    struct execbox_pool_stats pool; /* all zero without --pool */
    struct sess_stats sessions;     /* the session registry's counters */
};

void srv_metrics_init(struct srv_metrics *m);
void srv_metrics_destroy(struct srv_metrics *m);

void srv_metrics_status(struct srv_metrics *m, int status);
/* One run's outcome; a cancelled run (its client left) counts only as cancelled. */
void srv_metrics_run(struct srv_metrics *m, enum srv_outcome o, bool cancelled);
/* Seconds from receiving a POST /v1/execute to its response being ready. */
/* Counts a result's egress entries (network "allow") as allowed or refused. */
void srv_metrics_egress(struct srv_metrics *m, const struct execbox_result *r);

void srv_metrics_latency(struct srv_metrics *m, double seconds);

/* The text exposition (version 0.0.4) as a malloc'd string, or NULL on no memory. */
char *srv_metrics_render(struct srv_metrics *m, const struct srv_gauges *g, size_t *ret_len);

const char *srv_outcome_name(enum srv_outcome o);

#endif
