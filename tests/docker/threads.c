/* SPDX-License-Identifier: MIT */
/* threads.c - drives the docker backend through the public API from several threads on ONE
 * executor, one of the runs cancelled from another thread: prints one JSON result per line
 * ("<index> <json>"). Usage: docker_threads DOCKER_HOST. Used by tests/integration/docker.py. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "execbox/execbox.h"

#define N 4

struct job {
    struct execbox_executor *ex;
    int index;
    struct execbox_cancel *cancel;
    char code[128];
    char *json;
    int rc;
};

static void *run_one(void *arg)
{
    struct job *j = arg;
    struct execbox_policy p;
    execbox_policy_init(&p);
    p.timeout = 30;
    struct execbox_request req = {.code = j->code, .policy = &p, .cancel = j->cancel};
    struct execbox_result *res = NULL;
    struct execbox_error err = {0, ""};
    j->rc = execbox_executor_run(j->ex, &req, &res, &err);
    if (j->rc == 0)
        j->rc = execbox_result_to_json(res, 0, &j->json, &err);
    if (j->rc < 0)
        fprintf(stderr, "run %d: %s\n", j->index, err.msg);
    execbox_result_free(res);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: docker_threads DOCKER_HOST\n");
        return 2;
    }
    struct execbox_executor_options o = {.backend = "docker", .docker_host = argv[1]};
    struct execbox_executor *ex = NULL;
    struct execbox_error err = {0, ""};
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        fprintf(stderr, "executor: %s\n", err.msg);
        return 125;
    }
    struct job jobs[N];
    pthread_t t[N];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < N; i++) {
        jobs[i].ex = ex;
        jobs[i].index = i;
        if (i == 0) {
            /* This one sleeps far past the test and is cancelled after a second. */
            if (execbox_cancel_new(&jobs[i].cancel, &err) < 0)
                return 125;
            snprintf(jobs[i].code, sizeof(jobs[i].code),
                     "import time\nprint('started', flush=True)\ntime.sleep(25)");
        } else {
            snprintf(jobs[i].code, sizeof(jobs[i].code), "print(%d * 11)", i);
        }
        pthread_create(&t[i], NULL, run_one, &jobs[i]);
    }
    sleep(3);
    execbox_cancel_fire(jobs[0].cancel);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].rc < 0)
            bad = 1;
        else
            printf("%d %s\n", i, jobs[i].json);
        execbox_free(jobs[i].json);
        execbox_cancel_free(jobs[i].cancel);
    }
    execbox_executor_free(ex);
    return bad;
}
