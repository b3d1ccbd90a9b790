/* SPDX-License-Identifier: MIT */
/* http.c - one JSON POST to a model API over libcurl, with retries (see http.h). */
#include "http.h"

#include "execbox/execbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct sink {
    char *buf;
    size_t len, cap;
    bool overflow;
};

/* Keeps at most AGENT_HTTP_RESPONSE_MAX bytes; returning short makes curl stop the transfer. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;
    if (n > AGENT_HTTP_RESPONSE_MAX - s->len) {
        s->overflow = true;
        return 0;
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 16384;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (!nb)
            return 0;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

void agent_http_response_clear(struct agent_http_response *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

long agent_http_retry_after_ms(const char *value)
{
    if (!value)
        return -1;
    while (*value == ' ' || *value == '\t')
        value++;
    if (*value >= '0' && *value <= '9') {
        char *end = NULL;
        errno = 0;
        double secs = strtod(value, &end);
        while (end && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
            end++;
        if (errno || !end || *end || secs < 0 || secs > 86400)
            return -1;
        return (long)(secs * 1000.0);
    }
    /* An HTTP-date: how far in the future it lies (0 if past). */
    time_t when = curl_getdate(value, NULL);
    if (when < 0)
        return -1;
    time_t now = time(NULL);
    return when > now ? (long)(when - now) * 1000L : 0;
}

static bool status_retryable(long status)
{
    /* 429 rate limit, 529 Anthropic overloaded, any other 5xx; never another 4xx. */
    return status == 429 || status >= 500;
}

static bool transport_retryable(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
    }
}

static long header_ms(CURL *h, const char *name, bool millis)
{
    struct curl_header *hdr = NULL;
    if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hdr) != CURLHE_OK || !hdr)
        return -1;
    if (millis) {
        char *end = NULL;
        errno = 0;
        double ms = strtod(hdr->value, &end);
        if (errno || end == hdr->value || ms < 0 || ms > 86400e3)
            return -1;
        return (long)ms;
    }
    return agent_http_retry_after_ms(hdr->value);
}

/* Full jitter in the upper half: [d/2, d], where d doubles each retry up to the cap. */
static long backoff_ms(const struct agent_http_options *o, int retry)
{
    long d = o->retry_base_ms > 0 ? o->retry_base_ms : 0;
    for (int i = 0; i < retry && d < o->retry_max_ms; i++)
        d *= 2;
    if (d > o->retry_max_ms)
        d = o->retry_max_ms;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)time(NULL);
    return d / 2 + (d > 1 ? (long)(rnd % (uint32_t)(d / 2 + 1)) : 0);
}

/* Sleeps, but wakes early when *stop is set (a signal interrupts nanosleep). */
static void sleep_ms(long ms, volatile sig_atomic_t *stop)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !(stop && *stop))
        ;
}

/* Progress callback: a non-zero return aborts the transfer once *stop is set. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    volatile sig_atomic_t *stop = ud;
    return stop && *stop ? 1 : 0;
}

int agent_http_post(const struct agent_http_options *o, const char *url,
                    const struct curl_slist *headers, const char *body,
                    struct agent_http_response *ret, char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -ENOMEM;
    }
    char curl_err[CURL_ERROR_SIZE];
    int r = -EIO;
    for (int attempt = 0;; attempt++) {
        struct sink sink = {0};
        curl_err[0] = '\0';
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
        /* No signals: a timed-out resolver must not longjmp through our stack. */
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(h, CURLOPT_USERAGENT, "execbox-agent/" EXECBOX_VERSION);
        if (o->stop) {
            curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
            curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)o->stop);
            curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        }

        CURLcode c = curl_easy_perform(h);
        if (o->stop && *o->stop) {
            free(sink.buf);
            snprintf(err, errlen, "interrupted");
            r = -EINTR;
            break;
        }
        long status = 0, wait_ms = -1;
        const char *why = NULL;
        char why_buf[300];
        if (c == CURLE_OK) {
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
            if (!status_retryable(status)) {
                ret->status = status;
                ret->body = sink.buf ? sink.buf : calloc(1, 1);
                ret->len = sink.len;
                ret->tries = attempt + 1;
                if (!ret->body) {
                    snprintf(err, errlen, "out of memory");
                    r = -ENOMEM;
                    break;
                }
                r = 0;
                break;
            }
            wait_ms = header_ms(h, "retry-after-ms", true);
            if (wait_ms < 0)
                wait_ms = header_ms(h, "Retry-After", false);
            snprintf(why_buf, sizeof(why_buf), "HTTP %ld", status);
            why = why_buf;
        } else if (sink.overflow) {
            free(sink.buf);
            snprintf(err, errlen, "the response was larger than %u bytes", AGENT_HTTP_RESPONSE_MAX);
            r = -EFBIG;
            break;
        } else {
            snprintf(why_buf, sizeof(why_buf), "%s",
                     curl_err[0] ? curl_err : curl_easy_strerror(c));
            why = why_buf;
            if (!transport_retryable(c)) {
                free(sink.buf);
                snprintf(err, errlen, "%s", why);
                r = -EIO;
                break;
            }
        }
        if (attempt >= o->max_retries) {
            if (c == CURLE_OK) {
                /* Out of retries on a retryable status: hand the last response over. */
                ret->status = status;
                ret->body = sink.buf ? sink.buf : calloc(1, 1);
                ret->len = sink.len;
                ret->tries = attempt + 1;
                r = ret->body ? 0 : -ENOMEM;
                if (r < 0)
                    snprintf(err, errlen, "out of memory");
            } else {
                free(sink.buf);
                snprintf(err, errlen, "%s (after %d tries)", why, attempt + 1);
                r = -EIO;
            }
            break;
        }
        free(sink.buf);
        long delay = backoff_ms(o, attempt);
        if (wait_ms >= 0) {
            if (wait_ms > AGENT_HTTP_RETRY_AFTER_MAX_MS) {
                snprintf(err, errlen, "%s and the API asks to wait %ld s; giving up", why,
                         wait_ms / 1000);
                r = -EBUSY;
                break;
            }
            delay = wait_ms; /* the server's word beats our guess */
        }
        fprintf(stderr, "execbox agent: %s; retry %d of %d in %.1f s\n", why, attempt + 1,
                o->max_retries, (double)delay / 1000.0);
        sleep_ms(delay, o->stop);
        if (o->stop && *o->stop) {
            snprintf(err, errlen, "interrupted");
            r = -EINTR;
            break;
        }
    }
    curl_easy_cleanup(h);
    return r;
}
