/* SPDX-License-Identifier: MIT */
/* result.c - the result record: lifetime, errors, JSON (always valid UTF-8). */
#include "model/result.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "base/error.h"
#include "base/limits.h"
#include "base/text.h"
#include "base/util.h"

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
    free(r->egress);
    eb_rich_free(r->results, r->n_results);
    free(r);
    return NULL;
}

/* The MIME-style fields of a rich output, in the order the JSON has them. */
static const struct {
    const char *key;
    size_t off;
} rich_fields[] = {
    {"text", offsetof(struct execbox_rich, text)},
    {"html", offsetof(struct execbox_rich, html)},
    {"markdown", offsetof(struct execbox_rich, markdown)},
    {"svg", offsetof(struct execbox_rich, svg)},
    {"png", offsetof(struct execbox_rich, png)},
    {"jpeg", offsetof(struct execbox_rich, jpeg)},
    {"latex", offsetof(struct execbox_rich, latex)},
    {"json", offsetof(struct execbox_rich, json)},
    {"javascript", offsetof(struct execbox_rich, javascript)},
};

#define RICH_FIELD(x, i) (*(char **)((char *)(x) + rich_fields[i].off))

void eb_rich_free(struct execbox_rich *v, size_t n)
{
    for (size_t k = 0; v && k < n; k++)
        for (size_t i = 0; i < ARRAY_SIZE(rich_fields); i++)
            free(RICH_FIELD(&v[k], i));
    free(v);
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

const char *eb_oom_files_detail(char *buf, size_t size, uint64_t in_tmp, uint64_t in_ws)
{
    const uint64_t mib = 1U << 20;
    if (in_tmp < mib && in_ws < mib)
        return NULL;
    if (in_ws < mib)
        snprintf(buf, size, "of which %" PRIu64 " MiB were files in /tmp and /dev/shm",
                 in_tmp >> 20);
    else if (in_tmp < mib)
        snprintf(buf, size, "of which %" PRIu64 " MiB were files in /workspace", in_ws >> 20);
    else
        snprintf(buf, size,
                 "of which %" PRIu64 " MiB were files: %" PRIu64 " MiB in /tmp and /dev/shm, "
                 "%" PRIu64 " MiB in /workspace",
                 (in_tmp + in_ws) >> 20, in_tmp >> 20, in_ws >> 20);
    return buf;
}

int eb_result_apply_oom(struct execbox_result *r, const struct execbox_policy *p,
                        uint64_t oom_kills, const char *files, const char *detail)
{
    if (oom_kills == 0 || r->signal != SIGKILL || r->timed_out ||
        r->killed_reason == EXECBOX_KILLED_CANCELLED)
        return 0;
    r->oom_killed = true;
    r->killed_reason = EXECBOX_KILLED_MEMORY;
    r->exit_code = 128 + SIGKILL;
    char msg[640];
    snprintf(msg, sizeof(msg),
             "the program exceeded the memory limit of %" PRIu64 " MiB%s%s%s and was killed%s%s",
             p->memory >> 20, files ? " (" : "", files ? files : "", files ? ")" : "",
             detail ? "; " : "", detail ? detail : "");
    return eb_result_set_error(r, "MemoryLimit", msg, "") < 0 ? -ENOMEM : 1;
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

static const char *const origin_names[] = {
    [EXECBOX_FILE_CREATED] = "created",
    [EXECBOX_FILE_CHANGED] = "changed",
    [EXECBOX_FILE_INPUT] = "input",
};

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
        bad |= json_object_set_new(
            fo, "origin",
            json_string(origin_names[f->origin < ARRAY_SIZE(origin_names) ? f->origin
                                                                          : EXECBOX_FILE_CREATED]));
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
    if (r->has_egress) {
        /* network "allow": every connection attempt, in order (at most EXECBOX_EGRESS_MAX). */
        json_t *eg = json_array();
        for (size_t i = 0; eg && i < r->n_egress; i++) {
            const struct execbox_egress *e = &r->egress[i];
            json_t *eo = json_pack("{s:s, s:i, s:b, s:I, s:I}", "host", e->host, "port",
                                   (int)e->port, "allowed", e->allowed, "bytes_out",
                                   (json_int_t)e->bytes_out, "bytes_in", (json_int_t)e->bytes_in);
            if (eo && e->reason[0])
                bad |= json_object_set_new(eo, "reason", json_string(e->reason));
            bad |= json_array_append_new(eg, eo);
        }
        bad |= json_object_set_new(o, "egress", eg);
        if (r->egress_truncated)
            bad |= json_object_set_new(o, "egress_truncated", json_true());
    }
    json_t *rich = json_array();
    bad |= json_object_set_new(o, "results", rich);
    for (size_t k = 0; rich && k < r->n_results; k++) {
        json_t *ro = json_object();
        bad |= json_array_append_new(rich, ro);
        if (!ro)
            break;
        for (size_t i = 0; i < ARRAY_SIZE(rich_fields); i++) {
            const char *v = RICH_FIELD(&r->results[k], i);
            if (v)
                bad |= json_object_set_new(ro, rich_fields[i].key, json_text(v, strlen(v)));
        }
        bad |=
            json_object_set_new(ro, "is_main_result", json_boolean(r->results[k].is_main_result));
    }
    if (r->results_truncated)
        bad |= json_object_set_new(o, "results_truncated", json_true());
    if (r->results_dropped)
        bad |=
            json_object_set_new(o, "results_dropped", json_integer((json_int_t)r->results_dropped));
    if (r->results_cut)
        bad |= json_object_set_new(o, "results_cut", json_integer((json_int_t)r->results_cut));
    if (r->results_file_dropped)
        bad |= json_object_set_new(o, "results_file_dropped", json_true());
    if (r->in_session) {
        bad |=
            json_object_set_new(o, "execution_count", json_integer((json_int_t)r->execution_count));
        bad |= json_object_set_new(o, "rolled_back", json_boolean(r->rolled_back));
    }
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

/* A copy of the JSON string v (NUL-terminated), its length in *ret_len. */
static char *dup_text(const json_t *v, size_t *ret_len)
{
    size_t n = json_string_length(v);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, json_string_value(v), n);
    d[n] = '\0';
    if (ret_len)
        *ret_len = n;
    return d;
}

static int from_killed_reason(const char *s, enum execbox_killed_reason *ret)
{
    for (int k = EXECBOX_KILLED_TIMEOUT; k <= EXECBOX_KILLED_CANCELLED; k++)
        if (strcmp(s, execbox_killed_reason_name((enum execbox_killed_reason)k)) == 0) {
            *ret = (enum execbox_killed_reason)k;
            return 0;
        }
    return -EBADMSG;
}

/* The file entries of a record: {path, size, mime, origin?, data?} each (a record without
 * origin, from an older version, counts its files as created). */
static int files_from_array(const json_t *a, struct execbox_result *r, struct execbox_error *err)
{
    size_t n = json_array_size(a);
    if (n > EB_FILES_MAX)
        return eb_error_set(err, -EBADMSG, "files: %zu entries, more than %d", n, EB_FILES_MAX);
    if (n == 0)
        return 0;
    r->files = calloc(n, sizeof(*r->files));
    if (!r->files)
        return eb_error_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(a, i);
        const json_t *path = json_object_get(f, "path"), *size = json_object_get(f, "size");
        const json_t *mime = json_object_get(f, "mime"), *data = json_object_get(f, "data");
        const json_t *origin = json_object_get(f, "origin");
        if (!json_is_string(path) || !json_is_integer(size) || json_integer_value(size) < 0 ||
            (mime && !json_is_string(mime)) || (data && !json_is_string(data)) ||
            (origin && !json_is_string(origin)))
            return eb_error_set(err, -EBADMSG, "files[%zu]: not {path, size, mime, origin?, data?}",
                                i);
        size_t o = 0;
        while (origin && o < ARRAY_SIZE(origin_names) &&
               strcmp(json_string_value(origin), origin_names[o]) != 0)
            o++;
        if (o == ARRAY_SIZE(origin_names))
            return eb_error_set(err, -EBADMSG, "files[%zu].origin: not created, changed or input",
                                i);
        struct execbox_file *x = &r->files[r->n_files++];
        x->origin = (enum execbox_file_origin)o;
        x->path = dup_text(path, NULL);
        x->mime = mime ? dup_text(mime, NULL) : strdup("");
        x->size = (uint64_t)json_integer_value(size);
        if (!x->path || !x->mime)
            return eb_error_set(err, -ENOMEM, "out of memory");
        if (data) {
            size_t dn = 0;
            int d =
                eb_base64_decode(json_string_value(data), json_string_length(data), &x->data, &dn);
            if (d == -ENOMEM)
                return eb_error_set(err, -ENOMEM, "out of memory");
            if (d < 0)
                return eb_error_set(err, -EBADMSG, "files[%zu].data: not base64", i);
            x->data_len = dn;
        }
    }
    return 0;
}

int eb_result_rich_from_array(const json_t *a, struct execbox_result *r, struct execbox_error *err)
{
    if (!json_is_array(a))
        return eb_error_set(err, -EBADMSG, "results must be an array");
    size_t n = json_array_size(a), total = 0;
    for (size_t k = 0; k < n; k++) {
        const json_t *x = json_array_get(a, k);
        if (!json_is_object(x))
            return eb_error_set(err, -EBADMSG, "results[%zu]: not an object", k);
        size_t bytes = 0;
        for (size_t i = 0; i < ARRAY_SIZE(rich_fields); i++) {
            const json_t *v = json_object_get(x, rich_fields[i].key);
            if (v && !json_is_null(v) && !json_is_string(v))
                return eb_error_set(err, -EBADMSG, "results[%zu].%s: not a string", k,
                                    rich_fields[i].key);
            bytes += json_is_string(v) ? json_string_length(v) : 0;
        }
        const json_t *main = json_object_get(x, "is_main_result");
        if (main && !json_is_boolean(main))
            return eb_error_set(err, -EBADMSG, "results[%zu].is_main_result: not a boolean", k);
        if (r->n_results >= EXECBOX_RICH_MAX || total + bytes > EXECBOX_RICH_BYTES_MAX) {
            r->results_truncated = true;
            if (r->n_results >= EXECBOX_RICH_MAX)
                r->results_dropped++;
            else
                r->results_cut++; /* left out whole, for its size */
            continue;
        }
        if (!r->results) {
            r->results = calloc(EXECBOX_RICH_MAX, sizeof(*r->results));
            if (!r->results)
                return eb_error_set(err, -ENOMEM, "out of memory");
        }
        struct execbox_rich *d = &r->results[r->n_results++];
        total += bytes;
        d->is_main_result = json_is_true(main);
        for (size_t i = 0; i < ARRAY_SIZE(rich_fields); i++) {
            const json_t *v = json_object_get(x, rich_fields[i].key);
            if (!json_is_string(v))
                continue;
            size_t len;
            char *c = dup_text(v, &len);
            /* The text came from the guest: valid UTF-8 only, as every other output. */
            char *clean = c ? execbox_utf8_sanitize(c, len, NULL, NULL) : NULL;
            free(c);
            if (!clean)
                return eb_error_set(err, -ENOMEM, "out of memory");
            RICH_FIELD(d, i) = clean;
        }
    }
    return 0;
}

int eb_result_from_object(const json_t *o, struct execbox_result *r, struct execbox_error *err)
{
    if (!json_is_object(o))
        return eb_error_set(err, -EBADMSG, "not a JSON object");
    const json_t *out = json_object_get(o, "stdout"), *errs = json_object_get(o, "stderr");
    const json_t *code = json_object_get(o, "exit_code"), *t = json_object_get(o, "execution_time");
    if (!json_is_string(out) || !json_is_string(errs))
        return eb_error_set(err, -EBADMSG, "stdout and stderr must be strings");
    if (!json_is_integer(code) || json_integer_value(code) < 0 || json_integer_value(code) > 255)
        return eb_error_set(err, -EBADMSG, "exit_code must be an integer from 0 to 255");
    if (!json_is_number(t) || json_number_value(t) < 0)
        return eb_error_set(err, -EBADMSG, "execution_time must be a number of seconds");
    r->stdout_data = dup_text(out, &r->stdout_len);
    r->stderr_data = dup_text(errs, &r->stderr_len);
    if (!r->stdout_data || !r->stderr_data)
        return eb_error_set(err, -ENOMEM, "out of memory");
    r->exit_code = (int)json_integer_value(code);
    r->execution_time = json_number_value(t);
    r->stdout_bytes = r->stdout_len;
    r->stderr_bytes = r->stderr_len;

    static const struct {
        const char *name;
        size_t off;
    } flags[] = {
        {"timed_out", offsetof(struct execbox_result, timed_out)},
        {"oom_killed", offsetof(struct execbox_result, oom_killed)},
        {"stdout_truncated", offsetof(struct execbox_result, stdout_truncated)},
        {"stderr_truncated", offsetof(struct execbox_result, stderr_truncated)},
        {"files_truncated", offsetof(struct execbox_result, files_truncated)},
    };
    for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
        const json_t *v = json_object_get(o, flags[i].name);
        if (v && !json_is_boolean(v))
            return eb_error_set(err, -EBADMSG, "%s must be true or false", flags[i].name);
        *(bool *)((char *)r + flags[i].off) = json_is_true(v);
    }
    static const struct {
        const char *name;
        size_t off;
    } counts[] = {
        {"stdout_bytes", offsetof(struct execbox_result, stdout_bytes)},
        {"stderr_bytes", offsetof(struct execbox_result, stderr_bytes)},
        {"peak_memory_bytes", offsetof(struct execbox_result, peak_memory_bytes)},
    };
    for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
        const json_t *v = json_object_get(o, counts[i].name);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return eb_error_set(err, -EBADMSG, "%s must be a count of bytes", counts[i].name);
        *(uint64_t *)((char *)r + counts[i].off) = (uint64_t)json_integer_value(v);
    }
    const json_t *sig = json_object_get(o, "signal");
    if (sig && !json_is_null(sig)) {
        if (!json_is_integer(sig) || json_integer_value(sig) < 1 || json_integer_value(sig) > 64)
            return eb_error_set(err, -EBADMSG, "signal must be null or a signal number");
        r->signal = (int)json_integer_value(sig);
    }
    const json_t *kr = json_object_get(o, "killed_reason");
    if (kr && !json_is_null(kr) &&
        (!json_is_string(kr) || from_killed_reason(json_string_value(kr), &r->killed_reason) < 0))
        return eb_error_set(err, -EBADMSG, "killed_reason is not one this version knows");
    const json_t *cpu = json_object_get(o, "cpu_time");
    if (cpu && !json_is_null(cpu)) {
        if (!json_is_number(cpu) || json_number_value(cpu) < 0)
            return eb_error_set(err, -EBADMSG, "cpu_time must be null or seconds");
        r->cpu_time = json_number_value(cpu);
    }
    const json_t *e = json_object_get(o, "error");
    if (e && !json_is_null(e)) {
        const json_t *n = json_object_get(e, "name"), *v = json_object_get(e, "value");
        const json_t *tb = json_object_get(e, "traceback");
        if (!json_is_string(n) || (v && !json_is_string(v)) || (tb && !json_is_string(tb)))
            return eb_error_set(err, -EBADMSG, "error must be null or {name, value, traceback}");
        if (eb_result_set_error(r, json_string_value(n), v ? json_string_value(v) : "",
                                tb ? json_string_value(tb) : "") < 0)
            return eb_error_set(err, -ENOMEM, "out of memory");
    }
    const json_t *files = json_object_get(o, "files");
    if (files && !json_is_array(files))
        return eb_error_set(err, -EBADMSG, "files must be an array");
    int fr = files ? files_from_array(files, r, err) : 0;
    if (fr < 0)
        return fr;
    const json_t *rich = json_object_get(o, "results");
    if (rich && (fr = eb_result_rich_from_array(rich, r, err)) < 0)
        return fr;
    const json_t *rt = json_object_get(o, "results_truncated");
    if (json_is_true(rt))
        r->results_truncated = true;
    /* The counts of the run that made the record, rather than of our reading of it. */
    const json_t *rd = json_object_get(o, "results_dropped"),
                 *rc = json_object_get(o, "results_cut");
    if (json_is_integer(rd) && json_integer_value(rd) >= 0)
        r->results_dropped = (size_t)json_integer_value(rd);
    if (json_is_integer(rc) && json_integer_value(rc) >= 0)
        r->results_cut = (size_t)json_integer_value(rc);
    if (json_is_true(json_object_get(o, "results_file_dropped")))
        r->results_file_dropped = true;
    const json_t *deg = json_object_get(o, "degraded");
    if (deg && !json_is_array(deg))
        return eb_error_set(err, -EBADMSG, "degraded must be an array");
    for (size_t i = 0; i < json_array_size(deg) && i < EXECBOX_CHECK_MAX_WALLS; i++) {
        const json_t *w = json_array_get(deg, i);
        if (!json_is_string(w))
            return eb_error_set(err, -EBADMSG, "degraded must list wall names");
        if (eb_result_add_degraded(r, json_string_value(w)) < 0)
            return eb_error_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

int execbox_result_to_json(const struct execbox_result *r, unsigned flags, char **ret_json,
                           struct execbox_error *err)
{
    if (!ret_json)
        return eb_error_set(err, -EINVAL, "result or output missing");
    json_t *o = NULL;
    int rc = execbox_result_to_jansson(r, flags, &o, err);
    if (rc < 0)
        return rc;
    size_t jf = JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS) | JSON_PRESERVE_ORDER;
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

int execbox_result_to_jansson(const struct execbox_result *r, unsigned flags, struct json_t **ret,
                              struct execbox_error *err)
{
    if (!r || !ret)
        return eb_error_set(err, -EINVAL, "result or output missing");
    json_t *o = eb_result_to_object(r, flags);
    if (!o)
        return eb_error_set(err, -ENOMEM, "out of memory building the result JSON");
    *ret = o;
    return 0;
}

const char *execbox_version(void)
{
    return EXECBOX_VERSION;
}
