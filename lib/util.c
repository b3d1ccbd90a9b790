/* SPDX-License-Identifier: MIT */
/* util.c - EINTR-safe I/O, small file helpers, safe tree removal. */
#include "util.h"
#include <sys/wait.h>
#include <sys/syscall.h>
#include <signal.h>
#include <poll.h>
#include <stdbool.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int eb_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t eb_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int eb_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t cap = 4096, len = 0;
    _cleanup_free_ char *buf = malloc(cap + 1);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (len == cap) {
            if (cap > max)
                return -EFBIG;
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb)
                return -ENOMEM;
            buf = nb;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max)
            return -EFBIG;
    }
    buf[len] = '\0';
    if (ret_len)
        *ret_len = len;
    *ret = TAKE_PTR(buf);
    return 0;
}

int eb_write_file(const char *path, const void *buf, size_t len, int mode)
{
    _cleanup_close_ int fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode);
    if (fd < 0)
        return -errno;
    return eb_write_all(fd, buf, len);
}

uint64_t eb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
    return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int eb_rm_rf(const char *path)
{
    /* FTW_PHYS: never follow a symlink the guest planted; FTW_MOUNT: never descend into a mount
     * that might still be attached; FTW_DEPTH: contents before their directory. */
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
        return errno == ENOENT ? 0 : -errno;
    return 0;
}

const char *eb_tmp_dir(void)
{
    const char *t = secure_getenv("TMPDIR");
    return t && t[0] == '/' ? t : "/tmp";
}

int eb_read_pids(int fd, unsigned long max, int (*fn)(pid_t pid, void *arg), void *arg)
{
    char buf[512];
    unsigned long count = 0;
    long cur = 0;
    int digits = 0;
    bool bad = false; /* the current token is not a plain number */
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        for (ssize_t i = 0; i <= n; i++) {
            bool end = i == n; /* n == 0: EOF ends the last token */
            if (end && n > 0)
                break;
            char ch = end ? ' ' : buf[i];
            if (ch >= '0' && ch <= '9') {
                if (++digits > 9)
                    bad = true;
                else
                    cur = cur * 10 + (ch - '0');
                continue;
            }
            if (ch != ' ' && ch != '\n' && ch != '\t') {
                bad = true;
                continue;
            }
            if (digits > 0 && !bad && cur > 0) {
                if (count >= max)
                    return -E2BIG;
                count++;
                int r = fn((pid_t)cur, arg);
                if (r < 0)
                    return r;
            }
            cur = 0;
            digits = 0;
            bad = false;
        }
        if (n == 0)
            return (int)(count > INT32_MAX ? INT32_MAX : count);
    }
}

static int reap(pid_t pid, int flags, int *ret_status)
{
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, flags)) < 0 && errno == EINTR)
        ;
    if (w < 0)
        return -errno;
    if (w == 0)
        return 0; /* WNOHANG: still running */
    *ret_status = st;
    return 1;
}

int eb_wait_child(pid_t pid, int timeout_ms, int *ret_status)
{
    uint64_t deadline = eb_now_ns() + (uint64_t)timeout_ms * 1000000U;
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int r;
    for (;;) {
        if ((r = reap(pid, WNOHANG, ret_status)) != 0)
            break;
        uint64_t now = eb_now_ns();
        if (now >= deadline) {
            kill(pid, SIGKILL);
            r = reap(pid, 0, ret_status);
            r = r < 0 ? r : -ETIMEDOUT;
            break;
        }
        int left = (int)((deadline - now) / 1000000U) + 1;
        if (pfd >= 0) {
            struct pollfd p = {.fd = pfd, .events = POLLIN};
            (void)poll(&p, 1, left);
        } else {
            struct timespec ts = {0, 10 * 1000000L}; /* no pidfd: look again in 10 ms */
            nanosleep(&ts, NULL);
        }
    }
    if (pfd >= 0)
        close(pfd);
    return r > 0 ? 0 : r;
}
