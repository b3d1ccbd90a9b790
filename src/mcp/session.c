/* SPDX-License-Identifier: MIT */
/* session.c - the one Python session of `execbox mcp --stateful`: the cells' turns in arrival
 * order, a cell run in the session (a new one when it ended), and reset_session. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends a session call to the queue of turns; before runner_submit, so that its worker can
 * never wait for a job the queue does not hold. */
void mcp_session_enqueue(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    struct job **p = &s->session_queue;
    while (*p)
        p = &(*p)->session_next;
    *p = j;
    j->session_next = NULL;
    pthread_mutex_unlock(&s->session_lock);
}

/* Takes a session call out of the queue (its turn is over, or it never ran). */
void mcp_session_dequeue(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    for (struct job **p = &s->session_queue; *p; p = &(*p)->session_next)
        if (*p == j) {
            *p = j->session_next;
            break;
        }
    j->session_next = NULL;
    pthread_cond_broadcast(&s->session_turn);
    pthread_mutex_unlock(&s->session_lock);
}

/* Waits until j heads the queue. The runner hands jobs to workers oldest first, and the queue
 * is in arrival order, so the head has always been handed to a worker already: no deadlock.
 * False when j was cancelled while it waited. */
bool mcp_session_wait_turn(struct server *s, struct job *j)
{
    pthread_mutex_lock(&s->session_lock);
    while (s->session_queue != j)
        pthread_cond_wait(&s->session_turn, &s->session_lock);
    bool skip = j->skip;
    pthread_mutex_unlock(&s->session_lock);
    pthread_mutex_lock(&s->lock);
    skip |= s->stopping;
    pthread_mutex_unlock(&s->lock);
    return !skip;
}

/* Marks a waiting session call with this id as cancelled (its token is fired too). */
void mcp_session_skip(struct server *s, json_t *id)
{
    pthread_mutex_lock(&s->session_lock);
    for (struct job *k = s->session_queue; k; k = k->session_next)
        if (json_equal(k->id, id))
            k->skip = true;
    pthread_mutex_unlock(&s->session_lock);
}

/* A lost state in words for the model (and the log). */
static void lost_text(const struct onesession_lost *l, char *out, size_t n)
{
    switch (l->why) {
    case ONESESSION_IDLE:
        snprintf(out, n, "the session expired after %g s without a call", l->idle);
        return;
    case ONESESSION_LIFETIME: snprintf(out, n, "the session reached its maximum lifetime"); return;
    case ONESESSION_PROCESS: snprintf(out, n, "the session's state process ended"); return;
    case ONESESSION_PREVIOUS: snprintf(out, n, "the session ended with the previous call"); return;
    case ONESESSION_PREVIOUS_OOM:
        snprintf(out, n, "the session ended with the previous call, which ran out of memory");
        return;
    case ONESESSION_NOT_LOST: break;
    }
    if (n)
        out[0] = '\0';
}

/* The holder's events: a forgotten session and its images, and a started one, in the log. */
static void on_session_event(void *ud, enum onesession_event ev, const struct onesession_lost *l)
{
    struct server *s = ud;
    char why[160];
    if (ev == ONESESSION_FORGOTTEN) {
        mcp_sent_clear(&s->sent);
        lost_text(l, why, sizeof(why));
        mcp_log("session ended: %s", why);
    } else if (ev == ONESESSION_STARTED) {
        mcp_log("session started");
    }
}

void mcp_session_setup(struct server *s)
{
    struct execbox_session_options so = {.policy = &s->policy, .idle_timeout = s->session_idle};
    onesession_init(&s->one, s->ex, &so, NULL);
    s->one.on_event = on_session_event;
    s->one.ud = s;
}

void mcp_session_end(struct server *s, const char *why)
{
    mcp_sent_clear(&s->sent);
    if (onesession_close(&s->one))
        mcp_log("session ended: %s", why);
}

/* One cell: in the session, started first when there is none; when the session turns out to
 * have ended (expired, killed, its state out of memory), in a new one, and the result says
 * that the state was lost. */
json_t *mcp_session_cell(struct server *s, struct job *j, const struct execbox_request *req)
{
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    struct onesession_cell cell;
    int r = onesession_run(&s->one, req, &res, &cell, &err);
    if (r < 0 && cell.start_failed) {
        mcp_log("cannot start a session: %s", err.msg);
        return mcp_api_error(ERRMAP_SCOPE_SESSION, r, &err, "start a Python session");
    }
    if (r < 0)
        return mcp_api_error(ERRMAP_SCOPE_SESSION, r, &err, "run the code");
    char lost[160];
    lost_text(&cell.lost, lost, sizeof(lost));
    struct mcp_render o = {.timeout = j->policy.timeout,
                           .images_budget = MCP_IMAGES_BUDGET,
                           .lost = lost[0] ? lost : NULL,
                           .ended = cell.ended,
                           .sent = &s->sent};
    json_t *out = mcp_render_cell(res, &o);
    if (cell.ended) {
        /* The holder has forgotten it; its images go too. */
        mcp_sent_clear(&s->sent);
        lost_text(&s->one.pending, lost, sizeof(lost));
        mcp_log("session ended: %s", lost);
    }
    execbox_result_free(res);
    return out;
}

/* reset_session: ends the session; the next cell starts a new one. */
json_t *mcp_session_reset(struct server *s)
{
    bool had = s->one.session != NULL;
    mcp_session_end(s, "reset_session");
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                     had ? "The session was reset: its variables, imports, definitions and "
                           "/workspace files are gone. The next call starts in a fresh session."
                         : "There was no session state to reset. The next call starts in a "
                           "fresh session.",
                     "isError", 0);
}
