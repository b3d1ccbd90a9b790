/* SPDX-License-Identifier: MIT */
/*
 * template.c - the executor's templates. A template is a walled process of the backend's (the
 * jail's: lib/jail/tplclient.h) whose interpreter has imported the preload and forks
 * one sandbox per warm start. What a fork cannot make unique (CPython's string-hash secret, the
 * address-space layout) is shared by the sandboxes of one template, so a template serves one
 * bounded generation: it is retired after max_runs forks or max_age seconds, whichever comes
 * first, or as soon as it is found dead; a retired template forks no more and lives, unlisted,
 * until the last sandbox forked from it is destroyed, since stopping it would kill them.
 *
 * A generation's successor is started ahead: the first acquire in the last quarter of a
 * generation (by runs or by age), or from its second quarter on when what is left of it at its
 * recent rate would pass in less than six times the last template's start, starts the next
 * template while the listed one goes on forking (eb_template_find, for runs that will not wait),
 * and lists it in its place once it is ready, so that the runs while a template starts (a
 * preload's imports: 0.4 s, 1.6-2.4 s beside busy runs) still find one instead of going cold.
 */
#include "core/template.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "model/policy.h"

#define TPL_MAX 16 /* live templates per executor: more keys run without one */
/* Starts shorter than this are not led by the rate of forks: scheduling noise of that order
 * would decide it, and the last quarter covers them at any rate a machine reaches. */
#define TPL_LEAD_MIN_NS 20000000ULL
/* How many of the last start's durations ahead the successor is started. The first start is
 * measured before the runs begin: a numpy,pandas template took 0.39 s so, and 1.6-2.4 s beside
 * eight concurrent runs on two cores (`execbox check --preload` under load, 2026-12-06); with
 * twice or three times the idle figure, 10-29 of 1,200 runs at c=8 still went cold. */
#define TPL_LEAD_STARTS 6.0

struct eb_template {
    struct eb_tplproc *box;
    struct execbox_policy policy;
    const struct eb_language *lang;
    char preload[256];
    uint64_t born_ns;
    unsigned runs; /* forks asked for: the generation bound counts these */
    /* The rate of forks lately (under mu): when runs passed the last two multiples of an
     * eighth of the generation, [0] the older; the time it was born before that. */
    uint64_t mark_ns[2];
    unsigned mark_runs[2];
    unsigned refs; /* 1 while listed, +1 per acquire not yet released (under mu) */
    bool retired;
    bool renewing; /* its successor was asked for (under mu): once per generation */
};

struct eb_templates {
    const struct eb_backend_ops *ops;
    void *state;
    unsigned max_runs;
    double max_age;
    pthread_mutex_t mu;       /* the list, the counters and every template's refs */
    pthread_mutex_t start_mu; /* one template starts at a time */
    struct eb_template *list[TPL_MAX];
    size_t n;
    uint64_t started, retired;
    uint64_t start_ns; /* how long the last template took to start (under mu); 0: none yet */
};

int eb_templates_new(const struct eb_backend_ops *ops, void *state, unsigned max_runs,
                     double max_age, struct eb_templates **ret, struct execbox_error *err)
{
    if (!ops->template_start || !ops->template_stop)
        return eb_error_set(err, -ENOTSUP, "backend '%s' has no templates", ops->name);
    if (max_age < 0)
        return eb_error_set(err, -EINVAL, "template age must not be negative");
    struct eb_templates *ts = calloc(1, sizeof(*ts));
    if (!ts)
        return eb_error_set(err, -ENOMEM, "out of memory");
    ts->ops = ops;
    ts->state = state;
    ts->max_runs = max_runs ? max_runs : EB_TPL_MAX_RUNS;
    ts->max_age = max_age > 0 ? max_age : EB_TPL_MAX_AGE;
    pthread_mutex_init(&ts->mu, NULL);
    pthread_mutex_init(&ts->start_mu, NULL);
    *ret = ts;
    return 0;
}

static void stop(struct eb_templates *ts, struct eb_template *t)
{
    ts->ops->template_stop(ts->state, t->box);
    free(t);
}

void eb_template_release(struct eb_templates *ts, struct eb_template *t)
{
    pthread_mutex_lock(&ts->mu);
    bool last = --t->refs == 0;
    pthread_mutex_unlock(&ts->mu);
    if (last)
        stop(ts, t);
}

/* Under mu: unlists t (no new forks); the caller then drops the list's reference. */
static void unlist_locked(struct eb_templates *ts, struct eb_template *t)
{
    for (size_t i = 0; i < ts->n; i++)
        if (ts->list[i] == t) {
            ts->list[i] = ts->list[--ts->n];
            break;
        }
    t->retired = true;
    ts->retired++;
}

void eb_template_retire(struct eb_templates *ts, struct eb_template *t)
{
    pthread_mutex_lock(&ts->mu);
    bool listed = !t->retired;
    if (listed)
        unlist_locked(ts, t);
    pthread_mutex_unlock(&ts->mu);
    if (listed)
        eb_template_release(ts, t);
}

void eb_templates_free(struct eb_templates *ts)
{
    if (!ts)
        return;
    for (;;) {
        pthread_mutex_lock(&ts->mu);
        struct eb_template *t = ts->n ? ts->list[0] : NULL;
        if (t)
            unlist_locked(ts, t);
        pthread_mutex_unlock(&ts->mu);
        if (!t)
            break;
        eb_template_release(ts, t);
    }
    pthread_mutex_destroy(&ts->mu);
    pthread_mutex_destroy(&ts->start_mu);
    free(ts);
}

/* Under mu: whether it is time to start t's successor: its generation is in its last quarter
 * (by runs or by age), or what is left of it would pass, at its recent rate of forks (since
 * the older of its last two eighths), in less than TPL_LEAD_STARTS times the last start took:
 * on a machine faster than a quarter of the default 1000 runs covers, or with a start slowed by
 * the runs beside it, the runs after the end would go cold. */
static bool ending_locked(const struct eb_templates *ts, const struct eb_template *t, uint64_t now)
{
    double age_s = (double)(now - t->born_ns) / 1e9;
    if (t->runs >= ts->max_runs - ts->max_runs / 4 || age_s >= ts->max_age * 3 / 4)
        return true;
    /* The rate is read from a quarter of the generation on: a successor's first forks say
     * little of it (and would start the next one at once). */
    if (ts->start_ns < TPL_LEAD_MIN_NS || t->runs < ts->max_runs / 4 || now <= t->mark_ns[0])
        return false;
    double lead_s = TPL_LEAD_STARTS * (double)ts->start_ns / 1e9;
    double rate = (double)(t->runs - t->mark_runs[0]) / ((double)(now - t->mark_ns[0]) / 1e9);
    return (double)(ts->max_runs - t->runs) <= lead_s * rate || ts->max_age - age_s <= lead_s;
}

/* Under mu: one more fork of t counted, and its rate's marks moved on every eighth. */
static void count_run_locked(const struct eb_templates *ts, struct eb_template *t, uint64_t now)
{
    unsigned step = ts->max_runs >= 8 ? ts->max_runs / 8 : 1;
    if (++t->runs % step == 0) {
        t->mark_ns[0] = t->mark_ns[1];
        t->mark_runs[0] = t->mark_runs[1];
        t->mark_ns[1] = now;
        t->mark_runs[1] = t->runs;
    }
}

/* Under mu: the listed template for the key, retiring it first when its generation is over or
 * it died (*ret_retired, for the caller to release outside the lock); NULL when none. With
 * ret_renew, *ret_renew is set (and the template marked) when the caller is the one to start
 * its successor. */
static struct eb_template *find_locked(struct eb_templates *ts, const struct execbox_policy *policy,
                                       const struct eb_language *lang, const char *preload,
                                       struct eb_template **ret_retired, bool *ret_renew)
{
    for (size_t i = 0; i < ts->n; i++) {
        struct eb_template *t = ts->list[i];
        if (t->lang != lang || strcmp(t->preload, preload) != 0 ||
            !eb_policy_equal(&t->policy, policy))
            continue;
        uint64_t now = eb_now_ns();
        if (t->runs >= ts->max_runs || (double)(now - t->born_ns) / 1e9 >= ts->max_age ||
            (ts->ops->template_alive && !ts->ops->template_alive(t->box))) {
            unlist_locked(ts, t);
            *ret_retired = t;
            return NULL;
        }
        if (ret_renew && !t->renewing && ending_locked(ts, t, now))
            *ret_renew = t->renewing = true;
        t->refs++;
        count_run_locked(ts, t, now);
        return t;
    }
    return NULL;
}

/* find_locked under mu, the retired template released after. */
static struct eb_template *find(struct eb_templates *ts, const struct execbox_policy *policy,
                                const struct eb_language *lang, const char *preload,
                                bool *ret_renew)
{
    struct eb_template *retired = NULL;
    pthread_mutex_lock(&ts->mu);
    struct eb_template *t = find_locked(ts, policy, lang, preload, &retired, ret_renew);
    pthread_mutex_unlock(&ts->mu);
    if (retired)
        eb_template_release(ts, retired);
    return t;
}

struct eb_template *eb_template_find(struct eb_templates *ts, const struct execbox_policy *policy,
                                     const struct eb_language *lang, const char *preload)
{
    return find(ts, policy, lang, preload ? preload : "", NULL);
}

/* Under mu: t listed, counted as started. */
static void list_locked(struct eb_templates *ts, struct eb_template *t)
{
    ts->list[ts->n++] = t;
    ts->started++;
}

/* Under start_mu: a new generation for the key, not listed yet (refs 2: the list's and the
 * caller's; one run counted); NULL with err set (*ret_none: never for this key). */
static struct eb_template *start_locked(struct eb_templates *ts,
                                        const struct execbox_policy *policy,
                                        const struct eb_language *lang, const char *preload,
                                        bool *ret_none, struct execbox_error *err)
{
    struct eb_template *t = calloc(1, sizeof(*t));
    uint64_t t0 = eb_now_ns();
    int r = t ? ts->ops->template_start(ts->state, policy, lang, preload, &t->box, err)
              : eb_error_set(err, -ENOMEM, "out of memory");
    if (r < 0) {
        /* The backend's contract (backend.h): -ENOTSUP from template_start is "no template for
         * this kind of policy, ever"; read here once, and named. */
        *ret_none = r == -ENOTSUP;
        free(t);
        return NULL;
    }
    t->policy = *policy;
    t->lang = lang;
    snprintf(t->preload, sizeof(t->preload), "%s", preload);
    t->born_ns = eb_now_ns();
    t->mark_ns[0] = t->mark_ns[1] = t->born_ns;
    t->mark_runs[0] = t->mark_runs[1] = 1;
    pthread_mutex_lock(&ts->mu);
    ts->start_ns = t->born_ns - t0;
    pthread_mutex_unlock(&ts->mu);
    t->refs = 2;
    t->runs = 1;
    return t;
}

/* The successor of old (whose reference the caller holds, counted as a run), started now and
 * listed in old's place: the caller's reference is then to the successor, old's is dropped and
 * old is retired. When the start fails, old goes on to the end of its generation, where the
 * next acquire starts one as usual. */
static struct eb_template *renew(struct eb_templates *ts, struct eb_template *old)
{
    struct execbox_error err = {0, ""};
    bool none = false;
    pthread_mutex_lock(&ts->start_mu);
    pthread_mutex_lock(&ts->mu);
    bool gone = old->retired; /* its generation ended first: its successor was started as usual */
    pthread_mutex_unlock(&ts->mu);
    if (gone) {
        pthread_mutex_unlock(&ts->start_mu);
        return old;
    }
    struct eb_template *t = start_locked(ts, &old->policy, old->lang, old->preload, &none, &err);
    if (t) {
        /* A slot is free: old's, unlisted now or by its retirement during the start, and only
         * a holder of start_mu lists a template. */
        pthread_mutex_lock(&ts->mu);
        if (!old->retired)
            unlist_locked(ts, old); /* old's list reference is dropped below */
        else
            old->refs++; /* already dropped by its retirement: balance the release below */
        list_locked(ts, t);
        pthread_mutex_unlock(&ts->mu);
    }
    pthread_mutex_unlock(&ts->start_mu);
    if (!t)
        return old;
    eb_template_release(ts, old); /* the list's (or the balanced) reference */
    eb_template_release(ts, old); /* the caller's: it holds the successor's now */
    return t;
}

struct eb_template *eb_template_acquire(struct eb_templates *ts,
                                        const struct execbox_policy *policy,
                                        const struct eb_language *lang, const char *preload,
                                        bool *ret_none, struct execbox_error *err)
{
    *ret_none = false;
    preload = preload ? preload : "";
    if (strlen(preload) >= sizeof(((struct eb_template *)0)->preload)) {
        eb_error_set(err, -EINVAL, "preload list too long");
        return NULL;
    }
    bool renewing = false;
    struct eb_template *t = find(ts, policy, lang, preload, &renewing);
    if (t)
        return renewing ? renew(ts, t) : t;
    struct eb_template *retired = NULL;
    pthread_mutex_lock(&ts->start_mu);
    pthread_mutex_lock(&ts->mu);
    t = find_locked(ts, policy, lang, preload, &retired, NULL); /* another thread may have won */
    bool full = ts->n >= TPL_MAX;
    pthread_mutex_unlock(&ts->mu);
    if (retired)
        eb_template_release(ts, retired);
    if (!t && full) {
        eb_error_set(err, -EBUSY, "%d templates are live already", TPL_MAX);
    } else if (!t && (t = start_locked(ts, policy, lang, preload, ret_none, err))) {
        pthread_mutex_lock(&ts->mu);
        list_locked(ts, t);
        pthread_mutex_unlock(&ts->mu);
    }
    pthread_mutex_unlock(&ts->start_mu);
    return t;
}

struct eb_tplproc *eb_template_box(struct eb_template *t)
{
    return t->box;
}

void eb_templates_stats(struct eb_templates *ts, struct execbox_pool_stats *ret)
{
    pthread_mutex_lock(&ts->mu);
    ret->templates = (unsigned)ts->n;
    ret->templates_started = ts->started;
    ret->templates_retired = ts->retired;
    ret->template_memory_bytes = 0;
    if (ts->ops->template_memory)
        for (size_t i = 0; i < ts->n; i++)
            ret->template_memory_bytes += ts->ops->template_memory(ts->list[i]->box);
    pthread_mutex_unlock(&ts->mu);
}
