/* SPDX-License-Identifier: MIT */
/* traceback.c - finds Python's last uncaught exception in stderr: name, value, traceback. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "result.h"

/* The first (or, with last, the last) occurrence of needle at the start of a line. */
static const char *find_at_line_start(const char *hay, size_t n, const char *needle, bool last)
{
    size_t k = strlen(needle);
    const char *found = NULL;
    size_t off = 0;
    while (off + k <= n) {
        const char *p = memmem(hay + off, n - off, needle, k);
        if (!p)
            break;
        if (p == hay || p[-1] == '\n') {
            found = p;
            if (!last)
                break;
        }
        off = (size_t)(p - hay) + 1;
    }
    return found;
}

/* An exception line is "Name" or "Name: value" with Name a dotted identifier. */
static bool exception_line(const char *l, size_t n, size_t *ret_name_len)
{
    size_t i = 0;
    if (n == 0 || !(isalpha((unsigned char)l[0]) || l[0] == '_'))
        return false;
    while (i < n && (isalnum((unsigned char)l[i]) || l[i] == '_' || l[i] == '.'))
        i++;
    if (i < n && !(l[i] == ':' && (i + 1 == n || l[i + 1] == ' ')))
        return false;
    *ret_name_len = i;
    return true;
}

/* The marker eb_capbuf puts where it dropped the middle of a stream. */
#define CAPBUF_MARKER "[... execbox: "

int eb_parse_python_error(struct execbox_result *r)
{
    const char *s = r->stderr_data;
    size_t len = r->stderr_len;
    /* An uncaught exception exits 1; KeyboardInterrupt's ends the interpreter by SIGINT. */
    if (!s || len == 0 || r->error_name || !(r->exit_code == 1 || r->signal == SIGINT))
        return 0;
    /* Python prints an uncaught exception as a header, indented frames, then the exception
     * line "Name: value" (the value may span lines). A SyntaxError in the main file has no
     * header, only an indented '  File "..."' block. Without either there is no exception
     * (a SystemExit message, say), however the last line looks. */
    static const char hdr[] = "Traceback (most recent call last):";
    const char *first = find_at_line_start(s, len, hdr, false);
    const char *anchor = find_at_line_start(s, len, hdr, true);
    if (!anchor)
        anchor = find_at_line_start(s, len, "  File \"", true);
    if (!anchor)
        return 0;
    /* Skip the frames after the anchor: indented lines, and where the stream was capped, the
     * marker line and the partial line after it. */
    size_t pos = (size_t)(anchor - s);
    bool skip_next = false;
    for (;;) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        if (!nl)
            return 0; /* no exception line */
        pos = (size_t)(nl - s) + 1;
        if (pos >= len)
            return 0;
        const char *l = s + pos;
        if (skip_next) {
            skip_next = false;
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t')
            continue;
        if (len - pos >= strlen(CAPBUF_MARKER) &&
            memcmp(l, CAPBUF_MARKER, strlen(CAPBUF_MARKER)) == 0) {
            skip_next = true;
            continue;
        }
        break;
    }
    /* The exception line, and its value up to the end (trailing blanks dropped). */
    size_t end = len;
    while (end > pos && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
        end--;
    const char *eol = memchr(s + pos, '\n', end - pos);
    size_t line_len = eol ? (size_t)(eol - (s + pos)) : end - pos;
    size_t name_len;
    if (!exception_line(s + pos, line_len, &name_len))
        return 0;

    /* The traceback: from the first header (the whole chain of a chained exception) or the
     * SyntaxError's 'File' line, to the end; at most EB_TRACEBACK_MAX bytes of its end. */
    size_t tb_start = first ? (size_t)(first - s) : (size_t)(anchor - s);
    if (end - tb_start > EB_TRACEBACK_MAX)
        tb_start = end - EB_TRACEBACK_MAX;

    char name[128];
    size_t nl = name_len < sizeof(name) - 1 ? name_len : sizeof(name) - 1;
    memcpy(name, s + pos, nl);
    name[nl] = '\0';
    size_t vstart = pos + name_len;
    if (vstart < end && s[vstart] == ':')
        vstart++;
    while (vstart < end && s[vstart] == ' ')
        vstart++;
    size_t vlen = end - vstart < EB_TRACEBACK_MAX ? end - vstart : EB_TRACEBACK_MAX;
    char *value = strndup(s + vstart, vlen);
    char *tb = strndup(s + tb_start, end - tb_start);
    int rc = -ENOMEM;
    if (value && tb)
        rc = eb_result_set_error(r, name, value, tb);
    free(value);
    free(tb);
    return rc;
}
