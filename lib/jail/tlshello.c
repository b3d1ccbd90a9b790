/* SPDX-License-Identifier: MIT */
/* tlshello.c - the server name of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3): every length
 * is checked against what encloses it before it is used; nothing is read past n. */
#include "jail/tlshello.h"

#include <stdint.h>
#include <string.h>

/* A cursor over [p, end). Every read checks the bytes are there. */
struct cur {
    const unsigned char *p, *end;
};

static int take(struct cur *c, size_t k, const unsigned char **out)
{
    if ((size_t)(c->end - c->p) < k)
        return -1;
    *out = c->p;
    c->p += k;
    return 0;
}

static int u8(struct cur *c, size_t *v)
{
    const unsigned char *b;
    if (take(c, 1, &b) < 0)
        return -1;
    *v = b[0];
    return 0;
}

static int u16(struct cur *c, size_t *v)
{
    const unsigned char *b;
    if (take(c, 2, &b) < 0)
        return -1;
    *v = (size_t)b[0] << 8 | b[1];
    return 0;
}

/* A sub-cursor of len bytes (len read by the caller), the outer one moved past it. */
static int sub(struct cur *c, size_t len, struct cur *s)
{
    const unsigned char *b;
    if (take(c, len, &b) < 0)
        return -1;
    s->p = b;
    s->end = b + len;
    return 0;
}

/* The server_name extension's body: a list of (type, name); the host_name (type 0) one. */
static enum eb_sni_result server_name(struct cur *e, char *name, size_t size)
{
    size_t list_len, type, len;
    struct cur list;
    if (u16(e, &list_len) < 0 || sub(e, list_len, &list) < 0 || e->p != e->end)
        return EB_SNI_MALFORMED;
    while (list.p < list.end) {
        const unsigned char *s;
        if (u8(&list, &type) < 0 || u16(&list, &len) < 0 || take(&list, len, &s) < 0)
            return EB_SNI_MALFORMED;
        if (type != 0)
            continue;
        if (len == 0 || len >= size || len > 255 || memchr(s, '\0', len))
            return EB_SNI_MALFORMED;
        memcpy(name, s, len);
        name[len] = '\0';
        return EB_SNI_FOUND;
    }
    return EB_SNI_NONE;
}

enum eb_sni_result eb_tls_sni(const unsigned char *buf, size_t n, char *name, size_t size)
{
    /* The record header: handshake (22), a 3.x version, the body's length. */
    if (n >= 1 && buf[0] != 22)
        return EB_SNI_NOT_TLS;
    if (n >= 2 && buf[1] != 3)
        return EB_SNI_NOT_TLS;
    if (n < 5)
        return EB_SNI_MORE;
    size_t rec_len = (size_t)buf[3] << 8 | buf[4];
    if (rec_len == 0 || rec_len > 16384)
        return EB_SNI_MALFORMED;
    if (n < 5 + rec_len)
        return EB_SNI_MORE;
    struct cur rec = {buf + 5, buf + 5 + rec_len};
    /* The handshake message: ClientHello (1), a 24-bit length that must fit the record (a
     * hello split over records is not read: it is refused as NOT_TLS). */
    size_t type, hs_hi, hs_lo;
    if (u8(&rec, &type) < 0 || type != 1)
        return EB_SNI_NOT_TLS;
    if (u8(&rec, &hs_hi) < 0 || u16(&rec, &hs_lo) < 0)
        return EB_SNI_MALFORMED;
    size_t hs_len = hs_hi << 16 | hs_lo;
    struct cur h;
    if (sub(&rec, hs_len, &h) < 0)
        return EB_SNI_NOT_TLS;
    const unsigned char *skip;
    size_t len;
    /* legacy_version, random, session id, cipher suites, compression methods */
    if (take(&h, 2 + 32, &skip) < 0 || u8(&h, &len) < 0 || len > 32 || take(&h, len, &skip) < 0 ||
        u16(&h, &len) < 0 || len < 2 || len % 2 || take(&h, len, &skip) < 0 || u8(&h, &len) < 0 ||
        len < 1 || take(&h, len, &skip) < 0)
        return EB_SNI_MALFORMED;
    if (h.p == h.end)
        return EB_SNI_NONE; /* no extensions at all */
    struct cur exts;
    if (u16(&h, &len) < 0 || sub(&h, len, &exts) < 0 || h.p != h.end)
        return EB_SNI_MALFORMED;
    while (exts.p < exts.end) {
        size_t etype, elen;
        struct cur e;
        if (u16(&exts, &etype) < 0 || u16(&exts, &elen) < 0 || sub(&exts, elen, &e) < 0)
            return EB_SNI_MALFORMED;
        if (etype == 0)
            return server_name(&e, name, size);
    }
    return EB_SNI_NONE;
}
