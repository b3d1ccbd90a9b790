/* SPDX-License-Identifier: MIT */
/* netproxy_http.c - the proxy's side of a request (netproxy_int.h): the HTTP/1 head parsed, the
 * allow-list applied to the name and port asked for, the head a plain request is forwarded
 * with, its refusals, and the TLS hello check of a CONNECT tunnel to a name. */
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

/* Ends the request with an error response of our own (status, reason); the connection closes
 * once the client has it. */
void eb_px_reply_error(struct eb_proxy *p, struct conn *c, int status, const char *reason)
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
    if (n < 0 || (size_t)n >= sizeof(msg) || eb_px_buf_alloc(&c->u2c, false) < 0) {
        c->c_eof = c->u_eof = c->c_shut = c->u_shut = true;
        c->u2c.off = c->u2c.len = 0;
        return;
    }
    c->c2u.off = c->c2u.len = 0;
    c->u2c.off = c->u2c.len = 0;
    eb_px_buf_put(&c->u2c, msg, (size_t)n);
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
        eb_px_reply_error(p, c, 400, "not an HTTP/1 proxy request");
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
            eb_px_reply_error(p, c, 400, "CONNECT needs host:port");
            return;
        }
    } else {
        if (tlen < 7 || strncasecmp(target, "http://", 7) != 0) {
            eb_px_reply_error(p, c, 400,
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
            eb_px_reply_error(p, c, 400, "user information in the URL is not accepted");
            return;
        }
        if (split_authority(authority, alen, 80, host, sizeof(host), &port) < 0) {
            eb_px_reply_error(p, c, 400, "bad host or port in the URL");
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
        eb_px_reply_error(p, c, 400, "not a host name or address");
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
        eb_px_reply_error(p, c, 403, why);
        return;
    }
    if (e)
        e->allowed = true;
    c->c2u_left = UINT64_MAX;
    if (!c->is_connect) {
        int br = request_body_len(eol + 1, end - (size_t)(eol + 1 - h), &c->c2u_left);
        if (br == -ENOTSUP) {
            eb_px_reply_error(p, c, 501,
                              "a chunked request body is not forwarded (send Content-Length)");
            return;
        }
        if (br < 0) {
            eb_px_reply_error(p, c, 400, "bad Content-Length");
            return;
        }
        if (build_forward_head(c, method, mlen, path, plen, version, vlen, eol + 1,
                               end - (size_t)(eol + 1 - h), authority, alen) < 0) {
            eb_px_reply_error(p, c, 503, "out of memory");
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
        eb_px_start_connect(p, c);
    } else if (strcmp(c->target.name, "localhost") == 0) {
        /* "localhost" always means this machine's loopback, never what a resolver says. */
        struct sockaddr_in *a = (struct sockaddr_in *)&c->addrs[0];
        memset(&c->addrs[0], 0, sizeof(c->addrs[0]));
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c->n_addrs = 1;
        c->via_localhost = true;
        eb_px_start_connect(p, c);
    } else {
        eb_px_start_lookup(p, c);
    }
}

/* S_HELLO: the tunnel's first client bytes must be a TLS ClientHello whose server name is the
 * CONNECT host (a name: an allowed name must not front for another on a shared server). No
 * name, not TLS, a malformed hello or another name: the tunnel is closed before a byte of it
 * reaches the host. */
void eb_px_hello_step(struct eb_proxy *p, struct conn *c)
{
    uint64_t sent = 0;
    if (!eb_px_pump_out(c->cfd, &c->u2c, &sent)) {
        eb_px_conn_free(p, c);
        return;
    }
    c->own -= sent < c->own ? (size_t)sent : c->own;
    if (c->head_len < EB_TLS_RECORD_MAX) {
        ssize_t n = read(c->cfd, c->head + c->head_len, EB_TLS_RECORD_MAX - c->head_len);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            eb_px_conn_free(p, c);
            return;
        }
        if (n > 0)
            c->head_len += (size_t)n;
    }
    char name[256];
    enum eb_sni_result r =
        eb_tls_sni((const unsigned char *)c->head, c->head_len, name, sizeof(name));
    if (r == EB_SNI_MORE && c->head_len < EB_TLS_RECORD_MAX) {
        eb_px_conn_update(p, c);
        return;
    }
    struct eb_target t;
    if (r != EB_SNI_FOUND || eb_target_parse(name, &t) < 0 || t.is_addr ||
        strcmp(t.name, c->target.name) != 0) {
        struct execbox_egress *e = egress_of(p, c);
        if (e)
            e->allowed = false; /* on the record as refused: the hello named no allowed host */
        eb_px_conn_free(p, c);
        return;
    }
    eb_px_buf_put(&c->c2u, c->head, c->head_len);
    free(c->head);
    c->head = NULL;
    c->state = S_RELAY;
    c->deadline_ns = eb_now_ns() + ms_ns(EB_PROXY_IDLE_TIMEOUT_MS);
    eb_px_relay(p, c);
}

void eb_px_read_head(struct eb_proxy *p, struct conn *c)
{
    ssize_t n = read(c->cfd, c->head + c->head_len, EB_PROXY_HEAD_MAX - c->head_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        eb_px_conn_free(p, c);
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
        eb_px_reply_error(p, c, 431, "request head larger than 8 KiB");
    }
    eb_px_conn_update(p, c);
}
