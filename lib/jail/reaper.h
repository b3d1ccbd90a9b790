/* SPDX-License-Identifier: MIT */
/* reaper.h - what a run leaves exiting after its result is out: the pidfds of inits still
 * exiting (reaped later, one list for the process), and the cgroups of template runs whose
 * processes may still be exiting (removed by one thread of the process, the grave). */
#ifndef EB_JAIL_REAPER_H
#define EB_JAIL_REAPER_H

#include <stdbool.h>

#include "jail/cgroup.h"

/* The list of exiting inits holds at most this many; a run past it waits for the oldest. */
#define EB_EXITING_MAX 64

/* Reaps the inits of the list that have exited, without blocking; with block_oldest, waits for
 * the first of the list. */
void eb_reap_exiting(bool block_oldest);

/* Takes *pidfd (an init that left its run's cgroup and is exiting) into the list and sets it to
 * -1; when the list stays full, waits for that init's exit itself. Accepts -1. */
void eb_reap_defer(int *pidfd);

/* Hands cg and the pidfd of its init to the grave thread, which removes the cgroup once the init
 * has exited. true: both taken (cg emptied, *pidfd -1); false: the thread cannot take them, the
 * caller removes them itself. */
bool eb_grave_add(struct eb_cgroup *cg, int *pidfd);

/* Waits until every cgroup handed to the grave thread is removed. */
void eb_grave_flush(void);

#endif
