/* SPDX-License-Identifier: MIT */
/* sdscope.h - a delegated systemd scope for this process, asked of systemd over D-Bus (sd-bus of
 * libsystemd, loaded on first use), for a cgroup v2 host where the cgroup execbox starts in is
 * systemd's and not execbox's to divide (a login session's scope, a service without
 * Delegate=yes). systemd moves the process into a new transient scope with Delegate=yes, whose
 * cgroup is then execbox's own, as crun and podman do with systemd's cgroup driver. */
#ifndef EB_JAIL_SDSCOPE_H
#define EB_JAIL_SDSCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include "execbox/execbox.h"

/* Whether systemd manages this host (/run/systemd/system exists, as sd_booted() says). */
bool eb_systemd_running(void);

/* Asks systemd (the system instance as root, else the user's) for a transient scope named
 * "execbox-<pid>.scope" with Delegate=yes holding this process, in slice (e.g. "user-0.slice";
 * NULL or "" for systemd's default), and waits (at most 5 s) until the kernel shows this process
 * in it. Done once per process: a second call reports the first one's outcome. On success the
 * unit's name is in unit. 0 or -errno with err set (libsystemd missing, no bus, systemd's
 * refusal with its error, the move not seen in time). */
int eb_systemd_scope(const char *slice, char *unit, size_t unit_len, struct execbox_error *err);

#endif
