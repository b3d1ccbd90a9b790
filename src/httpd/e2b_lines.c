/* SPDX-License-Identifier: MIT */
/* e2b_lines.c - an E2B execute's NDJSON lines (e2b_lines.h). */
#include "e2b_lines.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"
#include "request.h"

/* Sends one object as a line; takes the reference. */
static bool send_line(struct stream *st, json_t *o, bool force)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS))
                : NULL;
    json_decref(o);
    if (!s)
        return false;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return false;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    bool kept = st->push(st->ud, line, n + 1, force);
    if (!kept)
        st->dropped += n + 1;
    free(line);
    return kept;
}

void e2b_send_log(struct stream *st, int k, const char *text, size_t len, bool force)
{
    char t[48];
    cli_iso_time(NULL, 6, t, sizeof(t));
    send_line(st,
              json_pack("{s:s, s:s%, s:s}", "type", k ? "stderr" : "stdout", "text", text, len,
                        "timestamp", t),
              force);
}

void e2b_flush_pending(struct stream *st, int k)
{
    if (st->pend_len[k])
        e2b_send_log(st, k, st->pend[k], st->pend_len[k], false);
    st->pend_len[k] = 0;
}

/* Sends clean text as one message per line, as they end; a partial line waits in pend. Pieces
 * are cut only at newlines, so each message is whole UTF-8. */
static void send_lines(struct stream *st, int k, const char *s, size_t n)
{
    while (n) {
        const char *nl = memchr(s, '\n', n);
        size_t take = nl ? (size_t)(nl - s) + 1 : n;
        if (st->pend_len[k] + take <= E2B_LINE_MAX) {
            memcpy(st->pend[k] + st->pend_len[k], s, take);
            st->pend_len[k] += take;
            if (nl)
                e2b_flush_pending(st, k);
        } else {
            e2b_flush_pending(st, k);
            if (nl || take > E2B_LINE_MAX) {
                e2b_send_log(st, k, s, take, false);
            } else {
                memcpy(st->pend[k], s, take);
                st->pend_len[k] = take;
            }
        }
        s += take;
        n -= take;
    }
}

/* The cell's on_output: its output as stdout or stderr lines as each line ends, up to the
 * policy's output_limit per stream, invalid UTF-8 replaced and a sequence split between chunks
 * carried over whole. */
void e2b_on_output(void *ud, enum execbox_stream stream, const char *data, size_t len)
{
    struct stream *st = ud;
    int k = stream == EXECBOX_STREAM_STDERR ? 1 : 0;
    if (st->capped[k])
        return;
    if (st->streamed[k] + len > st->limit) {
        len = (size_t)(st->limit - st->streamed[k]);
        st->capped[k] = true;
    }
    st->streamed[k] += len;
    size_t total = st->carry_len[k] + len;
    char *joined = malloc(total ? total : 1);
    if (!joined)
        return;
    memcpy(joined, st->carry[k], st->carry_len[k]);
    if (len)
        memcpy(joined + st->carry_len[k], data, len);
    size_t keep = 0, clen = 0;
    char *clean = execbox_utf8_sanitize(joined, total, &clen, &keep);
    if (clean) {
        memcpy(st->carry[k], joined + total - keep, keep);
        st->carry_len[k] = keep;
        send_lines(st, k, clean, clen);
        execbox_free(clean);
    }
    free(joined);
    if (st->capped[k]) {
        e2b_flush_pending(st, k);
        char note[160];
        snprintf(note, sizeof(note),
                 "\n[execbox: %s past the output_limit of %llu bytes is not streamed]\n",
                 k ? "stderr" : "stdout", (unsigned long long)st->limit);
        e2b_send_log(st, 1, note, strlen(note), true);
    }
}

/* E2B's text/plain of a result drops the quotes of a string's repr. */
static json_t *result_text(const char *text)
{
    size_t n = strlen(text);
    if (n >= 2 && (text[0] == '\'' || text[0] == '"') && text[n - 1] == text[0])
        return json_stringn(text + 1, n - 2);
    return json_string(text);
}

void e2b_send_result(struct stream *st, const struct execbox_rich *rich)
{
    json_t *o = json_pack("{s:s}", "type", "result");
    if (!o)
        return;
    if (rich->text)
        json_object_set_new(o, "text", result_text(rich->text));
    const struct {
        const char *key, *val;
    } forms[] = {
        {"html", rich->html},
        {"markdown", rich->markdown},
        {"svg", rich->svg},
        {"png", rich->png},
        {"jpeg", rich->jpeg},
        {"latex", rich->latex},
        {"javascript", rich->javascript},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        if (forms[i].val)
            json_object_set_new(o, forms[i].key, json_string(forms[i].val));
    if (rich->json) {
        /* E2B carries it parsed; text that is not JSON stays a string. */
        json_t *j = json_loads(rich->json, JSON_DECODE_ANY, NULL);
        json_object_set_new(o, "json", j ? j : json_string(rich->json));
    }
    json_object_set_new(o, "is_main_result", json_boolean(rich->is_main_result));
    send_line(st, o, true);
}

void e2b_send_error(struct stream *st, const char *name, const char *value, const char *traceback)
{
    send_line(st,
              json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value",
                        value ? value : "", "traceback", traceback ? traceback : ""),
              true);
}

void e2b_send_end(struct stream *st, uint64_t count, bool with_count)
{
    if (with_count)
        send_line(st,
                  json_pack("{s:s, s:I}", "type", "number_of_executions", "execution_count",
                            (json_int_t)count),
                  true);
    send_line(st, json_pack("{s:s}", "type", "end_of_execution"), true);
}

/* The error execbox gives a run that ended badly without an exception ("Signal", "ExitStatus",
 * with no traceback): E2B names those itself below, as its SDKs know them. */
static bool generic_error(const struct execbox_result *res)
{
    return (!res->error_traceback || !*res->error_traceback) &&
           (strcmp(res->error_name, "Signal") == 0 || strcmp(res->error_name, "ExitStatus") == 0);
}

/* The error line of a cell that did not end normally, or none. */
void e2b_send_cell_error(struct stream *st, const struct execbox_result *res, double timeout)
{
    char value[256];
    if (res->timed_out) {
        snprintf(value, sizeof(value),
                 "Execution timed out after %g s (the server's cell timeout); the context's state "
                 "is as before the cell",
                 timeout);
        e2b_send_error(st, "TimeoutError", value, "");
    } else if (res->killed_reason == EXECBOX_KILLED_CANCELLED) {
        /* E2B's name for a cell its kernel did not finish. */
        e2b_send_error(
            st, "ExecutionAborted",
            "the cell was cancelled: its context was restarted or removed, or the server "
            "is stopping",
            "");
    } else if (res->error_name && !generic_error(res)) {
        e2b_send_error(st, res->error_name, res->error_value, res->error_traceback);
    } else if (res->oom_killed) {
        e2b_send_error(
            st, "MemoryError",
            "the cell was killed at the memory limit; the context's state is as before the "
            "cell",
            "");
    } else if (res->signal) {
        snprintf(value, sizeof(value), "the cell was killed by signal %d%s", res->signal,
                 res->rolled_back ? "; the context's state is as before the cell" : "");
        e2b_send_error(st, "Killed", value, "");
    } else if (res->exit_code != 0) {
        snprintf(value, sizeof(value), "the cell ended with exit status %d%s", res->exit_code,
                 res->rolled_back ? "; the context's state is as before the cell" : "");
        e2b_send_error(st, "SystemExit", value, "");
    }
}

void e2b_slow_note(char *buf, size_t n, uint64_t dropped)
{
    snprintf(buf, n,
             "\n[execbox: %llu bytes of output were not streamed: the client read too "
             "slowly]\n",
             (unsigned long long)dropped);
}
