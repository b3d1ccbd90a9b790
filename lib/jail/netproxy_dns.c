/* SPDX-License-Identifier: MIT */
/* netproxy_dns.c - the proxy's name lookups, on a resolver thread of the run's own, with a
 * cache for the run; and connecting to the addresses found, each checked against the run's
 * policy first (netproxy_int.h). */
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

void eb_px_resolver_unref(struct resolver *r)
{
    int left = --r->refs;
    pthread_mutex_unlock(&r->lock);
    if (left == 0) {
        close(r->wake_fd);
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
    }
}

static void *resolver_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-dns"); /* in ps, top -H and perf */
    struct resolver *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        if (r->n_todo == 0) {
            pthread_cond_wait(&r->cond, &r->lock);
            continue;
        }
        struct lookup l = r->todo[0];
        memmove(r->todo, r->todo + 1, (size_t)(r->n_todo - 1) * sizeof(r->todo[0]));
        r->n_todo--;
        r->busy = 1;
        pthread_mutex_unlock(&r->lock);
        /* Blocking, with the resolver's own timeouts (resolv.conf): only this run waits. */
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        struct addrinfo *res = NULL;
        l.err = getaddrinfo(l.name, NULL, &hints, &res);
        l.n = 0;
        for (struct addrinfo *a = res; a && l.n < EB_PROXY_ADDRS_MAX; a = a->ai_next)
            if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
                a->ai_addrlen <= sizeof(l.addrs[0]))
                memcpy(&l.addrs[l.n++], a->ai_addr, a->ai_addrlen);
        if (res)
            freeaddrinfo(res);
        pthread_mutex_lock(&r->lock);
        r->busy = 0;
        if (!r->stop && r->n_done < EB_PROXY_LOOKUPS_MAX) {
            r->done[r->n_done++] = l;
            uint64_t one = 1;
            (void)!write(r->wake_fd, &one, sizeof(one));
        }
    }
    eb_px_resolver_unref(r);
    return NULL;
}

/* ---- lookups and connecting -------------------------------------------------------------- */

void eb_px_start_lookup(struct eb_proxy *p, struct conn *c)
{
    c->state = S_LOOKUP;
    eb_px_set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, 0);
    uint64_t now = eb_now_ns();
    for (size_t i = 0; i < ARRAY_SIZE(p->cache); i++) {
        struct cached *k = &p->cache[i];
        if (k->at_ns && now - k->at_ns < ms_ns(EB_PROXY_LOOKUP_TTL_MS) &&
            strcmp(k->l.name, c->target.name) == 0) {
            struct lookup l = k->l;
            l.id = c->lookup_id = ++p->next_lookup;
            eb_px_lookup_done(p, &l);
            return;
        }
    }
    /* The same name already on its way: wait for that answer. */
    for (struct conn *o = p->conns; o; o = o->next)
        if (o != c && o->state == S_LOOKUP && strcmp(o->target.name, c->target.name) == 0) {
            c->lookup_id = o->lookup_id;
            return;
        }
    struct resolver *r = p->res;
    pthread_mutex_lock(&r->lock);
    if (r->n_todo + r->n_done + r->busy >= EB_PROXY_LOOKUPS_MAX) {
        pthread_mutex_unlock(&r->lock);
        eb_px_reply_error(p, c, 503, "too many name lookups at once");
        return;
    }
    if (!r->started) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 256U << 10);
        r->refs++;
        if (pthread_create(&(pthread_t){0}, &a, resolver_main, r) != 0) {
            r->refs--;
            pthread_attr_destroy(&a);
            pthread_mutex_unlock(&r->lock);
            eb_px_reply_error(p, c, 503, "cannot start the resolver");
            return;
        }
        pthread_attr_destroy(&a);
        r->started = true;
    }
    struct lookup *l = &r->todo[r->n_todo++];
    memset(l, 0, sizeof(*l));
    l->id = c->lookup_id = ++p->next_lookup;
    snprintf(l->name, sizeof(l->name), "%s", c->target.name);
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void addr_of(const struct sockaddr_storage *ss, int *family, const uint8_t **a)
{
    *family = ss->ss_family;
    if (ss->ss_family == AF_INET)
        *a = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
    else
        *a = (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
}

/* Is this resolved address one the run may reach? NULL, or why not. */
static const char *addr_refused(const struct eb_proxy *p, const struct conn *c,
                                const struct sockaddr_storage *ss)
{
    int family;
    const uint8_t *a;
    addr_of(ss, &family, &a);
    const char *special = eb_addr_special(family, a);
    if (!special)
        return NULL;
    if (c->via_localhost && strcmp(special, "loopback") == 0)
        return NULL;
    for (size_t i = 0; i < p->n_rules; i++)
        if (eb_host_rule_covers_addr(&p->rules[i], p->policy.allow_ports, family, a, c->port))
            return NULL;
    return special;
}

/* An answer: every connection waiting for it goes on (those timed out meanwhile are gone). */
void eb_px_lookup_done(struct eb_proxy *p, const struct lookup *l)
{
    if (!l->err && l->n > 0) {
        /* An answer from the cache is not cached again (its age stays its first lookup's). */
        bool cached = false;
        for (size_t i = 0; i < ARRAY_SIZE(p->cache) && !cached; i++)
            cached = p->cache[i].at_ns && strcmp(p->cache[i].l.name, l->name) == 0 &&
                     eb_now_ns() - p->cache[i].at_ns < ms_ns(EB_PROXY_LOOKUP_TTL_MS);
        if (!cached) {
            struct cached *k = &p->cache[p->cache_next++ % ARRAY_SIZE(p->cache)];
            k->at_ns = eb_now_ns();
            k->l = *l;
        }
    }
    struct conn *c = p->conns;
    while (c) {
        struct conn *next = c->next;
        if (c->state == S_LOOKUP && c->lookup_id == l->id) {
            if (l->err || l->n == 0) {
                char why[160];
                snprintf(why, sizeof(why), "cannot resolve %s: %s", c->target.name,
                         l->err ? gai_strerror(l->err) : "no address");
                eb_px_reply_error(p, c, 502, why);
            } else {
                memcpy(c->addrs, l->addrs, sizeof(c->addrs));
                c->n_addrs = l->n;
                eb_px_start_connect(p, c);
            }
            /* conn_update may free c: next was taken before. */
            eb_px_conn_update(p, c);
        }
        c = next;
    }
}

void eb_px_start_connect(struct eb_proxy *p, struct conn *c)
{
    const char *last_refusal = NULL;
    int last_err = 0;
    while (c->next_addr < c->n_addrs) {
        struct sockaddr_storage *ss = &c->addrs[c->next_addr++];
        const char *why = addr_refused(p, c, ss);
        if (why) {
            last_refusal = why;
            continue;
        }
        if (ss->ss_family == AF_INET)
            ((struct sockaddr_in *)ss)->sin_port = htons(c->port);
        else
            ((struct sockaddr_in6 *)ss)->sin6_port = htons(c->port);
        int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        socklen_t len =
            ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        if (connect(fd, (struct sockaddr *)ss, len) < 0 && errno != EINPROGRESS) {
            last_err = errno;
            close(fd);
            continue;
        }
        c->ufd = fd;
        c->ev_u = EPOLLOUT;
        if (eb_px_add_fd(p, fd, KEY(c->serial, TAG_UPSTREAM), EPOLLOUT) < 0) {
            close(fd);
            c->ufd = -1;
            last_err = EIO;
            continue;
        }
        c->state = S_CONNECT;
        eb_px_set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, 0);
        return;
    }
    char why[160];
    if (last_refusal && !last_err) {
        struct execbox_egress *e = egress_of(p, c);
        if (e)
            e->allowed = false;
        snprintf(why, sizeof(why), "%s resolves to a %s address, which no entry names",
                 c->target.name, last_refusal);
        eb_px_reply_error(p, c, 403, why);
    } else {
        snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", c->target.name, (unsigned)c->port,
                 strerror(last_err ? last_err : ECONNREFUSED));
        eb_px_reply_error(p, c, 502, why);
    }
}

/* The upstream socket became writable while connecting. */
void eb_px_connect_done(struct eb_proxy *p, struct conn *c)
{
    int e = 0;
    socklen_t len = sizeof(e);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
        e = errno;
    if (e) {
        close(c->ufd);
        c->ufd = -1;
        c->ev_u = 0;
        eb_px_start_connect(p, c); /* the next address, or 502 */
        return;
    }
    if (eb_px_buf_alloc(&c->c2u, true) < 0 || eb_px_buf_alloc(&c->u2c, true) < 0) {
        eb_px_reply_error(p, c, 503, "out of memory");
        return;
    }
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (c->is_connect) {
        eb_px_buf_put(&c->u2c, established, sizeof(established) - 1);
        c->own = sizeof(established) - 1;
    } else {
        eb_px_buf_put(&c->c2u, c->fwd_head, c->fwd_len);
        free(c->fwd_head);
        c->fwd_head = NULL;
    }
    size_t extra = c->head_len - c->extra_off;
    if (c->is_connect && !c->target.is_addr) {
        /* The tunnel is answered, but nothing goes to the host before the client's hello
         * names it (hello_step); the client's first bytes wait in the head buffer. */
        char *h = realloc(c->head, EB_TLS_RECORD_MAX);
        if (!h) {
            eb_px_reply_error(p, c, 503, "out of memory");
            return;
        }
        memmove(h, h + c->extra_off, extra);
        c->head = h;
        c->head_len = extra;
        c->extra_off = 0;
        c->state = S_HELLO;
        c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_HEAD_TIMEOUT_MS);
        return;
    }
    /* Bytes the client sent after its head (a TLS hello, a body) go on; of a plain request,
     * only its body. */
    if (extra > c->c2u_left)
        extra = (size_t)c->c2u_left;
    if (c->c2u_left != UINT64_MAX)
        c->c2u_left -= extra;
    eb_px_buf_put(&c->c2u, c->head + c->extra_off, extra);
    free(c->head);
    c->head = NULL;
    c->state = S_RELAY;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
}
