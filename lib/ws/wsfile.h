/* SPDX-License-Identifier: MIT */
/* wsfile.h - the host side of files in a sandbox's workspace (sessions' file calls, one-shot
 * input files), relative to the workspace's directory fd. */
#ifndef EB_WSFILE_H
#define EB_WSFILE_H

#include <stddef.h>
#include <stdint.h>

#include "execbox/execbox.h"

#define EB_WS_PATH_MAX 1024

/* A path relative to /workspace: non-empty, not absolute, no "." or ".." or empty components,
 * no control characters, at most EB_WS_PATH_MAX bytes. 0, or -EINVAL (kind INVALID_VALUE,
 * field "path"). Symlinks are refused when the path is resolved. */
int eb_ws_path_check(const char *path, struct execbox_error *err);

/* Writes len bytes (at most max, 0: no limit) to path beneath dirfd, making its parent
 * directories; a fresh file owned like the workspace's root, renamed over any old one. */
int eb_ws_write(int dirfd, const char *path, const void *data, size_t len, uint64_t max,
                struct execbox_error *err);

/* Opens the regular file at path for reading (O_CLOEXEC, blocking), at most max bytes long
 * (-EFBIG beyond): *ret_fd is the caller's to close, *ret_size its size when opened. */
int eb_ws_open_read(int dirfd, const char *path, uint64_t max, int *ret_fd, uint64_t *ret_size,
                    struct execbox_error *err);

/* Reads the regular file at path, at most max bytes (-EFBIG beyond), NUL-terminated. */
int eb_ws_read(int dirfd, const char *path, size_t max, char **ret_data, size_t *ret_len,
               struct execbox_error *err);

/* Removes the file, symlink or empty directory at path. */
int eb_ws_remove(int dirfd, const char *path, struct execbox_error *err);
/* Moves from to to (both beneath dirfd, checked as above; to's parent must exist): a file,
 * symlink or directory; a file in the way is replaced, a directory in the way only when empty.
 * -ENOENT, -ENOTEMPTY, -EINVAL (a directory into itself), -EISDIR/-ENOTDIR (kinds differ). */
int eb_ws_rename(int dirfd, const char *from, const char *to, struct execbox_error *err);

/* Writes a request's input files (checked first with eb_input_files_check) beneath dirfd. */
int eb_ws_place(int dirfd, const struct execbox_request *req, const struct execbox_policy *pol,
                struct execbox_error *err);

/* Checks a request's input files before anything runs: count, paths, each within file_size,
 * together within workspace_size (a fresh workspace). -EINVAL, -E2BIG or -EFBIG with err set. */
int eb_input_files_check(const struct execbox_request *req, const struct execbox_policy *pol,
                         struct execbox_error *err);

/* Places req's input files (none: no-op) in the directory at path dir. */
int eb_input_files_place_at(const char *dir, const struct execbox_request *req,
                            const struct execbox_policy *pol, struct execbox_error *err);

#endif
