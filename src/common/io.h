/* SPDX-License-Identifier: MIT */
/* io.h - small fd and text helpers for the programs (the library's own are internal). */
#ifndef EBCLI_IO_H
#define EBCLI_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes all of buf to fd, retrying on EINTR. 0 or -errno. */
int cli_write_all(int fd, const void *buf, size_t len);

/* Writes len bytes to a new file in the current directory named stem.ext (ext "": stem), or
 * stem-2.ext, stem-3.ext ... up to stem-100.ext when that exists: never over an existing file,
 * never through a symlink. The name used (or last tried) in name. 0 or -errno. */
int cli_save_new(const char *stem, const char *ext, const void *data, size_t len, char *name,
                 size_t name_size);

/* Like cli_write_all, but never blocks past deadline_ns (CLOCK_MONOTONIC): waits for room
 * with poll() and writes at most PIPE_BUF bytes at a time, so that a reader that stops
 * reading cannot hold us; past the deadline it still writes while there is room. -ETIMEDOUT
 * when the reader has no room by then (some bytes may have been written). */
int cli_write_until(int fd, const void *buf, size_t len, uint64_t deadline_ns);

/* Raises this process's soft limit of open files to its hard one. For the long-running servers
 * (serve, mcp): each sandbox holds fds in them (its pipes, the pool's and the template's forks,
 * the cgroups kept for reuse), some 550 at --pool 8 and eight runs at once, past the soft 1024
 * a service manager gives by default. Their sandboxes set their own limit (EB_NOFILE), not
 * this one. Best effort: the limit stays as it was when it cannot be raised. */
void cli_raise_nofile(void);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cli_now_ns(void);

/* Reads fd to EOF, at most max bytes (-EFBIG past that). NUL-terminated. 0 or -errno. */
int cli_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads a file (or "-" for stdin) as above. */
int cli_read_path(const char *path, size_t max, char **ret, size_t *ret_len);

/* ts (NULL: now) as ISO 8601 UTC, "2026-12-01T18:00:00Z", with digits (0 to 9) of the
 * fraction of a second before the Z. */
struct timespec;
void cli_iso_time(const struct timespec *ts, unsigned digits, char *buf, size_t size);

/* The unit after t as "%g" prints it: "second" for 1, else "seconds" ("0.5 seconds"). */
const char *cli_seconds_word(double t);

/* The i-th note (from 0) on why a result's rich outputs are not all there, after the cause
 * (the results file too large, outputs cut for size, outputs past the count), in buf without
 * a period or newline, for each surface to frame; NULL past the last. */
struct execbox_result;
const char *cli_rich_note(const struct execbox_result *res, unsigned i, char *buf, size_t size);

#endif
