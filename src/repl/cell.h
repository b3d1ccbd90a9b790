/* SPDX-License-Identifier: MIT */
/* cell.h - the pure parts of `execbox repl`: when the lines typed so far make a complete cell
 * (Python's own REPL rules, approximately). No I/O. */
#ifndef EBCLI_REPL_CELL_H
#define EBCLI_REPL_CELL_H

#include <stdbool.h>
#include <stddef.h>

/* True when the cell text (lines joined by '\n', without a final newline after the last line)
 * needs another line: a bracket or a triple-quoted string is still open, the last line ends
 * with a backslash, or the cell holds a block (a line ending with ':' or starting with '@')
 * and its last line is not empty. Comments and strings are skipped. */
bool repl_cell_continues(const char *text, size_t len);

/* True when the cell is one line that only asks to leave: exit(...), quit(...), sys.exit(...)
 * or raise SystemExit... . The repl cannot tell exit(0) from a cell that just succeeded by the
 * result alone, so it asks this first. */
bool repl_cell_is_exit(const char *text, size_t len);

#endif
