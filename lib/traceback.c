/* SPDX-License-Identifier: MIT */
/* traceback.c - finds Python's last uncaught exception in stderr: name, value, traceback. */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "result.h"

/* Start of the line containing s[pos] (pos < len). */
static size_t line_start(const char *s, size_t pos)
{
    while (pos > 0 && s[pos - 1] != '\n')
        pos--;
    return pos;
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

static const char *memmem_last(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    const char *last = NULL;
    for (const char *p = hay; n >= k && (p = memmem(p, n - (size_t)(p - hay), needle, k)); p++) {
        if (p == hay || p[-1] == '\n')
            last = p;
        if ((size_t)(p - hay) + k >= n)
            break;
    }
    return last;
}

int eb_parse_python_error(struct execbox_result *r)
{
    const char *s = r->stderr_data;
    size_t len = r->stderr_len;
    if (!s || len == 0 || r->exit_code != 1 || r->error_name)
        return 0;
    /* The last non-empty line. */
    size_t end = len;
    while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
        end--;
    if (end == 0)
        return 0;
    size_t ls = line_start(s, end - 1);
    size_t name_len;
    if (!exception_line(s + ls, end - ls, &name_len))
        return 0;

    /* The traceback: from the first header of the final chain, or, for a SyntaxError, from
     * the last 'File' line, to the end. */
    const char *first = NULL;
    const char *p = s;
    const char *hdr = "Traceback (most recent call last):";
    while ((p = memmem(p, len - (size_t)(p - s), hdr, strlen(hdr)))) {
        if (p == s || p[-1] == '\n') {
            if (!first)
                first = p;
        }
        p++;
        if ((size_t)(p - s) >= len)
            break;
    }
    size_t tb_start = first ? (size_t)(first - s) : ls;
    if (!first) {
        const char *f = memmem_last(s, ls, "  File \"");
        if (f)
            tb_start = (size_t)(f - s);
    }
    if (end - tb_start > EB_TRACEBACK_MAX)
        tb_start = end - EB_TRACEBACK_MAX;

    char name[128];
    size_t nl = name_len < sizeof(name) - 1 ? name_len : sizeof(name) - 1;
    memcpy(name, s + ls, nl);
    name[nl] = '\0';
    size_t vstart = ls + name_len;
    if (vstart < end && s[vstart] == ':')
        vstart++;
    while (vstart < end && s[vstart] == ' ')
        vstart++;
    char *value = strndup(s + vstart, end - vstart);
    char *tb = strndup(s + tb_start, end - tb_start);
    int rc = -12;
    if (value && tb)
        rc = eb_result_set_error(r, name, value, tb);
    free(value);
    free(tb);
    return rc;
}
