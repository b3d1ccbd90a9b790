/* SPDX-License-Identifier: MIT */
/* onesession.c - the one session a surface holds: lazy open, a cell with one restart when the
 * session is lost, close (onesession.h). */
#include "onesession.h"

#include <string.h>
#include <time.h>

#include "errmap.h"

static struct execbox_session *lib_free(struct execbox_session *s)
{
    return execbox_session_free(s);
}

static const struct onesession_ops lib_ops = {
    .open = execbox_session_new,
    .run = execbox_session_run,
    .info = execbox_session_info,
    .free = lib_free,
};

void onesession_init(struct onesession *h, struct execbox_executor *ex,
                     const struct execbox_session_options *so, const struct onesession_ops *ops)
{
    *h = (struct onesession){.ops = ops ? ops : &lib_ops, .ex = ex, .so = *so};
}

static void tell(struct onesession *h, enum onesession_event ev, const struct onesession_lost *l)
{
    if (h->on_event)
        h->on_event(h->ud, ev, l);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Why the open session, no longer alive, ended. */
static struct onesession_lost gone_why(struct onesession *h)
{
    struct execbox_session_info si;
    h->ops->info(h->session, &si);
    double now = wall_now();
    double idle = h->so.idle_timeout > 0 ? h->so.idle_timeout : EXECBOX_SESSION_IDLE_DEFAULT;
    if (si.expires_at > 0 && now >= si.expires_at)
        return (struct onesession_lost){.why = now >= si.last_used_at + idle ? ONESESSION_IDLE
                                                                             : ONESESSION_LIFETIME,
                                        .idle = idle};
    return (struct onesession_lost){.why = ONESESSION_PROCESS};
}

/* Forgets the open session, lost for the reason *l, and tells the surface. */
static void forget(struct onesession *h, const struct onesession_lost *l)
{
    h->session = h->ops->free(h->session);
    tell(h, ONESESSION_FORGOTTEN, l);
}

int onesession_open(struct onesession *h, struct execbox_error *err)
{
    if (h->session)
        return 0;
    int r = h->ops->open(h->ex, &h->so, &h->session, err);
    if (r < 0) {
        h->session = NULL;
        return r;
    }
    tell(h, ONESESSION_STARTED, NULL);
    return 0;
}

int onesession_run(struct onesession *h, const struct execbox_request *req,
                   struct execbox_result **ret_res, struct onesession_cell *ret_cell,
                   struct execbox_error *err)
{
    struct onesession_cell cell = {.lost = h->pending};
    h->pending = (struct onesession_lost){0};
    if (h->session) {
        struct execbox_session_info si;
        h->ops->info(h->session, &si);
        if (!si.alive) {
            cell.lost = gone_why(h);
            forget(h, &cell.lost);
        }
    }
    bool told = false;
    struct execbox_result *res = NULL;
    for (int attempt = 0;; attempt++) {
        int r = onesession_open(h, err);
        if (r < 0) {
            cell.start_failed = true;
            if (cell.lost.why != ONESESSION_NOT_LOST && !told)
                h->pending = cell.lost; /* still to be told */
            *ret_cell = cell;
            return r;
        }
        tell(h, ONESESSION_ATTEMPT,
             cell.lost.why != ONESESSION_NOT_LOST && !told ? &cell.lost : NULL);
        told |= cell.lost.why != ONESESSION_NOT_LOST;
        r = h->ops->run(h->session, req, &res, err);
        tell(h, ONESESSION_RAN, NULL);
        if (errmap_session_lost(r) && attempt == 0) {
            /* It ended between the check above and this cell: once more, in a new one. */
            cell.lost = gone_why(h);
            told = false;
            forget(h, &cell.lost);
            continue;
        }
        if (r < 0) {
            *ret_cell = cell;
            return r;
        }
        break;
    }
    struct execbox_session_info si;
    h->ops->info(h->session, &si);
    if (!si.alive) {
        cell.ended = true;
        cell.oom = res->oom_killed;
        h->pending = (struct onesession_lost){.why = res->oom_killed ? ONESESSION_PREVIOUS_OOM
                                                                     : ONESESSION_PREVIOUS};
        h->session = h->ops->free(h->session);
    }
    *ret_cell = cell;
    *ret_res = res;
    return 0;
}

bool onesession_close(struct onesession *h)
{
    bool had = h->session != NULL;
    if (had)
        h->session = h->ops->free(h->session);
    h->pending = (struct onesession_lost){0};
    return had;
}
