/* SPDX-License-Identifier: MIT */
/* io.c - fd and text helpers for the programs. */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "execbox/execbox.h"

const char *cli_seconds_word(double t)
{
    char s[32];
    snprintf(s, sizeof(s), "%g", t);
    return strcmp(s, "1") == 0 ? "second" : "seconds";
}

int cli_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
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

int cli_save_new(const char *stem, const char *ext, const void *data, size_t len, char *name,
                 size_t name_size)
{
    int fd = -1;
    for (int i = 1; i <= 100 && fd < 0; i++) {
        if (i == 1)
            snprintf(name, name_size, "%s%s%s", stem, *ext ? "." : "", ext);
        else
            snprintf(name, name_size, "%s-%d%s%s", stem, i, *ext ? "." : "", ext);
        fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return -errno;
    int w = cli_write_all(fd, data, len);
    if (close(fd) < 0 && w == 0)
        w = -errno;
    return w;
}

void cli_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

uint64_t cli_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int cli_write_until(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len) {
        /* Past the deadline, a reader with room still gets the bytes; only waiting ends. */
        uint64_t now = cli_now_ns();
        int wait_ms = now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int pr = poll(&pfd, 1, wait_ms);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (pr == 0)
            return -ETIMEDOUT;
        if (pfd.revents & (POLLERR | POLLNVAL))
            return -EPIPE;
        /* Room for PIPE_BUF bytes is what POLLOUT promises on a pipe: a larger write
         * could block again. */
        ssize_t n = write(fd, p, len < PIPE_BUF ? len : PIPE_BUF);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cli_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (len == cap) {
            if (cap > max) {
                free(buf);
                return -EFBIG;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            free(buf);
            return e;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max) {
            free(buf);
            return -EFBIG;
        }
    }
    buf[len] = '\0';
    *ret = buf;
    *ret_len = len;
    return 0;
}

int cli_read_path(const char *path, size_t max, char **ret, size_t *ret_len)
{
    if (strcmp(path, "-") == 0)
        return cli_read_fd(0, max, ret, ret_len);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = cli_read_fd(fd, max, ret, ret_len);
    close(fd);
    return r;
}

void cli_iso_time(const struct timespec *ts, unsigned digits, char *buf, size_t size)
{
    struct timespec now;
    if (!ts) {
        clock_gettime(CLOCK_REALTIME, &now);
        ts = &now;
    }
    struct tm tm;
    char t[32];
    if (!gmtime_r(&ts->tv_sec, &tm) || strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(t, sizeof(t), "1970-01-01T00:00:00");
    if (digits == 0) {
        snprintf(buf, size, "%sZ", t);
        return;
    }
    if (digits > 9)
        digits = 9;
    long frac = ts->tv_nsec;
    for (unsigned i = digits; i < 9; i++)
        frac /= 10;
    snprintf(buf, size, "%s.%0*ldZ", t, (int)digits, frac);
}

const char *cli_rich_note(const struct execbox_result *res, unsigned i, char *buf, size_t size)
{
    const char *notes[3];
    unsigned n = 0;
    char cut[160], dropped[96];
    if (!res->results_truncated)
        return NULL;
    if (res->results_file_dropped)
        notes[n++] = "the cell's rich results file was too large and was dropped, with every "
                     "rich output in it";
    if (res->results_cut) {
        snprintf(cut, sizeof(cut),
                 "%zu rich output%s cut for size: a cell keeps at most %u MiB "
                 "of rich outputs",
                 res->results_cut, res->results_cut == 1 ? " was" : "s were",
                 (unsigned)(EXECBOX_RICH_BYTES_MAX >> 20));
        notes[n++] = cut;
    }
    if (res->results_dropped) {
        snprintf(dropped, sizeof(dropped), "%zu more rich output%s than the %d kept %s dropped",
                 res->results_dropped, res->results_dropped == 1 ? "" : "s", EXECBOX_RICH_MAX,
                 res->results_dropped == 1 ? "was" : "were");
        notes[n++] = dropped;
    }
    if (n == 0) /* a record that says only results_truncated (an older execbox's) */
        notes[n++] = "some rich outputs were not kept";
    if (i >= n)
        return NULL;
    snprintf(buf, size, "%s", notes[i]);
    return buf;
}
