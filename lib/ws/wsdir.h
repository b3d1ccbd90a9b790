/* SPDX-License-Identifier: MIT */
/* wsdir.h - directories in a sandbox's workspace from the host side (sessions' make_dir, stat,
 * list_dir), relative to the workspace's directory fd, resolved as wsfile.h resolves files. */
#ifndef EB_WSDIR_H
#define EB_WSDIR_H

#include <stddef.h>

#include "execbox/execbox.h"

/* Makes the directory at path and its missing parents, owned like the workspace's root.
 * -EEXIST when it already is a directory, -ENOTDIR when a file is in the way. */
int eb_ws_mkdir(int dirfd, const char *path, struct execbox_error *err);

/* What is at path (NULL or "": the workspace itself); a symlink is described, not followed. */
int eb_ws_stat(int dirfd, const char *path, struct execbox_dirent *ret, struct execbox_error *err);

/* The entries of the directory at path (NULL or "": the workspace), sorted by name, at most
 * max of them (-E2BIG beyond). Free *ret with execbox_free(). */
int eb_ws_list_dir(int dirfd, const char *path, size_t max, struct execbox_dirent **ret,
                   size_t *ret_n, struct execbox_error *err);

#endif
