/* SPDX-License-Identifier: MIT */
/* render.c - a run's result as an MCP CallToolResult: the text a model reads, the images a
 * host shows, and the result record as structuredContent (checked against the outputSchema by
 * clients). The text is built from the record's JSON, whose strings the library has already
 * made valid UTF-8, never from the raw guest bytes. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/io.h"
#include "mcp.h"

/* Each of stdout and stderr is quoted in the text up to this size (head and tail). */
#define MCP_TEXT_SECTION_MAX (64U << 10)
#define MCP_TEXT_TAIL (16U << 10)

/* A growing text buffer; on allocation failure it stays failed and the render returns NULL. */
struct text {
    char *s;
    size_t len, cap;
    bool failed;
};

static void put(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *ns = realloc(t->s, cap);
        if (!ns) {
            t->failed = true;
            return;
        }
        t->s = ns;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void puts_(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* A name chosen by the guest (a file's path, an exception's class) on one line of our own
 * text: control characters (newlines, ESC and the rest of C0, DEL, C1) and backslashes are
 * written as escapes, so that a name can neither start a line that looks like ours nor send
 * terminal escape sequences. The JSON in structuredContent keeps the exact name. */
static void put_name(struct text *t, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '\\')
            puts_(t, "\\\\");
        else if (*p == '\n')
            puts_(t, "\\n");
        else if (*p == '\r')
            puts_(t, "\\r");
        else if (*p == '\t')
            puts_(t, "\\t");
        else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", *p);
            puts_(t, esc);
        } else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* U+0080..U+009F (C1) */
            snprintf(esc, sizeof(esc), "\\u%04x", p[1]);
            puts_(t, esc);
            p++;
        } else
            put(t, (const char *)p, 1);
    }
}

/* The length of s[0..len) without a last character that the cut left incomplete. */
static size_t utf8_trim(const char *s, size_t len)
{
    for (size_t back = 1; back <= 4 && back <= len; back++) {
        unsigned char c = (unsigned char)s[len - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back for its lead */
        size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        return need > back ? len - back : len;
    }
    return len;
}

/* Formatted text of at most 1 KiB (longer is cut at a character boundary). Strings from the
 * guest go through put() instead. */
__attribute__((format(printf, 2, 3))) static void putf(struct text *t, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        put(t, line, utf8_trim(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1));
}

/* Backs up from a cut at off to the start of a UTF-8 character. */
static size_t utf8_floor(const char *s, size_t off)
{
    while (off > 0 && ((unsigned char)s[off] & 0xC0) == 0x80)
        off--;
    return off;
}

/* A section "--- name ---\n<text>" with a final newline, skipped when the text is empty. Text
 * past MCP_TEXT_SECTION_MAX keeps its head and tail: the whole kept output is in
 * structuredContent, and the text stays small enough for clients' frame limits. Returns true
 * when something was left out. */
static bool section_at(struct text *t, const char *name, const char *where, json_t *str)
{
    size_t n = json_string_length(str);
    if (!json_is_string(str) || n == 0)
        return false;
    const char *v = json_string_value(str);
    putf(t, "--- %s ---\n", name);
    bool cut = n > MCP_TEXT_SECTION_MAX;
    if (!cut) {
        put(t, v, n);
    } else {
        size_t head = utf8_floor(v, MCP_TEXT_SECTION_MAX - MCP_TEXT_TAIL);
        size_t tail = utf8_floor(v, n - MCP_TEXT_TAIL);
        put(t, v, head);
        putf(t, "\n[... %zu bytes left out here; structuredContent.%s has them ...]\n", tail - head,
             where);
        put(t, v + tail, n - tail);
    }
    if (v[n - 1] != '\n')
        put(t, "\n", 1);
    return cut;
}

static bool section(struct text *t, const char *name, json_t *str)
{
    return section_at(t, name, name, str);
}

static void human(uint64_t b, char *out, size_t n)
{
    if (b >= (1ULL << 20))
        snprintf(out, n, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= (1ULL << 10))
        snprintf(out, n, "%.1f KiB", (double)b / (1 << 10));
    else
        snprintf(out, n, "%llu bytes", (unsigned long long)b);
}

/* The image types a host can show: PNG, JPEG, GIF, SVG. */
static bool showable(const char *mime)
{
    static const char *const types[] = {"image/png", "image/jpeg", "image/gif", "image/svg+xml"};
    for (size_t i = 0; mime && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(mime, types[i]) == 0)
            return true;
    return false;
}

/* What a reply does with a /workspace file. */
enum file_fate {
    FILE_LISTED,    /* not an inline image a host can show: named only */
    FILE_SHOWN,     /* attached as `image` content */
    FILE_OVER,      /* an image left out: the reply's image budget is used up */
    FILE_UNCHANGED, /* an image with the bytes that an earlier reply of the session attached */
};

struct file_view {
    enum file_fate fate;
    uint64_t hash; /* of the inline bytes, for images */
};

/* 64-bit FNV-1a. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static const struct mcp_sent_image *sent_find(const struct mcp_sent *sent, const char *path)
{
    for (size_t i = 0; sent && path && i < sent->n; i++)
        if (strcmp(sent->v[i].path, path) == 0)
            return &sent->v[i];
    return NULL;
}

void mcp_sent_clear(struct mcp_sent *sent)
{
    for (size_t i = 0; i < sent->n; i++)
        free(sent->v[i].path);
    free(sent->v);
    sent->v = NULL;
    sent->n = 0;
}

/* Each file's fate, in order: an inline image of a type a host can show is attached unless the
 * session already sent these bytes, while its bytes fit in what is left of the image budget. */
static void file_fates(const struct execbox_result *res, const struct mcp_sent *sent, size_t budget,
                       struct file_view *view)
{
    for (size_t i = 0; i < res->n_files; i++) {
        const struct execbox_file *f = &res->files[i];
        view[i].fate = FILE_LISTED;
        if (!f->data || !showable(f->mime))
            continue;
        view[i].hash = fnv1a(f->data, f->data_len);
        const struct mcp_sent_image *was = sent_find(sent, f->path);
        if (was && was->len == f->data_len && was->hash == view[i].hash) {
            view[i].fate = FILE_UNCHANGED;
        } else if (f->data_len <= budget) {
            budget -= f->data_len;
            view[i].fate = FILE_SHOWN;
        } else {
            view[i].fate = FILE_OVER;
        }
    }
}

/* The session's record after this reply: the images it attached or found unchanged. Files
 * deleted, or changed and not attached, drop out. Out of memory, the record is emptied: later
 * replies then attach more, never less. */
static void sent_update(struct mcp_sent *sent, const struct execbox_result *res,
                        const struct file_view *view)
{
    size_t n = 0;
    for (size_t i = 0; i < res->n_files; i++)
        n += view[i].fate == FILE_SHOWN || view[i].fate == FILE_UNCHANGED;
    struct mcp_sent_image *v = n ? calloc(n, sizeof(*v)) : NULL;
    mcp_sent_clear(sent);
    if (!v)
        return;
    for (size_t i = 0; i < res->n_files; i++) {
        const struct execbox_file *f = &res->files[i];
        if (view[i].fate != FILE_SHOWN && view[i].fate != FILE_UNCHANGED)
            continue;
        char *path = f->path ? strdup(f->path) : NULL;
        if (path)
            v[sent->n++] = (struct mcp_sent_image){path, f->data_len, view[i].hash};
    }
    sent->v = v;
}

static void notes(struct text *t, const struct execbox_result *res, json_t *rec, double timeout,
                  const struct file_view *view)
{
    if (res->stdout_truncated)
        putf(t,
             "note: stdout was truncated: the program wrote %llu bytes; the head and the tail "
             "are kept\n",
             (unsigned long long)res->stdout_bytes);
    if (res->stderr_truncated)
        putf(t,
             "note: stderr was truncated: the program wrote %llu bytes; the head and the tail "
             "are kept\n",
             (unsigned long long)res->stderr_bytes);
    if (res->timed_out)
        putf(t, "note: timed out after %g s; the sandbox was killed\n", timeout);
    else if (res->oom_killed)
        puts_(t, "note: killed for exceeding the memory limit\n");
    else if (res->killed_reason == EXECBOX_KILLED_OUTPUT_LIMIT)
        putf(t, "note: killed for writing too much output\n");
    else if (res->killed_reason == EXECBOX_KILLED_CPU)
        putf(t, "note: killed for exceeding the CPU time limit\n");
    else if (res->killed_reason == EXECBOX_KILLED_CANCELLED)
        putf(t, "note: cancelled; the sandbox was killed\n");
    else if (res->signal)
        putf(t, "note: killed by signal %d\n", res->signal);
    json_t *files = json_object_get(rec, "files");
    if (json_array_size(files) == 0)
        return;
    puts_(t, "files left in /workspace:\n");
    for (size_t i = 0; i < res->n_files; i++) {
        const struct execbox_file *f = &res->files[i];
        const char *path = json_string_value(json_object_get(json_array_get(files, i), "path"));
        char size[32];
        human(f->size, size, sizeof(size));
        puts_(t, "  ");
        put_name(t, path ? path : "?");
        static const char *const why[] = {
            [FILE_LISTED] = "",
            [FILE_SHOWN] = ", shown below as an image",
            [FILE_OVER] = ", not shown: the reply's image budget is used up",
            [FILE_UNCHANGED] = ", unchanged since an earlier reply showed it",
        };
        putf(t, " (%s, %s)%s\n", f->mime ? f->mime : "?", size, why[view[i].fate]);
    }
    if (res->files_truncated)
        puts_(t, "  ... more files were left than are listed\n");
}

/* The non-text forms of a rich output that become content of their own: images as `image`
 * content, the others as labelled text. */
static const struct {
    const char *key, *mime;
    bool image;
} rich_forms[] = {
    {"png", "image/png", true},           {"jpeg", "image/jpeg", true},
    {"html", "text/html", false},         {"svg", "image/svg+xml", false},
    {"markdown", "text/markdown", false}, {"latex", "text/latex", false},
    {"json", "application/json", false},
};

/* Bytes that base64 text of length n decodes to (at most). */
static size_t b64_bytes(size_t n)
{
    return n / 4 * 3;
}

/* The label of rich output k in the text: "result" for the main result, else "output N"
 * (numbered from 1 among the others). */
static void rich_label(json_t *results, size_t k, char *out, size_t n)
{
    if (json_is_true(json_object_get(json_array_get(results, k), "is_main_result"))) {
        snprintf(out, n, "result");
        return;
    }
    size_t nth = 0;
    for (size_t i = 0; i <= k; i++)
        nth += !json_is_true(json_object_get(json_array_get(results, i), "is_main_result"));
    snprintf(out, n, "output %zu", nth);
}

/* A cell's rich outputs in the text: each one's text/plain as a section, then one line per
 * other form saying where it is. Uses up *budget for the images that will be shown, as
 * rich_content() does in the same order. */
static void rich_text(struct text *t, json_t *results, size_t *budget)
{
    for (size_t k = 0; k < json_array_size(results); k++) {
        json_t *r = json_array_get(results, k);
        char label[32], where[48];
        rich_label(results, k, label, sizeof(label));
        snprintf(where, sizeof(where), "results[%zu].text", k);
        section_at(t, label, where, json_object_get(r, "text"));
    }
    for (size_t k = 0; k < json_array_size(results); k++) {
        json_t *r = json_array_get(results, k);
        char label[32];
        rich_label(results, k, label, sizeof(label));
        for (size_t i = 0; i < sizeof(rich_forms) / sizeof(rich_forms[0]); i++) {
            json_t *v = json_object_get(r, rich_forms[i].key);
            if (!v)
                continue;
            size_t n = json_is_string(v) ? json_string_length(v) : 0;
            if (!rich_forms[i].image)
                putf(t, "%s as %s: below\n", label, rich_forms[i].mime);
            else if (b64_bytes(n) <= *budget) {
                *budget -= b64_bytes(n);
                putf(t, "%s as %s: shown below as an image\n", label, rich_forms[i].mime);
            } else
                putf(t, "%s as %s: not shown: the reply's image budget is used up\n", label,
                     rich_forms[i].mime);
        }
    }
}

/* Text of one non-image form, "[label as mime]\n" then the value (JSON as compact text), cut
 * to its head and tail past MCP_TEXT_SECTION_MAX as sections are. */
static json_t *form_text(const char *label, const char *mime, json_t *v, size_t k, const char *key)
{
    struct text t = {0};
    char *dumped = json_is_string(v)
                       ? NULL
                       : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
                                           JSON_REAL_PRECISION(EXECBOX_JSON_REAL_DIGITS));
    json_t *str = dumped ? json_string(dumped) : json_incref(v);
    free(dumped);
    char name[96], where[48];
    snprintf(name, sizeof(name), "%s as %s", label, mime);
    snprintf(where, sizeof(where), "results[%zu].%s", k, key);
    section_at(&t, name, where, str);
    json_decref(str);
    json_t *item =
        t.failed || !t.s ? NULL : json_pack("{s:s, s:s%}", "type", "text", "text", t.s, t.len);
    free(t.s);
    return item;
}

/* The rich outputs' own content items, in order, within the image budget; their image bytes
 * are then dropped from the record (the reply carries them once). */
static void rich_content(json_t *content, json_t *results, size_t *budget)
{
    for (size_t k = 0; k < json_array_size(results); k++) {
        json_t *r = json_array_get(results, k);
        char label[32];
        rich_label(results, k, label, sizeof(label));
        for (size_t i = 0; i < sizeof(rich_forms) / sizeof(rich_forms[0]); i++) {
            json_t *v = json_object_get(r, rich_forms[i].key);
            if (!v)
                continue;
            if (!rich_forms[i].image) {
                json_t *item = form_text(label, rich_forms[i].mime, v, k, rich_forms[i].key);
                if (item)
                    json_array_append_new(content, item);
                continue;
            }
            size_t n = json_is_string(v) ? json_string_length(v) : 0;
            if (json_is_string(v) && b64_bytes(n) <= *budget) {
                *budget -= b64_bytes(n);
                json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image", "data",
                                                         v, "mimeType", rich_forms[i].mime));
            }
            json_object_del(r, rich_forms[i].key);
        }
    }
}

static json_t *render(const struct execbox_result *res, const struct mcp_render *o)
{
    /* The record is built once: structuredContent is it, and the text below reads from it. */
    json_t *rec = NULL;
    struct execbox_error err = {0};
    if (execbox_result_to_jansson(res, EXECBOX_JSON_NO_FILE_DATA, &rec, &err) < 0)
        return NULL;

    struct text t = {0};
    putf(&t, "exit_code: %d%s\n", res->exit_code, res->exit_code ? " (failed)" : "");
    putf(&t, "execution_time: %.3f s\n", res->execution_time);
    if (o->cell && res->in_session)
        putf(&t, "execution_count: %llu\n", (unsigned long long)res->execution_count);
    if (o->cell && o->lost) {
        puts_(&t, "note: the session's state was lost (");
        puts_(&t, o->lost);
        puts_(&t, "); this call ran in a fresh session: variables, imports and definitions from "
                  "earlier calls are gone\n");
        json_object_set_new(rec, "state_lost", json_true());
    }
    json_t *out = json_object_get(rec, "stdout"), *errs = json_object_get(rec, "stderr");
    json_t *results = o->cell ? json_object_get(rec, "results") : NULL;
    if (json_string_length(out) == 0 && json_string_length(errs) == 0 &&
        json_array_size(results) == 0)
        puts_(&t, "(no output)\n");
    section(&t, "stdout", out);
    bool stderr_cut = section(&t, "stderr", errs);
    json_t *e = json_object_get(rec, "error");
    if (json_is_object(e)) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *value = json_string_value(json_object_get(e, "value"));
        puts_(&t, "--- error ---\n");
        put_name(&t, name ? name : "");
        if (value && *value) {
            puts_(&t, ": ");
            put(&t, value, utf8_trim(value, strnlen(value, 1000)));
        }
        puts_(&t, "\n");
        /* The traceback is already in stderr unless stderr lost it to truncation. */
        if (res->stderr_truncated || stderr_cut)
            section(&t, "traceback", json_object_get(e, "traceback"));
    }
    /* Rich outputs come first in the image budget: they are what the code chose to show. */
    size_t budget = o->images_budget;
    rich_text(&t, results, &budget);
    char note[256];
    for (unsigned i = 0; o->cell && cli_rich_note(res, i, note, sizeof(note)); i++) {
        puts_(&t, "note: ");
        puts_(&t, note);
        puts_(&t, "\n");
    }
    if (o->cell && res->rolled_back)
        puts_(&t, "note: rolled back: the session's variables are as they were before this call "
                  "(files in /workspace are not rolled back)\n");
    struct file_view *view = calloc(res->n_files ? res->n_files : 1, sizeof(*view));
    if (!view) {
        free(t.s);
        json_decref(rec);
        return NULL;
    }
    file_fates(res, o->sent, budget, view);
    notes(&t, res, rec, o->timeout, view);
    if (o->cell && o->ended)
        puts_(&t, "note: the session ended with this call; the next call starts a fresh session "
                  "without the earlier variables\n");

    json_t *content = json_array();
    json_t *result = json_object();
    if (t.failed || !content || !result) {
        free(view);
        free(t.s);
        json_decref(content);
        json_decref(result);
        json_decref(rec);
        return NULL;
    }
    json_t *text = json_pack("{s:s, s:s%}", "type", "text", "text", t.s, t.len);
    free(t.s);
    if (!text) /* not reached: every piece is valid UTF-8; but never send an empty result */
        text = json_pack("{s:s, s:s}", "type", "text", "text",
                         "(the output could not be rendered; see structuredContent)");
    json_array_append_new(content, text);
    budget = o->images_budget;
    rich_content(content, results, &budget);
    for (size_t i = 0; i < res->n_files; i++) {
        const struct execbox_file *f = &res->files[i];
        if (view[i].fate != FILE_SHOWN)
            continue;
        char *b64 = execbox_base64(f->data, f->data_len);
        if (b64)
            json_array_append_new(content, json_pack("{s:s, s:s, s:s}", "type", "image", "data",
                                                     b64, "mimeType", f->mime));
        else
            view[i].fate = FILE_OVER; /* not sent, so not recorded as sent */
        execbox_free(b64);
    }
    if (o->sent)
        sent_update(o->sent, res, view);
    free(view);
    json_object_set_new(result, "content", content);
    json_object_set_new(result, "structuredContent", rec);
    json_object_set_new(result, "isError", json_boolean(res->exit_code != 0));
    return result;
}

json_t *mcp_render_result(const struct execbox_result *res, double timeout, size_t images_budget)
{
    struct mcp_render o = {.timeout = timeout, .images_budget = images_budget};
    return render(res, &o);
}

json_t *mcp_render_cell(const struct execbox_result *res, const struct mcp_render *o)
{
    struct mcp_render c = *o;
    c.cell = true;
    return render(res, &c);
}

json_t *mcp_tool_error(const char *message)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", message, "isError",
                     1);
}

json_t *mcp_api_error(enum errmap_scope scope, int code, const struct execbox_error *err,
                      const char *what)
{
    /* Only the queue's refusals are JSON-RPC errors (tools.c); a library error of a run or a
     * session is the call's, a tool error the model reads. */
    if (errmap_answer(scope, code, err)->mcp == ERRMAP_MCP_RPC_BUSY)
        return mcp_tool_error("server busy: too many calls in progress; retry later");
    char msg[400];
    snprintf(msg, sizeof(msg), "execbox could not %s: %s", what, err->msg);
    return mcp_tool_error(msg);
}
