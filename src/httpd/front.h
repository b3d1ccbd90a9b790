/* SPDX-License-Identifier: MIT */
/* front.h - the front door of `execbox serve`: accepts each connection itself and relays it to
 * libmicrohttpd through a socket pair, checking the framing of every request head on the way.
 * libmicrohttpd 0.9.75 answers a Content-Length it cannot parse with its own HTML page (and its
 * header block twice) and has no hook before it does; here such a request gets our JSON error,
 * and a request whose body length two parsers could read differently is refused. */
#ifndef EBSRV_FRONT_H
#define EBSRV_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "execbox/execbox.h"

struct front_ops {
    /* Hands libmicrohttpd its end of a new connection's pair, which it takes in any case;
     * sa is the client's address. Returns false when it was refused. */
    bool (*hand_off)(void *ud, int fd, const struct sockaddr *sa, socklen_t len);
    /* A request refused at the door: writes its X-Request-Id into id, counts and logs it. */
    void (*refused)(void *ud, int status, const char *method, const char *path,
                    const struct sockaddr *sa, char *id, size_t id_size);
};

struct front_config {
    int listen_fd;               /* bound, listening socket; the front takes it */
    size_t max_body;             /* named in the 413 message */
    size_t max_conns;            /* open client connections; 0: 1000 */
    const struct front_ops *ops; /* borrowed; outlives the front */
    void *ud;
};

enum front_framing { FRONT_NO_BODY, FRONT_LENGTH, FRONT_CHUNKED };

struct front_head {
    enum front_framing framing;
    uint64_t length; /* FRONT_LENGTH: the body's length */
    char method[16]; /* for the log, truncated */
    char path[96];
};

/* Checks one complete request head (request line, header lines, the empty line) as
 * libmicrohttpd would frame it. Returns 0, or the HTTP status to refuse it with (400, or 413
 * for a length beyond 2^64-1) and a message in msg. h is filled as far as the head was read,
 * also when it is refused (the method and path for the log). */
int front_check_head(const char *head, size_t len, struct front_head *h, char *msg,
                     size_t msg_size);

struct front;

/* Starts the front's thread. On failure the listen fd is closed. */
int front_start(const struct front_config *cfg, struct front **ret, struct execbox_error *err);

/* Stops accepting: the listening socket is shut down (new connections are refused); open
 * connections go on. */
void front_quiesce(struct front *f);

/* Relays what is still in flight for a short while, then closes every connection and frees
 * the front. Call it after libmicrohttpd has stopped. Accepts NULL; returns NULL. */
struct front *front_free(struct front *f);

#endif
