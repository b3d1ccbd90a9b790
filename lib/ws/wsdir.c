/* SPDX-License-Identifier: MIT */
/* wsdir.c - directories in a sandbox's workspace from the host side: like wsfile.c, every path
 * is checked with eb_ws_path_check and resolved beneath the workspace's directory fd with no
 * symlink, magic link or mount crossing on the way. */
#include "ws/wsdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "ws/wsfile.h"

#define RESOLVE_FLAGS                                                                              \
    (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int open_beneath(int dirfd, const char *path, int flags)
{
    struct open_how how = {.flags = (uint64_t)flags | O_CLOEXEC, .resolve = RESOLVE_FLAGS};
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : (int)fd;
}

static int path_error(struct execbox_error *err, const char *path, int r)
{
    if (r == -ELOOP || r == -EXDEV) {
        r = eb_error_set(err, -EINVAL, "path '%.200s': a symlink or a mount on the way", path);
        if (err) {
            err->kind = EXECBOX_ERROR_INVALID_VALUE;
            snprintf(err->field, sizeof(err->field), "path");
        }
        return r;
    }
    if (r == -ENOENT)
        return eb_error_set(err, r, "'%.200s': no such file or directory", path);
    if (r == -ENOTDIR)
        return eb_error_set(err, -ENOENT, "'%.200s': a part of the path is not a directory", path);
    if (r == -ENOSYS)
        return eb_error_set(err, -ENOTSUP, "this kernel has no openat2 (Linux 5.6 or later)");
    return eb_error_set(err, r, "'%.200s': %s", path, execbox_strerror(r));
}

int eb_ws_mkdir(int dirfd, const char *path, struct execbox_error *err)
{
    int r = eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    struct stat root;
    if (fstat(dirfd, &root) < 0)
        return eb_error_set(err, -errno, "stat the workspace: %s", execbox_strerror(-errno));
    _cleanup_close_ int fd = open_beneath(dirfd, ".", O_PATH | O_DIRECTORY);
    if (fd < 0)
        return path_error(err, ".", fd);
    /* One component at a time, each made when missing and entered without following links. */
    char part[EB_WS_PATH_MAX + 1];
    bool made = false;
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "/");
        memcpy(part, p, len);
        part[len] = '\0';
        made = mkdirat(fd, part, 0755) == 0;
        if (!made && errno != EEXIST)
            return eb_error_set(err, -errno, "make '%.200s': %s", path, execbox_strerror(-errno));
        int next = open_beneath(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        struct stat st;
        if (next == -ENOTDIR && fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            next = -ELOOP; /* a symlink on the way, as the file calls say it */
        if (next == -ENOTDIR)
            return eb_error_set(err, -ENOTDIR, "'%.200s': a file (not a directory) is in the way",
                                path);
        if (next < 0)
            return path_error(err, path, next);
        if (made && fchown(next, root.st_uid, root.st_gid) < 0 && errno != EPERM) {
            r = -errno;
            close(next);
            return eb_error_set(err, r, "chown '%.200s': %s", path, execbox_strerror(r));
        }
        close(fd);
        fd = next;
        p += len;
        if (*p == '/')
            p++;
    }
    if (!made)
        return eb_error_set(err, -EEXIST, "'%.200s' already exists", path);
    return 0;
}

static void fill(struct execbox_dirent *d, const char *name, const struct stat *st)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->type = S_ISREG(st->st_mode)   ? EXECBOX_DIRENT_FILE
              : S_ISDIR(st->st_mode) ? EXECBOX_DIRENT_DIR
              : S_ISLNK(st->st_mode) ? EXECBOX_DIRENT_SYMLINK
                                     : EXECBOX_DIRENT_OTHER;
    d->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
    d->mode = (uint32_t)st->st_mode;
    d->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

int eb_ws_stat(int dirfd, const char *path, struct execbox_dirent *ret, struct execbox_error *err)
{
    struct stat st;
    if (!path || !*path) {
        if (fstat(dirfd, &st) < 0)
            return eb_error_set(err, -errno, "stat the workspace: %s", execbox_strerror(-errno));
        fill(ret, "", &st);
        return 0;
    }
    int r = eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char parent[EB_WS_PATH_MAX + 1] = ".";
    if (slash) {
        memcpy(parent, path, (size_t)(slash - path));
        parent[slash - path] = '\0';
    }
    _cleanup_close_ int pfd = open_beneath(dirfd, parent, O_PATH | O_DIRECTORY);
    if (pfd < 0)
        return path_error(err, path, pfd);
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return path_error(err, path, -errno);
    fill(ret, name, &st);
    return 0;
}

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const struct execbox_dirent *)a)->name,
                  ((const struct execbox_dirent *)b)->name);
}

int eb_ws_list_dir(int wsfd, const char *path, size_t max, struct execbox_dirent **ret,
                   size_t *ret_n, struct execbox_error *err)
{
    bool root = !path || !*path;
    int r = root ? 0 : eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    int fd = open_beneath(wsfd, root ? "." : path, O_RDONLY | O_DIRECTORY);
    if (fd == -ENOTDIR)
        return eb_error_set(err, -ENOTDIR, "'%.200s' is not a directory", path);
    if (fd < 0)
        return path_error(err, root ? "." : path, fd);
    DIR *d = fdopendir(fd);
    if (!d) {
        r = -errno;
        close(fd);
        return eb_error_set(err, r, "open '%.200s': %s", root ? "." : path, execbox_strerror(r));
    }
    struct execbox_dirent *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    r = 0;
    errno = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* removed meanwhile */
        if (n == max) {
            r = eb_error_set(err, -E2BIG, "'%.200s' has more than %zu entries", root ? "." : path,
                             max);
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct execbox_dirent *nv = realloc(v, nc * sizeof(*v));
            if (!nv) {
                r = eb_error_set(err, -ENOMEM, "out of memory");
                break;
            }
            v = nv;
            cap = nc;
        }
        fill(&v[n++], de->d_name, &st);
    }
    closedir(d);
    if (r < 0) {
        free(v);
        return r;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_dirent);
    *ret = v;
    *ret_n = n;
    return 0;
}
