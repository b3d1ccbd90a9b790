/* SPDX-License-Identifier: MIT */
/* prewarm.h - work every run would repeat, done once when /etc is staged: matplotlib's font
 * list (built on the first `import matplotlib` in an empty MPLCONFIGDIR, ~70 ms here). Each run
 * gets its own writable copy in /tmp/.matplotlib, so nothing is shared between runs. */
#ifndef EB_JAIL_PREWARM_H
#define EB_JAIL_PREWARM_H

#include <stddef.h>

/* Runs the host's python3 once (scrubbed environment, 10 s cap, output discarded) to build
 * matplotlib's font list in stage_dir/mpl. Best effort: 0, or -errno when it could not. */
int eb_prewarm_stage(const char *stage_dir);

/* The staged font list: its file name ("fontlist-v330.json") and contents (malloc'd, at most
 * 1 MiB). -ENOENT when there is none. */
int eb_prewarm_load(const char *stage_dir, char name[64], char **ret_data, size_t *ret_len);

#endif
