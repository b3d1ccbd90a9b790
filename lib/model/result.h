/* SPDX-License-Identifier: MIT */
/* result.h - building and serialising result records. */
#ifndef EB_RESULT_H
#define EB_RESULT_H

#include <jansson.h>

#include "execbox/execbox.h"

/* A new zeroed result (cpu_time -1), NULL on ENOMEM. */
struct execbox_result *eb_result_new(const char *backend, const char *language);

/* Marks r as a sandbox failure: exit 1, error SandboxError, the message appended to stderr. */
int eb_result_sandbox_error(struct execbox_result *r, const char *msg);

/* Sets r->error_* (copies); replaces any earlier error. -ENOMEM. */
int eb_result_set_error(struct execbox_result *r, const char *name, const char *value,
                        const char *traceback);

/* The one OOM rule of every backend. A run was OOM-killed when the kernel recorded an OOM kill
 * in its memory cgroup during the run (oom_kills > 0) AND the program itself ended by SIGKILL,
 * and neither our deadline nor a cancel killed it (they use SIGKILL too). An OOM kill of some
 * other process of the run, while the program lived on and exited, is not the program's end:
 * its own status stands. When the rule holds: oom_killed, killed_reason memory, exit 137,
 * signal 9 and a MemoryLimit error naming the limit, files (eb_oom_files_detail) in parentheses
 * after it and detail appended, each when not NULL.
 * Returns 1 when it held, 0 when it did not (r unchanged), -ENOMEM. */
int eb_result_apply_oom(struct execbox_result *r, const struct execbox_policy *p,
                        uint64_t oom_kills, const char *files, const char *detail);

/* Adds a name to r->degraded. */
int eb_result_add_degraded(struct execbox_result *r, const char *wall);

/* For eb_result_apply_oom's files: the memory cap covers the files of the run's in-memory file
 * systems, so when they held any (at least 1 MiB: in_tmp in /tmp and /dev/shm, in_ws in a fresh
 * /workspace, bytes) at the kill, "of which N MiB were files in ..." in buf; NULL otherwise. */
const char *eb_oom_files_detail(char *buf, size_t size, uint64_t in_tmp, uint64_t in_ws);

/* A jansson object of the record. */
json_t *eb_result_to_object(const struct execbox_result *r, unsigned flags);

/* Fills r (fresh from eb_result_new; its backend and language are kept) from a result record
 * as eb_result_to_object writes it, e.g. one another execbox sent. The four core fields must
 * be there with their types; every other field is optional but checked when present. 0,
 * -EBADMSG with a message naming the bad field, or -ENOMEM. On failure r may hold part of the
 * record: free it. */
int eb_result_from_object(const json_t *o, struct execbox_result *r, struct execbox_error *err);

/* Parses Python's last uncaught exception from stderr into r->error_*. No-op when none, or when
 * r already has an error. Only for exit status 1, or SIGINT (an uncaught KeyboardInterrupt). */
int eb_parse_python_error(struct execbox_result *r);

/* Parses node's uncaught exception from stderr into r->error_*: the Error's name ("Uncaught" for
 * a thrown value that is not an Error), its message, and the traceback from the location line
 * to the frames' end. No-op when none, or when r already has an error; only for exit status 1. */
int eb_parse_node_error(struct execbox_result *r);

/* "SIGSEGV (segmentation fault)" in buf, stable across libcs; "signal N" when not a common one.
 * Returns buf. */
const char *eb_signal_describe(int sig, char *buf, size_t size);

/* The error of a run that ended badly without one, when execbox killed nothing: "Signal" with
 * "killed by SIGSEGV (segmentation fault)" when a signal ended it, else "ExitStatus" with "exit
 * status N" for a non-zero exit. No-op when r has an error, or ended with 0. 0 or -ENOMEM. */
int eb_result_default_error(struct execbox_result *r);

/* Appends the rich outputs of a JSON array ([{text, html, png, ..., is_main_result}]) to r,
 * keeping at most EXECBOX_RICH_MAX entries and EXECBOX_RICH_BYTES_MAX bytes (results_truncated
 * beyond, and results_dropped or results_cut counts the entry); every string is made valid
 * UTF-8. -EBADMSG when the array is not of that shape. */
int eb_result_rich_from_array(const json_t *a, struct execbox_result *r, struct execbox_error *err);

/* Frees n rich outputs and the array. */
void eb_rich_free(struct execbox_rich *v, size_t n);

#endif
