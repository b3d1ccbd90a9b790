/* SPDX-License-Identifier: MIT */
/* runner.h - the job runner every surface shares (`execbox serve`, `execbox mcp`): a bounded
 * queue feeding a fixed pool of worker threads, per-job cancellation through execbox_cancel,
 * drain and stop with a deadline, and the counters /metrics shows.
 *
 * A surface embeds a struct runner_job in its own job and gets it back with container_of in its
 * callbacks. Every job that runner_submit() accepted ends with exactly one call of ops.done():
 * after ops.run() on a worker, or, for a job that never ran (cancelled while queued, or dropped
 * by runner_cancel_all/runner_stop), on the thread that dropped it. When done() is called the
 * runner has already forgotten the job (its key is free again, the counters are updated), and
 * no runner lock is held, so done() may call back into the runner.
 *
 * Lock order: the runner's lock is innermost. It is never held while calling run() or done(),
 * and runner_foreach's callback (which runs under it) must not call the runner. */
#ifndef EBCLI_RUNNER_H
#define EBCLI_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"

#define RUNNER_MAX_WORKERS 1024U

#ifndef container_of
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#endif

/* How an accepted job ended. */
enum runner_end {
    RUNNER_RAN,       /* run() was called; nobody asked to cancel it */
    RUNNER_CANCELLED, /* run() was called, and a cancel was asked while it ran */
    RUNNER_DROPPED,   /* run() was never called: cancelled while queued, or stopped */
};

/* Embedded in the surface's own job. Zero it, set key and cost, then runner_job_init(). */
struct runner_job {
    struct execbox_cancel *cancel; /* made by runner_job_init; give it to the run's request */
    const void *key;               /* optional: a live job's identity (ops.key_equal) */
    /* optional: jobs of equal serial strings run one at a time, in submission order (the calls
     * on one E2B context); a worker passes over a queued one while another of its serial runs.
     * Borrowed: must stay valid while the job is live. */
    const char *serial;
    size_t cost; /* counted against runner_config.max_cost while live */
    /* private to the runner */
    struct runner_job *next;
    bool running, cancelled;
};

struct runner_ops {
    /* Runs the job on a worker thread, no lock held. The job's cancel token may already have
     * fired. Returns false when it did no work (e.g. its client left): such a run does not
     * count in the average run time. */
    bool (*run)(struct runner_job *job, void *ud);
    /* The job's end, exactly once per accepted job (see above). */
    void (*done)(struct runner_job *job, enum runner_end end, void *ud);
    /* Optional: equality of two keys; without it, keys are compared as pointers. */
    bool (*key_equal)(const void *a, const void *b);
};

struct runner_config {
    unsigned workers; /* threads, each running one job at a time: 1..RUNNER_MAX_WORKERS */
    size_t queue;     /* jobs that may wait beyond the busy workers: runner_submit refuses a job
                         when queued + running >= workers + queue */
    size_t max_cost;  /* most total cost of live jobs; 0: no limit */
    /* most jobs of one serial waiting (not running) at once: runner_submit refuses one more
     * with -EBUSY; 0: no limit of its own (the queue's still holds) */
    size_t serial_queue;
};

struct runner_stats {
    size_t queued;         /* waiting for a worker */
    size_t running;        /* in run() now */
    size_t workers;        /* runner_config.workers */
    size_t queue_capacity; /* runner_config.queue */
    bool draining;         /* runner_drain() or runner_stop() was called */
    uint64_t accepted;     /* runner_submit() returned 0 */
    uint64_t rejected;     /* runner_submit() refused (full, over cost, draining, key in use) */
    uint64_t ran;          /* ended RUNNER_RAN */
    uint64_t cancelled;    /* ended RUNNER_CANCELLED */
    uint64_t dropped;      /* ended RUNNER_DROPPED */
    double avg_run_s;      /* moving average of run() times that did work; 0 before any */
};

struct runner;

/* Makes the job's cancel token. 0 or -ENOMEM (err set). */
int runner_job_init(struct runner_job *job, struct execbox_error *err);
/* Frees the job's cancel token. Only for a job the runner does not hold (never accepted, or
 * after its done()). */
void runner_job_release(struct runner_job *job);

/* Starts the workers. ops and ud are borrowed for the runner's life. */
int runner_new(const struct runner_config *cfg, const struct runner_ops *ops, void *ud,
               struct runner **ret, struct execbox_error *err);

/* Takes a job (initialised, not live). 0: accepted, done() will follow. -EAGAIN: the queue is
 * full or max_cost would be passed; -EBUSY: serial_queue jobs of its serial already wait;
 * -ESHUTDOWN: draining or stopped; -EEXIST: a live job has an equal key. On an error the job
 * stays the caller's. */
int runner_submit(struct runner *r, struct runner_job *job);

/* What runner_cancel found. */
enum runner_cancelled {
    RUNNER_NOT_LIVE = 0, /* not queued nor running (never accepted, or already ended) */
    RUNNER_UNQUEUED,     /* was queued: removed, and done(RUNNER_DROPPED) has been called */
    RUNNER_FIRED,        /* is running: its token was fired; done(RUNNER_CANCELLED) follows */
};

/* Cancels one job. The caller must hold no lock that done() takes. job may be a job that has
 * already ended only if its memory is still valid (it is compared, not dereferenced, then). */
enum runner_cancelled runner_cancel(struct runner *r, struct runner_job *job);
/* Cancels the live job whose key equals key; RUNNER_NOT_LIVE when there is none. */
enum runner_cancelled runner_cancel_key(struct runner *r, const void *key);
/* Cancels every live job: queued ones are dropped, running ones fired. */
void runner_cancel_all(struct runner *r);

/* Calls fn for each live job, in submission order, under the runner's lock: fn must be quick
 * and must not call the runner (taking a reference on the job is what it is for). */
void runner_foreach(struct runner *r, void (*fn)(struct runner_job *job, bool running, void *ctx),
                    void *ctx);

/* Stops accepting jobs; what was accepted still runs. */
void runner_drain(struct runner *r);
/* Waits until no job is queued or running, at most timeout_ms (< 0: no deadline). 0 or
 * -ETIMEDOUT. The done() of the last job may still be in progress on its worker (a reply being
 * written): runner_stop() waits for that, with its own deadline. */
int runner_wait_idle(struct runner *r, int timeout_ms);

/* Drains, cancels everything (queued jobs dropped, running ones fired) and joins the workers,
 * waiting at most timeout_ms for them. 0, or -ETIMEDOUT when a worker is still inside run() or
 * done(): the runner must then not be freed (the process should exit instead). */
int runner_stop(struct runner *r, int timeout_ms);
/* Frees a runner after runner_stop() returned 0, or one whose runner_stop was never called
 * (it is stopped first, without a deadline). Accepts NULL; returns NULL. */
struct runner *runner_free(struct runner *r);

void runner_get_stats(struct runner *r, struct runner_stats *ret);

#endif
