/* SPDX-License-Identifier: MIT */
/* hostrule.h - the entries of a network allow-list ("pypi.org", "*.example.com",
 * "203.0.113.0/24", "[::1]:8080", "localhost:8000"): parsing into a canonical form, matching a
 * requested host and port, containment of one entry in another (a per-call list may only
 * narrow the host's), and the classes of addresses that are never reached unless an entry
 * names them (loopback, private, link-local, multicast, cloud metadata). Pure functions: the
 * policy and the proxy share them. */
#ifndef EB_HOSTRULE_H
#define EB_HOSTRULE_H

#include <stdbool.h>
#include <stdint.h>

#include "execbox/execbox.h"

enum eb_rule_kind {
    EB_RULE_NAME,     /* exactly this name (lower case, no trailing dot) */
    EB_RULE_WILDCARD, /* "*.domain": any name ending in ".domain" (not domain itself) */
    EB_RULE_ADDR,     /* an address or a range (prefix) */
};

struct eb_host_rule {
    enum eb_rule_kind kind;
    char name[256];   /* NAME: the name; WILDCARD: the domain without "*." */
    int family;       /* ADDR: AF_INET or AF_INET6 */
    uint8_t addr[16]; /* ADDR: the network, host bits cleared */
    unsigned prefix;  /* ADDR: prefix length (32 or 128 for one address) */
    uint16_t port;    /* 0: the policy's allow_ports */
};

/* Parses one entry. -EINVAL with a message naming the entry when it is not one. */
int eb_host_rule_parse(const char *entry, struct eb_host_rule *ret, struct execbox_error *err);

/* The canonical text of a rule (what the policy stores and prints). */
void eb_host_rule_format(const struct eb_host_rule *r, char *buf, size_t size);

/* A requested host, normalised: a name (lower case, no trailing dot) or an address. */
struct eb_target {
    char name[256]; /* the name, or the address's text */
    bool is_addr;
    int family;
    uint8_t addr[16];
};

/* Parses the host part of a request ("pypi.org", "127.0.0.1", "::1" without brackets).
 * -EINVAL when it is neither a plausible name nor an address. */
int eb_target_parse(const char *host, struct eb_target *ret);

/* Does rule r allow host t on port? ports: the policy's allow_ports (0-terminated, at most
 * EXECBOX_ALLOW_PORTS_MAX; all zero = 80 and 443). A name rule never matches an address and an
 * address rule never matches a name. */
bool eb_host_rule_matches(const struct eb_host_rule *r, const uint16_t *ports,
                          const struct eb_target *t, uint16_t port);

/* Does rule r name the address (family, addr) explicitly and allow port? An address rule
 * names an address of a special class (eb_addr_special) only when its range lies within that
 * class's range: 127.0.0.0/8 names 127.0.0.1, 169.254.169.254 names the metadata service,
 * 0.0.0.0/0, ::/0, 169.254.0.0/16 (for the metadata address) or 0.0.0.0/1 name none of them.
 * Any range holding an ordinary public address names it. */
bool eb_host_rule_covers_addr(const struct eb_host_rule *r, const uint16_t *ports, int family,
                              const uint8_t *addr, uint16_t port);

/* Is every (host, port) that inner allows (with inner_ports) also allowed by outer (with
 * outer_ports)? */
bool eb_host_rule_within(const struct eb_host_rule *inner, const uint16_t *inner_ports,
                         const struct eb_host_rule *outer, const uint16_t *outer_ports);

/* Is port in the list (all zero: the default 80 and 443)? */
bool eb_port_listed(const uint16_t *ports, uint16_t port);

/* NULL for an ordinary public address; else the class it belongs to ("loopback", "private",
 * "link-local", "cloud metadata", "multicast", "reserved"). IPv4-mapped and NAT64 IPv6
 * addresses are judged by the IPv4 address inside. */
const char *eb_addr_special(int family, const uint8_t *addr);

#endif
