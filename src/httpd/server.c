/* SPDX-License-Identifier: MIT */
/*
 * server.c - the HTTP service: libmicrohttpd's one polling thread parses requests and never
 * waits on a sandbox; an accepted run goes into a bounded queue, its connection is suspended,
 * and a worker thread runs it and resumes the connection with the answer.
 *
 * The queue and the workers are the surfaces' shared job runner (common/runner.h). A job (one
 * HTTP request) is shared by three owners, each holding a reference: the connection (until
 * libmicrohttpd reports the request completed), the runner (until its done() callback), and a
 * streaming response (until libmicrohttpd frees it). Lock order: a job's lock, then the
 * server's, then the runner's; the runner calls us back with none of them held.
 *
 * A suspended connection is not watched by libmicrohttpd, so a watchdog thread polls the
 * sockets of queued and running jobs for a hang-up and fires the run's cancel token: the
 * sandbox of a client that went away is killed, not left to run out its timeout.
 *
 * Connections come in through the front door (front.c), which checks every request head's
 * framing before libmicrohttpd reads it and hands libmicrohttpd one end of a socket pair.
 *
 * This file starts and stops the service; internal.h lists the others and what they share.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "front.h"

static bool front_hand_off(void *ud, int fd, const struct sockaddr *sa, socklen_t len)
{
    struct srv *s = ud;
    pthread_mutex_lock(&s->add_lock);
    bool ok = !s->daemon_stopped && MHD_add_connection(s->daemon, fd, sa, len) == MHD_YES;
    if (s->daemon_stopped)
        close(fd);
    pthread_mutex_unlock(&s->add_lock);
    return ok;
}

static void front_refused(void *ud, int status, const char *method, const char *path,
                          const struct sockaddr *sa, char *id, size_t id_size)
{
    struct srv *s = ud;
    char remote[64];
    srv_format_remote(sa, remote, sizeof(remote));
    srv_new_request_id(s, id, id_size);
    srv_metrics_status(&s->metrics, status);
    /* An E2B path carries the token (/e2b/TOKEN/...), maybe cut short by the front door:
     * whatever stands where a token would, never into the log. */
    char shown[128];
    if (s->cfg.tenants)
        srv_mask_e2b_paths(path, shown, sizeof(shown));
    else
        snprintf(shown, sizeof(shown), "%s", path);
    json_t *o = srv_access_object(id, remote, method, shown, status, 0);
    if (o)
        srv_log_object(o);
}

static const struct front_ops srv_front_ops = {.hand_off = front_hand_off,
                                               .refused = front_refused};

int srv_start(const struct srv_config *cfg, struct srv **ret, struct execbox_error *err)
{
    struct srv *s = calloc(1, sizeof(*s));
    if (!s) {
        close(cfg->listen_fd);
        return -ENOMEM;
    }
    s->cfg = *cfg;
    srv_metrics_init(&s->metrics);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->add_lock, NULL);
    unsigned char rnd[4] = {0};
    if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
        uint64_t t = srv_now_ns();
        memcpy(rnd, &t, sizeof(rnd));
    }
    snprintf(s->id_prefix, sizeof(s->id_prefix), "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3]);
    struct sess_config sc = {
        .exec = cfg->exec,
        .max_sessions = cfg->max_sessions,
        .idle_default = cfg->session_idle,
        .idle_max = cfg->session_idle_max,
        .lifetime = cfg->session_lifetime,
    };
    int r = sess_registry_new(&sc, &s->sessions, err);
    struct e2b_config ec = {.sessions = s->sessions, .policy = &s->cfg.policy};
    if (r == 0)
        r = e2b_new(&ec, &s->e2b, err);
    if (r < 0) {
        close(cfg->listen_fd);
        srv_stop(s);
        return r;
    }
    struct runner_config rc = {
        .workers = (unsigned)cfg->workers, .queue = cfg->queue, .serial_queue = E2B_QUEUE_MAX};
    r = runner_new(&rc, &srv_runner_ops, s, &s->runner, err);
    if (r < 0) {
        close(cfg->listen_fd);
        srv_stop(s);
        return r;
    }
    r = pthread_create(&s->watchdog, NULL, srv_watchdog_main, s);
    if (r) {
        close(cfg->listen_fd);
        srv_stop(s);
        snprintf(err->msg, sizeof(err->msg), "cannot start the watchdog: %s", strerror(r));
        return -r;
    }
    s->watchdog_started = true;
    /* One internal polling thread (epoll where available) does all the HTTP work; runs never
     * block it. ITC lets a resume from a worker, or a connection from the front door, wake it
     * at once. */
    s->daemon = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
            MHD_USE_NO_LISTEN_SOCKET,
        0, NULL, NULL, srv_on_request, s, MHD_OPTION_EXTERNAL_LOGGER, srv_mhd_logger, s,
        MHD_OPTION_NOTIFY_COMPLETED, srv_on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
        SRV_CONN_TIMEOUT_S, MHD_OPTION_UNESCAPE_CALLBACK, srv_keep_escaped, NULL, MHD_OPTION_END);
    if (!s->daemon) {
        close(cfg->listen_fd);
        srv_stop(s);
        snprintf(err->msg, sizeof(err->msg), "libmicrohttpd could not start");
        return -EIO;
    }
    struct front_config fc = {
        .listen_fd = cfg->listen_fd, .max_body = cfg->max_body, .ops = &srv_front_ops, .ud = s};
    r = front_start(&fc, &s->front, err);
    if (r < 0) {
        srv_stop(s);
        return r;
    }
    *ret = s;
    return 0;
}

void srv_leave(struct srv *s)
{
    __atomic_store_n(&s->leaving, true, __ATOMIC_RELAXED);
}

void srv_quiesce(struct srv *s)
{
    pthread_mutex_lock(&s->lock);
    __atomic_store_n(&s->draining, true, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->lock);
    runner_drain(s->runner);
    if (s->front)
        front_quiesce(s->front);
}

bool srv_idle(struct srv *s)
{
    struct runner_stats st;
    runner_get_stats(s->runner, &st);
    pthread_mutex_lock(&s->lock);
    bool idle = st.queued == 0 && st.running == 0 && s->pending == 0;
    pthread_mutex_unlock(&s->lock);
    return idle;
}

static void mark_gone(struct runner_job *rj, bool running, void *ctx)
{
    (void)running;
    (void)ctx;
    __atomic_store_n(&container_of(rj, struct job, rj)->client_gone, true, __ATOMIC_RELAXED);
}

void srv_cancel_all(struct srv *s)
{
    runner_foreach(s->runner, mark_gone, NULL);
    runner_cancel_all(s->runner);
    sess_close_all(s->sessions);
}

void srv_close_sessions(struct srv *s)
{
    sess_close_all(s->sessions);
}

void srv_stop(struct srv *s)
{
    if (!s)
        return;
    /* libmicrohttpd stops first and closes its ends; the front door then relays what is still
     * in flight to the clients and closes them. */
    pthread_mutex_lock(&s->add_lock);
    s->daemon_stopped = true;
    pthread_mutex_unlock(&s->add_lock);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    s->front = front_free(s->front);
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_mutex_unlock(&s->lock);
    if (s->watchdog_started)
        pthread_join(s->watchdog, NULL);
    s->runner = runner_free(s->runner);
    s->e2b = e2b_free(s->e2b);
    /* Last: every job, and with it every reference to a session, is gone. */
    s->sessions = sess_registry_free(s->sessions);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->add_lock);
    srv_metrics_destroy(&s->metrics);
    free(s);
}
