/* SPDX-License-Identifier: MIT */
/* cgroup_int.h - the cgroupfs file helpers cgroup.c and cgroup_detect.c share. */
#ifndef EB_JAIL_CGROUP_INT_H
#define EB_JAIL_CGROUP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes val to dir/file (created where missing: a no-op on cgroupfs, a fake tree's file in the
 * unit tests). 0 or -errno. */
int eb_cg_write(const char *dir, const char *file, const char *val);
/* Reads dir/file into buf (NUL-terminated, at most len - 1 bytes). 0 or -errno. */
int eb_cg_read(const char *dir, const char *file, char *buf, size_t len);
/* "key value" lines (memory.events, memory.oom_control, cpu.stat): the value of key. */
bool eb_cg_keyed(const char *text, const char *key, uint64_t *v);

#endif
