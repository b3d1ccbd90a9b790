/* SPDX-License-Identifier: MIT */
/* poolbench.c - latency (p50, p99), throughput and CPU per run through the library, cold
 * against warm, at a given concurrency. A client of the public API only. */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "execbox/execbox.h"

struct job {
    struct execbox_executor *ex;
    const char *code;
    int runs;
    int pause_ms; /* between runs: latency without saturating the machine */
    double *lat;  /* ms */
    int failures;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (int i = 0; i < j->runs; i++) {
        struct execbox_request req = {.code = j->code};
        struct execbox_result *r = NULL;
        struct execbox_error err = {0};
        double t0 = now_ms();
        if (execbox_executor_run(j->ex, &req, &r, &err) < 0 || r->exit_code != 0)
            j->failures++;
        j->lat[i] = now_ms() - t0;
        execbox_result_free(r);
        if (j->pause_ms)
            usleep((useconds_t)j->pause_ms * 1000);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cpu_s(void)
{
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) +
           (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec +
                    b.ru_stime.tv_usec) /
               1e6;
}

int main(int argc, char **argv)
{
    const char *backend = NULL, *code = "print(6*7)", *preload = NULL, *label = "run";
    unsigned pool = 0;
    int runs = 200, conc = 1, pause_ms = 0;
    int c;
    while ((c = getopt(argc, argv, "b:c:p:P:n:j:l:s:")) != -1) {
        switch (c) {
        case 'b': backend = optarg; break;
        case 'c': code = optarg; break;
        case 'p': pool = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'P': preload = optarg; break;
        case 'n': runs = (int)strtol(optarg, NULL, 10); break;
        case 'j': conc = (int)strtol(optarg, NULL, 10); break;
        case 'l': label = optarg; break;
        case 's': pause_ms = (int)strtol(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: poolbench [-b backend] [-c code] [-p pool] [-P preload] "
                            "[-n runs] [-j concurrency] [-l label] [-s pause_ms]\n");
            return 2;
        }
    }
    if (conc < 1 || runs < conc)
        return 2;
    struct execbox_executor_options o = {
        .backend = backend, .pool_size = pool, .pool_preload = preload, .pool_idle = 600};
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        fprintf(stderr, "poolbench: %s\n", err.msg);
        return 1;
    }
    if (pool) {
        execbox_executor_prewarm(ex, NULL, "python", &err);
        struct execbox_pool_stats st;
        for (int i = 0; i < 600; i++) {
            execbox_executor_pool_stats(ex, &st);
            if (st.ready >= pool)
                break;
            usleep(100000);
        }
    }
    int per = runs / conc;
    double *lat = calloc((size_t)(per * conc), sizeof(double));
    struct job *jobs = calloc((size_t)conc, sizeof(*jobs));
    pthread_t *th = calloc((size_t)conc, sizeof(*th));
    double cpu0 = cpu_s(), t0 = now_ms();
    for (int i = 0; i < conc; i++) {
        jobs[i] = (struct job){
            .ex = ex, .code = code, .runs = per, .pause_ms = pause_ms, .lat = lat + i * per};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    int failures = 0;
    for (int i = 0; i < conc; i++) {
        pthread_join(th[i], NULL);
        failures += jobs[i].failures;
    }
    double wall = (now_ms() - t0) / 1e3 - (double)pause_ms * per / 1e3, cpu = cpu_s() - cpu0;
    int n = per * conc;
    qsort(lat, (size_t)n, sizeof(double), cmp);
    struct execbox_pool_stats st;
    execbox_executor_pool_stats(ex, &st);
    printf("%-28s runs=%d conc=%d p50=%.2fms p99=%.2fms throughput=%.0f/s cpu/run=%.2fms "
           "failures=%d pool_hits=%llu misses=%llu\n",
           label, n, conc, lat[n / 2], lat[(int)(n * 0.99)], n / wall, cpu / n * 1e3, failures,
           (unsigned long long)st.hits, (unsigned long long)st.misses);
    execbox_executor_free(ex);
    free(lat);
    free(jobs);
    free(th);
    return failures ? 1 : 0;
}
