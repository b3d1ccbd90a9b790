/* SPDX-License-Identifier: MIT */
/* metrics.c - request, run and latency counters, rendered as Prometheus text. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execbox/execbox.h"

static const double bucket_le[SRV_LATENCY_BUCKETS - 1] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

static const char *const outcome_names[SRV_OUTCOME__COUNT] = {"ok", "error", "timeout", "oom"};

const char *srv_outcome_name(enum srv_outcome o)
{
    return o < SRV_OUTCOME__COUNT ? outcome_names[o] : "error";
}

void srv_metrics_init(struct srv_metrics *m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
}

void srv_metrics_destroy(struct srv_metrics *m)
{
    pthread_mutex_destroy(&m->lock);
}

void srv_metrics_status(struct srv_metrics *m, int status)
{
    if (status < 100 || status >= 600)
        return;
    pthread_mutex_lock(&m->lock);
    m->by_status[status]++;
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_run(struct srv_metrics *m, enum srv_outcome o, bool cancelled)
{
    pthread_mutex_lock(&m->lock);
    /* A run killed because nobody waits for it any more is not an outcome of the code. */
    if (cancelled)
        m->cancelled++;
    else
        m->runs[o < SRV_OUTCOME__COUNT ? o : SRV_OUTCOME_ERROR]++;
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_egress(struct srv_metrics *m, const struct execbox_result *r)
{
    uint64_t ok = 0, refused = 0;
    for (size_t i = 0; i < r->n_egress; i++)
        *(r->egress[i].allowed ? &ok : &refused) += 1;
    if (!ok && !refused)
        return;
    pthread_mutex_lock(&m->lock);
    m->egress_allowed += ok;
    m->egress_refused += refused;
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_latency(struct srv_metrics *m, double seconds)
{
    size_t b = 0;
    while (b < SRV_LATENCY_BUCKETS - 1 && seconds > bucket_le[b])
        b++;
    pthread_mutex_lock(&m->lock);
    m->latency_count++;
    m->latency_sum += seconds;
    m->latency_bucket[b]++;
    pthread_mutex_unlock(&m->lock);
}

char *srv_metrics_render(struct srv_metrics *m, const struct srv_gauges *g, size_t *ret_len)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    pthread_mutex_lock(&m->lock);
    struct srv_metrics s = *m; /* a consistent snapshot; the copied mutex is never used */
    pthread_mutex_unlock(&m->lock);

    fprintf(f, "# HELP execbox_build_info Version and backend of this server.\n"
               "# TYPE execbox_build_info gauge\n");
    fprintf(f, "execbox_build_info{version=\"%s\",backend=\"%s\"} 1\n", execbox_version(),
            g->backend);
    fprintf(f, "# HELP execbox_http_requests_total HTTP responses by status code (499: the "
               "client went away first).\n# TYPE execbox_http_requests_total counter\n");
    for (int i = 100; i < 600; i++)
        if (s.by_status[i])
            fprintf(f, "execbox_http_requests_total{status=\"%d\"} %llu\n", i,
                    (unsigned long long)s.by_status[i]);
    fprintf(f, "# HELP execbox_runs_total Sandbox runs by outcome (cancelled runs are not "
               "counted here).\n"
               "# TYPE execbox_runs_total counter\n");
    for (int o = 0; o < SRV_OUTCOME__COUNT; o++)
        fprintf(f, "execbox_runs_total{outcome=\"%s\"} %llu\n", outcome_names[o],
                (unsigned long long)s.runs[o]);
    fprintf(f, "# HELP execbox_runs_cancelled_total Runs killed because their client "
               "disconnected.\n# TYPE execbox_runs_cancelled_total counter\n");
    fprintf(f, "execbox_runs_cancelled_total %llu\n", (unsigned long long)s.cancelled);
    fprintf(f,
            "# HELP execbox_egress_total Connections asked of the network proxy (network "
            "allow), by the allow-list's decision (only the first %d of a run are counted).\n"
            "# TYPE execbox_egress_total counter\n"
            "execbox_egress_total{decision=\"allowed\"} %llu\n"
            "execbox_egress_total{decision=\"refused\"} %llu\n",
            EXECBOX_EGRESS_MAX, (unsigned long long)s.egress_allowed,
            (unsigned long long)s.egress_refused);
    fprintf(f, "# HELP execbox_request_duration_seconds Time from receiving POST /v1/execute "
               "to its response being ready.\n"
               "# TYPE execbox_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < SRV_LATENCY_BUCKETS - 1; b++) {
        cum += s.latency_bucket[b];
        fprintf(f, "execbox_request_duration_seconds_bucket{le=\"%g\"} %llu\n", bucket_le[b],
                (unsigned long long)cum);
    }
    cum += s.latency_bucket[SRV_LATENCY_BUCKETS - 1];
    fprintf(f, "execbox_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
            (unsigned long long)cum);
    fprintf(f, "execbox_request_duration_seconds_sum %.6f\n", s.latency_sum);
    fprintf(f, "execbox_request_duration_seconds_count %llu\n",
            (unsigned long long)s.latency_count);
    fprintf(f,
            "# HELP execbox_queue_depth Requests accepted and waiting for a worker.\n"
            "# TYPE execbox_queue_depth gauge\nexecbox_queue_depth %zu\n"
            "# HELP execbox_queue_capacity Most requests that may wait (--queue).\n"
            "# TYPE execbox_queue_capacity gauge\nexecbox_queue_capacity %zu\n"
            "# HELP execbox_sandboxes_in_flight Sandboxes running now.\n"
            "# TYPE execbox_sandboxes_in_flight gauge\nexecbox_sandboxes_in_flight %zu\n"
            "# HELP execbox_workers Concurrent sandboxes allowed (--workers).\n"
            "# TYPE execbox_workers gauge\nexecbox_workers %zu\n"
            "# HELP execbox_draining 1 while the server drains after SIGTERM.\n"
            "# TYPE execbox_draining gauge\nexecbox_draining %d\n",
            g->queue_depth, g->queue_capacity, g->in_flight, g->workers, g->draining ? 1 : 0);
    fprintf(f,
            "# HELP execbox_jobs_accepted_total Runs the job queue took.\n"
            "# TYPE execbox_jobs_accepted_total counter\nexecbox_jobs_accepted_total %llu\n"
            "# HELP execbox_jobs_rejected_total Runs the job queue refused (full, or draining).\n"
            "# TYPE execbox_jobs_rejected_total counter\nexecbox_jobs_rejected_total %llu\n"
            "# HELP execbox_jobs_ended_total Accepted runs by how they left the queue: ran, "
            "cancelled while running, dropped before running.\n"
            "# TYPE execbox_jobs_ended_total counter\n"
            "execbox_jobs_ended_total{end=\"ran\"} %llu\n"
            "execbox_jobs_ended_total{end=\"cancelled\"} %llu\n"
            "execbox_jobs_ended_total{end=\"dropped\"} %llu\n",
            (unsigned long long)g->jobs_accepted, (unsigned long long)g->jobs_rejected,
            (unsigned long long)g->jobs_ran, (unsigned long long)g->jobs_cancelled,
            (unsigned long long)g->jobs_dropped);
    fprintf(
        f,
        "# HELP execbox_pool_runs_total Runs by where their sandbox came from (--pool): a warm one "
        "ready, one forked from the live template when none was ready, or a cold start.\n"
        "# TYPE execbox_pool_runs_total counter\n"
        "execbox_pool_runs_total{sandbox=\"warm\"} %llu\n"
        "execbox_pool_runs_total{sandbox=\"forked\"} %llu\n"
        "execbox_pool_runs_total{sandbox=\"cold\"} %llu\n"
        "# HELP execbox_pool_started_total Warm sandboxes started ahead of time.\n"
        "# TYPE execbox_pool_started_total counter\nexecbox_pool_started_total %llu\n"
        "# HELP execbox_pool_expired_total Warm sandboxes destroyed unused (--pool-idle).\n"
        "# TYPE execbox_pool_expired_total counter\nexecbox_pool_expired_total %llu\n"
        "# HELP execbox_pool_failed_total Warm starts that failed.\n"
        "# TYPE execbox_pool_failed_total counter\nexecbox_pool_failed_total %llu\n"
        "# HELP execbox_pool_ready Warm sandboxes waiting for a run.\n"
        "# TYPE execbox_pool_ready gauge\nexecbox_pool_ready %u\n"
        "# HELP execbox_templates Live templates (warm sandboxes are forked from them).\n"
        "# TYPE execbox_templates gauge\nexecbox_templates %u\n"
        "# HELP execbox_templates_started_total Templates started.\n"
        "# TYPE execbox_templates_started_total counter\nexecbox_templates_started_total %llu\n"
        "# HELP execbox_templates_retired_total Templates replaced (generation bound) or lost.\n"
        "# TYPE execbox_templates_retired_total counter\nexecbox_templates_retired_total %llu\n"
        "# HELP execbox_template_memory_bytes The live templates' own memory (peak of their "
        "cgroups).\n"
        "# TYPE execbox_template_memory_bytes gauge\nexecbox_template_memory_bytes %llu\n"
        "# HELP execbox_cgroups_reused_total Runs given a cgroup an earlier run had (emptied, "
        "counters reset).\n"
        "# TYPE execbox_cgroups_reused_total counter\nexecbox_cgroups_reused_total %llu\n"
        "# HELP execbox_cgroups_kept Emptied cgroups kept for the next runs.\n"
        "# TYPE execbox_cgroups_kept gauge\nexecbox_cgroups_kept %u\n",
        (unsigned long long)g->pool.hits, (unsigned long long)g->pool.forked,
        (unsigned long long)(g->pool.misses - g->pool.forked), (unsigned long long)g->pool.started,
        (unsigned long long)g->pool.expired, (unsigned long long)g->pool.failed, g->pool.ready,
        g->pool.templates, (unsigned long long)g->pool.templates_started,
        (unsigned long long)g->pool.templates_retired,
        (unsigned long long)g->pool.template_memory_bytes,
        (unsigned long long)g->pool.cgroups_reused, g->pool.cgroups_kept);
    fprintf(f,
            "# HELP execbox_sessions_open Sessions open now (--max-sessions at most).\n"
            "# TYPE execbox_sessions_open gauge\nexecbox_sessions_open %zu\n"
            "# HELP execbox_sessions_created_total Sessions created.\n"
            "# TYPE execbox_sessions_created_total counter\nexecbox_sessions_created_total %llu\n"
            "# HELP execbox_sessions_expired_total Sessions ended by their idle timeout or "
            "lifetime.\n"
            "# TYPE execbox_sessions_expired_total counter\nexecbox_sessions_expired_total %llu\n"
            "# HELP execbox_session_cells_total Cells run in sessions.\n"
            "# TYPE execbox_session_cells_total counter\nexecbox_session_cells_total %llu\n"
            "# HELP execbox_session_cells_rolled_back_total Cells whose session rolled back to "
            "the state before them.\n"
            "# TYPE execbox_session_cells_rolled_back_total counter\n"
            "execbox_session_cells_rolled_back_total %llu\n",
            g->sessions.open, (unsigned long long)g->sessions.created,
            (unsigned long long)g->sessions.expired, (unsigned long long)g->sessions.cells,
            (unsigned long long)g->sessions.cells_rolled_back);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (ret_len)
        *ret_len = len;
    return buf;
}
