/* SPDX-License-Identifier: MIT */
/* error.c - struct execbox_error helpers, execbox_strerror() and execbox_free(). */
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small static table instead of strerror(): strerror is not async-signal-safe nor
 * guaranteed thread-safe, and a forked child must be able to describe an errno. */
static const struct {
    int code;
    const char *text;
} texts[] = {
    {EPERM, "operation not permitted"},
    {ENOENT, "no such file or directory"},
    {ESRCH, "no such process"},
    {EINTR, "interrupted"},
    {EIO, "input/output error"},
    {E2BIG, "argument list too long"},
    {ENOEXEC, "exec format error"},
    {EBADF, "bad file descriptor"},
    {ECHILD, "no child processes"},
    {EAGAIN, "resource temporarily unavailable"},
    {ENOMEM, "out of memory"},
    {EACCES, "permission denied"},
    {EFAULT, "bad address"},
    {EBUSY, "device or resource busy"},
    {EEXIST, "file exists"},
    {EXDEV, "cross-device link"},
    {ENODEV, "no such device"},
    {ENOTDIR, "not a directory"},
    {EISDIR, "is a directory"},
    {EINVAL, "invalid argument"},
    {ENFILE, "too many open files in system"},
    {EMFILE, "too many open files"},
    {EFBIG, "file too large"},
    {ENOSPC, "no space left on device"},
    {EROFS, "read-only file system"},
    {EPIPE, "broken pipe"},
    {ERANGE, "value out of range"},
    {ENAMETOOLONG, "name too long"},
    {ENOSYS, "function not implemented"},
    {ELOOP, "too many levels of symbolic links"},
    {ENOTSUP, "not supported"},
    {ETIMEDOUT, "timed out"},
    {ECONNREFUSED, "connection refused"},
    {ECANCELED, "cancelled"},
    {EPROTO, "protocol error"},
    {EBADMSG, "bad message"},
    {EOVERFLOW, "value too large"},
    {EUSERS, "too many users"},
    {ENETUNREACH, "network unreachable"},
};

const char *execbox_strerror(int code)
{
    int c = code < 0 ? -code : code;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i].code == c)
            return texts[i].text;
    return c == 0 ? "success" : "unknown error";
}

void execbox_free(void *p)
{
    free(p);
}

int eb_error_set(struct execbox_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->code = code;
    err->kind = EXECBOX_ERROR_OTHER;
    err->field[0] = '\0';
    return code;
}

int eb_error_about(struct execbox_error *err, int code, enum execbox_error_kind kind,
                   const char *field)
{
    if (!err)
        return code;
    if (err->code == 0)
        err->code = code;
    if (!(kind == EXECBOX_ERROR_INVALID_VALUE && err->kind != EXECBOX_ERROR_OTHER))
        err->kind = kind;
    if (field)
        snprintf(err->field, sizeof(err->field), "%s", field);
    return err->code;
}

int eb_error_prefix(struct execbox_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    char prefix[sizeof(err->msg)];
    char old[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
    if (err->code == 0)
        err->code = code;
    return err->code;
}

void eb_error_set_raw(struct execbox_error *err, int code, const char *msg)
{
    if (!err)
        return;
    size_t n = 0;
    const char *t = execbox_strerror(code);
    for (; msg[n] && n < sizeof(err->msg) - 1; n++)
        err->msg[n] = msg[n];
    if (code) {
        const char *sep = ": ";
        for (; *sep && n < sizeof(err->msg) - 1; sep++)
            err->msg[n++] = *sep;
        for (; *t && n < sizeof(err->msg) - 1; t++)
            err->msg[n++] = *t;
    }
    err->msg[n] = '\0';
    err->code = code;
    err->kind = EXECBOX_ERROR_OTHER;
    err->field[0] = '\0';
}

void eb_error_clear(struct execbox_error *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
        err->kind = EXECBOX_ERROR_OTHER;
        err->field[0] = '\0';
    }
}
