/* SPDX-License-Identifier: MIT */
/* netproxy_int.h - the inside of one run's proxy (netproxy.h), shared by its three parts: the
 * event loop and the moving of bytes (netproxy.c), the request, its refusals and the TLS hello
 * check (netproxy_http.c), and the name lookups and connecting (netproxy_dns.c). All of it runs
 * on the proxy's own thread but the resolver thread (struct resolver). */
#ifndef EB_JAIL_NETPROXY_INT_H
#define EB_JAIL_NETPROXY_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/limits.h"
#include "execbox/execbox.h"
#include "jail/netproxy.h"
#include "model/hostrule.h"

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

static inline uint64_t ms_ns(unsigned ms)
{
    return (uint64_t)ms * 1000000ULL;
}

/* c's entry in the egress record, or NULL (the record was full). */
static inline struct execbox_egress *egress_of(struct eb_proxy *p, struct conn *c)
{
    return c->egress >= 0 ? &p->egress[c->egress] : NULL;
}

/* ---- the loop (netproxy.c) ---- */

/* Sets the events fd (key) waits for, when they differ from *cur. */
void eb_px_set_events(struct eb_proxy *p, int fd, uint64_t key, uint32_t *cur, uint32_t want);

/* Adds fd (key) to the loop's epoll set. 0 or -errno. */
int eb_px_add_fd(struct eb_proxy *p, int fd, uint64_t key, uint32_t events);

/* Closes c's sockets and pipes, unlinks and frees it. */
void eb_px_conn_free(struct eb_proxy *p, struct conn *c);

/* Readies b: with want_pipe a pipe of EB_PROXY_BUF for the stream and a buffer for the proxy's
 * own bytes only; else (or when no pipe can be had) a buffer for everything. 0 or -ENOMEM. */
int eb_px_buf_alloc(struct pbuf *b, bool want_pipe);

/* Appends n bytes of s to b's buffer (what fits). */
void eb_px_buf_put(struct pbuf *b, const char *s, size_t n);

/* Registers what each side of c waits for; frees c when both ways are done. */
void eb_px_conn_update(struct eb_proxy *p, struct conn *c);

/* Writes from b to fd (the proxy's own bytes first, then the pipe's); adds the bytes sent to
 * *count. false on a hard error. */
bool eb_px_pump_out(int fd, struct pbuf *b, uint64_t *count);

/* S_RELAY: moves bytes both ways as far as they go now, then eb_px_conn_update (or frees c on a
 * hard error). */
void eb_px_relay(struct eb_proxy *p, struct conn *c);

/* ---- the request (netproxy_http.c) ---- */

/* Ends the request with an error response of our own (status, reason; the reason goes on the
 * record too); the connection closes once the client has it. */
void eb_px_reply_error(struct eb_proxy *p, struct conn *c, int status, const char *reason);

/* S_HEAD: reads the client's request head; once it is complete, decides and goes on to the
 * lookup or the connect (or refuses). */
void eb_px_read_head(struct eb_proxy *p, struct conn *c);

/* S_HELLO: lets the tunnel through once the client's TLS hello names the CONNECT host; closes
 * it otherwise. */
void eb_px_hello_step(struct eb_proxy *p, struct conn *c);

/* ---- lookups and connecting (netproxy_dns.c) ---- */

/* Drops a reference to r, whose lock the caller holds (and which this unlocks); the last one
 * frees it. */
void eb_px_resolver_unref(struct resolver *r);

/* S_LOOKUP: c's name from the run's cache, from a lookup of the same name on its way, or asked
 * of the resolver thread (started at the first). */
void eb_px_start_lookup(struct eb_proxy *p, struct conn *c);

/* An answer (l): every connection waiting for it goes on to connect, or gets a 502. */
void eb_px_lookup_done(struct eb_proxy *p, const struct lookup *l);

/* Connects to c's next address that the run may reach (S_CONNECT); when none is left, a 403
 * (every address refused) or a 502. */
void eb_px_start_connect(struct eb_proxy *p, struct conn *c);

/* The upstream socket became writable while connecting: on to the next address, or the tunnel
 * answered (S_HELLO for a name, else S_RELAY) or the plain request's head sent on. */
void eb_px_connect_done(struct eb_proxy *p, struct conn *c);

#endif
