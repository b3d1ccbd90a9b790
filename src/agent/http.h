/* SPDX-License-Identifier: MIT */
/* http.h - one JSON POST to a model API over libcurl, with deadlines, a bounded response and
 * retries (exponential backoff with jitter, Retry-After honoured) on 429, 529, 5xx and
 * connection errors; never on other 4xx. */
#ifndef EBAGENT_HTTP_H
#define EBAGENT_HTTP_H

#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#define AGENT_HTTP_RESPONSE_MAX (8U << 20)    /* largest response body accepted */
#define AGENT_HTTP_RETRY_AFTER_MAX_MS 120000L /* longest Retry-After we wait for */

struct agent_http_options {
    long connect_timeout_ms;     /* TCP + TLS connect deadline */
    long timeout_ms;             /* deadline of one whole request */
    int max_retries;             /* retries after the first try (0: none) */
    long retry_base_ms;          /* first backoff; doubles each retry, with jitter */
    long retry_max_ms;           /* cap of one computed backoff (Retry-After may ask for more) */
    volatile sig_atomic_t *stop; /* optional: set (by a signal handler) to abandon the request */
};

struct agent_http_response {
    long status; /* HTTP status of the last try */
    char *body;  /* NUL-terminated, owned; free() it */
    size_t len;
    int tries; /* requests sent */
};

/* POSTs body to url with the given headers (borrowed). Returns 0 with *ret filled when a
 * response came back that is not retried or retries ran out (any status: the caller reads it);
 * a negative errno with a message in err (never containing header values, which hold the key)
 * when no response came at all (-EINTR when *o->stop was set). Progress of retries goes to
 * stderr. Each call opens and closes its own connection, so no socket stays open while a
 * sandbox runs in between. */
int agent_http_post(const struct agent_http_options *o, const char *url,
                    const struct curl_slist *headers, const char *body,
                    struct agent_http_response *ret, char *err, size_t errlen);

void agent_http_response_clear(struct agent_http_response *r);

/* Milliseconds a Retry-After value asks for (seconds or an HTTP-date), -1 if unparsable. */
long agent_http_retry_after_ms(const char *value);

#endif
