/* SPDX-License-Identifier: MIT */
/* hostrule.c - allow-list entries and address classes (see hostrule.h). */
#include "model/hostrule.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/error.h"
#include "base/util.h"

static const uint16_t default_ports[] = {80, 443, 0};

bool eb_port_listed(const uint16_t *ports, uint16_t port)
{
    if (!ports || !ports[0])
        ports = default_ports;
    for (size_t i = 0; i < EXECBOX_ALLOW_PORTS_MAX && ports[i]; i++)
        if (ports[i] == port)
            return true;
    return false;
}

/* A name as DNS knows it: labels of letters, digits, '-' and '_', 1 to 63 bytes, 253 in all.
 * Lower-cased into out. Something inet_aton would read as an address ("0x7f.1", "2130706433")
 * is not a name: the resolver would turn it into that address behind the allow-list's back. */
static bool name_ok(const char *in, size_t n, char out[256])
{
    if (n > 0 && in[n - 1] == '.')
        n--; /* "pypi.org." is "pypi.org" */
    if (n == 0 || n > 253)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if (isalnum(c) || c == '-' || c == '_') {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
        out[i] = (char)tolower(c);
    }
    out[n] = '\0';
    if (label == 0)
        return false;
    struct in_addr a;
    return inet_aton(out, &a) == 0;
}

static int parse_port(const char *s, uint16_t *ret)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!isdigit((unsigned char)s[0]) || errno || *end || v == 0 || v > 65535)
        return -EINVAL;
    *ret = (uint16_t)v;
    return 0;
}

static void mask_addr(uint8_t *a, unsigned prefix, unsigned bits)
{
    for (unsigned i = 0; i < bits / 8; i++) {
        unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;
        if (keep >= 8)
            continue;
        a[i] &= (uint8_t)(0xff00 >> keep);
    }
}

/* "a.b.c.d", "a.b.c.d/n", "v6", "v6/n" (no brackets) into r. */
static int parse_addr(const char *s, struct eb_host_rule *r)
{
    char buf[128];
    if (strlen(s) >= sizeof(buf))
        return -EINVAL;
    snprintf(buf, sizeof(buf), "%s", s);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash++ = '\0';
    if (inet_pton(AF_INET, buf, r->addr) == 1) {
        r->family = AF_INET;
        r->prefix = 32;
    } else if (inet_pton(AF_INET6, buf, r->addr) == 1) {
        r->family = AF_INET6;
        r->prefix = 128;
    } else {
        return -EINVAL;
    }
    if (slash) {
        char *end;
        unsigned long p = strtoul(slash, &end, 10);
        if (!isdigit((unsigned char)slash[0]) || *end || p > r->prefix)
            return -EINVAL;
        r->prefix = (unsigned)p;
    }
    mask_addr(r->addr, r->prefix, r->family == AF_INET ? 32 : 128);
    r->kind = EB_RULE_ADDR;
    return 0;
}

int eb_host_rule_parse(const char *entry, struct eb_host_rule *ret, struct execbox_error *err)
{
    struct eb_host_rule r;
    memset(&r, 0, sizeof(r));
    size_t n = entry ? strlen(entry) : 0;
    if (n == 0 || n >= EXECBOX_ALLOW_HOST_LEN)
        return eb_error_set(err, -EINVAL, "allow_hosts: '%.64s' is empty or too long",
                            entry ? entry : "");
    char host[EXECBOX_ALLOW_HOST_LEN];
    const char *port = NULL;
    if (entry[0] == '[') {
        /* "[v6]" or "[v6/n]", optionally ":port" */
        const char *close = strchr(entry, ']');
        if (!close || (close[1] && close[1] != ':'))
            goto bad;
        snprintf(host, sizeof(host), "%.*s", (int)(close - entry - 1), entry + 1);
        if (close[1] == ':')
            port = close + 2;
        if (parse_addr(host, &r) < 0 || r.family != AF_INET6)
            goto bad;
    } else {
        snprintf(host, sizeof(host), "%s", entry);
        char *c1 = strchr(host, ':');
        if (c1 && strchr(c1 + 1, ':')) {
            /* Two colons or more: an IPv6 address without a port (a port needs brackets). */
            if (parse_addr(host, &r) < 0)
                goto bad;
        } else {
            if (c1) {
                *c1 = '\0';
                port = entry + (c1 - host) + 1;
            }
            if (strcmp(host, "*") == 0)
                return eb_error_set(err, -EINVAL,
                                    "allow_hosts: '*' would allow every host; list the hosts "
                                    "(or '*.domain')");
            if (isdigit((unsigned char)host[0]) && parse_addr(host, &r) == 0) {
                /* an IPv4 address or range */
            } else if (strncmp(host, "*.", 2) == 0) {
                if (!name_ok(host + 2, strlen(host + 2), r.name) || !strchr(r.name, '.'))
                    goto bad; /* "*.com" is too wide to be meant */
                r.kind = EB_RULE_WILDCARD;
            } else if (name_ok(host, strlen(host), r.name)) {
                r.kind = EB_RULE_NAME;
            } else {
                goto bad;
            }
        }
    }
    if (port && parse_port(port, &r.port) < 0)
        return eb_error_set(err, -EINVAL, "allow_hosts: '%.64s': bad port '%.16s' (1 to 65535)",
                            entry, port);
    *ret = r;
    return 0;
bad:
    return eb_error_set(err, -EINVAL,
                        "allow_hosts: '%.64s' is not a host name, '*.domain', an address or a "
                        "CIDR range (with an optional ':PORT'; IPv6 as '[addr]:PORT')",
                        entry);
}

void eb_host_rule_format(const struct eb_host_rule *r, char *buf, size_t size)
{
    char port[8] = "";
    if (r->port)
        snprintf(port, sizeof(port), ":%u", (unsigned)r->port);
    if (r->kind == EB_RULE_NAME) {
        snprintf(buf, size, "%s%s", r->name, port);
        return;
    }
    if (r->kind == EB_RULE_WILDCARD) {
        snprintf(buf, size, "*.%s%s", r->name, port);
        return;
    }
    char a[INET6_ADDRSTRLEN];
    inet_ntop(r->family, r->addr, a, sizeof(a));
    unsigned full = r->family == AF_INET ? 32 : 128;
    char pre[8] = "";
    if (r->prefix != full)
        snprintf(pre, sizeof(pre), "/%u", r->prefix);
    if (r->family == AF_INET6 && r->port)
        snprintf(buf, size, "[%s%s]%s", a, pre, port);
    else
        snprintf(buf, size, "%s%s%s", a, pre, port);
}

int eb_target_parse(const char *host, struct eb_target *ret)
{
    struct eb_target t;
    memset(&t, 0, sizeof(t));
    size_t n = strlen(host);
    if (n == 0 || n > 253)
        return -EINVAL;
    if (inet_pton(AF_INET, host, t.addr) == 1)
        t.family = AF_INET;
    else if (inet_pton(AF_INET6, host, t.addr) == 1)
        t.family = AF_INET6;
    if (t.family) {
        t.is_addr = true;
        inet_ntop(t.family, t.addr, t.name, sizeof(t.name));
    } else if (!name_ok(host, n, t.name)) {
        return -EINVAL;
    }
    *ret = t;
    return 0;
}

static bool prefix_match(const uint8_t *net, unsigned prefix, const uint8_t *a)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(net, a, full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t m = (uint8_t)(0xff00 >> rest);
    return (net[full] & m) == (a[full] & m);
}

static bool port_ok(const struct eb_host_rule *r, const uint16_t *ports, uint16_t port)
{
    return r->port ? r->port == port : eb_port_listed(ports, port);
}

static bool wildcard_match(const char *domain, const char *name)
{
    size_t d = strlen(domain), n = strlen(name);
    return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, domain) == 0;
}

bool eb_host_rule_matches(const struct eb_host_rule *r, const uint16_t *ports,
                          const struct eb_target *t, uint16_t port)
{
    if (!port_ok(r, ports, port))
        return false;
    switch (r->kind) {
    case EB_RULE_NAME: return !t->is_addr && strcmp(r->name, t->name) == 0;
    case EB_RULE_WILDCARD: return !t->is_addr && wildcard_match(r->name, t->name);
    case EB_RULE_ADDR:
        return t->is_addr && t->family == r->family && prefix_match(r->addr, r->prefix, t->addr);
    }
    return false;
}

bool eb_host_rule_within(const struct eb_host_rule *in, const uint16_t *in_ports,
                         const struct eb_host_rule *out, const uint16_t *out_ports)
{
    /* The ports first: every port inner allows must be allowed by outer. */
    if (in->port) {
        if (!port_ok(out, out_ports, in->port))
            return false;
    } else {
        const uint16_t *p = in_ports && in_ports[0] ? in_ports : default_ports;
        for (size_t i = 0; i < EXECBOX_ALLOW_PORTS_MAX && p[i]; i++)
            if (!port_ok(out, out_ports, p[i]))
                return false;
    }
    switch (in->kind) {
    case EB_RULE_NAME:
        return (out->kind == EB_RULE_NAME && strcmp(out->name, in->name) == 0) ||
               (out->kind == EB_RULE_WILDCARD && wildcard_match(out->name, in->name));
    case EB_RULE_WILDCARD:
        return out->kind == EB_RULE_WILDCARD &&
               (strcmp(out->name, in->name) == 0 || wildcard_match(out->name, in->name));
    case EB_RULE_ADDR:
        return out->kind == EB_RULE_ADDR && out->family == in->family &&
               out->prefix <= in->prefix && prefix_match(out->addr, out->prefix, in->addr);
    }
    return false;
}

/* The class of a special address: its name and the range of it that holds the address (the
 * narrowest one listed: a metadata address is its own class, inside link-local). */
struct special_class {
    const char *what;
    uint8_t net[16];
    unsigned prefix;
};

static bool v4_special(const uint8_t *a, struct special_class *ret)
{
    static const struct {
        uint8_t net[4];
        unsigned prefix;
        const char *what;
    } ranges[] = {
        /* Metadata services first: they sit inside the wider classes (or, Azure's, in public
         * space). */
        {{169, 254, 169, 254}, 32, "cloud metadata"},
        {{169, 254, 170, 2}, 32, "cloud metadata"},
        {{168, 63, 129, 16}, 32, "cloud metadata"},
        {{100, 100, 100, 200}, 32, "cloud metadata"},
        {{127, 0, 0, 0}, 8, "loopback"},
        {{10, 0, 0, 0}, 8, "private"},
        {{172, 16, 0, 0}, 12, "private"},
        {{192, 168, 0, 0}, 16, "private"},
        {{100, 64, 0, 0}, 10, "private"}, /* carrier-grade NAT */
        {{169, 254, 0, 0}, 16, "link-local"},
        {{224, 0, 0, 0}, 4, "multicast"},
        {{0, 0, 0, 0}, 8, "reserved"}, /* 0.0.0.0 reaches the local host */
        {{192, 0, 0, 0}, 24, "reserved"},
        {{198, 18, 0, 0}, 15, "reserved"},
        {{240, 0, 0, 0}, 4, "reserved"}, /* and the broadcast address */
    };
    for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
        if (prefix_match(ranges[i].net, ranges[i].prefix, a)) {
            memset(ret, 0, sizeof(*ret));
            ret->what = ranges[i].what;
            memcpy(ret->net, ranges[i].net, 4);
            ret->prefix = ranges[i].prefix;
            return true;
        }
    return false;
}

static bool addr_class(int family, const uint8_t *a, struct special_class *ret)
{
    if (family == AF_INET)
        return v4_special(a, ret);
    memset(ret, 0, sizeof(*ret));
    if (family != AF_INET6) {
        ret->what = "reserved";
        return true;
    }
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) {
        /* Judged by the IPv4 address inside; the class's range is the IPv4 one under the same
         * 96-bit prefix (::ffff:127.0.0.0/104 is loopback). */
        if (!v4_special(a + 12, ret))
            return false;
        memmove(ret->net + 12, ret->net, 4);
        memcpy(ret->net, a, 12);
        ret->prefix += 96;
        return true;
    }
    static const struct {
        uint8_t net[16];
        unsigned prefix;
        const char *what;
    } ranges[] = {
        {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54},
         128,
         "cloud metadata"}, /* fd00:ec2::254 */
        {{[15] = 1}, 128, "loopback"},
        {{0}, 96, "reserved"}, /* :: and the IPv4-compatible addresses */
        {{0xfc}, 7, "private"},
        {{0xfe, 0x80}, 10, "link-local"},
        {{0xfe, 0xc0}, 10, "private"}, /* site-local (deprecated) */
        {{0xff}, 8, "multicast"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
        if (prefix_match(ranges[i].net, ranges[i].prefix, a)) {
            ret->what = ranges[i].what;
            memcpy(ret->net, ranges[i].net, 16);
            ret->prefix = ranges[i].prefix;
            return true;
        }
    return false;
}

const char *eb_addr_special(int family, const uint8_t *a)
{
    struct special_class k;
    return addr_class(family, a, &k) ? k.what : NULL;
}

bool eb_host_rule_covers_addr(const struct eb_host_rule *r, const uint16_t *ports, int family,
                              const uint8_t *addr, uint16_t port)
{
    if (r->kind != EB_RULE_ADDR || r->family != family || !port_ok(r, ports, port) ||
        !prefix_match(r->addr, r->prefix, addr))
        return false;
    /* A range that holds the address names it only when it lies within the address's class: a
     * catch-all (0.0.0.0/0, ::/0) or any range wider than loopback, private, link-local or a
     * metadata address says "the internet", not "this machine" or "the cloud's metadata
     * service". 127.0.0.0/8, 10.1.0.0/16 and 169.254.169.254 name theirs. */
    struct special_class k;
    if (!addr_class(family, addr, &k))
        return true; /* an ordinary address: any range holding it allows it */
    return r->prefix >= k.prefix && prefix_match(k.net, k.prefix, r->addr);
}
