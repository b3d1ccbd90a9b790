/* SPDX-License-Identifier: MIT */
/* e2b_envd_run.c - envd's work on a worker: the file calls on the default context's session
 * (read, write, list, stat, make a directory, remove) and commands run as its cells, their
 * output streamed in Connect's envelopes (see e2b_envd.h, docs/e2b.md). */
#include "e2b_envd_int.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "request.h"

/* ---- files ------------------------------------------------------------------------------- */

static size_t file_cap(const struct execbox_policy *p)
{
    uint64_t v = p->file_size ? p->file_size : EXECBOX_DEFAULT_FILE_SIZE;
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

static const char *type_name(enum execbox_dirent_type t)
{
    switch (t) {
    case EXECBOX_DIRENT_FILE: return "FILE_TYPE_FILE";
    case EXECBOX_DIRENT_DIR: return "FILE_TYPE_DIRECTORY";
    case EXECBOX_DIRENT_SYMLINK: return "FILE_TYPE_SYMLINK";
    default: return "FILE_TYPE_UNSPECIFIED";
    }
}

/* envd's EntryInfo of the entry at the workspace path rel. */
static json_t *entry_json(const struct execbox_dirent *d, const char *rel)
{
    char perm[11] = "----------";
    const char *rwx = "rwxrwxrwx";
    perm[0] = d->type == EXECBOX_DIRENT_DIR ? 'd' : d->type == EXECBOX_DIRENT_SYMLINK ? 'l' : '-';
    for (int i = 0; i < 9; i++)
        if (d->mode & (1u << (8 - i)))
            perm[i + 1] = rwx[i];
    char t[64];
    time_t sec = (time_t)(d->mtime_ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(t + n, sizeof(t) - n, ".%09lldZ", (long long)(d->mtime_ns % 1000000000LL));
    const char *slash = strrchr(rel, '/');
    const char *name = *rel ? (slash ? slash + 1 : rel) : "workspace";
    return json_pack("{s:o, s:s, s:o, s:I, s:i, s:s, s:s}", "name", envd_clean_string(name), "type",
                     type_name(d->type), "path", envd_shown_path(rel), "size", (json_int_t)d->size,
                     "mode", (int)(d->mode & 07777), "permissions", perm, "modifiedTime", t);
}

static int join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s%s%s", dir, *dir ? "/" : "", name);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Appends dir's entries (and, depth > 1, theirs) to a. */
static int list_into(struct execbox_session *es, const char *dir, unsigned depth, json_t *a,
                     struct execbox_error *err)
{
    struct execbox_dirent *v = NULL;
    size_t n = 0, room = E2B_ENVD_LIST_MAX - json_array_size(a);
    int r = execbox_session_list_dir(es, dir, room, &v, &n, err);
    for (size_t i = 0; r == 0 && i < n; i++) {
        char rel[EXECBOX_PATH_MAX];
        if (join(rel, sizeof(rel), dir, v[i].name) < 0)
            continue;
        json_t *e = entry_json(&v[i], rel);
        if (!e || json_array_append_new(a, e) < 0)
            r = -ENOMEM;
        else if (depth > 1 && v[i].type == EXECBOX_DIRENT_DIR)
            r = list_into(es, rel, depth - 1, a, err);
    }
    free(v);
    return r;
}

/* Removes what is at rel, a directory with all it holds (at most *budget entries). */
static int remove_tree(struct execbox_session *es, const char *rel, size_t *budget, int level,
                       struct execbox_error *err)
{
    struct execbox_dirent st;
    int r = execbox_session_stat(es, rel, &st, err);
    if (r < 0)
        return r;
    if (st.type == EXECBOX_DIRENT_DIR) {
        if (level > 64) {
            snprintf(err->msg, sizeof(err->msg), "remove '%.200s': nested too deep", rel);
            return -E2BIG;
        }
        struct execbox_dirent *v = NULL;
        size_t n = 0;
        r = execbox_session_list_dir(es, rel, *budget, &v, &n, err);
        for (size_t i = 0; r == 0 && i < n; i++) {
            char sub[EXECBOX_PATH_MAX];
            if (join(sub, sizeof(sub), rel, v[i].name) < 0)
                r = -ENAMETOOLONG;
            else
                r = remove_tree(es, sub, budget, level + 1, err);
        }
        free(v);
        if (r < 0)
            return r;
    }
    if (*budget == 0) {
        snprintf(err->msg, sizeof(err->msg), "remove: more than %d entries", E2B_ENVD_REMOVE_MAX);
        return -E2BIG;
    }
    (*budget)--;
    return execbox_session_remove_file(es, rel, err);
}

static void run_files(struct e2b_call *call, struct e2b_answer *ret)
{
    struct envd *d = call->envd;
    enum e2b_op op = call->op;
    struct execbox_session *es = sess_session(call->sess);
    struct execbox_error err = {0};
    int r = 0;
    switch (op) {
    case E2B_OP_FILES_GET: {
        int fd = -1;
        uint64_t size = 0;
        r = execbox_session_open_file(es, d->path, file_cap(sess_policy(call->sess)), &fd, &size,
                                      &err);
        if (r < 0)
            break;
        *ret = (struct e2b_answer){
            .status = 200, .ctype = "application/octet-stream", .body = strdup("")};
        if (size == 0 || !ret->body) {
            close(fd);
            if (!ret->body)
                envd_fail(ret, op, 503, "out of memory");
            return;
        }
        ret->has_fd = true;
        ret->fd = fd;
        ret->fd_size = size;
        return;
    }
    case E2B_OP_FILES_POST: {
        json_t *a = json_array();
        for (size_t i = 0; r == 0 && i < d->n_parts; i++) {
            const struct part *p = &d->parts[i];
            r = execbox_session_write_file(es, p->path, d->body + p->off, p->len, &err);
            if (r == 0) {
                const char *slash = strrchr(p->path, '/');
                json_array_append_new(a,
                                      json_pack("{s:o, s:s, s:o}", "name",
                                                envd_clean_string(slash ? slash + 1 : p->path),
                                                "type", "file", "path", envd_shown_path(p->path)));
            }
        }
        if (r == 0) {
            if (envd_dump_answer(ret, 200, JSON_CTYPE, a) < 0)
                envd_fail(ret, op, 503, "out of memory");
            return;
        }
        json_decref(a);
        break;
    }
    case E2B_OP_FS_STAT:
    case E2B_OP_FS_MKDIR: {
        if (op == E2B_OP_FS_MKDIR && (r = execbox_session_make_dir(es, d->path, &err)) < 0)
            break;
        struct execbox_dirent st;
        r = execbox_session_stat(es, d->path, &st, &err);
        if (r < 0)
            break;
        if (envd_dump_answer(ret, 200, JSON_CTYPE,
                             json_pack("{s:o}", "entry", entry_json(&st, d->path))) < 0)
            envd_fail(ret, op, C_INTERNAL, "out of memory");
        return;
    }
    case E2B_OP_FS_LIST: {
        struct execbox_dirent st;
        r = execbox_session_stat(es, d->path, &st, &err);
        if (r == 0 && st.type != EXECBOX_DIRENT_DIR) {
            envd_fail(ret, op, C_INVALID, "path '%.200s' is not a directory", d->path);
            return;
        }
        json_t *a = json_array();
        if (r == 0)
            r = a ? list_into(es, d->path, d->depth, a, &err) : -ENOMEM;
        if (r == 0) {
            if (envd_dump_answer(ret, 200, JSON_CTYPE, json_pack("{s:o}", "entries", a)) < 0)
                envd_fail(ret, op, C_INTERNAL, "out of memory");
            return;
        }
        json_decref(a);
        break;
    }
    case E2B_OP_FS_MOVE: {
        struct execbox_dirent st;
        if ((r = execbox_session_rename(es, d->path, d->dest, &err)) < 0 ||
            (r = execbox_session_stat(es, d->dest, &st, &err)) < 0)
            break;
        if (envd_dump_answer(ret, 200, JSON_CTYPE,
                             json_pack("{s:o}", "entry", entry_json(&st, d->dest))) < 0)
            envd_fail(ret, op, C_INTERNAL, "out of memory");
        return;
    }
    case E2B_OP_FS_REMOVE: {
        size_t budget = E2B_ENVD_REMOVE_MAX;
        r = remove_tree(es, d->path, &budget, 0, &err);
        if (r == 0) {
            if (envd_dump_answer(ret, 200, JSON_CTYPE, json_object()) < 0)
                envd_fail(ret, op, C_INTERNAL, "out of memory");
            return;
        }
        break;
    }
    default: r = -EINVAL; break;
    }
    envd_fail_errno(ret, op, r, &err);
}

/* ---- commands ---------------------------------------------------------------------------- */

/* The commands that run now, by the pid their start event gave: SendSignal cancels one. */
static pthread_mutex_t procs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    unsigned pid;
    struct execbox_cancel *cancel;
} procs[E2B_ENVD_PROCS_MAX];
static unsigned next_pid = 1000;

static unsigned proc_add(struct execbox_cancel *cancel)
{
    pthread_mutex_lock(&procs_lock);
    unsigned pid = 0;
    for (size_t i = 0; i < E2B_ENVD_PROCS_MAX && !pid; i++)
        if (!procs[i].pid) {
            if (++next_pid == 0 || next_pid > 4000000)
                next_pid = 1001;
            pid = next_pid;
            procs[i].pid = pid;
            procs[i].cancel = cancel;
        }
    pthread_mutex_unlock(&procs_lock);
    return pid;
}

static void proc_remove(unsigned pid)
{
    pthread_mutex_lock(&procs_lock);
    for (size_t i = 0; i < E2B_ENVD_PROCS_MAX; i++)
        if (procs[i].pid == pid)
            procs[i].pid = 0;
    pthread_mutex_unlock(&procs_lock);
}

static bool proc_kill(unsigned pid)
{
    bool found = false;
    pthread_mutex_lock(&procs_lock);
    for (size_t i = 0; i < E2B_ENVD_PROCS_MAX; i++)
        if (procs[i].pid == pid && procs[i].cancel) {
            execbox_cancel_fire(procs[i].cancel);
            found = true;
        }
    pthread_mutex_unlock(&procs_lock);
    return found;
}

struct cmd_stream {
    e2b_push_fn push;
    void *ud;
    uint64_t limit;
    uint64_t streamed[2];
    uint64_t dropped;
    bool capped[2];
};

static bool send_msg(struct cmd_stream *st, unsigned flags, json_t *o, bool force)
{
    size_t n = 0;
    char *e = envd_envelope(flags, o, &n);
    if (!e)
        return false;
    bool kept = st->push(st->ud, e, n, force);
    if (!kept)
        st->dropped += n;
    free(e);
    return kept;
}

static void send_data(struct cmd_stream *st, int k, const char *data, size_t len, bool force)
{
    char *b = execbox_base64(data, len);
    if (!b)
        return;
    send_msg(st, 0, json_pack("{s:{s:{s:s}}}", "event", "data", k ? "stderr" : "stdout", b), force);
    execbox_free(b);
}

/* The cell's output, raw bytes as envd sends them, up to the policy's output_limit per stream. */
static void cmd_output(void *ud, enum execbox_stream stream, const char *data, size_t len)
{
    struct cmd_stream *st = ud;
    int k = stream == EXECBOX_STREAM_STDERR ? 1 : 0;
    if (st->capped[k] || len == 0)
        return;
    if (st->streamed[k] + len > st->limit) {
        len = (size_t)(st->limit - st->streamed[k]);
        st->capped[k] = true;
    }
    st->streamed[k] += len;
    if (len)
        send_data(st, k, data, len, false);
    if (st->capped[k]) {
        char note[160];
        snprintf(note, sizeof(note),
                 "\n[execbox: %s past the output_limit of %llu bytes is not streamed]\n",
                 k ? "stderr" : "stdout", (unsigned long long)st->limit);
        send_data(st, 1, note, strlen(note), true);
    }
}

static void send_end_stream(struct cmd_stream *st, enum code c, const char *msg)
{
    json_t *o = msg ? json_pack("{s:o}", "error", envd_error_json(c, msg)) : json_object();
    send_msg(st, ENV_END, o, true);
}

static void run_start(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel,
                      struct cmd_stream *st, struct e2b_outcome *out)
{
    struct envd *d = call->envd;
    struct execbox_error err = {0};
    if (e2b_context_ready(e, call, true, &err)) {
        send_end_stream(st, C_UNAVAILABLE, err.msg[0] ? err.msg : "the context could not start");
        return;
    }
    unsigned pid = proc_add(cancel);
    if (!pid) {
        sess_cell_end(call->sess, NULL);
        call->claimed = false;
        send_end_stream(st, C_EXHAUSTED, "too many commands running");
        return;
    }
    send_msg(st, 0, json_pack("{s:{s:{s:I}}}", "event", "start", "pid", (json_int_t)pid), true);
    const struct execbox_policy *pol = sess_policy(call->sess);
    st->limit = pol->output_limit ? pol->output_limit : EXECBOX_DEFAULT_OUTPUT_LIMIT;
    struct execbox_request req = {
        .code = d->code,
        .code_len = strlen(d->code),
        .on_output = cmd_output,
        .userdata = st,
        .cancel = cancel,
    };
    struct execbox_result *res = NULL;
    int r = execbox_session_run(sess_session(call->sess), &req, &res, &err);
    proc_remove(pid);
    if (r == 0)
        e2b_hidden_cells(e, call, 1);
    sess_cell_end(call->sess, r == 0 ? res : NULL);
    call->claimed = false;
    if (r < 0) {
        send_end_stream(st, envd_code_of_errno(r), err.msg[0] ? err.msg : execbox_strerror(r));
        return;
    }
    *out = (struct e2b_outcome){
        .ran = true,
        .timed_out = res->timed_out,
        .oom_killed = res->oom_killed,
        .cancelled = res->killed_reason == EXECBOX_KILLED_CANCELLED,
        .failed = res->exit_code != 0,
        .exit_code = res->exit_code,
    };
    if (st->dropped) {
        char note[160];
        e2b_slow_note(note, sizeof(note), st->dropped);
        send_data(st, 1, note, strlen(note), true);
    }
    if (res->timed_out) {
        char msg[160];
        snprintf(msg, sizeof(msg), "the command timed out after %g s (the server's cell timeout)",
                 pol->timeout > 0 ? pol->timeout : EXECBOX_DEFAULT_TIMEOUT);
        send_end_stream(st, C_DEADLINE, msg);
    } else {
        bool killed =
            res->oom_killed || res->signal || res->killed_reason == EXECBOX_KILLED_CANCELLED;
        char status[64];
        snprintf(status, sizeof(status), killed ? "signal: killed" : "exit status %d",
                 res->exit_code);
        json_t *end = json_pack("{s:i, s:b, s:s}", "exitCode", killed ? -1 : res->exit_code,
                                "exited", !killed, "status", status);
        if (end && (killed || res->exit_code != 0))
            json_object_set_new(
                end, "error", json_string(res->oom_killed ? "killed at the memory limit" : status));
        send_msg(st, 0, json_pack("{s:{s:o}}", "event", "end", end), true);
        send_end_stream(st, C_INTERNAL, NULL);
    }
    execbox_result_free(res);
}

void e2b_envd_run(struct e2b *e, struct e2b_call *call, struct execbox_cancel *cancel,
                  e2b_push_fn push, void *ud, struct e2b_answer *ret, struct e2b_outcome *out)
{
    if (call->op == E2B_OP_PROC_START) {
        struct cmd_stream st = {.push = push, .ud = ud};
        run_start(e, call, cancel, &st, out);
        return;
    }
    if (call->op == E2B_OP_PROC_SIGNAL) {
        struct envd *d = call->envd;
        if (proc_kill(d->pid)) {
            if (envd_dump_answer(ret, 200, JSON_CTYPE, json_object()) < 0)
                envd_fail(ret, call->op, C_INTERNAL, "out of memory");
        } else {
            envd_fail(ret, call->op, C_NOT_FOUND, "process %u not found", d->pid);
        }
        return;
    }
    struct execbox_error err = {0};
    int status = e2b_context_ready(e, call, false, &err);
    if (status) {
        const char *msg = err.msg[0] ? err.msg : "the context could not start";
        if (call->op == E2B_OP_FILES_GET || call->op == E2B_OP_FILES_POST)
            envd_fail(ret, call->op, status, "%s", msg);
        else
            envd_fail(ret, call->op, envd_code_of_status(status), "%s", msg);
        return;
    }
    run_files(call, ret);
}
