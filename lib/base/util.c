/* SPDX-License-Identifier: MIT */
/* util.c - EINTR-safe I/O, small file helpers, safe tree removal. */
#include "base/util.h"
#include <sys/wait.h>
#include <sys/syscall.h>
#include <signal.h>
#include <poll.h>
#include <stdbool.h>

#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

const char *eb_status_line(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0)
            return p;
    return NULL;
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

#define RM_DEPTH_MAX 256

/* Removes everything inside the directory dfd (which it takes over), relative to directory
 * fds only (openat/unlinkat): no path is resolved twice, no symlink followed, no mount crossed
 * (entries on another device than dev are left). systemd's rm_rf_children is the model. */
static int rm_children(int dfd, dev_t dev, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = -errno;
        close(dfd);
        return e;
    }
    int r = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT)
                r = -errno;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != dev) {
                r = -EXDEV; /* a mount point: never descend, never remove */
                continue;
            }
            if (depth >= RM_DEPTH_MAX) {
                r = -ELOOP;
                continue;
            }
            int cfd = openat(dirfd(d), e->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (cfd < 0) {
                if (errno != ENOENT)
                    r = -errno;
                continue;
            }
            struct stat cs;
            if (fstat(cfd, &cs) < 0 || cs.st_dev != st.st_dev || cs.st_ino != st.st_ino) {
                close(cfd); /* swapped between the stat and the open: leave it */
                r = -EBUSY;
                continue;
            }
            int k = rm_children(cfd, dev, depth + 1);
            if (k < 0)
                r = k;
            if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
        } else if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT) {
            r = -errno;
        }
    }
    closedir(d);
    return r;
}

int eb_rm_rf_at(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat fs;
    if (fstat(fd, &fs) < 0 || fs.st_dev != st.st_dev || fs.st_ino != st.st_ino) {
        close(fd);
        return -EBUSY;
    }
    int r = rm_children(fd, st.st_dev, 0);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        r = -errno;
    return r;
}

int eb_rm_rf(const char *path)
{
    char parent[PATH_MAX];
    if (snprintf(parent, sizeof(parent), "%s", path) >= (int)sizeof(parent))
        return -ENAMETOOLONG;
    char *slash = strrchr(parent, '/');
    const char *name = path;
    int pfd;
    if (slash) {
        name = path + (slash - parent) + 1;
        *slash = '\0';
        pfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        pfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (pfd < 0)
        return errno == ENOENT ? 0 : -errno;
    int r = name[0] ? eb_rm_rf_at(pfd, name) : -EINVAL;
    close(pfd);
    return r;
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

bool eb_word_in(const char *list, const char *word, const char *seps)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, seps);
        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len;
        if (*p)
            p++;
    }
    return false;
}

bool eb_compat_forced(const char *mechanism)
{
    return eb_word_in(secure_getenv("EXECBOX_JAIL_COMPAT"), mechanism, ",");
}

/* The "Pid:" line of a pidfd's fdinfo: the process's pid in our pid namespace, -1 once it is
 * gone (0 when it is in none we can see). */
static pid_t pidfd_pid(int pidfd)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = eb_read_full(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nPid:");
    if (!p)
        return -1;
    long v = strtol(p + 5, NULL, 10);
    return v > 0 && v <= 0x3fffffff ? (pid_t)v : -1; /* PID_MAX_LIMIT is 4M */
}

int eb_pidfd_procdir(int pidfd, pid_t *ret_pid)
{
    pid_t pid = pidfd_pid(pidfd);
    if (pid <= 0)
        return -ESRCH;
    char path[32];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    /* Still there (a zombie too holds its number): the directory we opened was its. */
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
        int e = errno == ESRCH ? -ESRCH : -errno;
        close(dir);
        return e;
    }
    *ret_pid = pid;
    return dir;
}
