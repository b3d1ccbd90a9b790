/* SPDX-License-Identifier: MIT */
/* job.c - a job's lifecycle: made from a request's headers, queued into the runner, run on a
 * worker (the runner's run() and done()), and freed with its last reference. */
#include "internal.h"

#include "common/errmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

uint64_t srv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct job *job_ref(struct job *j)
{
    __atomic_add_fetch(&j->refs, 1, __ATOMIC_RELAXED);
    return j;
}

void job_unref(struct job *j)
{
    if (!j || __atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    srv_run_uncount(j->srv, j);
    pthread_mutex_destroy(&j->lock);
    runner_job_release(&j->rj);
    e2b_call_clear(j->srv->e2b, &j->e2b);
    free(j->body.data);
    srv_run_spec_clear(&j->spec);
    if (j->answer.body)
        j->answer.free_fn(j->answer.body);
    if (j->answer.fd >= 0)
        close(j->answer.fd);
    free(j->stream.buf);
    free(j->req.file_path);
    sess_put(j->sess);
    free(j);
}

/* The client's IP address, or "local" (a unix socket). */
void srv_format_remote(const struct sockaddr *sa, char *buf, size_t n)
{
    char host[48] = "";
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
    snprintf(buf, n, "%s", host[0] ? host : "local");
}

void srv_new_request_id(struct srv *s, char *buf, size_t n)
{
    pthread_mutex_lock(&s->lock);
    uint64_t seq = ++s->seq;
    pthread_mutex_unlock(&s->lock);
    snprintf(buf, n, "%s-%06llx", s->id_prefix, (unsigned long long)seq);
}

struct job *job_new(struct srv *s, struct MHD_Connection *c, const char *url, const char *method)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->refs = 1; /* the connection's */
    pthread_mutex_init(&j->lock, NULL);
    j->srv = s;
    j->conn = c;
    j->fd = -1;
    j->answer.fd = -1;
    j->answer.free_fn = free;
    j->body.max = s->cfg.max_body;
    j->req.t0_ns = srv_now_ns();
    snprintf(j->req.method, sizeof(j->req.method), "%s", method);
    snprintf(j->req.path, sizeof(j->req.path), "%s", url);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        j->fd = ci->connect_fd;
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    srv_format_remote(ci ? ci->client_addr : NULL, j->req.remote, sizeof(j->req.remote));
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    if (srv_request_id_ok(rid))
        snprintf(j->req.id, sizeof(j->req.id), "%s", rid);
    else
        srv_new_request_id(s, j->req.id, sizeof(j->req.id));
    return j;
}

/* Takes a job into the runner. 0, -EAGAIN when full, -ESHUTDOWN when draining. */
static int job_enqueue(struct srv *s, struct job *j)
{
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining || s->stopping;
    if (!draining)
        s->pending++; /* before the runner may finish it */
    pthread_mutex_unlock(&s->lock);
    if (draining)
        return -ESHUTDOWN;
    j->state = J_QUEUED;
    int r = runner_submit(s->runner, &job_ref(j)->rj);
    if (r < 0) {
        job_unref(j);
        j->state = J_READING;
        pthread_mutex_lock(&s->lock);
        s->pending--;
        pthread_mutex_unlock(&s->lock);
        return r == -EEXIST ? -EAGAIN : r;
    }
    j->accepted = true;
    return 0;
}

/* An E2B call on a worker: execute streams its lines; the others prepare their answer. */
static void run_e2b(struct srv *s, struct job *j)
{
    struct e2b_answer a;
    struct e2b_outcome o;
    uint64_t t = srv_now_ns();
    e2b_run(s->e2b, &j->e2b, j->rj.cancel, sse_e2b_push, j, &a, &o);
    j->answer.run_s = (double)(srv_now_ns() - t) / 1e9;
    if (o.ran) {
        enum srv_outcome so = o.timed_out    ? SRV_OUTCOME_TIMEOUT
                              : o.oom_killed ? SRV_OUTCOME_OOM
                              : o.failed     ? SRV_OUTCOME_ERROR
                                             : SRV_OUTCOME_OK;
        srv_metrics_run(&s->metrics, so, o.cancelled);
        j->answer.outcome = o.cancelled ? "cancelled" : srv_outcome_name(so);
        j->answer.exit_code = o.exit_code;
    }
    job_set_answer(j, e2b_op_streams(j->e2b.op) ? 200 : a.status, a.body, a.len, a.ctype, free);
    if (a.has_fd) { /* a download, sent from the file (srv_respond_file) */
        j->answer.fd = a.fd;
        j->answer.fd_size = a.fd_size;
    }
}

/* The runner's run(): runs one job and prepares its answer (j->answer). */
static bool http_run(struct runner_job *rj, void *ud)
{
    struct srv *s = ud;
    struct job *j = container_of(rj, struct job, rj);
    pthread_mutex_lock(&j->lock);
    bool skip = j->client_gone;
    j->state = J_RUNNING;
    pthread_mutex_unlock(&j->lock);
    if (skip)
        return false; /* the client hung up while queued: nothing to run, nobody to answer */
    if (j->req.op == OP_E2B) {
        run_e2b(s, j);
        return true;
    }
    if (j->req.sse) {
        char start[128];
        snprintf(start, sizeof(start), "{\"request_id\":\"%s\"}", j->req.id);
        sse_event(j, "start", start, true);
    }
    switch (j->req.op) {
    case OP_RUN: v1_run(s, j); break;
    case OP_CELL: v1_cell(s, j); break;
    case OP_CREATE: v1_create(s, j); break;
    default: v1_file_op(j); break;
    }
    free(j->body.data); /* a file's bytes, once written */
    j->body.data = NULL;
    return true;
}

/* The runner's done(): the runner's books are already updated (once the connection is resumed
 * the client may ask /metrics at once); publishes the answer and drops the runner's reference.
 * A job that never ran (its client left while it was queued, or everything was cancelled) is
 * answered 499. */
void srv_run_uncount(struct srv *s, struct job *j)
{
    if (__atomic_exchange_n(&j->run_counted, false, __ATOMIC_ACQ_REL))
        tenants_run_end(s->cfg.tenants, j->tenant.name);
}

const char *srv_owner(const struct job *j)
{
    return j->has_tenant ? j->tenant.name : NULL;
}

static void http_done(struct runner_job *rj, enum runner_end end, void *ud)
{
    (void)ud;
    struct job *j = container_of(rj, struct job, rj);
    srv_run_uncount(j->srv, j); /* the run is over (or never ran): its tenant may start another */
    if (j->cell_claimed) {      /* the cell never ran */
        j->cell_claimed = false;
        sess_cell_end(j->sess, NULL);
    }
    pthread_mutex_lock(&j->lock);
    int status = j->answer.run_status;
    if (end == RUNNER_DROPPED || (!j->answer.body && j->answer.fd < 0 && !status)) {
        __atomic_store_n(&j->client_gone, true, __ATOMIC_RELAXED);
        if (j->answer.body)
            j->answer.free_fn(j->answer.body);
        if (j->answer.fd >= 0)
            close(j->answer.fd);
        j->answer.fd = -1;
        status = 499;
        j->answer.body =
            srv_error_json("client_gone", "the client disconnected before the run", NULL);
        j->answer.len = j->answer.body ? strlen(j->answer.body) : 0;
        j->answer.free_fn = free;
        j->answer.ctype = NULL;
    }
    char *body = j->answer.body;
    j->status = status;
    j->state = J_DONE;
    if (j->req.sse && j->req.route == R_E2B) {
        /* The lines were the answer; a call that never ran just ends. */
        j->stream.done = true;
    } else if (j->req.sse) {
        /* What the client was too slow for is said on stderr, as on the E2B route; then the
         * final event: the result record, or the error. */
        if (j->stream.dropped)
            sse_dropped_note(j);
        if (body) {
            size_t n;
            char *f = srv_sse_frame(status == 200 ? "result" : "error", body, &n);
            if (f)
                sse_push(j, f, n, true);
            free(f);
        }
        j->stream.done = true;
    }
    if (j->suspended && j->conn) {
        j->suspended = false;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->lock);
    job_unref(j);
}

const struct runner_ops srv_runner_ops = {.run = http_run, .done = http_done};

/* Queues a job whose runner part is ready, and parks its connection or starts its stream. */
enum MHD_Result job_queue(struct srv *s, struct job *j, struct MHD_Connection *c)
{
    enum MHD_Result ret = MHD_YES;
    pthread_mutex_lock(&j->lock);
    int r = job_enqueue(s, j);
    if (r < 0)
        srv_run_uncount(s, j);
    if (r < 0 && j->cell_claimed) {
        j->cell_claimed = false;
        sess_cell_end(j->sess, NULL);
    }
    if (r < 0) {
        /* -EAGAIN: full; -EBUSY: the context's calls waiting are at E2B_QUEUE_MAX;
         * -ESHUTDOWN: draining (the one table, src/common/errmap.c). */
        const struct errmap_answer *a = errmap_answer(ERRMAP_SCOPE_QUEUE, r, NULL);
        ret = srv_respond_error(j, c, a->http_status, a->http_code, a->http_msg, NULL,
                                a->retry ? srv_retry_after(s) : 0);
    } else if (j->req.sse) {
        /* Queued below, outside the job's lock, which the stream's reader takes. */
    } else {
        /* Park the connection until a worker has the answer; the worker resumes it, and
         * libmicrohttpd then calls us again to send it. */
        j->suspended = true;
        MHD_suspend_connection(c);
    }
    bool stream = r == 0 && j->req.sse;
    pthread_mutex_unlock(&j->lock);
    if (stream)
        ret = sse_respond(j, c);
    return ret;
}
