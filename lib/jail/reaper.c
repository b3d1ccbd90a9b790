/* SPDX-License-Identifier: MIT */
/* reaper.c - the exiting inits' list and the grave thread (reaper.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/limits.h"
#include "base/util.h"
#include "jail/reaper.h"

/* Inits that sent their result and left the run's cgroup are still exiting (the kernel tears
 * down the sandbox's namespaces in their exit): nothing waits for that. Their pidfds wait here,
 * one list for the process (an executor closed with one still exiting hands it to the next
 * runs of any executor, so a process that makes many executors does not gather zombies), and
 * are reaped without blocking at each run's start and at each close; one still exiting when
 * the process exits is reaped by the system. Only when the list is full does a run wait for
 * the oldest. */
static pthread_mutex_t exiting_lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting[EB_EXITING_MAX];
static int n_exiting;

void eb_reap_exiting(bool block_oldest)
{
    pthread_mutex_lock(&exiting_lock);
    int k = 0;
    for (int i = 0; i < n_exiting; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        int opts = WEXITED | (block_oldest && i == 0 ? 0 : WNOHANG);
        long w = syscall(SYS_waitid, P_PIDFD, exiting[i], &si, opts, NULL);
        if (w < 0 ? errno != EINTR : si.si_pid != 0)
            close(exiting[i]); /* reaped (or not ours to reap any more) */
        else
            exiting[k++] = exiting[i];
    }
    n_exiting = k;
    pthread_mutex_unlock(&exiting_lock);
}

void eb_reap_defer(int *pidfd)
{
    if (*pidfd < 0)
        return;
    pthread_mutex_lock(&exiting_lock);
    bool full = n_exiting >= EB_EXITING_MAX;
    pthread_mutex_unlock(&exiting_lock);
    if (full)
        eb_reap_exiting(true);
    pthread_mutex_lock(&exiting_lock);
    if (n_exiting < EB_EXITING_MAX) {
        exiting[n_exiting++] = *pidfd;
        *pidfd = -1;
    }
    pthread_mutex_unlock(&exiting_lock);
    if (*pidfd >= 0) { /* still full: another thread filled it; wait for this one */
        siginfo_t si;
        syscall(SYS_waitid, P_PIDFD, *pidfd, &si, WEXITED, NULL);
        eb_close(pidfd);
    }
}

/* The cgroups of template runs whose result is out but whose processes may still be exiting
 * (the guest after EB_MSG_DONE, the init after it left): removed by one thread of the process,
 * after the answer, once the run's init (a pidfd) has exited; at most GRAVE_MAX wait, beyond
 * that a run removes its own. eb_grave_flush waits until the list is empty. */
#define GRAVE_MAX 64
struct grave {
    struct eb_cgroup cg;
    int pidfd;
};
static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t grave_cv = PTHREAD_COND_INITIALIZER, grave_idle_cv = PTHREAD_COND_INITIALIZER;
static struct grave *graves[GRAVE_MAX];
static size_t n_graves;
static bool grave_thread, grave_busy;

static void grave_bury(struct grave *g)
{
    struct pollfd p = {.fd = g->pidfd, .events = POLLIN};
    while (poll(&p, 1, EB_KILL_WAIT_MS) < 0 && errno == EINTR)
        ;
    eb_cgroup_release(&g->cg);
    close(g->pidfd);
    free(g);
}

static void *grave_main(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-grave"); /* in ps, top -H and perf */
    (void)arg;
    pthread_mutex_lock(&grave_lock);
    for (;;) {
        while (!n_graves)
            pthread_cond_wait(&grave_cv, &grave_lock);
        struct grave *g = graves[0];
        memmove(graves, graves + 1, (n_graves - 1) * sizeof(graves[0]));
        n_graves--;
        grave_busy = true;
        pthread_mutex_unlock(&grave_lock);
        grave_bury(g);
        pthread_mutex_lock(&grave_lock);
        grave_busy = false;
        if (!n_graves)
            pthread_cond_broadcast(&grave_idle_cv);
    }
    return NULL;
}

bool eb_grave_add(struct eb_cgroup *cg, int *pidfd)
{
    struct grave *g = malloc(sizeof(*g));
    if (g) {
        g->cg = *cg;
        g->pidfd = *pidfd;
    }
    bool queued = false;
    pthread_mutex_lock(&grave_lock);
    if (g && !grave_thread) {
        pthread_t th;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64U << 10);
        grave_thread = pthread_create(&th, &a, grave_main, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    if (g && grave_thread && n_graves < GRAVE_MAX) {
        graves[n_graves++] = g;
        pthread_cond_signal(&grave_cv);
        queued = true;
    }
    pthread_mutex_unlock(&grave_lock);
    if (!queued) {
        free(g);
        return false;
    }
    eb_cgroup_init(cg);
    *pidfd = -1;
    return true;
}

void eb_grave_flush(void)
{
    pthread_mutex_lock(&grave_lock);
    while (n_graves || grave_busy)
        pthread_cond_wait(&grave_idle_cv, &grave_lock);
    pthread_mutex_unlock(&grave_lock);
}
