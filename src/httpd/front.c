/* SPDX-License-Identifier: MIT */
/*
 * front.c - the front door: one thread accepts every connection, gives libmicrohttpd one end of
 * a socket pair and relays bytes between the client and the other end (epoll, edge-triggered,
 * a bounded buffer each way). A request head is held back until it is complete and checked;
 * a body of known length is passed through and counted, so that every head on a kept-alive
 * connection is checked too. A chunked body is passed through uncounted: the server answers
 * such a request with Connection: close, so nothing after it is ever read as a request.
 *
 * A refused head is not passed on: the client's side is read no more, libmicrohttpd's side is
 * shut for writing so that it answers what it already has and closes, then our JSON error
 * follows on the wire and the connection closes. Timeouts are libmicrohttpd's: a connection
 * idle (or holding back a head) past its timeout is closed by it, and so by us.
 */
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "request.h"

#define FRONT_HEAD_MAX (16U << 10) /* a request head, request line included */
#define FRONT_IN_SIZE (32U << 10)  /* client to libmicrohttpd */
#define FRONT_OUT_SIZE (32U << 10) /* libmicrohttpd to client */
#define FRONT_MAX_CONNS 1000       /* below libmicrohttpd's own default limit (1020) */
#define FRONT_LINGER_MS 2000       /* reading and dropping after our last byte, then close */
#define FRONT_LINGER_MAX (1U << 20)
#define FRONT_PAUSE_MS 100 /* out of fds: accept again after this long */
#define FRONT_STOP_MS 2000 /* front_free() relays what is in flight for this long */
#define FRONT_EVENTS 64

enum fstate {
    F_HEAD,    /* collecting a request head at in[fwd] */
    F_BODY,    /* passing `body` more bytes of a body */
    F_BLIND,   /* after a chunked head: passing everything */
    F_REFUSED, /* a head was refused: waiting for libmicrohttpd to close, then our error */
    F_CLOSING, /* everything is sent: dropping what the client still sends, then close */
};

struct fconn;

struct fend {
    struct fconn *conn;
    int fd;
    bool rd, wr; /* edge-triggered readiness, cleared at EAGAIN */
    bool eof;
};

struct fconn {
    struct fend cli, mhd;
    struct fconn *next, *prev; /* all connections */
    struct fconn *dead_next;   /* freed after the current batch of events */
    bool dead;
    enum fstate state;
    uint64_t body;   /* F_BODY: bytes still to pass */
    size_t line_pos; /* F_HEAD: where the line being scanned starts, from in[fwd] */
    size_t scan_pos; /* F_HEAD: bytes of the head already scanned, from in[fwd] */
    bool mhd_shut;   /* libmicrohttpd's side is shut for writing */
    uint64_t linger_until_ms;
    size_t lingered;
    char in[FRONT_IN_SIZE];
    size_t in_len, fwd; /* in[0, fwd) is checked and waits to go to libmicrohttpd */
    char out[FRONT_OUT_SIZE];
    size_t out_off, out_len;
    char err[512]; /* our answer to a refused head */
    size_t err_len;
    bool err_queued;
    struct sockaddr_storage sa;
    socklen_t sa_len;
};

struct front {
    struct front_config cfg;
    int ep, wake;
    int listen_tag, wake_tag; /* their addresses tag epoll events */
    bool listening, stopping; /* stopping: __atomic */
    pthread_t thread;
    struct fconn *conns, *dead;
    size_t n_conns, n_closing;
    uint64_t paused_until_ms; /* accepting paused (out of fds) until then; 0: not paused */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
}

/* ---- the head check ---------------------------------------------------------------------- */

static int refuse(char *msg, size_t msg_size, int status, const char *text)
{
    snprintf(msg, msg_size, "%s", text);
    return status;
}

/* Digits only, as libmicrohttpd reads them; 1 when beyond 2^64-1, -1 when not a number. */
static int parse_length(const char *v, size_t n, uint64_t *ret)
{
    uint64_t x = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return 1;
        x = x * 10 + d;
    }
    *ret = x;
    return 0;
}

static bool name_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

int front_check_head(const char *head, size_t len, struct front_head *h, char *msg, size_t msg_size)
{
    *h = (struct front_head){.framing = FRONT_NO_BODY};
    bool seen_cl = false, seen_te = false;
    /* A NUL ends a line early for libmicrohttpd, a bare CR is no line end for it but may be
     * for another parser: neither is allowed anywhere in a head. */
    for (size_t i = 0; i < len; i++) {
        if (head[i] == '\0' || (head[i] == '\r' && (i + 1 == len || head[i + 1] != '\n')))
            return refuse(msg, msg_size, 400, "a NUL or a bare CR in the request head");
    }
    size_t pos = 0, lineno = 0;
    while (pos < len) {
        const char *line = head + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        if (n && line[n - 1] == '\r')
            n--;
        if (lineno++ == 0) {
            /* The request line: METHOD SP TARGET SP HTTP/x.y */
            const char *sp1 = memchr(line, ' ', n);
            const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line)) : NULL;
            if (!sp1 || sp1 == line || !sp2 || sp2 == sp1 + 1 || (size_t)(line + n - sp2 - 1) < 5 ||
                strncmp(sp2 + 1, "HTTP/", 5) != 0)
                return refuse(msg, msg_size, 400, "a malformed request line");
            snprintf(h->method, sizeof(h->method), "%.*s", (int)(sp1 - line), line);
            snprintf(h->path, sizeof(h->path), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
            continue;
        }
        if (n == 0)
            break; /* the end of the head */
        if (line[0] == ' ' || line[0] == '\t')
            return refuse(msg, msg_size, 400, "a folded header line");
        const char *colon = memchr(line, ':', n);
        if (!colon || colon == line)
            return refuse(msg, msg_size, 400, "a header line without a name and a colon");
        size_t name_len = (size_t)(colon - line);
        if (memchr(line, ' ', name_len) || memchr(line, '\t', name_len))
            return refuse(msg, msg_size, 400, "whitespace in a header name");
        const char *v = colon + 1;
        size_t vn = n - name_len - 1;
        while (vn && (*v == ' ' || *v == '\t')) {
            v++;
            vn--;
        }
        if (name_is(line, name_len, "Content-Length")) {
            if (seen_cl)
                return refuse(msg, msg_size, 400, "more than one Content-Length");
            seen_cl = true;
            int r = parse_length(v, vn, &h->length);
            if (r < 0)
                return refuse(msg, msg_size, 400, "Content-Length is not a number of bytes");
            if (r > 0)
                return refuse(msg, msg_size, 413, "Content-Length is too large");
            h->framing = FRONT_LENGTH;
        } else if (name_is(line, name_len, "Transfer-Encoding")) {
            /* libmicrohttpd reads a body of any other coding to the end of the connection. */
            if (seen_te)
                return refuse(msg, msg_size, 400, "more than one Transfer-Encoding");
            seen_te = true;
            if (!name_is(v, vn, "chunked"))
                return refuse(msg, msg_size, 400, "a Transfer-Encoding other than chunked");
        }
    }
    if (seen_cl && seen_te)
        return refuse(msg, msg_size, 400, "both Content-Length and Transfer-Encoding");
    if (seen_te)
        h->framing = FRONT_CHUNKED;
    return 0;
}

/* ---- connections ------------------------------------------------------------------------- */

static void listen_arm(struct front *f, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &f->listen_tag};
    epoll_ctl(f->ep, EPOLL_CTL_MOD, f->cfg.listen_fd, &ev);
}

static void conn_kill(struct front *f, struct fconn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    if (c->state == F_CLOSING)
        f->n_closing--;
    /* Out of the epoll set before close(): a sandbox forked meanwhile may hold copies of
     * these fds, which would keep them in the set with a pointer to freed memory. */
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->cli.fd, NULL);
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->mhd.fd, NULL);
    close(c->cli.fd);
    close(c->mhd.fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->dead_next = f->dead;
    f->dead = c;
    if (f->n_conns-- == f->cfg.max_conns && f->listening && !f->paused_until_ms)
        listen_arm(f, true);
}

static void reap(struct front *f)
{
    while (f->dead) {
        struct fconn *c = f->dead;
        f->dead = c->dead_next;
        free(c);
    }
}

/* Refuses the head at in[fwd]: our answer waits until libmicrohttpd has closed its side. */
static void conn_refuse(struct front *f, struct fconn *c, int status, const char *msg,
                        const struct front_head *h)
{
    char id[72] = "";
    f->cfg.ops->refused(f->cfg.ud, status, h->method[0] ? h->method : "-",
                        h->path[0] ? h->path : "-", (struct sockaddr *)&c->sa, id, sizeof(id));
    char text[160];
    if (status == 413)
        snprintf(text, sizeof(text), "%s: the body is larger than the limit of %zu bytes", msg,
                 f->cfg.max_body);
    else
        snprintf(text, sizeof(text), "%s", msg);
    char *body = srv_error_json(status == 413 ? "payload_too_large" : "bad_request", text, NULL);
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(c->err, sizeof(c->err),
                     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Cache-Control: no-store\r\nX-Request-Id: %s\r\nContent-Length: %zu\r\n\r\n"
                     "%s",
                     status, status == 413 ? "Content Too Large" : "Bad Request", id, blen,
                     body ? body : "");
    free(body);
    c->err_len = n > 0 && (size_t)n < sizeof(c->err) ? (size_t)n : 0;
    c->state = F_REFUSED;
    c->in_len = c->fwd; /* the refused head is never passed on */
}

/* Advances the framing over the bytes the client sent that are not checked yet. */
static void scan(struct front *f, struct fconn *c)
{
    while (c->fwd < c->in_len) {
        size_t avail = c->in_len - c->fwd;
        if (c->state == F_BLIND) {
            c->fwd = c->in_len;
        } else if (c->state == F_BODY) {
            size_t n = avail < c->body ? avail : (size_t)c->body;
            c->fwd += n;
            c->body -= n;
            if (c->body == 0)
                c->state = F_HEAD;
        } else if (c->state == F_HEAD) {
            const char *h = c->in + c->fwd;
            /* Empty lines before a request line are passed on; libmicrohttpd skips them. */
            if (c->scan_pos == 0 && (h[0] == '\n' || (h[0] == '\r' && avail > 1 && h[1] == '\n'))) {
                c->fwd += h[0] == '\n' ? 1 : 2;
                continue;
            }
            if (c->scan_pos == 0 && h[0] == '\r' && avail == 1)
                return;
            size_t end = 0;
            for (size_t i = c->scan_pos; i < avail; i++) {
                if (h[i] != '\n')
                    continue;
                size_t ll = i - c->line_pos;
                bool empty = ll == 0 || (ll == 1 && h[i - 1] == '\r');
                if (empty && c->line_pos > 0) {
                    end = i + 1;
                    break;
                }
                c->line_pos = i + 1;
            }
            if (!end) {
                c->scan_pos = avail;
                if (avail >= FRONT_HEAD_MAX) {
                    struct front_head none = {0};
                    conn_refuse(f, c, 400, "the request head is too large", &none);
                }
                return;
            }
            c->scan_pos = c->line_pos = 0;
            struct front_head hd = {0};
            char msg[96];
            int st = front_check_head(h, end, &hd, msg, sizeof(msg));
            if (st) {
                conn_refuse(f, c, st, msg, &hd);
                return;
            }
            c->fwd += end;
            if (hd.framing == FRONT_LENGTH && hd.length) {
                c->state = F_BODY;
                c->body = hd.length;
            } else if (hd.framing == FRONT_CHUNKED) {
                c->state = F_BLIND;
            }
        } else {
            return;
        }
    }
}

static bool would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* Moves whatever can move now; kills the connection when it is over. */
static void pump(struct front *f, struct fconn *c)
{
    for (bool progress = true; progress && !c->dead;) {
        progress = false;
        /* checked client bytes -> libmicrohttpd */
        if (c->fwd && c->mhd.wr && !c->mhd_shut) {
            ssize_t n = send(c->mhd.fd, c->in, c->fwd, MSG_NOSIGNAL);
            if (n > 0) {
                memmove(c->in, c->in + n, c->in_len - (size_t)n);
                c->in_len -= (size_t)n;
                c->fwd -= (size_t)n;
                progress = true;
            } else if (n < 0 && would_block()) {
                c->mhd.wr = false;
            } else if (n < 0 && errno != EINTR) {
                conn_kill(f, c);
                return;
            }
        }
        /* The client is done sending (or was refused): libmicrohttpd sees the end once it
         * has what was checked. */
        if (!c->mhd_shut && ((c->cli.eof && c->state != F_CLOSING) || c->state == F_REFUSED) &&
            (c->fwd == 0 || c->cli.eof)) {
            shutdown(c->mhd.fd, SHUT_WR);
            c->mhd_shut = true;
            c->fwd = c->in_len = 0;
        }
        /* libmicrohttpd -> client */
        if (c->out_len > c->out_off && c->cli.wr) {
            ssize_t n = send(c->cli.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
            if (n > 0) {
                c->out_off += (size_t)n;
                if (c->out_off == c->out_len)
                    c->out_off = c->out_len = 0;
                progress = true;
            } else if (n < 0 && would_block()) {
                c->cli.wr = false;
            } else if (n < 0 && errno != EINTR) {
                conn_kill(f, c);
                return;
            }
        }
        if (c->mhd.rd && !c->mhd.eof && c->out_len < sizeof(c->out)) {
            ssize_t n = recv(c->mhd.fd, c->out + c->out_len, sizeof(c->out) - c->out_len, 0);
            if (n > 0) {
                c->out_len += (size_t)n;
                progress = true;
            } else if (n == 0 || (n < 0 && !would_block() && errno != EINTR)) {
                c->mhd.eof = true;
                progress = true;
            } else if (n < 0 && would_block()) {
                c->mhd.rd = false;
            }
        }
        /* libmicrohttpd closed and everything it said is sent: our error, if any, goes last. */
        if (c->mhd.eof && c->out_len == 0 && c->state != F_CLOSING) {
            if (c->state == F_REFUSED && !c->err_queued && c->err_len) {
                memcpy(c->out, c->err, c->err_len);
                c->out_len = c->err_len;
                c->err_queued = true;
                progress = true;
                continue;
            }
            /* Shut for writing and drop what still comes, so that unread bytes do not make
             * the close a reset that could destroy the answer before the client reads it. */
            shutdown(c->cli.fd, SHUT_WR);
            c->state = F_CLOSING;
            f->n_closing++;
            c->linger_until_ms = now_ms() + FRONT_LINGER_MS;
            progress = true;
        }
        /* client -> checked or dropped */
        if (c->cli.rd && !c->cli.eof && c->state != F_REFUSED) {
            char drop[4096];
            bool closing = c->state == F_CLOSING;
            char *dst = closing ? drop : c->in + c->in_len;
            size_t room = closing ? sizeof(drop) : sizeof(c->in) - c->in_len;
            if (room) {
                ssize_t n = recv(c->cli.fd, dst, room, 0);
                if (n > 0) {
                    progress = true;
                    if (closing) {
                        c->lingered += (size_t)n;
                    } else {
                        c->in_len += (size_t)n;
                        scan(f, c);
                    }
                } else if (n == 0 || (n < 0 && !would_block() && errno != EINTR)) {
                    c->cli.eof = true;
                    progress = true;
                } else if (n < 0 && would_block()) {
                    c->cli.rd = false;
                }
            }
        }
        if (c->state == F_CLOSING &&
            (c->cli.eof || c->lingered > FRONT_LINGER_MAX || now_ms() >= c->linger_until_ms)) {
            conn_kill(f, c);
            return;
        }
    }
}

/* Accepts one connection; false when there is none to take now. */
static bool accept_one(struct front *f)
{
    struct sockaddr_storage sa;
    socklen_t sa_len = sizeof(sa);
    int fd =
        accept4(f->cfg.listen_fd, (struct sockaddr *)&sa, &sa_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EINVAL) { /* shut down by front_quiesce() */
            epoll_ctl(f->ep, EPOLL_CTL_DEL, f->cfg.listen_fd, NULL);
            f->listening = false;
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* Out of fds or memory: the listen fd stays readable, so wait a little rather
             * than spin; the backlog holds the clients meanwhile. */
            listen_arm(f, false);
            f->paused_until_ms = now_ms() + FRONT_PAUSE_MS;
        }
        return false;
    }
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0) {
        close(fd);
        return false;
    }
    struct fconn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        close(pair[0]);
        close(pair[1]);
        return false;
    }
    c->cli = (struct fend){.conn = c, .fd = fd};
    c->mhd = (struct fend){.conn = c, .fd = pair[0]};
    memcpy(&c->sa, &sa, sa_len);
    c->sa_len = sa_len;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
    ev.data.ptr = &c->cli;
    int r = epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev);
    ev.data.ptr = &c->mhd;
    if (r == 0)
        r = epoll_ctl(f->ep, EPOLL_CTL_ADD, pair[0], &ev);
    if (r < 0) {
        close(fd);
        close(pair[0]);
        close(pair[1]);
        free(c);
        return false;
    }
    c->next = f->conns;
    if (f->conns)
        f->conns->prev = c;
    f->conns = c;
    if (++f->n_conns == f->cfg.max_conns)
        listen_arm(f, false); /* full: new connections wait in the listen backlog */
    if (!f->cfg.ops->hand_off(f->cfg.ud, pair[1], (struct sockaddr *)&sa, sa_len))
        conn_kill(f, c);
    return true;
}

static void *front_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-front"); /* in ps, top -H and perf */
    struct front *f = arg;
    struct epoll_event evs[FRONT_EVENTS];
    uint64_t stop_at = 0;
    for (;;) {
        bool stopping = __atomic_load_n(&f->stopping, __ATOMIC_ACQUIRE);
        if (stopping && !stop_at) {
            stop_at = now_ms() + FRONT_STOP_MS;
            if (f->listening)
                epoll_ctl(f->ep, EPOLL_CTL_DEL, f->cfg.listen_fd, NULL);
            f->listening = false;
        }
        if (stopping && (!f->conns || now_ms() >= stop_at))
            break;
        if (f->paused_until_ms && now_ms() >= f->paused_until_ms) {
            f->paused_until_ms = 0;
            if (f->listening && f->n_conns < f->cfg.max_conns)
                listen_arm(f, true);
        }
        bool lingering = f->n_closing > 0;
        int n = epoll_wait(f->ep, evs, FRONT_EVENTS,
                           stopping || lingering || f->paused_until_ms ? 100 : -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &f->listen_tag) {
                for (int k = 0; k < FRONT_EVENTS && f->listening && !f->paused_until_ms &&
                                f->n_conns < f->cfg.max_conns && accept_one(f);
                     k++)
                    ;
                continue;
            }
            if (p == &f->wake_tag) {
                uint64_t v;
                (void)!read(f->wake, &v, sizeof(v));
                continue;
            }
            struct fend *e = p;
            if (e->conn->dead)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                e->rd = true;
            if (evs[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
                e->wr = true;
            pump(f, e->conn);
        }
        if (lingering) {
            uint64_t t = now_ms();
            for (struct fconn *c = f->conns, *next; c; c = next) {
                next = c->next;
                if (c->state == F_CLOSING && t >= c->linger_until_ms)
                    conn_kill(f, c);
            }
        }
        reap(f);
    }
    while (f->conns)
        conn_kill(f, f->conns);
    reap(f);
    return NULL;
}

int front_start(const struct front_config *cfg, struct front **ret, struct execbox_error *err)
{
    struct front *f = calloc(1, sizeof(*f));
    if (!f) {
        close(cfg->listen_fd);
        snprintf(err->msg, sizeof(err->msg), "cannot start the front door: out of memory");
        err->code = -ENOMEM;
        return -ENOMEM;
    }
    f->cfg = *cfg;
    if (!f->cfg.max_conns)
        f->cfg.max_conns = FRONT_MAX_CONNS;
    f->wake = -1;
    f->ep = epoll_create1(EPOLL_CLOEXEC);
    if (f->ep >= 0)
        f->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int r = f->ep < 0 || f->wake < 0 ? -errno : 0;
    if (r == 0 && fcntl(cfg->listen_fd, F_SETFL, fcntl(cfg->listen_fd, F_GETFL) | O_NONBLOCK) < 0)
        r = -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &f->listen_tag};
    if (r == 0 && epoll_ctl(f->ep, EPOLL_CTL_ADD, cfg->listen_fd, &ev) < 0)
        r = -errno;
    ev.data.ptr = &f->wake_tag;
    if (r == 0 && epoll_ctl(f->ep, EPOLL_CTL_ADD, f->wake, &ev) < 0)
        r = -errno;
    f->listening = true;
    if (r == 0) {
        r = -pthread_create(&f->thread, NULL, front_main, f);
        if (r == 0) {
            *ret = f;
            return 0;
        }
    }
    if (f->ep >= 0)
        close(f->ep);
    if (f->wake >= 0)
        close(f->wake);
    close(cfg->listen_fd);
    free(f);
    snprintf(err->msg, sizeof(err->msg), "cannot start the front door: %s", strerror(-r));
    err->code = r;
    return r;
}

void front_quiesce(struct front *f)
{
    /* shutdown() rather than close(): it stops the socket itself listening, also in any
     * sandbox process that was forked holding a copy of it; the thread then drops it from its
     * epoll set, and front_free() closes it. */
    shutdown(f->cfg.listen_fd, SHUT_RDWR);
}

struct front *front_free(struct front *f)
{
    if (!f)
        return NULL;
    __atomic_store_n(&f->stopping, true, __ATOMIC_RELEASE);
    uint64_t one = 1;
    (void)!write(f->wake, &one, sizeof(one));
    pthread_join(f->thread, NULL);
    close(f->ep);
    close(f->wake);
    close(f->cfg.listen_fd);
    free(f);
    return NULL;
}
