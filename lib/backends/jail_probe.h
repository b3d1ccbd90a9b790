/* SPDX-License-Identifier: MIT */
/* jail_probe.h - the jail backend's walls asked of the kernel (`execbox check`, and an executor's
 * open), apart from the backend table (jail.c). */
#ifndef EB_BACKENDS_JAIL_PROBE_H
#define EB_BACKENDS_JAIL_PROBE_H

#include "execbox/execbox.h"
#include "jail/cgroup.h"

/* Where runs' cgroups go (cgroup.h), in *r. On a v2 host whose cgroup here is systemd's (a login
 * session, a service without Delegate=yes), systemd is asked for a delegated scope of our own
 * first (sdscope.h): it moves this process, once, and the detection is made again there. */
void eb_jail_probe_cgroup(struct eb_cgroup_root *r);

/* The backend's probe: every wall asked of the kernel now, into c; the report is kept for the
 * next runs (cache.h). 0, or -ENOTSUP when the jail is not usable here. */
int eb_jail_probe(const struct execbox_executor_options *o, struct execbox_check *c);

/* The backend's probe_open: the cached report when it is ours and young enough, else
 * eb_jail_probe. */
int eb_jail_probe_open(const struct execbox_executor_options *o, struct execbox_check *c);

/* The backend's check_network: makes what a run with network "allow" makes, and takes it down
 * again, reporting into c. */
void eb_jail_check_network(struct execbox_check *c);

#endif
