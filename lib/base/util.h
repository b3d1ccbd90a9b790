/* SPDX-License-Identifier: MIT */
/* util.h - cleanup attributes, TAKE_PTR/TAKE_FD, EINTR-safe fd I/O and a monotonic clock. */
#ifndef EB_UTIL_H
#define EB_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(eb_freep)
#define _cleanup_close_ _cleanup_(eb_closep)

static inline void eb_freep(void *p)
{
    free(*(void **)p);
}

static inline void eb_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _p = (p);                                                                    \
        (p) = NULL;                                                                                \
        _p;                                                                                        \
    })

#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _fd = (fd);                                                                            \
        (fd) = -1;                                                                                 \
        _fd;                                                                                       \
    })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Closes *fd if open and sets it to -1. */
static inline void eb_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Writes all of buf, retrying on EINTR and short writes. 0 or -errno. Async-signal-safe. */
int eb_write_all(int fd, const void *buf, size_t len);

/* Reads until len bytes or EOF, retrying on EINTR. Bytes read, or -errno. Async-signal-safe. */
ssize_t eb_read_full(int fd, void *buf, size_t len);

/* The line of a /proc status text (NUL-terminated) that starts with name (e.g. "SigIgn:"):
 * a pointer to its first byte, or NULL. Async-signal-safe. */
const char *eb_status_line(const char *text, const char *name);

/* Reads a whole small file (at most max bytes, else -EFBIG) into a NUL-terminated buffer. */
int eb_read_file(const char *path, size_t max, char **ret, size_t *ret_len);

/* Reads a kernel list of pids (cgroup.procs, /proc/.../children: decimal numbers separated by
 * white space) from fd to EOF, in small chunks, and calls fn for each complete number: a number
 * is taken only once a separator or EOF ends it, never a cut-off one, never one that does not
 * fit a pid (more than 9 digits, or 0). Stops after max numbers (returns -E2BIG) or when fn
 * returns < 0 (returns that). Returns how many were passed to fn, or -errno on a read error.
 * Allocates nothing: async-signal-safe. */
int eb_read_pids(int fd, unsigned long max, int (*fn)(pid_t pid, void *arg), void *arg);

/* Writes buf to path (created 0600, O_EXCL unless truncate). 0 or -errno. */
int eb_write_file(const char *path, const void *buf, size_t len, int mode);

/* Monotonic time in nanoseconds. */
uint64_t eb_now_ns(void);

/* Waits for our child pid to exit, at most timeout_ms: through a pidfd where the kernel gives
 * one, else by polling waitpid(WNOHANG). At the deadline the child is SIGKILLed and reaped (a
 * killed child exits at once). 0 with *ret_status, -ETIMEDOUT (killed; *ret_status set), or
 * -errno when it could not be reaped (*ret_status untouched). */
int eb_wait_child(pid_t pid, int timeout_ms, int *ret_status);

/* Removes path and everything below it, relative to directory fds (openat/unlinkat): a symlink
 * is removed, never followed; a mount point below it is left alone; at most 256 levels. 0 or
 * the last -errno (a missing path is 0). */
int eb_rm_rf(const char *path);

/* The same for the entry name of the directory dirfd. */
int eb_rm_rf_at(int dirfd, const char *name);

/* The process pidfd stands for, pinned as a directory of /proc: its pid as we see it in
 * *ret_pid (from the pidfd's fdinfo) and an fd of its /proc/<pid> directory, opened while the
 * pidfd said it was still alive (not yet reaped), so that the directory is that process's and
 * never another's that took the number later (its files then fail with ESRCH). The fd, or
 * -ESRCH when the process is gone, or -errno. */
int eb_pidfd_procdir(int pidfd, pid_t *ret_pid);

/* The directory for execbox's private temp files: $TMPDIR if absolute, else /tmp. */
const char *eb_tmp_dir(void);

/* Whether EXECBOX_JAIL_COMPAT (a comma-separated list) names mechanism: the jail then takes the
 * fallback it has for kernels without it, with the same guarantees, so that the tests can run
 * the fallback on a newer kernel too. Never a way to turn a wall off. */
bool eb_compat_forced(const char *mechanism);

/* Whether word is one of the items of list (NULL: none) separated by any of seps. */
bool eb_word_in(const char *list, const char *word, const char *seps);

#endif
