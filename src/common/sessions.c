/* SPDX-License-Identifier: MIT */
/* sessions.c - the session registry (see sessions.h): a list of listed sessions in creation
 * order, a queue of sessions to end and a queue of sessions to free, all under one mutex, and
 * one thread that ends, frees and expires them, sleeping until the next expiry is due. */
#include "sessions.h"

#include "io.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* The registry's thread wakes at least this often, even with no expiry due. */
#define SESS_WAKE_MAX_S 60.0

struct sess {
    struct sess_registry *reg;
    int refs; /* under reg->lock */
    char id[SESS_ID_SIZE];
    struct execbox_session *es;
    struct execbox_policy policy;
    double idle_timeout;
    const char *surface;
    char owner[SESS_OWNER_MAX + 1]; /* the tenant that made it ("" none) */
    bool no_rollback;
    bool listed;            /* in reg->head; the list holds a reference */
    bool cell;              /* a cell is claimed (sess_cell_begin) */
    struct sess *next;      /* in reg->head, reg->ending or reg->dead */
    void (*done)(void *ud); /* sess_remove's callback */
    void *done_ud;
};

struct sess_registry {
    struct sess_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t wake;   /* work for the thread, or a deadline to recompute */
    struct sess *head;     /* listed, oldest first */
    struct sess *ending;   /* unlisted, to be killed; each holds the reference the list had */
    struct sess *dead;     /* no reference left, to be freed */
    struct sess *pending;  /* being created (counted against their owner's max) */
    size_t open, creating; /* listed; being created */
    bool closed, stopping;
    uint64_t created, expired, cells, cells_rolled_back;
    pthread_t thread;
};

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sess_iso_time(double unix_seconds, char *buf, size_t size)
{
    struct timespec ts = {.tv_sec = (time_t)floor(unix_seconds)};
    cli_iso_time(&ts, 0, buf, size);
}

/* 128 random bits as unpadded base64url. */
static int make_id(char id[SESS_ID_SIZE])
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char b[18] = {0}; /* 16 random bytes, 2 zero bytes to make 6 whole groups */
    if (getrandom(b, 16, 0) != 16)
        return -EIO;
    size_t o = 0;
    for (size_t i = 0; i < 18 && o < SESS_ID_LEN; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (unsigned)b[i + 1] << 8 | b[i + 2];
        for (int k = 3; k >= 0 && o < SESS_ID_LEN; k--)
            id[o++] = alphabet[(v >> (6 * k)) & 63];
    }
    id[SESS_ID_LEN] = '\0';
    return 0;
}

/* Whole-string comparison in time that depends only on the length of a. */
static bool id_equal(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (strlen(a) != n)
        return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/* Drops a reference; the last one sends the session to be freed. Caller holds r->lock. */
static void unref_locked(struct sess_registry *r, struct sess *s)
{
    if (--s->refs > 0)
        return;
    s->next = r->dead;
    r->dead = s;
    pthread_cond_signal(&r->wake);
}

/* Takes a listed session off the list and queues it to be ended, with the list's reference.
 * Caller holds r->lock. */
static void unlist_locked(struct sess_registry *r, struct sess *s)
{
    for (struct sess **p = &r->head; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    s->listed = false;
    r->open--;
    s->next = r->ending;
    r->ending = s;
    pthread_cond_signal(&r->wake);
}

/* Whether a session should end now: ended in the library, or past its expiry (which is what
 * counts as expired). */
static bool over(const struct execbox_session_info *in, double now)
{
    return !in->alive || now >= in->expires_at;
}

/* Ends what is due. Returns seconds until the next expiry (SESS_WAKE_MAX_S at most). Caller
 * holds r->lock; it is released and taken again. */
static double expire_locked(struct sess_registry *r)
{
    size_t n = 0;
    for (struct sess *s = r->head; s; s = s->next)
        n++;
    if (n == 0)
        return SESS_WAKE_MAX_S;
    struct sess **v = calloc(n, sizeof(*v));
    if (!v)
        return 1.0; /* try again soon */
    n = 0;
    for (struct sess *s = r->head; s; s = s->next) {
        s->refs++;
        v[n++] = s;
    }
    pthread_mutex_unlock(&r->lock);
    double now = unix_now(), next = SESS_WAKE_MAX_S;
    struct execbox_session_info *in = calloc(n, sizeof(*in));
    for (size_t i = 0; in && i < n; i++)
        execbox_session_info(v[i]->es, &in[i]);
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        struct sess *s = v[i];
        if (in && s->listed && !s->cell) {
            if (over(&in[i], now)) {
                if (now >= in[i].expires_at)
                    r->expired++;
                unlist_locked(r, s);
            } else if (in[i].expires_at - now < next) {
                next = in[i].expires_at - now;
            }
        }
        unref_locked(r, s);
    }
    bool ok = in != NULL;
    free(in);
    free(v);
    return ok ? next : 1.0;
}

static void *reg_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-expiry"); /* in ps, top -H and perf */
    struct sess_registry *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        if (r->ending) {
            struct sess *s = r->ending;
            r->ending = s->next;
            s->next = NULL;
            void (*done)(void *) = s->done;
            void *ud = s->done_ud;
            s->done = NULL;
            pthread_mutex_unlock(&r->lock);
            execbox_session_kill(s->es);
            if (done)
                done(ud);
            pthread_mutex_lock(&r->lock);
            unref_locked(r, s);
            continue;
        }
        if (r->dead) {
            struct sess *s = r->dead;
            r->dead = s->next;
            pthread_mutex_unlock(&r->lock);
            execbox_session_free(s->es);
            free(s);
            pthread_mutex_lock(&r->lock);
            continue;
        }
        if (r->stopping)
            break;
        double wait = expire_locked(r);
        if (r->ending || r->dead || r->stopping)
            continue;
        if (wait < 0.001)
            wait = 0.001;
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        double whole = floor(wait);
        dl.tv_sec += (time_t)whole;
        dl.tv_nsec += (long)((wait - whole) * 1e9);
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->wake, &r->lock, &dl);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int sess_registry_new(const struct sess_config *cfg, struct sess_registry **ret,
                      struct execbox_error *err)
{
    struct sess_registry *r = calloc(1, sizeof(*r));
    if (!r) {
        if (err) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "session registry: out of memory");
        }
        return -ENOMEM;
    }
    r->cfg = *cfg;
    if (!r->cfg.max_sessions)
        r->cfg.max_sessions = SESS_MAX_DEFAULT;
    if (!(r->cfg.idle_default > 0))
        r->cfg.idle_default = SESS_IDLE_DEFAULT;
    if (!(r->cfg.idle_max > 0))
        r->cfg.idle_max = SESS_IDLE_MAX_DEFAULT;
    if (!(r->cfg.lifetime > 0))
        r->cfg.lifetime = SESS_LIFETIME_DEFAULT;
    if (r->cfg.idle_default > r->cfg.idle_max)
        r->cfg.idle_default = r->cfg.idle_max;
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&r->thread, NULL, reg_main, r);
    if (e) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        if (err) {
            err->code = -e;
            snprintf(err->msg, sizeof(err->msg), "session registry: cannot start its thread: %s",
                     strerror(e));
        }
        return -e;
    }
    *ret = r;
    return 0;
}

void sess_close_all(struct sess_registry *r)
{
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    while (r->head)
        unlist_locked(r, r->head);
    pthread_mutex_unlock(&r->lock);
}

struct sess_registry *sess_registry_free(struct sess_registry *r)
{
    if (!r)
        return NULL;
    sess_close_all(r);
    /* The thread ends and frees what is queued before it stops; a session whose reference a
     * caller still holds (a bug) has been killed and is left. */
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
    return NULL;
}

int sess_idle_check(const struct sess_registry *r, double idle_timeout, double *ret,
                    struct execbox_error *err)
{
    if (idle_timeout == 0) {
        *ret = r->cfg.idle_default;
        return 0;
    }
    if (!(idle_timeout >= 1) || idle_timeout > r->cfg.idle_max ||
        idle_timeout != floor(idle_timeout)) {
        if (err) {
            err->code = -EINVAL;
            err->kind = idle_timeout > r->cfg.idle_max ? EXECBOX_ERROR_OVER_MAXIMUM
                                                       : EXECBOX_ERROR_INVALID_VALUE;
            snprintf(err->field, sizeof(err->field), "idle_timeout");
            snprintf(err->msg, sizeof(err->msg),
                     "idle_timeout: %g is not whole seconds from 1 to %g (the server's maximum)",
                     idle_timeout, r->cfg.idle_max);
        }
        return -EINVAL;
    }
    *ret = idle_timeout;
    return 0;
}

/* Sessions listed or being created for owner. Called with the lock held. */
static size_t owned_locked(const struct sess_registry *r, const char *owner)
{
    size_t n = 0;
    for (const struct sess *s = r->head; s; s = s->next)
        n += strcmp(s->owner, owner) == 0;
    for (const struct sess *s = r->pending; s; s = s->next)
        n += strcmp(s->owner, owner) == 0;
    return n;
}

int sess_create(struct sess_registry *r, const struct sess_options *o, struct sess **ret,
                struct execbox_error *err)
{
    double idle;
    int e = sess_idle_check(r, o->idle_timeout, &idle, err);
    if (e < 0)
        return e;
    struct sess *s = calloc(1, sizeof(*s));
    if (!s) {
        if (err) {
            err->code = -ENOMEM;
            snprintf(err->msg, sizeof(err->msg), "out of memory");
        }
        return -ENOMEM;
    }
    s->reg = r;
    s->idle_timeout = idle;
    s->no_rollback = o->no_rollback;
    s->surface = o->surface ? o->surface : "";
    snprintf(s->owner, sizeof(s->owner), "%s", o->owner ? o->owner : "");
    if (o->policy)
        s->policy = *o->policy;
    else
        execbox_policy_init(&s->policy);
    s->policy.workspace[0] = '\0';
    if (make_id(s->id) < 0) {
        free(s);
        if (err) {
            err->code = -EIO;
            snprintf(err->msg, sizeof(err->msg), "no random bytes for a session id");
        }
        return -EIO;
    }

    pthread_mutex_lock(&r->lock);
    e = r->closed ? -ESHUTDOWN : r->open + r->creating >= r->cfg.max_sessions ? -EAGAIN : 0;
    size_t held = o->owner_max ? owned_locked(r, s->owner) : 0;
    if (e == 0 && o->owner_max && held >= o->owner_max)
        e = -EDQUOT;
    if (e == 0) {
        r->creating++;
        s->next = r->pending;
        r->pending = s;
    }
    pthread_mutex_unlock(&r->lock);
    if (e < 0) {
        if (err && e == -EDQUOT)
            snprintf(err->msg, sizeof(err->msg),
                     "%s holds %zu sessions, its max_sessions (close one first)", s->owner, held);
        else if (err && e == -EAGAIN)
            snprintf(err->msg, sizeof(err->msg),
                     "%zu sessions are open, the most this server allows", r->cfg.max_sessions);
        else if (err)
            snprintf(err->msg, sizeof(err->msg), "the server is shutting down");
        if (err)
            err->code = e;
        free(s);
        return e;
    }

    struct execbox_session_options so = {
        .language = o->language,
        .policy = &s->policy,
        .no_rollback = o->no_rollback,
        .idle_timeout = idle,
        .max_lifetime = r->cfg.lifetime,
    };
    e = execbox_session_new(r->cfg.exec, &so, &s->es, err);

    pthread_mutex_lock(&r->lock);
    r->creating--;
    for (struct sess **p = &r->pending; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    s->next = NULL;
    bool closed = r->closed;
    if (e == 0 && !closed) {
        s->refs = 2; /* the list's and the caller's */
        s->listed = true;
        struct sess **p = &r->head;
        while (*p)
            p = &(*p)->next;
        *p = s;
        r->open++;
        r->created++;
        pthread_cond_signal(&r->wake);
    }
    pthread_mutex_unlock(&r->lock);
    if (e < 0) {
        free(s);
        return e;
    }
    if (closed) {
        execbox_session_free(s->es);
        free(s);
        if (err) {
            err->code = -ESHUTDOWN;
            snprintf(err->msg, sizeof(err->msg), "the server is shutting down");
        }
        return -ESHUTDOWN;
    }
    *ret = s;
    return 0;
}

struct sess *sess_get(struct sess_registry *r, const char *id)
{
    return sess_get_owned(r, id, NULL);
}

struct sess *sess_get_owned(struct sess_registry *r, const char *id, const char *owner)
{
    if (!id || strlen(id) != SESS_ID_LEN)
        return NULL;
    pthread_mutex_lock(&r->lock);
    struct sess *found = NULL;
    for (struct sess *s = r->head; s; s = s->next)
        if (id_equal(id, s->id) && (!owner || strcmp(owner, s->owner) == 0))
            found = s;
    if (found)
        found->refs++;
    pthread_mutex_unlock(&r->lock);
    if (!found)
        return NULL;
    /* The thread may not have woken yet for a session that is just past its expiry. */
    struct execbox_session_info in;
    execbox_session_info(found->es, &in);
    pthread_mutex_lock(&r->lock);
    bool gone = !found->listed;
    double now = unix_now();
    if (!gone && !found->cell && over(&in, now)) {
        if (now >= in.expires_at)
            r->expired++;
        unlist_locked(r, found);
        gone = true;
    }
    if (gone) {
        unref_locked(r, found);
        found = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

struct sess *sess_ref(struct sess *s)
{
    pthread_mutex_lock(&s->reg->lock);
    s->refs++;
    pthread_mutex_unlock(&s->reg->lock);
    return s;
}

struct sess *sess_put(struct sess *s)
{
    if (!s)
        return NULL;
    struct sess_registry *r = s->reg;
    pthread_mutex_lock(&r->lock);
    unref_locked(r, s);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

const char *sess_id(const struct sess *s)
{
    return s->id;
}

struct execbox_session *sess_session(struct sess *s)
{
    return s->es;
}

const struct execbox_policy *sess_policy(const struct sess *s)
{
    return &s->policy;
}

double sess_idle_timeout(const struct sess *s)
{
    return s->idle_timeout;
}

const char *sess_surface(const struct sess *s)
{
    return s->surface;
}

void sess_summarize(struct sess *s, struct sess_summary *ret)
{
    memset(ret, 0, sizeof(*ret));
    snprintf(ret->id, sizeof(ret->id), "%s", s->id);
    ret->surface = s->surface;
    ret->idle_timeout = s->idle_timeout;
    ret->no_rollback = s->no_rollback;
    execbox_session_info(s->es, &ret->info);
    pthread_mutex_lock(&s->reg->lock);
    ret->cell_accepted = s->cell;
    pthread_mutex_unlock(&s->reg->lock);
}

int sess_cell_begin(struct sess *s)
{
    pthread_mutex_lock(&s->reg->lock);
    int e = !s->listed ? -ESHUTDOWN : s->cell ? -EBUSY : 0;
    if (e == 0)
        s->cell = true;
    pthread_mutex_unlock(&s->reg->lock);
    /* The cell may wait in the queue: the library must not see that wait as idleness. */
    if (e == 0)
        execbox_session_touch(s->es);
    return e;
}

void sess_cell_end(struct sess *s, const struct execbox_result *res)
{
    struct sess_registry *r = s->reg;
    pthread_mutex_lock(&r->lock);
    s->cell = false;
    if (res) {
        r->cells++;
        if (res->rolled_back)
            r->cells_rolled_back++;
    }
    pthread_cond_signal(&r->wake); /* its expiry moved */
    pthread_mutex_unlock(&r->lock);
}

int sess_remove(struct sess_registry *r, const char *id, void (*done)(void *ud), void *ud)
{
    if (!id || strlen(id) != SESS_ID_LEN)
        return -ENOENT;
    pthread_mutex_lock(&r->lock);
    struct sess *found = NULL;
    for (struct sess *s = r->head; s; s = s->next)
        if (id_equal(id, s->id))
            found = s;
    if (found) {
        found->done = done;
        found->done_ud = ud;
        unlist_locked(r, found);
    }
    pthread_mutex_unlock(&r->lock);
    return found ? 0 : -ENOENT;
}

size_t sess_list(struct sess_registry *r, const char *surface, struct sess_summary *out, size_t max)
{
    return sess_list_owned(r, surface, NULL, out, max);
}

size_t sess_list_owned(struct sess_registry *r, const char *surface, const char *owner,
                       struct sess_summary *out, size_t max)
{
    pthread_mutex_lock(&r->lock);
    size_t n = 0, total = 0;
    struct sess **v = max ? calloc(max, sizeof(*v)) : NULL;
    for (struct sess *s = r->head; s; s = s->next) {
        if (surface && strcmp(surface, s->surface) != 0)
            continue;
        if (owner && strcmp(owner, s->owner) != 0)
            continue;
        if (v && n < max) {
            s->refs++;
            v[n++] = s;
        }
        total++;
    }
    pthread_mutex_unlock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        sess_summarize(v[i], &out[i]);
        sess_put(v[i]);
    }
    free(v);
    return v || !max ? total : 0;
}

void sess_get_stats(struct sess_registry *r, struct sess_stats *ret)
{
    pthread_mutex_lock(&r->lock);
    *ret = (struct sess_stats){
        .open = r->open,
        .created = r->created,
        .expired = r->expired,
        .cells = r->cells,
        .cells_rolled_back = r->cells_rolled_back,
    };
    pthread_mutex_unlock(&r->lock);
}
