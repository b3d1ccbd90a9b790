/* SPDX-License-Identifier: MIT */
/* workspace.c - temp dirs and listing what the guest left in /workspace, without ever
 * following a link the guest planted. */
#include "ws/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/util.h"

int eb_mkdtemp(const char *what, char *path, struct execbox_error *err)
{
    int n = snprintf(path, EXECBOX_PATH_MAX, "%s/execbox-%s-XXXXXX", eb_tmp_dir(), what);
    if (n < 0 || n >= EXECBOX_PATH_MAX)
        return eb_error_set(err, -ENAMETOOLONG, "temp dir path too long");
    if (!mkdtemp(path))
        return eb_error_set(err, -errno, "create temp dir in '%s': %s", eb_tmp_dir(),
                            execbox_strerror(-errno));
    return 0;
}

static const struct {
    const char *ext;
    const char *mime;
} mimes[] = {
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".gif", "image/gif"},
    {".svg", "image/svg+xml"},
    {".webp", "image/webp"},
    {".txt", "text/plain"},
    {".csv", "text/csv"},
    {".json", "application/json"},
    {".html", "text/html"},
    {".md", "text/markdown"},
    {".py", "text/x-python"},
    {".js", "text/javascript"},
    {".pdf", "application/pdf"},
    {".xml", "application/xml"},
    {".tsv", "text/tab-separated-values"},
    {".parquet", "application/vnd.apache.parquet"},
};

const char *eb_mime_from_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot)
        for (size_t i = 0; i < ARRAY_SIZE(mimes); i++)
            if (strcasecmp(dot, mimes[i].ext) == 0)
                return mimes[i].mime;
    return "application/octet-stream";
}

bool eb_image_magic_ok(const char *mime, const unsigned char *d, size_t n)
{
    if (strcmp(mime, "image/png") == 0)
        return n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0;
    if (strcmp(mime, "image/jpeg") == 0)
        return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF;
    if (strcmp(mime, "image/gif") == 0)
        return n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0);
    if (strcmp(mime, "image/webp") == 0)
        return n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0;
    if (strcmp(mime, "image/svg+xml") == 0)
        return n > 0 && memmem(d, n < 4096 ? n : 4096, "<svg", 4) != NULL;
    return 0;
}

struct lister {
    struct execbox_result *r;
    size_t cap;
    size_t inline_max;
    dev_t dev;
    const struct execbox_request *req; /* its input files, or NULL */
};

/* True when the file open at fd holds exactly the len bytes at want. */
static bool same_bytes(int fd, const unsigned char *want, size_t len)
{
    unsigned char buf[65536];
    size_t at = 0;
    for (;;) {
        ssize_t n = eb_read_full(fd, buf, sizeof(buf));
        if (n < 0)
            return false;
        if (n == 0)
            return at == len;
        if ((size_t)n > len - at || memcmp(buf, want + at, (size_t)n) != 0)
            return false;
        at += (size_t)n;
    }
}

/* Where the file rel (name beneath dirfd, of size st_size) came from: one of the request's
 * input files, as given or changed by the run, or neither. */
static enum execbox_file_origin origin_of(const struct lister *l, int dirfd, const char *name,
                                          const char *rel, const struct stat *st)
{
    const struct execbox_request *req = l->req;
    for (size_t i = 0; req && req->files && i < req->n_files; i++) {
        const struct execbox_input_file *in = &req->files[i];
        if (strcmp(in->path, rel) != 0)
            continue;
        if ((uint64_t)st->st_size != (uint64_t)in->len)
            return EXECBOX_FILE_CHANGED;
        _cleanup_close_ int fd =
            openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat fst;
        if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) ||
            !same_bytes(fd, in->data, in->len))
            return EXECBOX_FILE_CHANGED;
        return EXECBOX_FILE_INPUT;
    }
    return EXECBOX_FILE_CREATED;
}

static int add_file(struct lister *l, int dirfd, const char *name, const char *rel,
                    const struct stat *st)
{
    struct execbox_result *r = l->r;
    if (r->n_files >= EB_FILES_MAX) {
        r->files_truncated = true;
        return 0;
    }
    if (r->n_files == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        struct execbox_file *f = realloc(r->files, nc * sizeof(*f));
        if (!f)
            return -ENOMEM;
        r->files = f;
        l->cap = nc;
    }
    struct execbox_file *f = &r->files[r->n_files];
    memset(f, 0, sizeof(*f));
    f->path = strdup(rel);
    f->mime = strdup(eb_mime_from_name(name));
    f->size = (uint64_t)st->st_size;
    if (!f->path || !f->mime) {
        free(f->path);
        free(f->mime);
        return -ENOMEM;
    }
    r->n_files++;
    f->origin = origin_of(l, dirfd, name, rel, st);
    if (strncmp(f->mime, "image/", 6) != 0 || (size_t)st->st_size > l->inline_max ||
        st->st_size == 0)
        return 0;
    /* O_NOFOLLOW and a re-check of the opened file: the name may have been swapped for a link
     * or a FIFO since the lstat (the guest is dead by now, but be exact anyway). */
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat fst;
    if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) ||
        (size_t)fst.st_size > l->inline_max)
        return 0;
    unsigned char *data = malloc((size_t)fst.st_size + 1);
    if (!data)
        return -ENOMEM;
    ssize_t n = eb_read_full(fd, data, (size_t)fst.st_size);
    if (n <= 0 || !eb_image_magic_ok(f->mime, data, (size_t)n)) {
        free(data);
        return 0;
    }
    f->data = data;
    f->data_len = (size_t)n;
    return 0;
}

static int walk(struct lister *l, int dirfd, const char *prefix, int depth)
{
    /* A fresh open file description: readdir must not share an offset with the caller's fd. */
    int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -errno;
    }
    int r = 0;
    struct dirent *de;
    while (r == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char rel[EXECBOX_PATH_MAX];
        if (snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) >=
            (int)sizeof(rel))
            continue;
        if (S_ISREG(st.st_mode)) {
            r = add_file(l, dirfd, de->d_name, rel, &st);
        } else if (S_ISDIR(st.st_mode) && depth < EB_FILES_DEPTH && st.st_dev == l->dev) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                r = walk(l, sub, rel, depth + 1);
                close(sub);
            }
        }
    }
    closedir(d);
    return r;
}

static int cmp_files(const void *a, const void *b)
{
    return strcmp(((const struct execbox_file *)a)->path, ((const struct execbox_file *)b)->path);
}

int eb_workspace_list(int dirfd, size_t inline_max, const struct execbox_request *req,
                      struct execbox_result *r)
{
    struct stat st;
    if (fstat(dirfd, &st) < 0)
        return -errno;
    struct lister l = {
        .r = r, .cap = r->n_files, .inline_max = inline_max, .dev = st.st_dev, .req = req};
    int rc = walk(&l, dirfd, "", 0);
    if (r->n_files > 1)
        qsort(r->files, r->n_files, sizeof(*r->files), cmp_files);
    return rc;
}

int eb_workspace_check_host(const char *real, struct execbox_error *err)
{
    /* The directory itself would be handed over: the code could change or fill what the
     * host's own programs and users rely on. */
    static const char *const exact[] = {
        "/",      "/usr",       "/etc",      "/bin",       "/sbin",      "/lib",     "/lib32",
        "/lib64", "/libx32",    "/boot",     "/proc",      "/sys",       "/dev",     "/run",
        "/var",   "/tmp",       "/var/tmp",  "/home",      "/root",      "/srv",     "/opt",
        "/mnt",   "/media",     "/var/lib",  "/var/log",   "/var/cache", "/dev/shm", "/run/user",
        "/snap",  "/var/spool", "/var/mail", "/usr/local",
    };
    /* Nothing below these either: system files, kernel interfaces, our own state. */
    static const char *const tree[] = {"/usr",   "/etc",   "/bin",        "/sbin", "/lib",
                                       "/lib32", "/lib64", "/libx32",     "/boot", "/proc",
                                       "/sys",   "/dev",   "/run/execbox"};
    if (real[0] != '/')
        return eb_error_set(err, -EINVAL, "workspace '%s' is not an absolute path", real);
    for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
        if (strcmp(real, exact[i]) == 0)
            return eb_error_set(err, -EPERM,
                                "workspace '%s' is a system directory: give a directory of "
                                "your own",
                                real);
    for (size_t i = 0; i < ARRAY_SIZE(tree); i++) {
        size_t n = strlen(tree[i]);
        if (strncmp(real, tree[i], n) == 0 && real[n] == '/')
            return eb_error_set(err, -EPERM,
                                "workspace '%s' is inside the system directory '%s': give a "
                                "directory of your own",
                                real, tree[i]);
    }
    return 0;
}

/* An existing directory, by its canonical path (written to real, EXECBOX_PATH_MAX). */
static int host_dir(const char *field, const char *path, char *real, struct execbox_error *err)
{
    char *abs = realpath(path, NULL);
    if (!abs) {
        int r = -errno;
        eb_error_set(err, r, "%s '%s': %s", field, path, execbox_strerror(r));
        return eb_error_about(err, r, EXECBOX_ERROR_INVALID_VALUE, field);
    }
    struct stat st;
    int r = 0;
    if (strlen(abs) >= EXECBOX_PATH_MAX)
        r = eb_error_set(err, -ENAMETOOLONG, "%s '%s': path too long", field, path);
    else if (stat(abs, &st) < 0)
        r = eb_error_set(err, -errno, "%s '%s': %s", field, path, execbox_strerror(-errno));
    else if (!S_ISDIR(st.st_mode))
        r = eb_error_set(err, -ENOTDIR, "%s '%s' is not a directory", field, path);
    else
        memcpy(real, abs, strlen(abs) + 1);
    free(abs);
    return r < 0 ? eb_error_about(err, r, EXECBOX_ERROR_INVALID_VALUE, field) : 0;
}

int execbox_policy_check_host(const struct execbox_policy *p, struct execbox_error *err)
{
    char real[EXECBOX_PATH_MAX];
    if (p->workspace[0]) {
        int r = host_dir("workspace", p->workspace, real, err);
        if (r < 0)
            return r;
        r = eb_workspace_check_host(real, err);
        if (r < 0)
            return eb_error_about(err, r, EXECBOX_ERROR_INVALID_VALUE, "workspace");
    }
    if (p->rootfs[0])
        return host_dir("rootfs", p->rootfs, real, err);
    return 0;
}
