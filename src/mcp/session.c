/* SPDX-License-Identifier: MIT */
/* session.c - the one Python session of `execbox mcp --stateful`: the cells' turns in arrival
 * order, a cell run in the session (a new one when it ended), and reset_session. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Why a session that is no longer alive ended, in words for the model. */
static void session_gone_why(struct server *s, char *out, size_t n)
{
    struct execbox_session_info si;
    execbox_session_info(s->session, &si);
    double now = wall_now();
    double idle = s->session_idle > 0 ? s->session_idle : EXECBOX_SESSION_IDLE_DEFAULT;
    if (si.expires_at > 0 && now >= si.expires_at) {
        if (now >= si.last_used_at + idle)
            snprintf(out, n, "the session expired after %g s without a call", idle);
        else
            snprintf(out, n, "the session reached its maximum lifetime");
    } else {
        snprintf(out, n, "the session's state process ended");
    }
}

/* Ends the session (if any) and forgets it, and the images its replies attached. */
void mcp_session_end(struct server *s, const char *why)
{
    mcp_sent_clear(&s->sent);
    if (!s->session)
        return;
    s->session = execbox_session_free(s->session);
    mcp_log("session ended: %s", why);
}

/* One cell: in the session, started first when there is none; when the session turns out to
 * have ended (expired, killed, its state out of memory), in a new one, and the result says
 * that the state was lost. */
json_t *mcp_session_cell(struct server *s, struct job *j, const struct execbox_request *req)
{
    char lost[160] = "";
    snprintf(lost, sizeof(lost), "%s", s->lost);
    s->lost[0] = '\0';
    if (s->session) {
        struct execbox_session_info si;
        execbox_session_info(s->session, &si);
        if (!si.alive) {
            session_gone_why(s, lost, sizeof(lost));
            mcp_session_end(s, lost);
        }
    }
    struct execbox_result *res = NULL;
    struct execbox_error err = {0};
    char msg[400];
    for (int attempt = 0;; attempt++) {
        if (!s->session) {
            struct execbox_session_options so = {.policy = &s->policy,
                                                 .idle_timeout = s->session_idle};
            if (execbox_session_new(s->ex, &so, &s->session, &err) < 0) {
                mcp_log("cannot start a session: %s", err.msg);
                snprintf(msg, sizeof(msg), "execbox could not start a Python session: %s", err.msg);
                if (lost[0]) /* still to be told */
                    snprintf(s->lost, sizeof(s->lost), "%s", lost);
                return mcp_tool_error(msg);
            }
            mcp_log("session started");
        }
        int r = execbox_session_run(s->session, req, &res, &err);
        if ((r == -ESHUTDOWN || r == -ETIMEDOUT) && attempt == 0) {
            /* It ended between the check above and this cell. */
            session_gone_why(s, lost, sizeof(lost));
            mcp_session_end(s, lost);
            continue;
        }
        if (r < 0) {
            snprintf(msg, sizeof(msg), "execbox could not run the code: %s", err.msg);
            return mcp_tool_error(msg);
        }
        break;
    }
    struct execbox_session_info si;
    execbox_session_info(s->session, &si);
    struct mcp_render o = {.timeout = j->policy.timeout,
                           .images_budget = MCP_IMAGES_BUDGET,
                           .lost = lost[0] ? lost : NULL,
                           .ended = !si.alive,
                           .sent = &s->sent};
    json_t *out = mcp_render_cell(res, &o);
    if (!si.alive) {
        snprintf(s->lost, sizeof(s->lost), "the session ended with the previous call%s",
                 res->oom_killed ? ", which ran out of memory" : "");
        mcp_session_end(s, s->lost);
    }
    execbox_result_free(res);
    return out;
}

/* reset_session: ends the session; the next cell starts a new one. */
json_t *mcp_session_reset(struct server *s)
{
    bool had = s->session != NULL;
    mcp_session_end(s, "reset_session");
    s->lost[0] = '\0';
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                     had ? "The session was reset: its variables, imports, definitions and "
                           "/workspace files are gone. The next call starts in a fresh session."
                         : "There was no session state to reset. The next call starts in a "
                           "fresh session.",
                     "isError", 0);
}
