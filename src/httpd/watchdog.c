/* SPDX-License-Identifier: MIT */
/* watchdog.c - the thread that notices a client hanging up while its job is queued or
 * running (its connection is suspended, unwatched by libmicrohttpd) and cancels the run. */
#include "internal.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

struct watch_set {
    struct job **jobs;
    struct pollfd *pfds;
    size_t n, cap;
};

/* runner_foreach's callback: collects the live jobs whose client may still hang up. */
static void watch_collect(struct runner_job *rj, bool running, void *ctx)
{
    (void)running;
    struct watch_set *w = ctx;
    struct job *j = container_of(rj, struct job, rj);
    if (w->n >= w->cap || j->fd < 0 || __atomic_load_n(&j->client_gone, __ATOMIC_RELAXED))
        return;
    w->jobs[w->n] = job_ref(j);
    w->pfds[w->n] = (struct pollfd){.fd = j->fd, .events = POLLRDHUP};
    w->n++;
}

/* Polls the sockets of queued and running jobs for a hang-up; cancels the run. */
void *srv_watchdog_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-watch"); /* in ps, top -H and perf */
    struct srv *s = arg;
    struct watch_set w = {.cap = s->cfg.queue + s->cfg.workers};
    w.jobs = calloc(w.cap, sizeof(*w.jobs));
    w.pfds = calloc(w.cap, sizeof(*w.pfds));
    if (!w.jobs || !w.pfds) {
        srv_log("error", "watchdog", "out of memory: disconnected clients will not be noticed");
        free(w.jobs);
        free(w.pfds);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        w.n = 0;
        runner_foreach(s->runner, watch_collect, &w);
        if (w.n == 0) {
            usleep(SRV_WATCH_MS * 1000);
            continue;
        }
        int r = poll(w.pfds, w.n, SRV_WATCH_MS);
        for (size_t i = 0; i < w.n; i++) {
            struct job *j = w.jobs[i];
            if (r > 0 && (w.pfds[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
                pthread_mutex_lock(&j->lock);
                /* Only while still queued or running is the fd surely still this client's:
                 * the connection stays open until the job is answered. */
                bool gone = (j->state == J_QUEUED || j->state == J_RUNNING) && !j->client_gone;
                if (gone)
                    __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
                pthread_mutex_unlock(&j->lock);
                if (gone) /* a queued job is answered 499 now, a running one is killed */
                    runner_cancel(s->runner, &j->rj);
            }
            job_unref(j);
        }
    }
    free(w.jobs);
    free(w.pfds);
    return NULL;
}
