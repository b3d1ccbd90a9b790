/* SPDX-License-Identifier: MIT */
/* session.c - sessions: an interpreter's state kept across cells, each cell a fork of it that
 * becomes the new state only when it ends normally (see execbox.h and docs/sessions.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "result.h"
#include "util.h"
#include "wsfile.h"

struct execbox_session {
    int unused;
};

int execbox_session_new(struct execbox_executor *ex, const struct execbox_session_options *o,
                        struct execbox_session **ret, struct execbox_error *err)
{
    (void)ex;
    (void)o;
    (void)ret;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

int execbox_session_run(struct execbox_session *s, const struct execbox_request *req,
                        struct execbox_result **ret, struct execbox_error *err)
{
    (void)s;
    (void)req;
    (void)ret;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

void execbox_session_info(struct execbox_session *s, struct execbox_session_info *ret)
{
    (void)s;
    memset(ret, 0, sizeof(*ret));
}

int execbox_session_write_file(struct execbox_session *s, const char *path, const void *data,
                               size_t len, struct execbox_error *err)
{
    (void)s;
    (void)path;
    (void)data;
    (void)len;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

int execbox_session_read_file(struct execbox_session *s, const char *path, size_t max,
                              char **ret_data, size_t *ret_len, struct execbox_error *err)
{
    (void)s;
    (void)path;
    (void)max;
    (void)ret_data;
    (void)ret_len;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

int execbox_session_list_files(struct execbox_session *s, struct execbox_file **ret_files,
                               size_t *ret_n, struct execbox_error *err)
{
    (void)s;
    (void)ret_files;
    (void)ret_n;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

int execbox_session_remove_file(struct execbox_session *s, const char *path,
                                struct execbox_error *err)
{
    (void)s;
    (void)path;
    return eb_error_set(err, -ENOTSUP, "sessions are not built yet");
}

void execbox_files_free(struct execbox_file *files, size_t n)
{
    for (size_t i = 0; files && i < n; i++) {
        free(files[i].path);
        free(files[i].mime);
        free(files[i].data);
    }
    free(files);
}

void execbox_session_kill(struct execbox_session *s)
{
    (void)s;
}

struct execbox_session *execbox_session_free(struct execbox_session *s)
{
    free(s);
    return NULL;
}
