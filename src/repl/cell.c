/* SPDX-License-Identifier: MIT */
/* cell.c - when a cell is complete (see cell.h). */
#include "cell.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool repl_cell_continues(const char *text, size_t len)
{
    int depth = 0;
    char quote = 0;      /* the open string's quote character, 0 outside strings */
    bool triple = false; /* the open string is triple-quoted */
    bool block = false;  /* some line opened a block */
    char last = 0;       /* the current line's last significant character */
    bool line_start = true, empty_last;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (quote) {
            if (c == '\\' && i + 1 < len) {
                i++;
                last = 'x';
            } else if (!triple && c == '\n') {
                quote = 0; /* an unterminated string ends with its line (a syntax error) */
                line_start = true;
                last = 0;
            } else if (c == quote &&
                       (!triple || (i + 2 < len && text[i + 1] == quote && text[i + 2] == quote))) {
                if (triple)
                    i += 2;
                quote = 0;
                last = c;
            }
            continue;
        }
        if (c == '\n') {
            if (last == ':')
                block = true;
            line_start = true;
            last = 0;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f')
            continue;
        if (line_start && c == '@')
            block = true;
        line_start = false;
        if (c == '#') {
            while (i + 1 < len && text[i + 1] != '\n')
                i++;
            continue;
        }
        if (c == '\'' || c == '"') {
            triple = i + 2 < len && text[i + 1] == c && text[i + 2] == c;
            if (triple)
                i += 2;
            quote = c;
            last = c;
            continue;
        }
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if ((c == ')' || c == ']' || c == '}') && depth > 0)
            depth--;
        last = c;
    }
    if (quote && triple)
        return true;
    if (depth > 0 || last == '\\')
        return true;
    if (last == ':')
        return true;
    /* The last line is empty when the text ends in '\n' or has only blanks after it. */
    const char *nl = memrchr(text, '\n', len);
    empty_last = true;
    for (const char *p = nl ? nl + 1 : text; p < text + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            empty_last = false;
    if (!nl)
        return block; /* one line: only a decorator opens a block without ending in ':' */
    return block && !empty_last;
}

bool repl_cell_is_exit(const char *text, size_t len)
{
    while (len && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r' ||
                   text[len - 1] == ';'))
        len--;
    if (memchr(text, '\n', len))
        return false;
    static const char *const calls[] = {"exit(", "quit(", "sys.exit("};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        size_t n = strlen(calls[i]);
        if (len > n && strncmp(text, calls[i], n) == 0 && text[len - 1] == ')')
            return true;
    }
    static const char raise[] = "raise SystemExit";
    size_t n = sizeof(raise) - 1;
    return len >= n && strncmp(text, raise, n) == 0 &&
           (len == n || text[n] == '(' || text[n] == ' ');
}
