/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the warm pool. For each (policy, language) pair that runs ask for, a background
 * thread keeps `size` sandboxes started ahead of time: walls up, interpreter initialised, the
 * preload modules imported, waiting for code (one filler thread per core). A run takes one (or runs
 * cold when none is ready: it never waits for the pool), and the sandbox is destroyed after that
 * one run; the thread starts a replacement, when the runs let it (fill_yields). Sandboxes unused
 * for the idle time are destroyed, and a pair nobody asked for in that time is forgotten.
 */
#include "core/pool.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/policy.h"

#define POOL_PAIRS 8 /* distinct (policy, language) pairs kept at once */
#define POOL_MAX 64  /* warm sandboxes per pair */
#define POOL_IDLE_DEFAULT 300.0
#define POOL_RETRY_NS (1000ULL * 1000 * 1000) /* after a failed warm start */
/* How long after a run's end a refill still gives way to runs (fill_yields): the answer's way
 * back to the caller and the run's teardown, about 0.1-1.5 ms here. */
#define POOL_YIELD_NS (2ULL * 1000 * 1000)

struct pair {
    bool used;
    uint64_t gen; /* bumped whenever the slot is given to another pair */
    struct execbox_policy policy;
    const struct eb_language *lang;
    struct eb_lease ready[POOL_MAX];
    uint64_t born[POOL_MAX];
    unsigned n;
    unsigned starting;
    uint64_t last_want;
    uint64_t retry_at;
};

#define POOL_THREADS_MAX 4

struct eb_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t threads[POOL_THREADS_MAX]; /* fillers: one per core, at most the pool size */
    unsigned n_threads;
    bool stop;
    const struct eb_lifecycle *lc;
    unsigned size;
    uint64_t idle_ns;
    char preload[512];
    struct pair pairs[POOL_PAIRS];
    struct execbox_pool_stats st;
    unsigned running;  /* runs between eb_pool_run_begin and eb_pool_run_end */
    uint64_t last_end; /* when the last of them ended */
    bool yielding;     /* a filler waits for running to reach 0: the last end wakes it */
};

static struct pair *find_pair(struct eb_pool *p, const struct execbox_policy *pol,
                              const struct eb_language *lang)
{
    for (size_t i = 0; i < POOL_PAIRS; i++)
        if (p->pairs[i].used && p->pairs[i].lang == lang &&
            eb_policy_equal(&p->pairs[i].policy, pol))
            return &p->pairs[i];
    return NULL;
}

/* A slot for a new pair: a free one, else the least recently wanted idle one (its sandboxes
 * move to *evicted for the caller to destroy outside the lock). */
static struct pair *new_pair(struct eb_pool *p, const struct execbox_policy *pol,
                             const struct eb_language *lang, struct eb_lease *evicted,
                             unsigned *n_evicted)
{
    struct pair *victim = NULL;
    for (size_t i = 0; i < POOL_PAIRS; i++) {
        struct pair *q = &p->pairs[i];
        if (!q->used) {
            victim = q;
            break;
        }
        if (q->starting == 0 && (!victim || q->last_want < victim->last_want))
            victim = q;
    }
    if (!victim)
        return NULL;
    for (unsigned i = 0; i < victim->n; i++)
        evicted[(*n_evicted)++] = victim->ready[i];
    uint64_t gen = victim->gen + 1;
    memset(victim, 0, sizeof(*victim));
    victim->gen = gen;
    victim->used = true;
    victim->policy = *pol;
    victim->lang = lang;
    return victim;
}

static void discard_all(struct eb_pool *p, struct eb_lease *list, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        eb_lease_end(p->lc, &list[i]);
}

/* Whether q's refill waits: a run is in flight, or one ended less than POOL_YIELD_NS ago, and
 * q still has half its sandboxes ready. A refill is a fork from the template, a sandbox's set-up
 * and an interpreter's wake-up: several ms of CPU that, on a machine of few cores, come out of
 * the run's own path (its go byte, its program, its answer) when they overlap it. Paced
 * print(6*7) through serve, 2 cores: p50 1.8-2.4 ms refilling at once, 1.15-1.22 ms yielding.
 * A pair running low refills at once, so a steady load never drains it. When it waits for a
 * time, *wake is lowered to it; when it waits for a run to end, that end wakes the thread. */
static bool fill_yields(struct eb_pool *p, const struct pair *q, uint64_t now, uint64_t *wake)
{
    if (2 * q->n < p->size)
        return false;
    if (p->running > 0) {
        p->yielding = true;
        return true;
    }
    uint64_t until = p->last_end + POOL_YIELD_NS;
    if (now >= until)
        return false;
    if (until < *wake)
        *wake = until;
    return true;
}

/* Whether q has a fill to start now: a sandbox short, not waiting to retry, not giving way to
 * runs (fill_yields, which may lower *wake). Called with p->mu held. */
static bool fill_due(struct eb_pool *p, const struct pair *q, uint64_t now, uint64_t *wake)
{
    return q->n + q->starting < p->size && now >= q->retry_at && !fill_yields(p, q, now, wake);
}

static void *pool_thread(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-fill"); /* in ps, top -H and perf */
    struct eb_pool *p = arg;
    struct eb_lease expired[POOL_PAIRS * POOL_MAX];
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        uint64_t now = eb_now_ns();
        unsigned n_expired = 0;
        uint64_t next_wake = now + 1000ULL * 1000 * 1000;
        struct pair *fill = NULL;
        bool more = false; /* a second fill is due besides `fill` */
        for (size_t i = 0; i < POOL_PAIRS; i++) {
            struct pair *q = &p->pairs[i];
            if (!q->used)
                continue;
            /* Expire from the oldest; the array is in birth order. */
            unsigned keep = 0;
            for (unsigned k = 0; k < q->n; k++) {
                if (now - q->born[k] >= p->idle_ns) {
                    expired[n_expired++] = q->ready[k];
                    p->st.expired++;
                } else {
                    q->ready[keep] = q->ready[k];
                    q->born[keep] = q->born[k];
                    keep++;
                    if (q->born[k] + p->idle_ns < next_wake)
                        next_wake = q->born[k] + p->idle_ns;
                }
            }
            q->n = keep;
            bool wanted = now - q->last_want < p->idle_ns;
            if (!wanted && q->n == 0 && q->starting == 0) {
                q->used = false;
                q->gen++;
                continue;
            }
            if (wanted && fill_due(p, q, now, &next_wake)) {
                if (!fill)
                    fill = q;
                else
                    more = true;
            }
            if (q->retry_at > now && q->retry_at < next_wake)
                next_wake = q->retry_at;
        }
        if (n_expired) {
            pthread_mutex_unlock(&p->mu);
            discard_all(p, expired, n_expired);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (fill) {
            struct execbox_policy pol = fill->policy;
            const struct eb_language *lang = fill->lang;
            uint64_t gen = fill->gen;
            fill->starting++;
            /* One filler is woken at a time (wake_filler); it passes the wake on while there is
             * more to start, so that fills still run side by side. */
            if (more || fill_due(p, fill, now, &next_wake))
                pthread_cond_signal(&p->cv);
            pthread_mutex_unlock(&p->mu);
            struct eb_lease w = {0};
            struct execbox_error err = {0, ""};
            struct eb_start st = {.policy = &pol, .lang = lang, .preload = p->preload};
            int r = eb_lease_start(p->lc, &st, &w, &err);
            pthread_mutex_lock(&p->mu);
            fill->starting--;
            if (r < 0) {
                p->st.failed++;
                /* This pair can never start warm (a host workspace, say): its runs go cold and
                 * the pool stops trying. Any other failure is tried again later. */
                fill->retry_at = w.never ? UINT64_MAX : eb_now_ns() + POOL_RETRY_NS;
            } else if (fill->gen != gen || !fill->used || fill->n >= POOL_MAX || p->stop) {
                pthread_mutex_unlock(&p->mu);
                eb_lease_end(p->lc, &w);
                pthread_mutex_lock(&p->mu);
            } else {
                fill->ready[fill->n] = w;
                fill->born[fill->n] = eb_now_ns();
                fill->n++;
                p->st.started++;
            }
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t wait = next_wake > now ? next_wake - now : 0;
        ts.tv_sec += (time_t)(wait / 1000000000ULL);
        ts.tv_nsec += (long)(wait % 1000000000ULL);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int eb_pool_new(const struct eb_lifecycle *lc, const struct execbox_executor_options *o,
                struct eb_pool **ret, struct execbox_error *err)
{
    const struct eb_backend_ops *ops = lc->ops;
    if (!ops->warm)
        return eb_error_set(err, -ENOTSUP, "backend '%s' cannot keep warm sandboxes", ops->name);
    if (o->pool_size > POOL_MAX)
        return eb_error_set(err, -EINVAL, "pool size %u is above the maximum of %d", o->pool_size,
                            POOL_MAX);
    const char *pre = o->pool_preload ? o->pool_preload : "";
    if (strlen(pre) >= sizeof(((struct eb_pool *)0)->preload))
        return eb_error_set(err, -EINVAL, "preload list too long");
    for (const char *c = pre; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != ',')
            return eb_error_set(err, -EINVAL,
                                "preload '%s': module names are letters, digits, '_' and '.', "
                                "separated by commas",
                                pre);
    if (o->pool_idle < 0)
        return eb_error_set(err, -EINVAL, "pool idle time must not be negative");
    struct eb_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return eb_error_set(err, -ENOMEM, "out of memory");
    p->lc = lc;
    p->size = o->pool_size;
    p->idle_ns = (uint64_t)((o->pool_idle > 0 ? o->pool_idle : POOL_IDLE_DEFAULT) * 1e9);
    memcpy(p->preload, pre, strlen(pre) + 1);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);
    /* The thread is the library's: it must never be the one a process signal is delivered to
     * (a server that blocks SIGTERM to sigwait for it would die by it otherwise). */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = cores < 1 ? 1 : cores > POOL_THREADS_MAX ? POOL_THREADS_MAX : (unsigned)cores;
    if (want > p->size)
        want = p->size;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = 0;
    for (unsigned i = 0; i < want && r == 0; i++) {
        r = pthread_create(&p->threads[i], NULL, pool_thread, p);
        if (r == 0)
            p->n_threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->n_threads == 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return eb_error_set(err, -r, "start the pool thread: %s", execbox_strerror(-r));
    }
    *ret = p;
    return 0;
}

void eb_pool_free(struct eb_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    for (size_t i = 0; i < POOL_PAIRS; i++)
        discard_all(p, p->pairs[i].ready, p->pairs[i].n);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Wakes one filler if q, as it stands, has a fill to start now. A fill that must give way to
 * the runs in flight is left to the last run's end (eb_pool_run_end); one that gives way to a
 * run that just ended, or waits to retry, to the filler's own timed wait, which a wake here
 * would only recompute. Each wake costs the filler a lock and a scan, and on a machine of few
 * cores a context switch off the run's own path: a take that leaves half the pool ready (every
 * take of a steady load) wakes nobody. Called with p->mu held. */
static void wake_filler(struct eb_pool *p, const struct pair *q)
{
    uint64_t wake = UINT64_MAX;
    if (q && fill_due(p, q, eb_now_ns(), &wake))
        pthread_cond_signal(&p->cv);
}

static struct pair *want(struct eb_pool *p, const struct execbox_policy *pol,
                         const struct eb_language *lang, struct eb_lease *evicted,
                         unsigned *n_evicted)
{
    struct pair *q = find_pair(p, pol, lang);
    if (!q)
        q = new_pair(p, pol, lang, evicted, n_evicted);
    if (q)
        q->last_want = eb_now_ns();
    return q;
}

bool eb_pool_take(struct eb_pool *p, const struct execbox_policy *pol,
                  const struct eb_language *lang, struct eb_lease *ret)
{
    struct eb_lease evicted[POOL_MAX];
    unsigned n_evicted = 0;
    bool got = false;
    pthread_mutex_lock(&p->mu);
    struct pair *q = want(p, pol, lang, evicted, &n_evicted);
    if (q && q->n > 0) {
        /* The oldest: the one closest to expiring. */
        *ret = q->ready[0];
        got = true;
        memmove(q->ready, q->ready + 1, (q->n - 1) * sizeof(q->ready[0]));
        memmove(q->born, q->born + 1, (q->n - 1) * sizeof(q->born[0]));
        q->n--;
        p->st.hits++;
    } else {
        p->st.misses++;
    }
    wake_filler(p, q);
    pthread_mutex_unlock(&p->mu);
    discard_all(p, evicted, n_evicted);
    return got;
}

bool eb_pool_fork(struct eb_pool *p, const struct execbox_policy *pol,
                  const struct eb_language *lang, struct eb_lease *ret)
{
    struct eb_start st = {.policy = pol, .lang = lang, .preload = p->preload};
    struct execbox_error err = {0, ""};
    if (eb_lease_fork(p->lc, &st, ret, &err) < 0)
        return false;
    pthread_mutex_lock(&p->mu);
    p->st.forked++;
    pthread_mutex_unlock(&p->mu);
    return true;
}

int eb_pool_prewarm(struct eb_pool *p, const struct execbox_policy *pol,
                    const struct eb_language *lang, struct execbox_error *err)
{
    struct eb_lease evicted[POOL_MAX];
    unsigned n_evicted = 0;
    pthread_mutex_lock(&p->mu);
    struct pair *q = want(p, pol, lang, evicted, &n_evicted);
    wake_filler(p, q);
    pthread_mutex_unlock(&p->mu);
    discard_all(p, evicted, n_evicted);
    return q ? 0 : eb_error_set(err, -EBUSY, "every pool slot is busy starting sandboxes");
}

void eb_pool_stats(struct eb_pool *p, struct execbox_pool_stats *ret)
{
    pthread_mutex_lock(&p->mu);
    *ret = p->st;
    ret->ready = 0;
    for (size_t i = 0; i < POOL_PAIRS; i++)
        if (p->pairs[i].used)
            ret->ready += p->pairs[i].n;
    pthread_mutex_unlock(&p->mu);
}

void eb_pool_run_begin(struct eb_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->running++;
    pthread_mutex_unlock(&p->mu);
}

void eb_pool_run_end(struct eb_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->running--;
    p->last_end = eb_now_ns();
    if (p->running == 0 && p->yielding) {
        p->yielding = false;
        pthread_cond_signal(&p->cv); /* the filler woken passes it on (pool_thread) */
    }
    pthread_mutex_unlock(&p->mu);
}
