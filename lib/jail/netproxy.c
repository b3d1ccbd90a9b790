/* SPDX-License-Identifier: MIT */
/* netproxy.c - one run's allow-list proxy (see netproxy.h): an epoll loop over the listening
 * socket, the connections and two eventfds (stop, lookups done), and a resolver thread. */
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
#include "jail/tlshello.h"
#include "model/hostrule.h"

/* ---- name lookups ------------------------------------------------------------------------ */

/* Shared by the event loop and the resolver thread; the last of the two to let go frees it
 * (the resolver may still sit in getaddrinfo() when the run ends). */
struct lookup {
    uint64_t id;
    char name[256];
    int err; /* 0, or an EAI_* code */
    int n;
    struct sockaddr_storage addrs[EB_PROXY_ADDRS_MAX];
};

struct resolver {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct lookup todo[EB_PROXY_LOOKUPS_MAX], done[EB_PROXY_LOOKUPS_MAX];
    int n_todo, n_done, busy; /* busy: one inside getaddrinfo() */
    int wake_fd;              /* eventfd: a lookup is done */
    bool stop, started;
    int refs;
};

static void resolver_unref_locked(struct resolver *r)
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
    resolver_unref_locked(r);
    return NULL;
}

/* ---- connections ------------------------------------------------------------------------- */

enum tag_kind { TAG_LISTEN, TAG_STOP, TAG_LOOKUP, TAG_CLIENT, TAG_UPSTREAM };

/* What an epoll event is about: a kind, and for a connection its serial number (never a
 * pointer: an event may arrive for a connection freed earlier in the same batch). */
#define KEY(serial, kind) (((uint64_t)(serial) << 3) | (uint64_t)(kind))
#define KEY_KIND(k) ((enum tag_kind)((k)&7))
#define KEY_SERIAL(k) ((k) >> 3)

/* Bytes in flight one way: first [off, len) of data (what the proxy itself put there: the
 * forwarded head, its own replies), then in_pipe bytes in a pipe, moved by splice() without
 * being copied through user space. Without a pipe (none to be had), data carries it all. */
struct pbuf {
    char *data;
    size_t off, len, cap;
    int pr, pw; /* the pipe's ends, or -1 */
    size_t in_pipe;
};

/* S_HELLO: a CONNECT tunnel to a name, answered, holding the client's first bytes until
 * they show the TLS server name (it must be the CONNECT host: no fronting). */
enum conn_state { S_HEAD, S_LOOKUP, S_CONNECT, S_HELLO, S_RELAY };

struct conn {
    struct conn *prev, *next;
    uint64_t serial;
    int cfd, ufd;
    enum conn_state state;
    uint64_t deadline_ns;
    char *head; /* S_HEAD: the request so far */
    size_t head_len;
    struct pbuf c2u, u2c;
    bool c_eof, u_eof;   /* no more to read from that side */
    bool c_shut, u_shut; /* we shut down our writing to that side */
    uint32_t ev_c, ev_u; /* events registered now */
    int egress;          /* index in the record, or -1 */
    struct eb_target target;
    uint16_t port;
    bool is_connect, via_localhost;
    char *fwd_head; /* plain HTTP: the head to send upstream */
    size_t fwd_len;
    size_t extra_off; /* bytes of head after the request's head (sent on) */
    uint64_t lookup_id;
    size_t own; /* bytes at the front of u2c that are our own reply, not the host's */
    /* Plain HTTP: the client bytes still to go upstream (the one request's body); what the
     * client sends after is dropped. UINT64_MAX: a tunnel, no bound. */
    uint64_t c2u_left;
    struct sockaddr_storage addrs[EB_PROXY_ADDRS_MAX];
    int n_addrs, next_addr;
};

struct eb_proxy {
    struct execbox_policy policy;
    struct eb_host_rule rules[EXECBOX_ALLOW_HOSTS_MAX];
    size_t n_rules;
    int listen_fd, stop_fd, ep;
    uint64_t next_serial;
    pthread_t thread;
    struct resolver *res;
    struct conn *conns;
    int n_conns;
    uint64_t next_lookup;
    struct execbox_egress *egress;
    size_t n_egress;
    bool egress_truncated;
    /* Names looked up in this run, kept a while: many connections to one host (pip, a
     * thread pool) cost one lookup. */
    struct cached {
        uint64_t at_ns;
        struct lookup l;
    } cache[EB_PROXY_LOOKUPS_MAX];
    unsigned cache_next;
};

static uint64_t ms_ns(unsigned ms)
{
    return (uint64_t)ms * 1000000ULL;
}

static void set_events(struct eb_proxy *p, int fd, uint64_t key, uint32_t *cur, uint32_t want)
{
    if (fd < 0 || *cur == want)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = key};
    epoll_ctl(p->ep, EPOLL_CTL_MOD, fd, &ev);
    *cur = want;
}

static int add_fd(struct eb_proxy *p, int fd, uint64_t key, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = key};
    return epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static struct execbox_egress *egress_of(struct eb_proxy *p, struct conn *c)
{
    return c->egress >= 0 ? &p->egress[c->egress] : NULL;
}

static void egress_add(struct eb_proxy *p, struct conn *c, const char *host, uint16_t port)
{
    c->egress = -1;
    if (p->n_egress >= EXECBOX_EGRESS_MAX) {
        p->egress_truncated = true;
        return;
    }
    struct execbox_egress *e = &p->egress[p->n_egress];
    memset(e, 0, sizeof(*e));
    /* The code chose these bytes: only printable ASCII goes on the record (a name that fails
     * to parse is still listed, as best it can be). */
    size_t i = 0;
    for (; host[i] && i < sizeof(e->host) - 1; i++)
        e->host[i] = host[i] > 0x20 && host[i] < 0x7f ? host[i] : '?';
    e->host[i] = '\0';
    e->port = port;
    c->egress = (int)p->n_egress++;
}

static void conn_free(struct eb_proxy *p, struct conn *c)
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
static int buf_alloc(struct pbuf *b, bool want_pipe)
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

static void buf_put(struct pbuf *b, const char *s, size_t n)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (n > b->cap - b->len)
        n = b->cap - b->len;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void conn_update(struct eb_proxy *p, struct conn *c);

/* Ends the request with an error response of our own (status, reason); the connection closes
 * once the client has it. */
static void conn_reply_error(struct eb_proxy *p, struct conn *c, int status, const char *reason)
{
    static const struct {
        int code;
        const char *text;
    } st[] = {{400, "Bad Request"},
              {403, "Forbidden"},
              {431, "Request Header Fields Too Large"},
              {502, "Bad Gateway"},
              {503, "Service Unavailable"},
              {504, "Gateway Timeout"}};
    const char *text = "Error";
    for (size_t i = 0; i < ARRAY_SIZE(st); i++)
        if (st[i].code == status)
            text = st[i].text;
    struct execbox_egress *e = egress_of(p, c);
    if (e && !e->reason[0])
        snprintf(e->reason, sizeof(e->reason), "%s", reason);
    if (c->ufd >= 0) {
        close(c->ufd);
        c->ufd = -1;
    }
    char msg[512];
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\nexecbox proxy: %s\n",
                     status, text, strlen("execbox proxy: \n") + strlen(reason), reason);
    if (n < 0 || (size_t)n >= sizeof(msg) || buf_alloc(&c->u2c, false) < 0) {
        c->c_eof = c->u_eof = c->c_shut = c->u_shut = true;
        c->u2c.off = c->u2c.len = 0;
        return;
    }
    c->c2u.off = c->c2u.len = 0;
    c->u2c.off = c->u2c.len = 0;
    buf_put(&c->u2c, msg, (size_t)n);
    c->own = (size_t)n;
    c->state = S_RELAY;
    c->c_eof = true; /* nothing more from the client is read */
    c->u_eof = true;
    c->u_shut = true;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
}

/* ---- the request ------------------------------------------------------------------------- */

/* The end of the request head in buf (the index after the blank line), or 0. */
static size_t head_end(const char *buf, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (buf[i] != '\n')
            continue;
        if (buf[i + 1] == '\n')
            return i + 2;
        if (i + 2 < n && buf[i + 1] == '\r' && buf[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

/* Splits "host:port", "[v6]:port" or "host" (port dflt) into host and port. */
static int split_authority(const char *s, size_t n, uint16_t dflt, char *host, size_t hsize,
                           uint16_t *port)
{
    const char *end = s + n, *colon = NULL;
    const char *h = s, *he;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return -EINVAL;
        h = s + 1;
        he = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return -EINVAL;
            colon = close + 1;
        }
    } else {
        colon = memchr(s, ':', n);
        he = colon ? colon : end;
    }
    if (he <= h || (size_t)(he - h) >= hsize)
        return -EINVAL;
    memcpy(host, h, (size_t)(he - h));
    host[he - h] = '\0';
    *port = dflt;
    if (colon) {
        unsigned long v = 0;
        const char *q = colon + 1;
        if (q == end)
            return -EINVAL;
        for (; q < end; q++) {
            if (!isdigit((unsigned char)*q) || (v = v * 10 + (unsigned long)(*q - '0')) > 65535)
                return -EINVAL;
        }
        if (v == 0)
            return -EINVAL;
        *port = (uint16_t)v;
    }
    return 0;
}

static bool is_hop_header(const char *line, size_t n)
{
    static const char *const drop[] = {"proxy-connection", "proxy-authorization", "connection",
                                       "keep-alive", "host"};
    for (size_t i = 0; i < ARRAY_SIZE(drop); i++) {
        size_t k = strlen(drop[i]);
        if (n > k && line[k] == ':' && strncasecmp(line, drop[i], k) == 0)
            return true;
    }
    return false;
}

/* Plain HTTP: the head as the origin server gets it: origin-form target, our Host, and
 * "Connection: close" (one request per connection, so the next request on the client's
 * connection can never ride to this host under another host's name). */
static int build_forward_head(struct conn *c, const char *method, size_t mlen, const char *path,
                              size_t plen, const char *version, size_t vlen, const char *hdrs,
                              size_t hlen, const char *authority, size_t alen)
{
    /* A kept line grows by at most one byte (a bare LF becomes CRLF), and a line is at least
     * two bytes: twice the headers' length is always enough. */
    size_t cap = mlen + plen + vlen + 2 * hlen + alen + 64;
    char *out = malloc(cap);
    if (!out)
        return -ENOMEM;
    size_t o = 0;
    o += (size_t)snprintf(out + o, cap - o, "%.*s %.*s %.*s\r\nHost: %.*s\r\n", (int)mlen, method,
                          (int)plen, path, (int)vlen, version, (int)alen, authority);
    const char *s = hdrs, *end = hdrs + hlen;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        size_t n_trim = n && s[n - 1] == '\r' ? n - 1 : n;
        if (n_trim == 0)
            break; /* the blank line */
        if (!is_hop_header(s, n_trim)) {
            memcpy(out + o, s, n_trim);
            o += n_trim;
            out[o++] = '\r';
            out[o++] = '\n';
        }
        s += n + (nl ? 1 : 0);
    }
    o += (size_t)snprintf(out + o, cap - o, "Connection: close\r\n\r\n");
    c->fwd_head = out;
    c->fwd_len = o;
    return 0;
}

/* Plain HTTP: the request body's length from Content-Length (0 without one). -EINVAL for a
 * bad or conflicting length, -ENOTSUP for Transfer-Encoding (a chunked body is not framed
 * here, so where the request ends, and the next would begin, is not known). */
static int request_body_len(const char *hdrs, size_t hlen, uint64_t *ret)
{
    const char *s = hdrs, *end = hdrs + hlen;
    bool have = false;
    uint64_t len = 0;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        size_t n_trim = n && s[n - 1] == '\r' ? n - 1 : n;
        if (n_trim == 0)
            break;
        if (n_trim >= 18 && strncasecmp(s, "transfer-encoding:", 18) == 0)
            return -ENOTSUP;
        if (n_trim >= 15 && strncasecmp(s, "content-length:", 15) == 0) {
            size_t i = 15;
            while (i < n_trim && (s[i] == ' ' || s[i] == '\t'))
                i++;
            size_t j = n_trim;
            while (j > i && (s[j - 1] == ' ' || s[j - 1] == '\t'))
                j--;
            if (i == j || j - i > 18)
                return -EINVAL;
            uint64_t v = 0;
            for (size_t k = i; k < j; k++) {
                if (s[k] < '0' || s[k] > '9')
                    return -EINVAL;
                v = v * 10 + (uint64_t)(s[k] - '0');
            }
            if (have && v != len)
                return -EINVAL;
            have = true;
            len = v;
        }
        s += n + (nl ? 1 : 0);
    }
    *ret = len;
    return 0;
}

static bool allowed_by_list(const struct eb_proxy *p, const struct eb_target *t, uint16_t port)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (eb_host_rule_matches(&p->rules[i], p->policy.allow_ports, t, port))
            return true;
    return false;
}

static void start_connect(struct eb_proxy *p, struct conn *c);
static void start_lookup(struct eb_proxy *p, struct conn *c);

/* The head is complete (end bytes): parse it, decide, and go on to the lookup or refuse. */
static void handle_head(struct eb_proxy *p, struct conn *c, size_t end)
{
    const char *h = c->head;
    const char *eol = memchr(h, '\n', end);
    size_t llen = (size_t)(eol - h);
    if (llen && h[llen - 1] == '\r')
        llen--;
    /* METHOD SP TARGET SP VERSION */
    const char *sp1 = memchr(h, ' ', llen);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - h)) : NULL;
    if (!sp1 || !sp2 || sp1 == h || sp2 == sp1 + 1 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        conn_reply_error(p, c, 400, "not an HTTP/1 proxy request");
        return;
    }
    const char *method = h, *target = sp1 + 1, *version = sp2 + 1;
    size_t mlen = (size_t)(sp1 - h), tlen = (size_t)(sp2 - target);
    size_t vlen = llen - (size_t)(version - h);
    char host[256];
    uint16_t port;
    const char *authority = NULL, *path = "/";
    size_t alen = 0, plen = 1;
    c->is_connect = mlen == 7 && memcmp(method, "CONNECT", 7) == 0;
    if (c->is_connect) {
        if (split_authority(target, tlen, 0, host, sizeof(host), &port) < 0 || port == 0) {
            conn_reply_error(p, c, 400, "CONNECT needs host:port");
            return;
        }
    } else {
        if (tlen < 7 || strncasecmp(target, "http://", 7) != 0) {
            conn_reply_error(p, c, 400,
                             tlen >= 8 && strncasecmp(target, "https://", 8) == 0
                                 ? "https:// goes through CONNECT (set HTTPS_PROXY)"
                                 : "the request target must be an absolute http:// URL");
            return;
        }
        authority = target + 7;
        const char *ae = authority;
        while (ae < target + tlen && *ae != '/' && *ae != '?' && *ae != '#')
            ae++;
        alen = (size_t)(ae - authority);
        if (memchr(authority, '@', alen)) {
            conn_reply_error(p, c, 400, "user information in the URL is not accepted");
            return;
        }
        if (split_authority(authority, alen, 80, host, sizeof(host), &port) < 0) {
            conn_reply_error(p, c, 400, "bad host or port in the URL");
            return;
        }
        if (ae < target + tlen && *ae == '/') {
            path = ae;
            plen = (size_t)(target + tlen - ae);
        } else if (ae < target + tlen) {
            /* "http://host?x": the path is "/" followed by the query. */
            path = ae;
            plen = (size_t)(target + tlen - ae);
        }
    }
    /* Whatever the outcome, this attempt is on the record under the name asked for. */
    egress_add(p, c, host, port);
    if (eb_target_parse(host, &c->target) < 0) {
        conn_reply_error(p, c, 400, "not a host name or address");
        return;
    }
    struct execbox_egress *e = egress_of(p, c);
    if (e)
        snprintf(e->host, sizeof(e->host), "%s", c->target.name);
    c->port = port;
    if (!allowed_by_list(p, &c->target, port)) {
        char why[128];
        bool host_listed = false;
        static const uint16_t dflt[] = {80, 443, 0};
        const uint16_t *pl = p->policy.allow_ports[0] ? p->policy.allow_ports : dflt;
        for (size_t i = 0; i < p->n_rules && !host_listed; i++) {
            if (p->rules[i].port)
                host_listed = eb_host_rule_matches(&p->rules[i], pl, &c->target, p->rules[i].port);
            for (size_t k = 0; !host_listed && k < EXECBOX_ALLOW_PORTS_MAX && pl[k]; k++)
                host_listed = eb_host_rule_matches(&p->rules[i], pl, &c->target, pl[k]);
        }
        snprintf(why, sizeof(why), "%s:%u is not in the allow-list%s", c->target.name,
                 (unsigned)port, host_listed ? " (the host is, on other ports)" : "");
        conn_reply_error(p, c, 403, why);
        return;
    }
    if (e)
        e->allowed = true;
    c->c2u_left = UINT64_MAX;
    if (!c->is_connect) {
        int br = request_body_len(eol + 1, end - (size_t)(eol + 1 - h), &c->c2u_left);
        if (br == -ENOTSUP) {
            conn_reply_error(p, c, 501,
                             "a chunked request body is not forwarded (send Content-Length)");
            return;
        }
        if (br < 0) {
            conn_reply_error(p, c, 400, "bad Content-Length");
            return;
        }
        if (build_forward_head(c, method, mlen, path, plen, version, vlen, eol + 1,
                               end - (size_t)(eol + 1 - h), authority, alen) < 0) {
            conn_reply_error(p, c, 503, "out of memory");
            return;
        }
    }
    c->extra_off = end;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_CONNECT_TIMEOUT_MS);
    if (c->target.is_addr) {
        struct sockaddr_storage *ss = &c->addrs[0];
        memset(ss, 0, sizeof(*ss));
        if (c->target.family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)ss;
            a->sin_family = AF_INET;
            memcpy(&a->sin_addr, c->target.addr, 4);
        } else {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
            a->sin6_family = AF_INET6;
            memcpy(&a->sin6_addr, c->target.addr, 16);
        }
        c->n_addrs = 1;
        start_connect(p, c);
    } else if (strcmp(c->target.name, "localhost") == 0) {
        /* "localhost" always means this machine's loopback, never what a resolver says. */
        struct sockaddr_in *a = (struct sockaddr_in *)&c->addrs[0];
        memset(&c->addrs[0], 0, sizeof(c->addrs[0]));
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c->n_addrs = 1;
        c->via_localhost = true;
        start_connect(p, c);
    } else {
        start_lookup(p, c);
    }
}

/* ---- lookups and connecting -------------------------------------------------------------- */

static void lookup_done(struct eb_proxy *p, const struct lookup *l);

static void start_lookup(struct eb_proxy *p, struct conn *c)
{
    c->state = S_LOOKUP;
    set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, 0);
    uint64_t now = eb_now_ns();
    for (size_t i = 0; i < ARRAY_SIZE(p->cache); i++) {
        struct cached *k = &p->cache[i];
        if (k->at_ns && now - k->at_ns < ms_ns(EB_PROXY_LOOKUP_TTL_MS) &&
            strcmp(k->l.name, c->target.name) == 0) {
            struct lookup l = k->l;
            l.id = c->lookup_id = ++p->next_lookup;
            lookup_done(p, &l);
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
        conn_reply_error(p, c, 503, "too many name lookups at once");
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
            conn_reply_error(p, c, 503, "cannot start the resolver");
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
static void lookup_done(struct eb_proxy *p, const struct lookup *l)
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
                conn_reply_error(p, c, 502, why);
            } else {
                memcpy(c->addrs, l->addrs, sizeof(c->addrs));
                c->n_addrs = l->n;
                start_connect(p, c);
            }
            /* conn_update may free c: next was taken before. */
            conn_update(p, c);
        }
        c = next;
    }
}

static void start_connect(struct eb_proxy *p, struct conn *c)
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
        if (add_fd(p, fd, KEY(c->serial, TAG_UPSTREAM), EPOLLOUT) < 0) {
            close(fd);
            c->ufd = -1;
            last_err = EIO;
            continue;
        }
        c->state = S_CONNECT;
        set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, 0);
        return;
    }
    char why[160];
    if (last_refusal && !last_err) {
        struct execbox_egress *e = egress_of(p, c);
        if (e)
            e->allowed = false;
        snprintf(why, sizeof(why), "%s resolves to a %s address, which no entry names",
                 c->target.name, last_refusal);
        conn_reply_error(p, c, 403, why);
    } else {
        snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", c->target.name, (unsigned)c->port,
                 strerror(last_err ? last_err : ECONNREFUSED));
        conn_reply_error(p, c, 502, why);
    }
}

/* The upstream socket became writable while connecting. */
static void connect_done(struct eb_proxy *p, struct conn *c)
{
    int e = 0;
    socklen_t len = sizeof(e);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
        e = errno;
    if (e) {
        close(c->ufd);
        c->ufd = -1;
        c->ev_u = 0;
        start_connect(p, c); /* the next address, or 502 */
        return;
    }
    if (buf_alloc(&c->c2u, true) < 0 || buf_alloc(&c->u2c, true) < 0) {
        conn_reply_error(p, c, 503, "out of memory");
        return;
    }
    static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (c->is_connect) {
        buf_put(&c->u2c, established, sizeof(established) - 1);
        c->own = sizeof(established) - 1;
    } else {
        buf_put(&c->c2u, c->fwd_head, c->fwd_len);
        free(c->fwd_head);
        c->fwd_head = NULL;
    }
    size_t extra = c->head_len - c->extra_off;
    if (c->is_connect && !c->target.is_addr) {
        /* The tunnel is answered, but nothing goes to the host before the client's hello
         * names it (hello_step); the client's first bytes wait in the head buffer. */
        char *h = realloc(c->head, EB_TLS_RECORD_MAX);
        if (!h) {
            conn_reply_error(p, c, 503, "out of memory");
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
    buf_put(&c->c2u, c->head + c->extra_off, extra);
    free(c->head);
    c->head = NULL;
    c->state = S_RELAY;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
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
static bool pump_out(int fd, struct pbuf *b, uint64_t *count)
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
static void conn_update(struct eb_proxy *p, struct conn *c)
{
    if (c->state == S_HEAD) {
        set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, EPOLLIN);
        return;
    }
    if (c->state == S_HELLO) {
        /* The "200" out to the client, its hello in; nothing asked of the host yet. */
        uint32_t ec = buf_pending(&c->u2c) ? EPOLLOUT : 0;
        if (c->head_len < EB_TLS_RECORD_MAX)
            ec |= EPOLLIN;
        set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, ec);
        set_events(p, c->ufd, KEY(c->serial, TAG_UPSTREAM), &c->ev_u, 0);
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
        conn_free(p, c);
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
    set_events(p, c->cfd, KEY(c->serial, TAG_CLIENT), &c->ev_c, ec);
    set_events(p, c->ufd, KEY(c->serial, TAG_UPSTREAM), &c->ev_u, eu);
}

static void relay(struct eb_proxy *p, struct conn *c)
{
    struct execbox_egress *e = egress_of(p, c);
    uint64_t scratch_out = 0, scratch_in = 0;
    uint64_t *out = e ? &e->bytes_out : &scratch_out, *in = e ? &e->bytes_in : &scratch_in;
    bool ok = true, moved = false;
    /* Twice round: what was read can often be written at once. */
    for (int round = 0; ok && round < 2; round++) {
        if (c->ufd >= 0 && !c->u_shut && c->c2u_left > 0) {
            ok = ok && pump_in(c->cfd, &c->c2u, &c->c_eof, &moved, &c->c2u_left);
            ok = ok && pump_out(c->ufd, &c->c2u, out);
        } else if (c->ufd >= 0 && !c->u_shut) {
            /* The one request is sent: what follows on this connection (a second request,
             * perhaps for another Host) goes nowhere; the bytes still in flight do. */
            ok = ok && pump_out(c->ufd, &c->c2u, out);
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
        ok = ok && pump_out(c->cfd, &c->u2c, &sent);
        size_t ours = sent < c->own ? (size_t)sent : c->own;
        c->own -= ours;
        *in += sent - ours;
    }
    if (!ok) {
        conn_free(p, c);
        return;
    }
    if (moved)
        c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
    conn_update(p, c);
}

/* S_HELLO: the tunnel's first client bytes must be a TLS ClientHello whose server name is the
 * CONNECT host (a name: an allowed name must not front for another on a shared server). No
 * name, not TLS, a malformed hello or another name: the tunnel is closed before a byte of it
 * reaches the host. */
static void hello_step(struct eb_proxy *p, struct conn *c)
{
    uint64_t sent = 0;
    if (!pump_out(c->cfd, &c->u2c, &sent)) {
        conn_free(p, c);
        return;
    }
    c->own -= sent < c->own ? (size_t)sent : c->own;
    if (c->head_len < EB_TLS_RECORD_MAX) {
        ssize_t n = read(c->cfd, c->head + c->head_len, EB_TLS_RECORD_MAX - c->head_len);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            conn_free(p, c);
            return;
        }
        if (n > 0)
            c->head_len += (size_t)n;
    }
    char name[256];
    enum eb_sni_result r =
        eb_tls_sni((const unsigned char *)c->head, c->head_len, name, sizeof(name));
    if (r == EB_SNI_MORE && c->head_len < EB_TLS_RECORD_MAX) {
        conn_update(p, c);
        return;
    }
    struct eb_target t;
    if (r != EB_SNI_FOUND || eb_target_parse(name, &t) < 0 || t.is_addr ||
        strcmp(t.name, c->target.name) != 0) {
        struct execbox_egress *e = egress_of(p, c);
        if (e)
            e->allowed = false; /* on the record as refused: the hello named no allowed host */
        conn_free(p, c);
        return;
    }
    buf_put(&c->c2u, c->head, c->head_len);
    free(c->head);
    c->head = NULL;
    c->state = S_RELAY;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
    relay(p, c);
}

static void read_head(struct eb_proxy *p, struct conn *c)
{
    ssize_t n = read(c->cfd, c->head + c->head_len, EB_PROXY_HEAD_MAX - c->head_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_free(p, c);
        return;
    }
    if (n < 0)
        return;
    size_t scan_from = c->head_len > 3 ? c->head_len - 3 : 0;
    c->head_len += (size_t)n;
    size_t end = head_end(c->head + scan_from, c->head_len - scan_from);
    if (end) {
        handle_head(p, c, end + scan_from);
    } else if (c->head_len == EB_PROXY_HEAD_MAX) {
        conn_reply_error(p, c, 431, "request head larger than 8 KiB");
    }
    conn_update(p, c);
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
    if (add_fd(p, fd, KEY(c->serial, TAG_CLIENT), EPOLLIN) < 0) {
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
    read_head(p, c);
}

static void expire(struct eb_proxy *p, uint64_t now)
{
    struct conn *c = p->conns;
    while (c) {
        struct conn *next = c->next;
        if (now >= c->deadline_ns) {
            switch (c->state) {
            case S_HEAD: conn_free(p, c); break; /* a client too slow to ask: no answer due */
            case S_LOOKUP:
            case S_CONNECT:
                conn_reply_error(p, c, 504, "lookup or connect timed out");
                conn_update(p, c);
                break;
            case S_HELLO: /* no hello in time: nothing was sent to the host */
            case S_RELAY: conn_free(p, c); break;
            }
        }
        c = next;
    }
}

static void *proxy_main(void *arg)
{
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
                    lookup_done(p, &done[k]);
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
                    conn_free(p, c); /* the client is gone: nobody to answer */
                    break;
                }
                if (kind == TAG_UPSTREAM && (ev & (EPOLLERR | EPOLLHUP)) && c->state == S_HELLO) {
                    conn_free(p, c); /* the host is gone before the tunnel was let through */
                    break;
                }
                if (kind == TAG_UPSTREAM && (ev & EPOLLERR) && c->state == S_RELAY) {
                    conn_free(p, c);
                    break;
                }
                if (c->state == S_HEAD && kind == TAG_CLIENT)
                    read_head(p, c);
                else if (c->state == S_HELLO && kind == TAG_CLIENT)
                    hello_step(p, c);
                else if (c->state == S_CONNECT && kind == TAG_UPSTREAM) {
                    connect_done(p, c);
                    if (c->state == S_RELAY)
                        relay(p, c);
                    else if (c->state == S_HELLO)
                        hello_step(p, c);
                    else
                        conn_update(p, c);
                } else if (c->state == S_RELAY)
                    relay(p, c);
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
        conn_free(p, p->conns);
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
    if ((e = add_fd(p, listen_fd, KEY(0, TAG_LISTEN), EPOLLIN)) < 0 ||
        (e = add_fd(p, p->stop_fd, KEY(0, TAG_STOP), EPOLLIN)) < 0 ||
        (e = add_fd(p, r->wake_fd, KEY(0, TAG_LOOKUP), EPOLLIN)) < 0)
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
    resolver_unref_locked(r);
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
    resolver_unref_locked(p->res);
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
