/* SPDX-License-Identifier: MIT */
/*
 * serve_client.c - a small load client for bench/serve.sh and bench/serve_soak.sh: exactly N
 * POST /v1/execute requests over C keep-alive connections to 127.0.0.1:PORT, each answer
 * checked. An answer is "ok" (200 with the program's expected output), "busy" (429 or 503 with
 * a Retry-After header: answered, the client may retry), "wrong" (any other answer) or "lost"
 * (no complete answer: the connection failed or closed). Prints throughput, p50/p99 latency
 * and the counts; exits 1 when any was wrong or lost.
 * Usage: serve_client PORT TOTAL CONCURRENCY [BODY EXPECTED] (EXPECTED: a substring of the
 * answer, e.g. "stdout":"42\n" as it appears in the JSON). PACE_MS=N in the environment: each
 * connection waits N ms between its requests (paced latency, the machine otherwise idle).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;
static long total;
static long next_req;                /* __atomic */
static long n_busy, n_wrong, n_lost; /* __atomic */
static double *lat;                  /* seconds, one per request */
static long pace_ms;                 /* pause between a connection's requests */

static const char *body = "{\"code\": \"print(6*7)\", \"language\": \"python\"}";
static const char *expect = "\"stdout\":\"42\\n\""; /* in the answer's JSON */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

enum outcome { OK, BUSY, WRONG, LOST };

/* One request on fd, and what its answer was. */
static enum outcome one_request(int fd)
{
    char req[4096];
    int n = snprintf(req, sizeof(req),
                     /* The listen address as Host: a tokenless server answers others 421. */
                     "POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
                     "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     port, strlen(body), body);
    if (write(fd, req, (size_t)n) != n)
        return LOST;
    static __thread char buf[65536];
    size_t len = 0;
    long want = -1;
    char *hdr_end = NULL;
    for (;;) {
        if (len == sizeof(buf) - 1)
            return WRONG;
        ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (r <= 0)
            return LOST;
        len += (size_t)r;
        buf[len] = '\0';
        if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n"))) {
            char *cl = strcasestr(buf, "\r\nContent-Length:");
            if (!cl || cl > hdr_end)
                return WRONG;
            want = strtol(cl + 17, NULL, 10);
        }
        if (hdr_end && (long)(len - (size_t)(hdr_end + 4 - buf)) >= want)
            break;
    }
    if (strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(hdr_end, expect))
        return OK;
    *hdr_end = '\0';
    if ((strncmp(buf, "HTTP/1.1 429", 12) == 0 || strncmp(buf, "HTTP/1.1 503", 12) == 0) &&
        strcasestr(buf, "\r\nRetry-After:"))
        return BUSY;
    return WRONG;
}

static void *worker(void *arg)
{
    (void)arg;
    int fd = dial();
    for (;;) {
        long i = __atomic_fetch_add(&next_req, 1, __ATOMIC_RELAXED);
        if (i >= total)
            break;
        double t0 = now();
        enum outcome r = fd >= 0 ? one_request(fd) : LOST;
        if (r == BUSY)
            __atomic_add_fetch(&n_busy, 1, __ATOMIC_RELAXED);
        if (r == WRONG || r == LOST) {
            /* Count it, and go on with a fresh connection. */
            __atomic_add_fetch(r == WRONG ? &n_wrong : &n_lost, 1, __ATOMIC_RELAXED);
            if (fd >= 0)
                close(fd);
            fd = dial();
        }
        lat[i] = now() - t0;
        if (pace_ms > 0) {
            struct timespec ts = {pace_ms / 1000, (pace_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: serve_client PORT TOTAL CONCURRENCY [BODY EXPECTED]\n");
        return 2;
    }
    if (argc == 6) {
        body = argv[4];
        expect = argv[5];
        if (strlen(body) > 3000)
            return 2;
    }
    const char *pace = getenv("PACE_MS");
    pace_ms = pace ? strtol(pace, NULL, 10) : 0;
    port = (int)strtol(argv[1], NULL, 10);
    total = strtol(argv[2], NULL, 10);
    long conc = strtol(argv[3], NULL, 10);
    if (port <= 0 || total <= 0 || conc <= 0 || conc > 1024)
        return 2;
    lat = calloc((size_t)total, sizeof(*lat));
    pthread_t *t = calloc((size_t)conc, sizeof(*t));
    if (!lat || !t)
        return 1;
    double t0 = now();
    for (long i = 0; i < conc; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (long i = 0; i < conc; i++)
        pthread_join(t[i], NULL);
    double el = now() - t0;
    qsort(lat, (size_t)total, sizeof(*lat), cmp);
    long errors = n_wrong + n_lost;
    printf("requests=%ld ok=%ld busy=%ld wrong=%ld lost=%ld errors=%ld seconds=%.1f req/s=%.1f "
           "p50_ms=%.2f p99_ms=%.2f\n",
           total, total - n_busy - errors, n_busy, n_wrong, n_lost, errors, el, (double)total / el,
           lat[total / 2] * 1e3, lat[(size_t)((double)total * 0.99)] * 1e3);
    free(lat);
    free(t);
    return errors ? 1 : 0;
}
