/* SPDX-License-Identifier: MIT */
/* text.c - the encodings every surface needs: UTF-8 made valid (for JSON) and base64. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "execbox/execbox.h"

/* The valid UTF-8 sequence at s: its length (1..4), 0 when invalid (overlongs, surrogates and
 * code points above U+10FFFF are invalid, as RFC 3629 says), or -1 when s[0..n) is a valid
 * but incomplete start of one. */
static int utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    int len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* no overlongs */
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -1;
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
            return 0;
    }
    return len;
}

char *execbox_utf8_sanitize(const char *data, size_t len, size_t *ret_len, size_t *ret_pending)
{
    /* Worst case every byte becomes the 3-byte replacement character. */
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *)data;
    size_t o = 0, i = 0, pending = 0;
    while (i < len) {
        int n = utf8_seq(s + i, len - i);
        if (n < 0 && ret_pending) {
            pending = len - i; /* the rest of it comes with the stream's next chunk */
            break;
        }
        if (n <= 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, s + i, (size_t)n);
        o += (size_t)n;
        i += (size_t)n;
    }
    out[o] = '\0';
    if (ret_len)
        *ret_len = o;
    if (ret_pending)
        *ret_pending = pending;
    return out;
}

char *execbox_base64(const void *data, size_t len)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *d = data;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)d[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)d[i + 1] << 8;
        if (i + 2 < len)
            v |= d[i + 2];
        out[o++] = tbl[(v >> 18) & 63];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tbl[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static int b64_value(char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

/* The one base64 decoder. strict: whole padded quanta, nothing outside the alphabet. Otherwise
 * (text from MIME bundles) whitespace is skipped and the padding may be left out; '=' still
 * ends the data. */
static int decode(const char *s, size_t len, bool strict, unsigned char **ret, size_t *ret_len)
{
    if (strict && len % 4)
        return -EBADMSG;
    unsigned char *out = malloc(len / 4 * 3 + 3);
    if (!out)
        return -ENOMEM;
    size_t o = 0, pad = 0, seen = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!strict && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad) {
            free(out);
            return -EBADMSG;
        }
        seen++;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1U << bits) - 1;
        }
    }
    /* Strict: '=' only fills the last quantum, at most two of them. Either way a last quantum
     * of one character (6 bits, not a byte) is never base64. */
    if ((strict && (pad > 2 || (seen + pad) % 4)) || seen % 4 == 1) {
        free(out);
        return -EBADMSG;
    }
    out[o] = 0;
    *ret = out;
    *ret_len = o;
    return 0;
}

int eb_base64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
    return decode(s, len, true, ret, ret_len);
}

unsigned char *execbox_base64_decode(const char *s, size_t len, size_t *ret_len)
{
    unsigned char *out = NULL;
    return decode(s, len, false, &out, ret_len) == 0 ? out : NULL;
}
