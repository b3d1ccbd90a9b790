/* SPDX-License-Identifier: MIT */
/* tlshello.h - the server name (SNI) of a TLS ClientHello, read from the first bytes a client
 * sends through a CONNECT tunnel: the proxy holds the tunnel until it knows the name the
 * client will ask the server for. Parses only the first record, bounded by its length. */
#ifndef EB_TLSHELLO_H
#define EB_TLSHELLO_H

#include <stddef.h>

/* The first TLS record, header and body: what the proxy holds at most before deciding. */
#define EB_TLS_RECORD_MAX (5 + 16384)

enum eb_sni_result {
    EB_SNI_MORE = 0,  /* a prefix of a hello: more bytes are needed */
    EB_SNI_FOUND,     /* name holds the host_name of the server_name extension */
    EB_SNI_NONE,      /* a well-formed ClientHello with no host_name */
    EB_SNI_NOT_TLS,   /* not a TLS handshake record holding a whole ClientHello */
    EB_SNI_MALFORMED, /* lengths that do not add up, a name that is empty or too long */
};

/* Looks at buf[0..n). On EB_SNI_FOUND, name (size bytes, at least 256) holds the name as sent,
 * NUL-terminated; a name containing a NUL byte or longer than 255 bytes is MALFORMED. */
enum eb_sni_result eb_tls_sni(const unsigned char *buf, size_t n, char *name, size_t size);

#endif
