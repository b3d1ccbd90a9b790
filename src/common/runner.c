/* SPDX-License-Identifier: MIT */
/* runner.c - the job runner shared by the surfaces: one list of live jobs in submission order
 * (queued ones not yet taken, running ones taken by a worker), a fixed set of worker threads
 * that take the oldest queued job not held back by a running one of its serial, and the books
 * (counts, cost, counters, average run time), all under one mutex. See runner.h for the contract.
 */
#include "runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io.h"

struct runner {
    struct runner_config cfg;
    struct runner_ops ops;
    void *ud;

    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or stopping */
    pthread_cond_t idle; /* a job ended */
    struct runner_job *head, *tail;
    size_t queued, running, cost;
    bool draining, stopping, joined;
    uint64_t accepted, rejected, ran, cancelled, dropped;
    double avg_run_s;

    pthread_t *threads;
    unsigned n_threads;
};

int runner_job_init(struct runner_job *job, struct execbox_error *err)
{
    job->next = NULL;
    job->running = job->cancelled = false;
    return execbox_cancel_new(&job->cancel, err);
}

void runner_job_release(struct runner_job *job)
{
    if (job)
        job->cancel = execbox_cancel_free(job->cancel);
}

static bool key_equal(struct runner *r, const void *a, const void *b)
{
    if (!a || !b)
        return false;
    return r->ops.key_equal ? r->ops.key_equal(a, b) : a == b;
}

/* Whether a job of this serial runs now. Caller holds r->lock. */
static bool serial_running(const struct runner *r, const char *serial)
{
    if (!serial)
        return false;
    for (const struct runner_job *k = r->head; k; k = k->next)
        if (k->running && k->serial && strcmp(k->serial, serial) == 0)
            return true;
    return false;
}

/* Jobs of this serial waiting for a worker. Caller holds r->lock. */
static size_t serial_waiting(const struct runner *r, const char *serial)
{
    size_t n = 0;
    for (const struct runner_job *k = r->head; k; k = k->next)
        if (!k->running && k->serial && strcmp(k->serial, serial) == 0)
            n++;
    return n;
}

/* Unlinks a live job and takes it off the books. Caller holds r->lock. */
static bool unlink_job(struct runner *r, struct runner_job *job)
{
    struct runner_job *prev = NULL;
    for (struct runner_job *k = r->head; k; prev = k, k = k->next) {
        if (k != job)
            continue;
        if (prev)
            prev->next = k->next;
        else
            r->head = k->next;
        if (r->tail == k)
            r->tail = prev;
        k->next = NULL;
        if (k->running)
            r->running--;
        else
            r->queued--;
        r->cost -= k->cost;
        pthread_cond_broadcast(&r->idle);
        /* The next job of its serial may be taken now, by any idle worker. */
        if (k->running && k->serial)
            pthread_cond_broadcast(&r->work);
        return true;
    }
    return false;
}

static void *worker_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-worker"); /* in ps, top -H and perf */
    struct runner *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        struct runner_job *job = NULL;
        for (struct runner_job *k = r->head; k && !r->stopping; k = k->next)
            if (!k->running && !serial_running(r, k->serial)) {
                job = k;
                break;
            }
        if (!job) {
            if (r->stopping)
                break;
            pthread_cond_wait(&r->work, &r->lock);
            continue;
        }
        job->running = true;
        r->queued--;
        r->running++;
        pthread_mutex_unlock(&r->lock);

        uint64_t t0 = cli_now_ns();
        bool worked = r->ops.run(job, r->ud);
        double secs = (double)(cli_now_ns() - t0) / 1e9;

        pthread_mutex_lock(&r->lock);
        bool cancelled = job->cancelled;
        unlink_job(r, job);
        if (worked)
            r->avg_run_s = r->avg_run_s ? 0.8 * r->avg_run_s + 0.2 * secs : secs;
        if (cancelled)
            r->cancelled++;
        else
            r->ran++;
        pthread_mutex_unlock(&r->lock);
        r->ops.done(job, cancelled ? RUNNER_CANCELLED : RUNNER_RAN, r->ud);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int runner_new(const struct runner_config *cfg, const struct runner_ops *ops, void *ud,
               struct runner **ret, struct execbox_error *err)
{
    if (cfg->workers < 1 || cfg->workers > RUNNER_MAX_WORKERS || !ops->run || !ops->done) {
        if (err) {
            err->code = -EINVAL;
            snprintf(err->msg, sizeof(err->msg), "job runner: workers must be 1 to %u",
                     RUNNER_MAX_WORKERS);
        }
        return -EINVAL;
    }
    struct runner *r = calloc(1, sizeof(*r));
    if (!r || !(r->threads = calloc(cfg->workers, sizeof(*r->threads)))) {
        free(r);
        if (err) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "job runner: out of memory");
        }
        return -ENOMEM;
    }
    r->cfg = *cfg;
    r->ops = *ops;
    r->ud = ud;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->idle, NULL);
    for (; r->n_threads < cfg->workers; r->n_threads++) {
        int e = pthread_create(&r->threads[r->n_threads], NULL, worker_main, r);
        if (e) {
            runner_free(r);
            if (err) {
                err->code = -e;
                snprintf(err->msg, sizeof(err->msg), "job runner: cannot start a worker: %s",
                         strerror(e));
            }
            return -e;
        }
    }
    *ret = r;
    return 0;
}

int runner_submit(struct runner *r, struct runner_job *job)
{
    pthread_mutex_lock(&r->lock);
    int ret = 0;
    if (r->draining || r->stopping)
        ret = -ESHUTDOWN;
    for (struct runner_job *k = r->head; k && ret == 0; k = k->next)
        if (key_equal(r, k->key, job->key))
            ret = -EEXIST;
    if (ret == 0 && (r->queued + r->running >= r->cfg.workers + r->cfg.queue ||
                     (r->cfg.max_cost && job->cost > r->cfg.max_cost - r->cost)))
        ret = -EAGAIN;
    if (ret == 0 && job->serial && r->cfg.serial_queue &&
        serial_waiting(r, job->serial) >= r->cfg.serial_queue)
        ret = -EBUSY;
    if (ret == 0) {
        job->next = NULL;
        job->running = job->cancelled = false;
        if (r->tail)
            r->tail->next = job;
        else
            r->head = job;
        r->tail = job;
        r->queued++;
        r->cost += job->cost;
        r->accepted++;
    } else {
        r->rejected++;
    }
    pthread_mutex_unlock(&r->lock);
    /* After the unlock: a worker woken under the lock would wake only to wait for it. The job
     * is on the list; a worker that looks before this wake takes it all the same. */
    if (ret == 0)
        pthread_cond_signal(&r->work);
    return ret;
}

/* Cancels a live job. Caller holds r->lock; returns with it released, after done() for an
 * unqueued job. */
static enum runner_cancelled cancel_locked(struct runner *r, struct runner_job *job)
{
    if (job->running) {
        job->cancelled = true;
        execbox_cancel_fire(job->cancel);
        pthread_mutex_unlock(&r->lock);
        return RUNNER_FIRED;
    }
    unlink_job(r, job);
    r->dropped++;
    pthread_mutex_unlock(&r->lock);
    r->ops.done(job, RUNNER_DROPPED, r->ud);
    return RUNNER_UNQUEUED;
}

enum runner_cancelled runner_cancel(struct runner *r, struct runner_job *job)
{
    pthread_mutex_lock(&r->lock);
    for (struct runner_job *k = r->head; k; k = k->next)
        if (k == job)
            return cancel_locked(r, job);
    pthread_mutex_unlock(&r->lock);
    return RUNNER_NOT_LIVE;
}

enum runner_cancelled runner_cancel_key(struct runner *r, const void *key)
{
    pthread_mutex_lock(&r->lock);
    for (struct runner_job *k = r->head; k; k = k->next)
        if (key_equal(r, k->key, key))
            return cancel_locked(r, k);
    pthread_mutex_unlock(&r->lock);
    return RUNNER_NOT_LIVE;
}

void runner_cancel_all(struct runner *r)
{
    struct runner_job *dropped = NULL, **tail = &dropped;
    pthread_mutex_lock(&r->lock);
    for (struct runner_job *k = r->head, *next; k; k = next) {
        next = k->next;
        if (k->running) {
            k->cancelled = true;
            execbox_cancel_fire(k->cancel);
        } else {
            unlink_job(r, k);
            r->dropped++;
            *tail = k;
            tail = &k->next;
        }
    }
    pthread_mutex_unlock(&r->lock);
    /* In submission order, outside the lock: done() may call back into the runner. */
    while (dropped) {
        struct runner_job *k = dropped;
        dropped = k->next;
        k->next = NULL;
        r->ops.done(k, RUNNER_DROPPED, r->ud);
    }
}

void runner_foreach(struct runner *r, void (*fn)(struct runner_job *job, bool running, void *ctx),
                    void *ctx)
{
    pthread_mutex_lock(&r->lock);
    for (struct runner_job *k = r->head; k; k = k->next)
        fn(k, k->running, ctx);
    pthread_mutex_unlock(&r->lock);
}

void runner_drain(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->draining = true;
    pthread_mutex_unlock(&r->lock);
}

/* An absolute CLOCK_REALTIME deadline timeout_ms from now (the clock pthread's timed waits use
 * by default). */
static struct timespec deadline_after(int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int runner_wait_idle(struct runner *r, int timeout_ms)
{
    struct timespec dl = deadline_after(timeout_ms < 0 ? 0 : timeout_ms);
    int ret = 0;
    pthread_mutex_lock(&r->lock);
    while (r->head && ret == 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&r->idle, &r->lock);
        else if (pthread_cond_timedwait(&r->idle, &r->lock, &dl) == ETIMEDOUT && r->head)
            ret = -ETIMEDOUT;
    }
    pthread_mutex_unlock(&r->lock);
    return ret;
}

int runner_stop(struct runner *r, int timeout_ms)
{
    pthread_mutex_lock(&r->lock);
    r->draining = r->stopping = true;
    pthread_cond_broadcast(&r->work);
    bool joined = r->joined;
    pthread_mutex_unlock(&r->lock);
    if (joined)
        return 0;
    runner_cancel_all(r);
    struct timespec dl = deadline_after(timeout_ms < 0 ? 0 : timeout_ms);
    while (r->n_threads > 0) {
        pthread_t t = r->threads[r->n_threads - 1];
        int e = timeout_ms < 0 ? pthread_join(t, NULL) : pthread_timedjoin_np(t, NULL, &dl);
        if (e == ETIMEDOUT)
            return -ETIMEDOUT;
        r->n_threads--;
    }
    pthread_mutex_lock(&r->lock);
    r->joined = true;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

struct runner *runner_free(struct runner *r)
{
    if (!r)
        return NULL;
    runner_stop(r, -1);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->idle);
    pthread_mutex_destroy(&r->lock);
    free(r->threads);
    free(r);
    return NULL;
}

void runner_get_stats(struct runner *r, struct runner_stats *ret)
{
    pthread_mutex_lock(&r->lock);
    *ret = (struct runner_stats){
        .queued = r->queued,
        .running = r->running,
        .workers = r->cfg.workers,
        .queue_capacity = r->cfg.queue,
        .draining = r->draining,
        .accepted = r->accepted,
        .rejected = r->rejected,
        .ran = r->ran,
        .cancelled = r->cancelled,
        .dropped = r->dropped,
        .avg_run_s = r->avg_run_s,
    };
    pthread_mutex_unlock(&r->lock);
}
