/* SPDX-License-Identifier: MIT */
/* netproxy.c - one run's allow-list proxy (see netproxy.h): an epoll loop over the listening
 * socket, the connections and two eventfds (stop, lookups done), the moving of bytes, and the
 * proxy's start and stop. The request is netproxy_http.c, the lookups netproxy_dns.c. */
#include "jail/netproxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"
#include "jail/netproxy_int.h"
#include "jail/tlshello.h"
#include "model/hostrule.h"

/* ---- connections ------------------------------------------------------------------------- */

void eb_px_set_events(struct eb_proxy *p, int fd, uint64_t key, uint32_t *cur, uint32_t want)
{
    if (fd < 0 || *cur == want)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = key};
    epoll_ctl(p->ep, EPOLL_CTL_MOD, fd, &ev);
    *cur = want;
}

int eb_px_add_fd(struct eb_proxy *p, int fd, uint64_t key, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = key};
    return epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void eb_px_conn_free(struct eb_proxy *p, struct conn *c)
{
    if (c->cfd >= 0)
        close(c->cfd); /* closing removes it from the epoll set */
    if (c->ufd >= 0)
        close(c->ufd);
    free(c->head);
    free(c->fwd_head);
    free(c->c2u.data);
    free(c->u2c.data);
    int pipes[] = {c->c2u.pr, c->c2u.pw, c->u2c.pr, c->u2c.pw};
    for (size_t i = 0; i < ARRAY_SIZE(pipes); i++)
        if (pipes[i] >= 0)
            close(pipes[i]);
    if (c->prev)
        c->prev->next = c->next;
    else
        p->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    p->n_conns--;
    free(c);
}

/* Readies b: with want_pipe a pipe of EB_PROXY_BUF for the stream and a buffer for the
 * proxy's own bytes only; else (or when no pipe can be had) a buffer for everything. */
int eb_px_buf_alloc(struct pbuf *b, bool want_pipe)
{
    if (b->data)
        return 0;
    int p[2];
    if (want_pipe && pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0) {
        /* At least EB_PROXY_BUF in flight (the default 64 KiB halves the throughput). */
        if (fcntl(p[1], F_SETPIPE_SZ, (int)EB_PROXY_BUF) < (int)EB_PROXY_BUF) {
            close(p[0]);
            close(p[1]);
        } else {
            b->pr = p[0];
            b->pw = p[1];
        }
    }
    b->cap = b->pr >= 0 ? 2 * EB_PROXY_HEAD_MAX + 1024 : EB_PROXY_BUF;
    if (!(b->data = malloc(b->cap)))
        return -ENOMEM;
    return 0;
}

static size_t buf_pending(const struct pbuf *b)
{
    return b->len - b->off + b->in_pipe;
}

static bool buf_room(const struct pbuf *b)
{
    return b->pr >= 0 ? b->in_pipe < EB_PROXY_BUF : b->len < b->cap;
}

void eb_px_buf_put(struct pbuf *b, const char *s, size_t n)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (n > b->cap - b->len)
        n = b->cap - b->len;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

/* ---- moving bytes ------------------------------------------------------------------------ */

/* Reads from fd into b (sets *moved when bytes came). false on a hard error. */
static bool pump_in(int fd, struct pbuf *b, bool *eof, bool *moved, uint64_t *left)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (!buf_room(b) || *eof || *left == 0)
        return true;
    ssize_t n;
    if (b->pr >= 0) {
        size_t want = EB_PROXY_BUF - b->in_pipe;
        if (want > *left)
            want = (size_t)*left;
        n = splice(fd, NULL, b->pw, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            b->in_pipe += (size_t)n;
            if (*left != UINT64_MAX)
                *left -= (uint64_t)n;
            *moved = true;
        } else if (n == 0) {
            *eof = true;
        } else if (errno != EAGAIN && errno != EINTR) {
            return false;
        }
        return true;
    }
    size_t want = b->cap - b->len;
    if (want > *left)
        want = (size_t)*left;
    n = read(fd, b->data + b->len, want);
    if (n > 0) {
        b->len += (size_t)n;
        if (*left != UINT64_MAX)
            *left -= (uint64_t)n;
        *moved = true;
    } else if (n == 0)
        *eof = true;
    else if (errno != EAGAIN && errno != EINTR)
        return false;
    return true;
}

/* Writes from b to fd; counts the bytes. false on a hard error. */
bool eb_px_pump_out(int fd, struct pbuf *b, uint64_t *count)
{
    if (b->off < b->len) {
        ssize_t n = send(fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);
        if (n > 0) {
            b->off += (size_t)n;
            *count += (uint64_t)n;
            if (b->off == b->len)
                b->off = b->len = 0;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        }
        if (b->off < b->len)
            return true; /* the proxy's own bytes go first */
    }
    if (b->in_pipe > 0) {
        /* The peer may be gone: splice to a socket raises SIGPIPE, which the proxy's thread
         * blocks; the error comes back as EPIPE. */
        ssize_t n = splice(b->pr, NULL, fd, NULL, b->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            b->in_pipe -= (size_t)n;
            *count += (uint64_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        }
    }
    return true;
}

/* Registers what each side waits for; frees the connection when both ways are done. */
void eb_px_conn_update(struct eb_proxy *p, struct conn *c)
{
    if (c->state == S_HEAD) {
        eb_px_set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, EPOLLIN);
        return;
    }
    if (c->state == S_HELLO) {
        /* The "200" out to the client, its hello in; nothing asked of the host yet. */
        uint32_t ec = buf_pending(&c->u2c) ? EPOLLOUT : 0;
        if (c->head_len < EB_TLS_RECORD_MAX)
            ec |= EPOLLIN;
        eb_px_set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, ec);
        eb_px_set_events(p, c->ufd, KEY(c->serial, TAG_UPSTREAM), &c->ev_u, 0);
        return;
    }
    if (c->state != S_RELAY)
        return;
    /* A side that has said all it will and whose bytes are delivered: pass the EOF on. */
    if (c->c_eof && buf_pending(&c->c2u) == 0 && !c->u_shut) {
        if (c->ufd >= 0)
            shutdown(c->ufd, SHUT_WR);
        c->u_shut = true;
    }
    if (c->u_eof && buf_pending(&c->u2c) == 0 && !c->c_shut) {
        shutdown(c->cfd, SHUT_WR);
        c->c_shut = true;
    }
    if (c->c_shut && c->u_shut) {
        eb_px_conn_free(p, c);
        return;
    }
    if (c->u_eof && c->u_shut && c->ufd >= 0) {
        /* Nothing more to or from the host: let it go (its hang-up would only wake us). */
        close(c->ufd);
        c->ufd = -1;
        c->ev_u = 0;
    }
    uint32_t ec = 0, eu = 0;
    if (!c->c_eof && buf_room(&c->c2u))
        ec |= EPOLLIN;
    if (buf_pending(&c->u2c))
        ec |= EPOLLOUT;
    if (!c->u_eof && buf_room(&c->u2c))
        eu |= EPOLLIN;
    if (buf_pending(&c->c2u))
        eu |= EPOLLOUT;
    eb_px_set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, ec);
    eb_px_set_events(p, c->ufd, KEY(c->serial, TAG_UPSTREAM), &c->ev_u, eu);
}

void eb_px_relay(struct eb_proxy *p, struct conn *c)
{
    struct execbox_egress *e = egress_of(p, c);
    uint64_t scratch_out = 0, scratch_in = 0;
    uint64_t *out = e ? &e->bytes_out : &scratch_out, *in = e ? &e->bytes_in : &scratch_in;
    bool ok = true, moved = false;
    /* Twice round: what was read can often be written at once. */
    for (int round = 0; ok && round < 2; round++) {
        if (c->ufd >= 0 && !c->u_shut && c->c2u_left > 0) {
            ok = ok && pump_in(c->cfd, &c->c2u, &c->c_eof, &moved, &c->c2u_left);
            ok = ok && eb_px_pump_out(c->ufd, &c->c2u, out);
        } else if (c->ufd >= 0 && !c->u_shut) {
            /* The one request is sent: what follows on this connection (a second request,
             * perhaps for another Host) goes nowhere; the bytes still in flight do. */
            ok = ok && eb_px_pump_out(c->ufd, &c->c2u, out);
            char sink[4096];
            ssize_t n = c->c_eof ? -1 : read(c->cfd, sink, sizeof(sink));
            if (n == 0)
                c->c_eof = true;
        } else if (!c->c_eof) {
            /* Nobody to send to (our own error reply): drop what the client still sends. */
            char sink[4096];
            ssize_t n = read(c->cfd, sink, sizeof(sink));
            if (n == 0)
                c->c_eof = true;
        }
        uint64_t unbounded = UINT64_MAX;
        if (c->ufd >= 0 && !c->u_eof)
            ok = ok && pump_in(c->ufd, &c->u2c, &c->u_eof, &moved, &unbounded);
        uint64_t sent = 0;
        ok = ok && eb_px_pump_out(c->cfd, &c->u2c, &sent);
        size_t ours = sent < c->own ? (size_t)sent : c->own;
        c->own -= ours;
        *in += sent - ours;
    }
    if (!ok) {
        eb_px_conn_free(p, c);
        return;
    }
    if (moved)
        c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
    eb_px_conn_update(p, c);
}

static void accept_one(struct eb_proxy *p)
{
    int fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (p->n_conns >= EB_PROXY_CONNS_MAX) {
#define BUSY_BODY "execbox proxy: too many open connections for this run\n"
        static const char busy[] =
            "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
            "Content-Type: text/plain\r\nContent-Length: 54\r\n\r\n" BUSY_BODY;
        _Static_assert(sizeof(BUSY_BODY) - 1 == 54, "Content-Length of the 503 body");
        (void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c)
        c->head = malloc(EB_PROXY_HEAD_MAX + 1);
    if (!c || !c->head) {
        if (c)
            free(c);
        close(fd);
        return;
    }
    c->cfd = fd;
    c->ufd = -1;
    c->egress = -1;
    c->c2u.pr = c->c2u.pw = c->u2c.pr = c->u2c.pw = -1;
    c->serial = ++p->next_serial;
    c->state = S_HEAD;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_HEAD_TIMEOUT_MS);
    c->ev_c = EPOLLIN;
    if (eb_px_add_fd(p, fd, KEY(c->serial, TAG_CLIENT), EPOLLIN) < 0) {
        free(c->head);
        free(c);
        close(fd);
        return;
    }
    c->next = p->conns;
    if (p->conns)
        p->conns->prev = c;
    p->conns = c;
    p->n_conns++;
    /* The request is often there already: no need to wait for the next round. */
    eb_px_read_head(p, c);
}

static void expire(struct eb_proxy *p, uint64_t now)
{
    struct conn *c = p->conns;
    while (c) {
        struct conn *next = c->next;
        if (now >= c->deadline_ns) {
            switch (c->state) {
            case S_HEAD: eb_px_conn_free(p, c); break; /* a client too slow to ask: no answer due */
            case S_LOOKUP:
            case S_CONNECT:
                eb_px_reply_error(p, c, 504, "lookup or connect timed out");
                eb_px_conn_update(p, c);
                break;
            case S_HELLO: /* no hello in time: nothing was sent to the host */
            case S_RELAY: eb_px_conn_free(p, c); break;
            }
        }
        c = next;
    }
}

static void *proxy_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-proxy"); /* in ps, top -H and perf */
    struct eb_proxy *p = arg;
    struct epoll_event evs[64];
    uint64_t last_sweep = eb_now_ns();
    for (;;) {
        int n = epoll_wait(p->ep, evs, ARRAY_SIZE(evs), 250);
        if (n < 0 && errno != EINTR)
            break;
        bool stop = false;
        for (int i = 0; i < n; i++) {
            uint64_t key = evs[i].data.u64;
            enum tag_kind kind = KEY_KIND(key);
            switch (kind) {
            case TAG_STOP: stop = true; break;
            case TAG_LISTEN:
                for (int k = 0; k < 16; k++)
                    accept_one(p);
                break;
            case TAG_LOOKUP: {
                uint64_t v;
                (void)!read(p->res->wake_fd, &v, sizeof(v));
                struct lookup done[EB_PROXY_LOOKUPS_MAX];
                pthread_mutex_lock(&p->res->lock);
                int nd = p->res->n_done;
                memcpy(done, p->res->done, (size_t)nd * sizeof(done[0]));
                p->res->n_done = 0;
                pthread_mutex_unlock(&p->res->lock);
                for (int k = 0; k < nd; k++)
                    eb_px_lookup_done(p, &done[k]);
                break;
            }
            case TAG_CLIENT:
            case TAG_UPSTREAM: {
                struct conn *c = p->conns;
                while (c && c->serial != KEY_SERIAL(key))
                    c = c->next;
                if (!c)
                    break; /* freed earlier in this batch */
                uint32_t ev = evs[i].events;
                if (kind == TAG_CLIENT && (ev & (EPOLLERR | EPOLLHUP))) {
                    eb_px_conn_free(p, c); /* the client is gone: nobody to answer */
                    break;
                }
                if (kind == TAG_UPSTREAM && (ev & (EPOLLERR | EPOLLHUP)) && c->state == S_HELLO) {
                    eb_px_conn_free(p, c); /* the host is gone before the tunnel was let through */
                    break;
                }
                if (kind == TAG_UPSTREAM && (ev & EPOLLERR) && c->state == S_RELAY) {
                    eb_px_conn_free(p, c);
                    break;
                }
                if (c->state == S_HEAD && kind == TAG_CLIENT)
                    eb_px_read_head(p, c);
                else if (c->state == S_HELLO && kind == TAG_CLIENT)
                    eb_px_hello_step(p, c);
                else if (c->state == S_CONNECT && kind == TAG_UPSTREAM) {
                    eb_px_connect_done(p, c);
                    if (c->state == S_RELAY)
                        eb_px_relay(p, c);
                    else if (c->state == S_HELLO)
                        eb_px_hello_step(p, c);
                    else
                        eb_px_conn_update(p, c);
                } else if (c->state == S_RELAY)
                    eb_px_relay(p, c);
                break;
            }
            }
        }
        if (stop)
            break;
        uint64_t now = eb_now_ns();
        if (now - last_sweep >= ms_ns(250)) {
            expire(p, now);
            last_sweep = now;
        }
    }
    while (p->conns)
        eb_px_conn_free(p, p->conns);
    return NULL;
}

int eb_proxy_start(const struct execbox_policy *policy, int listen_fd, struct eb_proxy **ret,
                   struct execbox_error *err)
{
    struct eb_proxy *p = calloc(1, sizeof(*p));
    struct resolver *r = calloc(1, sizeof(*r));
    int e = -ENOMEM;
    if (!p || !r || !(p->egress = calloc(EXECBOX_EGRESS_MAX, sizeof(*p->egress)))) {
        if (p)
            free(p->egress);
        free(p);
        free(r);
        close(listen_fd);
        return eb_error_set(err, -ENOMEM, "out of memory");
    }
    p->policy = *policy;
    for (size_t i = 0; i < EXECBOX_ALLOW_HOSTS_MAX && policy->allow_hosts[i][0]; i++)
        if (eb_host_rule_parse(policy->allow_hosts[i], &p->rules[p->n_rules], NULL) == 0)
            p->n_rules++;
    p->listen_fd = listen_fd;
    p->ep = epoll_create1(EPOLL_CLOEXEC);
    p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->refs = 1;
    p->res = r;
    if (p->ep < 0 || p->stop_fd < 0 || r->wake_fd < 0) {
        e = -errno;
        goto fail;
    }
    if ((e = eb_px_add_fd(p, listen_fd, KEY(0, TAG_LISTEN), EPOLLIN)) < 0 ||
        (e = eb_px_add_fd(p, p->stop_fd, KEY(0, TAG_STOP), EPOLLIN)) < 0 ||
        (e = eb_px_add_fd(p, r->wake_fd, KEY(0, TAG_LOOKUP), EPOLLIN)) < 0)
        goto fail;
    /* Signals belong to the host's threads, not to the proxy's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = -pthread_create(&p->thread, NULL, proxy_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e < 0)
        goto fail;
    *ret = p;
    return 0;
fail:
    if (p->ep >= 0)
        close(p->ep);
    if (p->stop_fd >= 0)
        close(p->stop_fd);
    close(listen_fd);
    pthread_mutex_lock(&r->lock);
    eb_px_resolver_unref(r);
    free(p->egress);
    free(p);
    return eb_error_set(err, e, "start the network proxy: %s", execbox_strerror(e));
}

void eb_proxy_stop(struct eb_proxy *p, struct execbox_result *res)
{
    if (!p)
        return;
    uint64_t one = 1;
    (void)!write(p->stop_fd, &one, sizeof(one));
    pthread_join(p->thread, NULL);
    close(p->ep);
    close(p->stop_fd);
    close(p->listen_fd);
    pthread_mutex_lock(&p->res->lock);
    p->res->stop = true;
    pthread_cond_signal(&p->res->cond);
    eb_px_resolver_unref(p->res);
    if (res) {
        res->has_egress = true;
        res->n_egress = p->n_egress;
        res->egress_truncated = p->egress_truncated;
        res->egress = p->egress;
        p->egress = NULL;
    }
    free(p->egress);
    free(p);
}
