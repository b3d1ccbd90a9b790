/* SPDX-License-Identifier: MIT */
/* netns.c - the pool of fresh network namespaces (see netns.h). A helper thread unshares
 * CLONE_NEWNET in itself (a thread may hold its own network namespace), keeps an fd of it,
 * and goes back to the host's namespace; the fds wait in a ring until a run takes one. A
 * namespace's teardown happens when the last process in it exits, in a kernel worker, which
 * is not on anyone's path either. */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX 16

struct eb_netns_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int fds[POOL_MAX];
    int n, size;
    int host_fd;
    int stop;
    int failed;
};

static int make_one(struct eb_netns_pool *p)
{
    /* This thread only: unshare affects the calling thread's namespaces. */
    if (unshare(CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int e = errno;
    if (setns(p->host_fd, CLONE_NEWNET) < 0) {
        /* Cannot get back: this thread must not do anything else. */
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    return fd < 0 ? -e : fd;
}

static void *filler(void *arg)
{
    struct eb_netns_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (p->n >= p->size) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        int fd = make_one(p);
        pthread_mutex_lock(&p->lock);
        if (fd < 0) {
            p->failed = 1;
            break;
        }
        if (p->stop || p->n >= p->size) {
            close(fd);
            continue;
        }
        p->fds[p->n++] = fd;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct eb_netns_pool *eb_netns_pool_new(int size)
{
    if (size <= 0)
        return NULL;
    struct eb_netns_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->size = size > POOL_MAX ? POOL_MAX : size;
    p->host_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (p->host_fd < 0 || pthread_create(&p->thread, NULL, filler, p) != 0) {
        if (p->host_fd >= 0)
            close(p->host_fd);
        free(p);
        return NULL;
    }
    return p;
}

int eb_netns_take(struct eb_netns_pool *p)
{
    if (!p)
        return -1;
    int fd = -1;
    pthread_mutex_lock(&p->lock);
    if (p->n > 0) {
        fd = p->fds[0];
        memmove(p->fds, p->fds + 1, (size_t)(p->n - 1) * sizeof(int));
        p->n--;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    return fd;
}

void eb_netns_pool_free(struct eb_netns_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    for (int i = 0; i < p->n; i++)
        close(p->fds[i]);
    close(p->host_fd);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
