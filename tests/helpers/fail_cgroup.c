/* SPDX-License-Identifier: MIT */
/*
 * fail_cgroup.c - an LD_PRELOAD shim for tests: while the file named by EB_TEST_CGROUP_FAIL
 * exists, the host refuses execbox's cgroups, as a cgroup tree that refuses us does: every mkdir
 * of an execbox cgroup (a path under /sys/fs/cgroup whose last part starts with "execbox-")
 * fails with EACCES, and so does every write that resets a cgroup's peak (to
 * memory.max_usage_in_bytes or memory.peak in one: an open for writing, or a pwrite through an fd
 * the library holds), so that no emptied cgroup is kept for reuse either. Everything else goes to
 * libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static bool refusing(const char *path)
{
    const char *flag = getenv("EB_TEST_CGROUP_FAIL");
    return flag && *flag && strncmp(path, "/sys/fs/cgroup/", 15) == 0 && access(flag, F_OK) == 0;
}

int mkdir(const char *path, mode_t mode)
{
    static int (*real)(const char *, mode_t);
    if (!real)
        real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    const char *last = strrchr(path, '/');
    if (last && strncmp(last + 1, "execbox-", 8) == 0 && refusing(path)) {
        errno = EACCES;
        return -1;
    }
    return real(path, mode);
}

/* A reset of an execbox cgroup's peak: opened for writing, below an "execbox-" directory. */
static bool peak_reset(const char *path, int flags)
{
    const char *last = strrchr(path, '/');
    return (flags & O_ACCMODE) != O_RDONLY && last && strstr(path, "/execbox-") &&
           (strcmp(last, "/memory.max_usage_in_bytes") == 0 || strcmp(last, "/memory.peak") == 0) &&
           refusing(path);
}

static int open_as(const char *name, const char *path, int flags, va_list ap)
{
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    if (peak_reset(path, flags)) {
        errno = EACCES;
        return -1;
    }
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int r = open_as("open", path, flags, ap);
    va_end(ap);
    return r;
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int r = open_as("open64", path, flags, ap);
    va_end(ap);
    return r;
}

/* A pwrite through an fd the library opened before the refusal began (the files of a cgroup
 * are opened once, with it): refused by the file it names. */
static bool fd_peak_reset(int fd)
{
    char link[64], path[512];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0)
        return false;
    path[n] = '\0';
    return peak_reset(path, O_WRONLY);
}

static ssize_t pwrite_as(const char *name, int fd, const void *buf, size_t len, off_t off)
{
    if (fd_peak_reset(fd)) {
        errno = EACCES;
        return -1;
    }
    ssize_t (*real)(int, const void *, size_t, off_t) =
        (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, name);
    return real(fd, buf, len, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite_as("pwrite", fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite_as("pwrite64", fd, buf, len, off);
}
