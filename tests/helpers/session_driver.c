/* SPDX-License-Identifier: MIT */
/* session_driver.c - drives libexecbox's sessions from JSON lines on stdin, one JSON answer per
 * line on stdout (tests/integration/sessions_lib.py, bench/sessions.sh):
 *   {"op": "new", "policy": {...}?, "rollback": bool?, "idle": s?}   -> {"s": N} or {"error"}
 *   {"op": "run", "s": N, "code": "...", "timeout": s?, "stdin": "..."?} -> the result record
 *   {"op": "put"|"get"|"rm", "s": N, "path": "...", "data": "..."?}  -> {"ok"|"data"|"error"}
 *   {"op": "list"|"info"|"kill"|"free", "s": N}
 * Options: --pool N --preload MODS (the executor's). Errors are {"error", "code", "field"}. */
#include <errno.h>
#include <execbox/execbox.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SESSIONS 256

static void answer(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    printf("%s\n", s ? s : "{}");
    fflush(stdout);
    free(s);
    json_decref(o);
}

static void fail(int code, const struct execbox_error *e)
{
    answer(json_pack("{s:s, s:i, s:s}", "error", e->msg, "code", code, "field", e->field));
}

int main(int argc, char **argv)
{
    struct execbox_executor_options o = {0};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pool") == 0)
            o.pool_size = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--preload") == 0)
            o.pool_preload = argv[i + 1];
    }
    struct execbox_error err = {0, ""};
    struct execbox_executor *ex;
    if (execbox_executor_new(&o, &ex, &err) < 0) {
        fprintf(stderr, "session_driver: %s\n", err.msg);
        return err.code == -ENOTSUP ? 77 : 1;
    }
    struct execbox_session *ss[MAX_SESSIONS] = {0};
    int n = 0;
    static char line[1 << 24];
    while (fgets(line, sizeof(line), stdin)) {
        json_error_t je;
        json_t *m = json_loads(line, 0, &je);
        const char *op = json_string_value(json_object_get(m, "op"));
        int si = (int)json_integer_value(json_object_get(m, "s"));
        struct execbox_session *s = si >= 0 && si < n ? ss[si] : NULL;
        memset(&err, 0, sizeof(err));
        if (!op) {
            answer(json_pack("{s:s}", "error", "bad line"));
        } else if (strcmp(op, "new") == 0) {
            struct execbox_policy p;
            execbox_policy_init(&p);
            json_t *pj = json_object_get(m, "policy");
            char *pt = pj ? json_dumps(pj, 0) : NULL;
            int r = pt ? execbox_policy_merge_json(&p, pt, 0, &err) : 0;
            free(pt);
            struct execbox_session_options so = {
                .policy = &p,
                .no_rollback = json_is_false(json_object_get(m, "rollback")),
                .idle_timeout = json_number_value(json_object_get(m, "idle")),
            };
            if (r == 0 && n >= MAX_SESSIONS)
                r = -EMFILE;
            if (r == 0)
                r = execbox_session_new(ex, &so, &ss[n], &err);
            if (r < 0)
                fail(r, &err);
            else
                answer(json_pack("{s:i}", "s", n++));
        } else if (!s) {
            answer(json_pack("{s:s}", "error", "no such session"));
        } else if (strcmp(op, "run") == 0) {
            struct execbox_policy p;
            execbox_policy_init(&p);
            json_t *t = json_object_get(m, "timeout");
            if (t)
                p.timeout = json_number_value(t);
            json_t *in = json_object_get(m, "stdin");
            struct execbox_request rq = {
                .code = json_string_value(json_object_get(m, "code")),
                .code_len = json_string_length(json_object_get(m, "code")),
                .stdin_data = in ? json_string_value(in) : NULL,
                .stdin_len = in ? json_string_length(in) : 0,
                .policy = t ? &p : NULL,
            };
            if (!t)
                rq.policy = NULL;
            struct execbox_result *res;
            int r = rq.code ? execbox_session_run(s, &rq, &res, &err) : -EINVAL;
            if (r < 0) {
                fail(r, &err);
            } else {
                char *j = NULL;
                execbox_result_to_json(res, EXECBOX_JSON_NO_FILE_DATA, &j, &err);
                printf("%s\n", j ? j : "{}");
                fflush(stdout);
                execbox_free(j);
                execbox_result_free(res);
            }
        } else if (strcmp(op, "put") == 0) {
            json_t *d = json_object_get(m, "data");
            int r = execbox_session_write_file(s, json_string_value(json_object_get(m, "path")),
                                               json_string_value(d), json_string_length(d), &err);
            if (r < 0)
                fail(r, &err);
            else
                answer(json_pack("{s:b}", "ok", 1));
        } else if (strcmp(op, "get") == 0) {
            char *data;
            size_t len;
            int r = execbox_session_read_file(s, json_string_value(json_object_get(m, "path")),
                                              1 << 20, &data, &len, &err);
            if (r < 0) {
                fail(r, &err);
            } else {
                char *clean = execbox_utf8_sanitize(data, len, &len, NULL);
                answer(json_pack("{s:s%}", "data", clean ? clean : "", clean ? len : 0));
                execbox_free(clean);
                execbox_free(data);
            }
        } else if (strcmp(op, "rm") == 0) {
            int r =
                execbox_session_remove_file(s, json_string_value(json_object_get(m, "path")), &err);
            if (r < 0)
                fail(r, &err);
            else
                answer(json_pack("{s:b}", "ok", 1));
        } else if (strcmp(op, "list") == 0) {
            struct execbox_file *f;
            size_t k;
            int r = execbox_session_list_files(s, &f, &k, &err);
            if (r < 0) {
                fail(r, &err);
            } else {
                json_t *a = json_array();
                for (size_t i = 0; i < k; i++)
                    json_array_append_new(a, json_pack("{s:s, s:I}", "path", f[i].path, "size",
                                                       (json_int_t)f[i].size));
                execbox_files_free(f, k);
                answer(json_pack("{s:o}", "files", a));
            }
        } else if (strcmp(op, "info") == 0) {
            struct execbox_session_info i;
            execbox_session_info(s, &i);
            answer(json_pack("{s:b, s:b, s:I, s:I, s:f, s:I}", "alive", i.alive, "busy", i.busy,
                             "execution_count", (json_int_t)i.execution_count, "rolled_back",
                             (json_int_t)i.rolled_back, "expires_in", i.expires_at - i.last_used_at,
                             "memory_bytes", (json_int_t)i.memory_bytes));
        } else if (strcmp(op, "kill") == 0) {
            execbox_session_kill(s);
            answer(json_pack("{s:b}", "ok", 1));
        } else if (strcmp(op, "free") == 0) {
            ss[si] = execbox_session_free(s);
            answer(json_pack("{s:b}", "ok", 1));
        } else {
            answer(json_pack("{s:s}", "error", "unknown op"));
        }
        json_decref(m);
    }
    for (int i = 0; i < n; i++)
        execbox_session_free(ss[i]);
    execbox_executor_free(ex);
    return 0;
}
