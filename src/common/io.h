/* SPDX-License-Identifier: MIT */
/* io.h - small fd helpers for the programs (the library's own are internal). */
#ifndef EBCLI_IO_H
#define EBCLI_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf to fd, retrying on EINTR. 0 or -errno. */
int cli_write_all(int fd, const void *buf, size_t len);

/* Reads fd to EOF, at most max bytes (-EFBIG past that). NUL-terminated. 0 or -errno. */
int cli_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads a file (or "-" for stdin) as above. */
int cli_read_path(const char *path, size_t max, char **ret, size_t *ret_len);

#endif
