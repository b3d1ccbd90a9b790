/* SPDX-License-Identifier: MIT */
/* result.c - the result record: lifetime, errors, JSON (always valid UTF-8). */
#include "result.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

struct execbox_result *eb_result_new(const char *backend, const char *language)
{
    struct execbox_result *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->cpu_time = -1;
    snprintf(r->backend, sizeof(r->backend), "%s", backend ? backend : "");
    snprintf(r->language, sizeof(r->language), "%s", language ? language : "");
    return r;
}

struct execbox_result *execbox_result_free(struct execbox_result *r)
{
    if (!r)
        return NULL;
    free(r->stdout_data);
    free(r->stderr_data);
    free(r->error_name);
    free(r->error_value);
    free(r->error_traceback);
    for (size_t i = 0; i < r->n_files; i++) {
        free(r->files[i].path);
        free(r->files[i].mime);
        free(r->files[i].data);
    }
    free(r->files);
    for (size_t i = 0; i < r->n_degraded; i++)
        free(r->degraded[i]);
    free(r->degraded);
    free(r);
    return NULL;
}

const char *execbox_killed_reason_name(enum execbox_killed_reason k)
{
    switch (k) {
    case EXECBOX_KILLED_TIMEOUT: return "timeout";
    case EXECBOX_KILLED_MEMORY: return "memory";
    case EXECBOX_KILLED_OUTPUT_LIMIT: return "output_limit";
    case EXECBOX_KILLED_CPU: return "cpu";
    case EXECBOX_KILLED_CANCELLED: return "cancelled";
    case EXECBOX_KILLED_NONE: break;
    }
    return NULL;
}

int eb_result_set_error(struct execbox_result *r, const char *name, const char *value,
                        const char *traceback)
{
    char *n = strdup(name ? name : "");
    char *v = strdup(value ? value : "");
    char *t = strdup(traceback ? traceback : "");
    if (!n || !v || !t) {
        free(n);
        free(v);
        free(t);
        return -ENOMEM;
    }
    free(r->error_name);
    free(r->error_value);
    free(r->error_traceback);
    r->error_name = n;
    r->error_value = v;
    r->error_traceback = t;
    return 0;
}

int eb_result_sandbox_error(struct execbox_result *r, const char *msg)
{
    size_t mlen = strlen(msg);
    size_t old = r->stderr_data ? r->stderr_len : 0;
    char *s = realloc(r->stderr_data, old + mlen + 32);
    if (!s)
        return -ENOMEM;
    int n =
        snprintf(s + old, mlen + 32, "%sexecbox: %s\n", old && s[old - 1] != '\n' ? "\n" : "", msg);
    r->stderr_data = s;
    r->stderr_len = old + (size_t)n;
    r->stderr_bytes += (uint64_t)n;
    r->exit_code = 1;
    return eb_result_set_error(r, "SandboxError", msg, "");
}

int eb_result_add_degraded(struct execbox_result *r, const char *wall)
{
    char **d = realloc(r->degraded, (r->n_degraded + 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    r->degraded = d;
    d[r->n_degraded] = strdup(wall);
    if (!d[r->n_degraded])
        return -ENOMEM;
    r->n_degraded++;
    return 0;
}

static json_t *json_text(const char *data, size_t len)
{
    if (!data)
        return json_string("");
    size_t n;
    char *clean = execbox_utf8_sanitize(data, len, &n, NULL);
    if (!clean)
        return NULL;
    json_t *s = json_stringn_nocheck(clean, n);
    free(clean);
    return s;
}

json_t *eb_result_to_object(const struct execbox_result *r, unsigned flags)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "stdout", json_text(r->stdout_data, r->stdout_len));
    bad |= json_object_set_new(o, "stderr", json_text(r->stderr_data, r->stderr_len));
    bad |= json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    bad |= json_object_set_new(o, "execution_time", json_real(r->execution_time));
    bad |= json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
    bad |= json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
    bad |= json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
    const char *kr = execbox_killed_reason_name(r->killed_reason);
    bad |= json_object_set_new(o, "killed_reason", kr ? json_string(kr) : json_null());
    bad |= json_object_set_new(o, "stdout_truncated", json_boolean(r->stdout_truncated));
    bad |= json_object_set_new(o, "stderr_truncated", json_boolean(r->stderr_truncated));
    bad |= json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)r->stdout_bytes));
    bad |= json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)r->stderr_bytes));
    bad |=
        json_object_set_new(o, "cpu_time", r->cpu_time >= 0 ? json_real(r->cpu_time) : json_null());
    bad |= json_object_set_new(o, "peak_memory_bytes",
                               r->peak_memory_bytes ? json_integer((json_int_t)r->peak_memory_bytes)
                                                    : json_null());
    if (r->error_name) {
        json_t *e = json_object();
        if (!e) {
            json_decref(o);
            return NULL;
        }
        bad |= json_object_set_new(e, "name", json_text(r->error_name, strlen(r->error_name)));
        bad |= json_object_set_new(e, "value", json_text(r->error_value, strlen(r->error_value)));
        bad |= json_object_set_new(e, "traceback",
                                   json_text(r->error_traceback, strlen(r->error_traceback)));
        bad |= json_object_set_new(o, "error", e);
    } else {
        bad |= json_object_set_new(o, "error", json_null());
    }
    json_t *files = json_array();
    bad |= json_object_set_new(o, "files", files);
    for (size_t i = 0; files && i < r->n_files; i++) {
        const struct execbox_file *f = &r->files[i];
        json_t *fo = json_object();
        bad |= json_array_append_new(files, fo);
        if (!fo)
            break;
        bad |= json_object_set_new(fo, "path", json_text(f->path, strlen(f->path)));
        bad |= json_object_set_new(fo, "size", json_integer((json_int_t)f->size));
        bad |= json_object_set_new(fo, "mime", json_string(f->mime ? f->mime : ""));
        if (f->data && !(flags & EXECBOX_JSON_NO_FILE_DATA)) {
            char *b64 = execbox_base64(f->data, f->data_len);
            bad |= json_object_set_new(fo, "data", b64 ? json_string(b64) : NULL);
            free(b64);
        }
    }
    if (r->files_truncated)
        bad |= json_object_set_new(o, "files_truncated", json_true());
    bad |= json_object_set_new(o, "backend", json_string(r->backend));
    bad |= json_object_set_new(o, "language", json_string(r->language));
    if (r->n_degraded) {
        json_t *d = json_array();
        for (size_t i = 0; d && i < r->n_degraded; i++)
            bad |= json_array_append_new(d, json_string(r->degraded[i]));
        bad |= json_object_set_new(o, "degraded", d);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int execbox_result_to_json(const struct execbox_result *r, unsigned flags, char **ret_json,
                           struct execbox_error *err)
{
    if (!r || !ret_json)
        return eb_error_set(err, -EINVAL, "result or output missing");
    json_t *o = eb_result_to_object(r, flags);
    if (!o)
        return eb_error_set(err, -ENOMEM, "out of memory building the result JSON");
    size_t jf = JSON_REAL_PRECISION(6) | JSON_PRESERVE_ORDER;
    if (flags & EXECBOX_JSON_PRETTY)
        jf |= JSON_INDENT(2);
    else
        jf |= JSON_COMPACT;
    char *s = json_dumps(o, jf);
    json_decref(o);
    if (!s)
        return eb_error_set(err, -ENOMEM, "out of memory serialising the result");
    *ret_json = s;
    return 0;
}

const char *execbox_version(void)
{
    return EXECBOX_VERSION;
}
