/* SPDX-License-Identifier: MIT */
/* traceback.c - finds the uncaught exception a Python or node program printed to stderr (name,
 * value, traceback), and the error of a run that ended badly without one. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "model/result.h"

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

/* Sets r's error from a parsed report: the name (at most 127 bytes), the value and the
 * traceback, each of the last two at most EB_TRACEBACK_MAX bytes (the value's head, the
 * traceback's end). 0 or -ENOMEM. */
static int set_parsed_error(struct execbox_result *r, const char *name, size_t name_len,
                            const char *value, size_t value_len, const char *tb, size_t tb_len)
{
    char nbuf[128];
    size_t nl = name_len < sizeof(nbuf) - 1 ? name_len : sizeof(nbuf) - 1;
    memcpy(nbuf, name, nl);
    nbuf[nl] = '\0';
    if (value_len > EB_TRACEBACK_MAX)
        value_len = EB_TRACEBACK_MAX;
    if (tb_len > EB_TRACEBACK_MAX) {
        tb += tb_len - EB_TRACEBACK_MAX;
        tb_len = EB_TRACEBACK_MAX;
    }
    char *v = strndup(value, value_len);
    char *t = strndup(tb, tb_len);
    int rc = -ENOMEM;
    if (v && t)
        rc = eb_result_set_error(r, nbuf, v, t);
    free(v);
    free(t);
    return rc;
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
    size_t vstart = pos + name_len;
    if (vstart < end && s[vstart] == ':')
        vstart++;
    while (vstart < end && s[vstart] == ' ')
        vstart++;
    return set_parsed_error(r, s + pos, name_len, s + vstart, end - vstart, s + tb_start,
                            end - tb_start);
}

/* The line of s (len bytes) that starts at pos, without its newline. */
static size_t line_len_at(const char *s, size_t len, size_t pos)
{
    const char *nl = memchr(s + pos, '\n', len - pos);
    return nl ? (size_t)(nl - (s + pos)) : len - pos;
}

/* The start of the line after the one at pos, or len. */
static size_t next_line(const char *s, size_t len, size_t pos)
{
    size_t n = line_len_at(s, len, pos);
    return pos + n < len ? pos + n + 1 : len;
}

static bool starts_with(const char *l, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(l, prefix, k) == 0;
}

/* Node's caret line: blanks, then one or more '^' (and nothing else). */
static bool caret_line(const char *l, size_t n)
{
    size_t i = 0;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
        i++;
    if (i == n || l[i] != '^')
        return false;
    while (i < n && l[i] == '^')
        i++;
    while (i < n && (l[i] == ' ' || l[i] == '\r'))
        i++;
    return i == n;
}

/* Node's location line: "where:LINE" ("/workspace/main.js:3", "node:internal/errors:541"). */
static bool location_line(const char *l, size_t n)
{
    size_t i = n;
    while (i > 0 && isdigit((unsigned char)l[i - 1]))
        i--;
    return i < n && i >= 2 && l[i - 1] == ':' && l[0] != ' ';
}

/* A JavaScript error name: an identifier ($ and _ allowed). */
static size_t js_name_len(const char *l, size_t n)
{
    size_t i = 0;
    if (n == 0 || !(isalpha((unsigned char)l[0]) || l[0] == '_' || l[0] == '$'))
        return 0;
    while (i < n && (isalnum((unsigned char)l[i]) || l[i] == '_' || l[i] == '$'))
        i++;
    return i;
}

int eb_parse_node_error(struct execbox_result *r)
{
    const char *s = r->stderr_data;
    size_t len = r->stderr_len;
    if (!s || len == 0 || r->exit_code != 1 || r->signal || r->error_name)
        return 0;
    /* Node prints an uncaught exception as the place it was thrown ("file:LINE"), that line of
     * source, a caret line under the spot, a blank line, then err.stack: "Name: message" (the
     * message may span lines, "Name [ERR_CODE]: message" for node's own errors), its frames
     * ("    at ..."), the error's own properties ("{ code: ... }"), and a blank line and
     * "Node.js vN" at the end. A thrown value that is not an Error is printed as node inspects
     * it ("42", "{ a: 1 }"), after the caret line and without frames. The last such caret
     * line is the anchor. */
    size_t l2 = SIZE_MAX, l1 = SIZE_MAX, anchor = SIZE_MAX, pos = SIZE_MAX;
    for (size_t p = 0; p < len; p = next_line(s, len, p)) {
        size_t n = line_len_at(s, len, p);
        if (l2 != SIZE_MAX && caret_line(s + p, n) &&
            location_line(s + l2, line_len_at(s, len, l2))) {
            anchor = l2;
            pos = next_line(s, len, p);
        }
        l2 = l1;
        l1 = p;
    }
    if (anchor == SIZE_MAX)
        return 0;
    while (pos < len && line_len_at(s, len, pos) == 0)
        pos++;
    if (pos >= len)
        return 0;
    /* The end: before the "Node.js v" line, trailing blanks dropped. */
    size_t end = len;
    for (size_t p = pos; p < len; p = next_line(s, len, p))
        if (starts_with(s + p, line_len_at(s, len, p), "Node.js v"))
            end = p;
    while (end > pos && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
        end--;
    if (end == pos)
        return 0;
    /* The message ends at the first frame, or at node's "(Use `node --trace-uncaught" hint. */
    size_t vend = end;
    bool frames = false;
    for (size_t p = pos; p < end; p = next_line(s, len, p)) {
        size_t n = line_len_at(s, len, p);
        if (n > end - p)
            n = end - p;
        if (starts_with(s + p, n, "    at ") ||
            starts_with(s + p, n, "(Use `node --trace-uncaught")) {
            frames = starts_with(s + p, n, "    at ");
            vend = p;
            break;
        }
    }
    while (vend > pos && (s[vend - 1] == '\n' || s[vend - 1] == '\r' || s[vend - 1] == ' '))
        vend--;

    size_t start = pos;
    if (starts_with(s + start, vend - start, "Uncaught "))
        start += strlen("Uncaught ");
    const char *name = "Uncaught";
    size_t name_len = strlen(name);
    size_t vstart = start;
    bool bracketed = s[start] == '[';
    size_t k = js_name_len(s + start + bracketed, vend - start - bracketed);
    size_t i = start + bracketed + k;
    if (k > 0 && i < vend && s[i] == ' ' && i + 1 < vend && s[i + 1] == '[') {
        /* "TypeError [ERR_INVALID_ARG_TYPE]: ...": the code stays in the traceback. */
        const char *close = memchr(s + i, ']', vend - i);
        if (close)
            i = (size_t)(close - s) + 1;
    }
    bool colon = i + 1 < vend && s[i] == ':' && s[i + 1] == ' ';
    bool bare = i == vend || s[i] == '\n';
    if (k > 0 && (colon || (bare && frames))) {
        name = s + start + bracketed;
        name_len = k;
        vstart = colon ? i + 2 : i;
        /* "[Name: message]" (an Error without a stack), perhaps followed by " {": the last ']'
         * of its first line closes it. */
        if (bracketed) {
            size_t e = vstart + line_len_at(s, vend, vstart);
            while (e > vstart && s[e - 1] != ']')
                e--;
            if (e > vstart)
                vend = e - 1;
        }
    }
    /* The traceback: from the location line to the end; at most EB_TRACEBACK_MAX of its end. */
    return set_parsed_error(r, name, name_len, s + vstart, vend > vstart ? vend - vstart : 0,
                            s + anchor, end - anchor);
}

/* Stable names and descriptions of the signals a program commonly dies of. */
static const struct {
    int sig;
    const char *name, *what;
} signal_names[] = {
    {SIGHUP, "SIGHUP", "hangup"},
    {SIGINT, "SIGINT", "interrupt"},
    {SIGQUIT, "SIGQUIT", "quit"},
    {SIGILL, "SIGILL", "illegal instruction"},
    {SIGTRAP, "SIGTRAP", "trace/breakpoint trap"},
    {SIGABRT, "SIGABRT", "aborted"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGFPE, "SIGFPE", "floating-point exception"},
    {SIGKILL, "SIGKILL", "killed"},
    {SIGUSR1, "SIGUSR1", "user-defined signal 1"},
    {SIGSEGV, "SIGSEGV", "segmentation fault"},
    {SIGUSR2, "SIGUSR2", "user-defined signal 2"},
    {SIGPIPE, "SIGPIPE", "broken pipe"},
    {SIGALRM, "SIGALRM", "alarm clock"},
    {SIGTERM, "SIGTERM", "terminated"},
    {SIGXCPU, "SIGXCPU", "CPU time limit exceeded"},
    {SIGXFSZ, "SIGXFSZ", "file size limit exceeded"},
    {SIGVTALRM, "SIGVTALRM", "virtual timer expired"},
    {SIGPROF, "SIGPROF", "profiling timer expired"},
    {SIGSYS, "SIGSYS", "bad system call"},
};

const char *eb_signal_describe(int sig, char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
        if (signal_names[i].sig == sig) {
            snprintf(buf, size, "%s (%s)", signal_names[i].name, signal_names[i].what);
            return buf;
        }
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

int eb_result_default_error(struct execbox_result *r)
{
    if (r->error_name || r->killed_reason != EXECBOX_KILLED_NONE || r->timed_out || r->oom_killed)
        return 0;
    char what[64], msg[96];
    if (r->signal > 0) {
        snprintf(msg, sizeof(msg), "killed by %s",
                 eb_signal_describe(r->signal, what, sizeof(what)));
        return eb_result_set_error(r, "Signal", msg, "");
    }
    if (r->exit_code != 0) {
        snprintf(msg, sizeof(msg), "exit status %d", r->exit_code);
        return eb_result_set_error(r, "ExitStatus", msg, "");
    }
    return 0;
}
