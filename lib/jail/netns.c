/* SPDX-License-Identifier: MIT */
/* netns.c - the pool of fresh network namespaces (see netns.h). A helper thread unshares
 * CLONE_NEWNET in itself (a thread may hold its own network namespace), keeps an fd of it,
 * and goes back to the host's namespace; the fds wait in a ring until a run takes one. A
 * namespace's teardown happens when the last process in it exits, in a kernel worker, which
 * is not on anyone's path either. */
#include "jail/netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 16
#define NETNS_WAIT_MS 50 /* for the one being made: ~0.4 ms median, 7-9 ms p99 when quiet */

struct eb_netns_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int fds[POOL_MAX];
    int n, size;
    int host_fd;
    int stop;
    int failed;
    int making;  /* a namespace is being made right now */
    int claimed; /* the first take came before the thread began the first namespace: the taker
                    makes its own, and the thread does not make that one too */
    int made;    /* how many were made in all */
    int taken;   /* how many takes were asked for, served or not */
    int refs;    /* the owner and the thread: the last one to let go frees the pool */
    int pinned;  /* the thread was started away from its creator's CPU (see eb_netns_pool_new) */
    cpu_set_t allowed; /* then: the creator's CPUs, the thread's own again after its first one */
};

/* The pool is mapped, not malloc'd: the thread, when it lets go last, frees it without ever
 * calling into malloc, whose first call in a thread makes that thread an arena of its own (a
 * 64 MiB reservation, mapped and trimmed: three more syscalls at a one-shot CLI's exit). */
static struct eb_netns_pool *pool_alloc(void)
{
    void *m = mmap(NULL, sizeof(struct eb_netns_pool), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m; /* zeroed */
}

static void pool_release(struct eb_netns_pool *p)
{
    munmap(p, sizeof(*p));
}

static void pool_destroy(struct eb_netns_pool *p)
{
    for (int i = 0; i < p->n; i++)
        close(p->fds[i]);
    close(p->host_fd);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    pool_release(p);
}

/* Drops one reference with the lock held; unlocks. */
static void pool_unref_locked(struct eb_netns_pool *p)
{
    int left = --p->refs;
    pthread_mutex_unlock(&p->lock);
    if (left == 0)
        pool_destroy(p);
}

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

/* Only the first namespace is made right away. The pool refills once a second one is taken:
 * a one-shot CLI run uses exactly the one made for it and never pays for (or leaves the kernel
 * to tear down) a namespace nobody takes, while a server keeps a full pool from its second run
 * on (that run clones its own if the pool is empty). */
static bool want_more(const struct eb_netns_pool *p)
{
    return p->n < p->size && ((p->made == 0 && !p->claimed) || p->taken >= 2);
}

static void *filler(void *arg)
{
    pthread_setname_np(pthread_self(), "execbox-netns"); /* in ps, top -H and perf */
    struct eb_netns_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (!want_more(p)) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        p->making = 1;
        pthread_mutex_unlock(&p->lock);
        int fd = make_one(p);
        if (p->pinned) {
            p->pinned = 0;
            (void)pthread_setaffinity_np(pthread_self(), sizeof(p->allowed), &p->allowed);
        }
        pthread_mutex_lock(&p->lock);
        p->making = 0;
        p->made++;
        pthread_cond_broadcast(&p->cond);
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
    pool_unref_locked(p);
    return NULL;
}

struct eb_netns_pool *eb_netns_pool_new(int size)
{
    if (size <= 0)
        return NULL;
    struct eb_netns_pool *p = pool_alloc();
    if (!p)
        return NULL;
    p->size = size > POOL_MAX ? POOL_MAX : size;
    p->host_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    p->refs = 2;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    pthread_attr_t a;
    pthread_attr_init(&a);
    /* Detached: closing the executor never waits for a namespace being made. */
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    /* Nothing but this thread's own namespace changes: no signals for it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    /* Started on another CPU than ours where we may use several: a new thread is commonly
     * queued on its creator's CPU, and there it waits until the creator sleeps, which a
     * one-shot run does first at its clone, so that the run made its namespace itself, in its
     * clone, two runs out of three here (2 vCPUs). Its first namespace made, the thread may run
     * anywhere we may again. */
    if (sched_getaffinity(0, sizeof(p->allowed), &p->allowed) == 0 && CPU_COUNT(&p->allowed) > 1) {
        int cur = sched_getcpu();
        if (cur >= 0 && cur < CPU_SETSIZE && CPU_ISSET(cur, &p->allowed)) {
            cpu_set_t others = p->allowed;
            CPU_CLR(cur, &others);
            p->pinned = pthread_attr_setaffinity_np(&a, sizeof(others), &others) == 0;
        }
    }
    int r = p->host_fd < 0 ? -1 : pthread_create(&p->thread, &a, filler, p);
    if (r != 0 && p->pinned) {
        /* Those CPUs may be offline or not ours after all: anywhere, then. */
        p->pinned = 0;
        pthread_attr_destroy(&a);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&p->thread, &a, filler, p);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (r != 0) {
        if (p->host_fd >= 0)
            close(p->host_fd);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        pool_release(p);
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
    /* One is being made right now: wait for it rather than make a second one at the same time
     * (creations serialise in the kernel, so racing it only slows both, and the loser's
     * namespace is made for nothing). Bounded: a thread that takes this long is stuck. */
    if (p->n == 0 && p->making && !p->failed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += NETNS_WAIT_MS * 1000 * 1000L;
        while (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (p->n == 0 && p->making && pthread_cond_timedwait(&p->cond, &p->lock, &ts) == 0)
            ;
    }
    /* The thread has not begun the first one yet (a busy machine has not run it): the caller
     * makes its own with its clone, and the thread is told not to make that one too. */
    if (p->n == 0 && !p->making && p->made == 0 && p->taken == 0)
        p->claimed = 1;
    p->taken++;
    if (p->n > 0) {
        fd = p->fds[0];
        memmove(p->fds, p->fds + 1, (size_t)(p->n - 1) * sizeof(int));
        p->n--;
    }
    pthread_cond_broadcast(&p->cond);
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
    pool_unref_locked(p);
}

int eb_netns_pool_made(struct eb_netns_pool *p)
{
    if (!p)
        return 0;
    pthread_mutex_lock(&p->lock);
    int n = p->made;
    pthread_mutex_unlock(&p->lock);
    return n;
}

struct listen_job {
    int netns_fd; /* in: join this one, or -1: make one */
    unsigned short port;
    int ret_ns, ret_fd; /* out */
    int err;
    const char *step;
};

static void *listen_thread(void *arg)
{
    struct listen_job *j = arg;
    /* Only this thread changes namespace, and it ends right after: nothing else in the
     * process ever runs in the sandbox's namespace. */
    if (j->netns_fd >= 0) {
        j->step = "join the sandbox's network namespace";
        if (setns(j->netns_fd, CLONE_NEWNET) < 0)
            goto fail;
        j->ret_ns = j->netns_fd;
    } else {
        j->step = "make a network namespace";
        if (unshare(CLONE_NEWNET) < 0)
            goto fail;
        if ((j->ret_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
            goto fail;
    }
    /* Loopback up: the sandbox reaches the proxy through it (and itself, as on any host). A
     * new namespace's loopback has 127.0.0.1/8 and ::1 once it is up; nothing else exists. */
    j->step = "bring loopback up";
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        goto fail;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
        int e = errno;
        close(s);
        errno = e;
        goto fail;
    }
    close(s);
    j->step = "listen on the proxy's port";
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l < 0)
        goto fail;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(j->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 128) < 0) {
        int e = errno;
        close(l);
        errno = e;
        goto fail;
    }
    j->ret_fd = l;
    return NULL;
fail:
    j->err = errno ? errno : EIO;
    if (j->ret_ns >= 0 && j->ret_ns != j->netns_fd)
        close(j->ret_ns);
    j->ret_ns = -1;
    return NULL;
}

int eb_netns_proxy_listen(int netns_fd, unsigned short port, int *ret_netns_fd, int *ret_listen_fd,
                          char *why, size_t why_size)
{
    struct listen_job j = {.netns_fd = netns_fd, .port = port, .ret_ns = -1, .ret_fd = -1};
    pthread_t t;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = pthread_create(&t, NULL, listen_thread, &j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        snprintf(why, why_size, "start a thread: %s", strerror(r));
        return -r;
    }
    pthread_join(t, NULL);
    if (j.err) {
        snprintf(why, why_size, "%s: %s", j.step, strerror(j.err));
        return -j.err;
    }
    *ret_netns_fd = j.ret_ns;
    *ret_listen_fd = j.ret_fd;
    return 0;
}
