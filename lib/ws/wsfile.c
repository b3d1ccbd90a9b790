/* SPDX-License-Identifier: MIT */
/* wsfile.c - files in and out of a sandbox's workspace from the host side: every path resolved
 * beneath the workspace's directory fd with no symlink, magic link or mount crossing on the way,
 * writes through a fresh inode (never through a link the guest planted), bounded reads. */
#include "ws/wsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"

#define RESOLVE_FLAGS                                                                              \
    (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int bad_path(struct execbox_error *err, const char *path, const char *why)
{
    int r = eb_error_set(err, -EINVAL, "path '%.200s': %s", path, why);
    if (err) {
        err->kind = EXECBOX_ERROR_INVALID_VALUE;
        snprintf(err->field, sizeof(err->field), "path");
    }
    return r;
}

int eb_ws_path_check(const char *path, struct execbox_error *err)
{
    if (!path || !*path)
        return bad_path(err, "", "empty");
    size_t n = strlen(path);
    if (n > EB_WS_PATH_MAX)
        return bad_path(err, path, "longer than 1024 bytes");
    if (path[0] == '/')
        return bad_path(err, path, "absolute; paths are relative to /workspace");
    for (const char *p = path; *p;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0)
            return bad_path(err, path, "an empty component");
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return bad_path(err, path, "'.' and '..' are not allowed");
        if (len > 255)
            return bad_path(err, path, "a component longer than 255 bytes");
        p += len;
        if (*p == '/')
            p++;
    }
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return bad_path(err, path, "control characters are not allowed");
    return 0;
}

/* openat2 beneath dirfd; the kernel refuses symlinks, magic links, mount crossings and any
 * escape. -errno. */
static int open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)flags | O_CLOEXEC, .mode = mode, .resolve = RESOLVE_FLAGS};
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : (int)fd;
}

static int resolve_error(struct execbox_error *err, const char *path, int r)
{
    if (r == -ELOOP || r == -EXDEV)
        return bad_path(err, path, "a symlink or a mount on the way");
    if (r == -ENOENT)
        return eb_error_set(err, r, "'%.200s': no such file", path);
    if (r == -ENOTDIR)
        return eb_error_set(err, -ENOENT, "'%.200s': a part of the path is not a directory", path);
    if (r == -ENOSYS)
        return eb_error_set(err, -ENOTSUP, "this kernel has no openat2 (Linux 5.6 or later)");
    return eb_error_set(err, r, "'%.200s': %s", path, execbox_strerror(r));
}

/* Splits path into its parent directory (opened beneath dirfd, made when mkdirs) and its last
 * component. Returns the parent's fd or -errno. */
static int open_parent(int dirfd, const char *path, bool mkdirs, uid_t uid, gid_t gid,
                       const char **ret_name, struct execbox_error *err)
{
    const char *slash = strrchr(path, '/');
    *ret_name = slash ? slash + 1 : path;
    int fd = open_beneath(dirfd, ".", O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return resolve_error(err, ".", fd);
    if (!slash)
        return fd;
    /* One component at a time, so that each missing directory can be made. */
    char part[EB_WS_PATH_MAX + 1];
    for (const char *p = path; p < slash;) {
        const char *e = strchr(p, '/');
        size_t len = (size_t)(e - p);
        memcpy(part, p, len);
        part[len] = '\0';
        if (mkdirs && mkdirat(fd, part, 0755) == 0) {
            int d = open_beneath(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
            if (d >= 0) {
                (void)!fchown(d, uid, gid);
                close(d);
            }
        }
        int next = open_beneath(fd, part, O_PATH | O_DIRECTORY, 0);
        close(fd);
        if (next < 0)
            return resolve_error(err, path, next);
        fd = next;
        p = e + 1;
    }
    return fd;
}

int eb_ws_write(int dirfd, const char *path, const void *data, size_t len, uint64_t max,
                struct execbox_error *err)
{
    int r = eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    if (max && len > max)
        return eb_error_set(err, -EFBIG,
                            "'%.200s': %zu bytes, more than the file size limit of %llu", path, len,
                            (unsigned long long)max);
    /* New files belong to whoever owns the workspace (the sandbox's user), as the guest's own. */
    struct stat root;
    if (fstat(dirfd, &root) < 0)
        return eb_error_set(err, -errno, "stat the workspace: %s", execbox_strerror(-errno));
    const char *name;
    _cleanup_close_ int pfd = open_parent(dirfd, path, true, root.st_uid, root.st_gid, &name, err);
    if (pfd < 0)
        return pfd;
    /* A fresh inode under a temporary name, renamed over the target: a link the guest left at
     * the name is replaced, never written through. */
    char tmp[64];
    uint64_t rnd = 0;
    (void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
    snprintf(tmp, sizeof(tmp), ".execbox-upload-%016llx", (unsigned long long)rnd);
    _cleanup_close_ int fd = open_beneath(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd < 0)
        return resolve_error(err, path, fd);
    r = len ? eb_write_all(fd, data, len) : 0;
    if (r == 0 && fchown(fd, root.st_uid, root.st_gid) < 0 && errno != EPERM)
        r = -errno;
    if (r == 0 && renameat(pfd, tmp, pfd, name) < 0)
        r = -errno;
    if (r < 0) {
        unlinkat(pfd, tmp, 0);
        if (r == -ENOSPC || r == -EDQUOT)
            return eb_error_set(err, -ENOSPC, "'%.200s': the workspace is full", path);
        if (r == -EISDIR)
            return eb_error_set(err, r, "'%.200s' is a directory", path);
        return eb_error_set(err, r, "write '%.200s': %s", path, execbox_strerror(r));
    }
    return 0;
}

int eb_ws_open_read(int dirfd, const char *path, uint64_t max, int *ret_fd, uint64_t *ret_size,
                    struct execbox_error *err)
{
    int r = eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    /* O_NONBLOCK: a FIFO the guest left there must not hang us. */
    _cleanup_close_ int fd = open_beneath(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0)
        return resolve_error(err, path, fd);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return eb_error_set(err, -errno, "stat '%.200s': %s", path, execbox_strerror(-errno));
    if (S_ISDIR(st.st_mode))
        return eb_error_set(err, -EISDIR, "'%.200s' is a directory", path);
    if (!S_ISREG(st.st_mode))
        return eb_error_set(err, -EINVAL, "'%.200s' is not a regular file", path);
    if ((uint64_t)st.st_size > max)
        return eb_error_set(err, -EFBIG, "'%.200s' is %lld bytes, more than %llu", path,
                            (long long)st.st_size, (unsigned long long)max);
    /* A regular file: reads never block, and the caller's reads may be plain ones. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return eb_error_set(err, -errno, "fcntl '%.200s': %s", path, execbox_strerror(-errno));
    *ret_size = (uint64_t)st.st_size;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

int eb_ws_read(int dirfd, const char *path, size_t max, char **ret_data, size_t *ret_len,
               struct execbox_error *err)
{
    _cleanup_close_ int fd = -1;
    uint64_t size = 0;
    int r = eb_ws_open_read(dirfd, path, max, &fd, &size, err);
    if (r < 0)
        return r;
    /* The size may change under us (a cell may be writing): read at most max + 1. */
    size_t cap = (size_t)size + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return eb_error_set(err, -ENOMEM, "out of memory");
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                return eb_error_set(err, -EFBIG, "'%.200s' grew beyond %zu bytes", path, max);
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                return eb_error_set(err, -ENOMEM, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            r = -errno;
            free(buf);
            return eb_error_set(err, r, "read '%.200s': %s", path, execbox_strerror(r));
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    if (n > max) {
        free(buf);
        return eb_error_set(err, -EFBIG, "'%.200s' grew beyond %zu bytes", path, max);
    }
    buf[n] = '\0';
    *ret_data = buf;
    *ret_len = n;
    return 0;
}

int eb_ws_remove(int dirfd, const char *path, struct execbox_error *err)
{
    int r = eb_ws_path_check(path, err);
    if (r < 0)
        return r;
    const char *name;
    _cleanup_close_ int pfd = open_parent(dirfd, path, false, 0, 0, &name, err);
    if (pfd < 0)
        return pfd;
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return resolve_error(err, path, -errno);
    /* A symlink itself may go: unlinkat removes the link, not what it points to. */
    if (unlinkat(pfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
        r = -errno;
        if (r == -ENOTEMPTY || r == -EEXIST)
            return eb_error_set(err, -ENOTEMPTY, "'%.200s' is a directory that is not empty", path);
        return eb_error_set(err, r, "remove '%.200s': %s", path, execbox_strerror(r));
    }
    return 0;
}

int eb_ws_rename(int dirfd, const char *from, const char *to, struct execbox_error *err)
{
    int r = eb_ws_path_check(from, err);
    if (r < 0 || (r = eb_ws_path_check(to, err)) < 0)
        return r;
    const char *from_name, *to_name;
    _cleanup_close_ int from_dir = open_parent(dirfd, from, false, 0, 0, &from_name, err);
    if (from_dir < 0)
        return from_dir;
    _cleanup_close_ int to_dir = open_parent(dirfd, to, false, 0, 0, &to_name, err);
    if (to_dir < 0)
        return to_dir;
    /* Both parents were resolved beneath the workspace with no symlink followed; renameat
     * follows neither last component. */
    if (renameat(from_dir, from_name, to_dir, to_name) < 0) {
        r = -errno;
        if (r == -ENOENT)
            return eb_error_set(err, r, "'%.200s': no such file", from);
        if (r == -ENOTEMPTY || r == -EEXIST)
            return eb_error_set(err, -ENOTEMPTY, "'%.200s' is a directory that is not empty", to);
        if (r == -EINVAL)
            return eb_error_set(err, r, "'%.200s' cannot move into itself", from);
        return eb_error_set(err, r, "move '%.200s' to '%.200s': %s", from, to, execbox_strerror(r));
    }
    return 0;
}

int eb_ws_place(int dirfd, const struct execbox_request *req, const struct execbox_policy *pol,
                struct execbox_error *err)
{
    for (size_t i = 0; i < req->n_files; i++) {
        int r = eb_ws_write(dirfd, req->files[i].path, req->files[i].data, req->files[i].len,
                            pol->file_size, err);
        if (r < 0)
            return r;
    }
    return 0;
}

int eb_input_files_check(const struct execbox_request *req, const struct execbox_policy *pol,
                         struct execbox_error *err)
{
    if (req->n_files && !req->files)
        return eb_error_set(err, -EINVAL, "n_files without files");
    if (req->n_files > EXECBOX_INPUT_FILES_MAX)
        return eb_error_set(err, -E2BIG, "%zu input files, more than %d", req->n_files,
                            EXECBOX_INPUT_FILES_MAX);
    uint64_t total = 0;
    for (size_t i = 0; i < req->n_files; i++) {
        const struct execbox_input_file *f = &req->files[i];
        int r = eb_ws_path_check(f->path, err);
        if (r < 0)
            return r;
        if (f->len && !f->data)
            return eb_error_set(err, -EINVAL, "input file '%.200s' has a length but no data",
                                f->path);
        if (f->len > pol->file_size) {
            r = eb_error_set(err, -EFBIG,
                             "input file '%.200s' is %zu bytes, more than the file "
                             "size limit of %llu",
                             f->path, f->len, (unsigned long long)pol->file_size);
            if (err) {
                err->kind = EXECBOX_ERROR_OVER_MAXIMUM;
                snprintf(err->field, sizeof(err->field), "files");
            }
            return r;
        }
        total += f->len;
    }
    if (!pol->workspace[0] && total > pol->workspace_size) {
        int r = eb_error_set(err, -EFBIG,
                             "the input files add up to %llu bytes, more than the "
                             "workspace size of %llu",
                             (unsigned long long)total, (unsigned long long)pol->workspace_size);
        if (err) {
            err->kind = EXECBOX_ERROR_OVER_MAXIMUM;
            snprintf(err->field, sizeof(err->field), "files");
        }
        return r;
    }
    return 0;
}

int eb_input_files_place_at(const char *dir, const struct execbox_request *req,
                            const struct execbox_policy *pol, struct execbox_error *err)
{
    if (!req || !req->n_files)
        return 0;
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return eb_error_set(err, -errno, "open the workspace '%s': %s", dir,
                            execbox_strerror(-errno));
    return eb_ws_place(fd, req, pol, err);
}
