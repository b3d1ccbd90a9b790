/* SPDX-License-Identifier: MIT */
/* workspace.h - fresh workspaces and the list of files a run left in one. */
#ifndef EB_WORKSPACE_H
#define EB_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "execbox/execbox.h"

/* Creates a private (0700) directory "<tmp>/execbox-<what>-XXXXXX" and writes its path to
 * path (EXECBOX_PATH_MAX). 0 or -errno with err set. */
int eb_mkdtemp(const char *what, char *path, struct execbox_error *err);

/* Lists the regular files below the directory dirfd (not following symlinks, not crossing
 * mounts, at most EB_FILES_MAX entries and EB_FILES_DEPTH levels) into r->files, sorted by
 * path; images up to inline_max bytes are read into data. Each file's origin says whether it
 * is one of req's input files (req may be NULL: none), as given or changed. dirfd stays owned
 * by the caller. */
int eb_workspace_list(int dirfd, size_t inline_max, const struct execbox_request *req,
                      struct execbox_result *r);

/* Refuses a host directory that must never be handed to sandboxed code as its workspace: `/`,
 * the top-level system and shared directories (/usr, /etc, /var, /tmp, /home, ...), anything
 * below the system trees (/usr, /etc, /bin, /sbin, /lib*, /boot, /proc, /sys, /dev) and
 * execbox's own state (/run/execbox). real must be a canonical path (realpath). 0, or -EPERM
 * with err set. */
int eb_workspace_check_host(const char *real, struct execbox_error *err);

/* True when the n bytes at d really are the image that mime (from the name) says: a guest can
 * name anything .png. */
bool eb_image_magic_ok(const char *mime, const unsigned char *d, size_t n);

/* A MIME type guessed from the file name. */
const char *eb_mime_from_name(const char *name);

#endif
