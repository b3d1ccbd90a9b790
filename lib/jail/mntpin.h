/* SPDX-License-Identifier: MIT */
/* mntpin.h - the prepared mount namespace (mounts.h) pinned on the host, so that every execbox
 * process, a one-shot `execbox run` included, copies one small namespace for its sandbox instead
 * of the host's whole mount table (CLONE_NEWNS copies every mount, ~2.4 us each: milliseconds on
 * a node with thousands), from its first run on.
 *
 * What it leaves on the host, by design (docs/jail.md, "Prepared mount namespace"): a tmpfs of
 * ours at dir (/run/execbox/mntns, mode 0700, private: nothing propagates in or out), and in it
 * at most EB_MNTNS_PINS_MAX bind mounts of nsfs files, "<key>.<made>": key a hash of the plans,
 * the root's mount point and our build id; made its CLOCK_BOOTTIME in milliseconds. A pin
 * older than max_age is not used: the next run that needs one makes a new one and detaches the
 * old (runs that joined it keep their own copy), and every sweep detaches stale ones. Root only
 * (making a namespace file outlive its processes needs CAP_SYS_ADMIN over the host's). */
#ifndef EB_JAIL_MNTPIN_H
#define EB_JAIL_MNTPIN_H

#include <stddef.h>

#include "execbox/execbox.h"
#include "jail/mounts.h"

#define EB_MNTNS_PINS_MAX 4
/* Root's dir of the pins. */
#define EB_MNTNS_PIN_DIR "/run/execbox/mntns"

/* An fd (O_CLOEXEC) of the pinned namespace for these plans, in *ret_fd: an existing pin when
 * one of the key is valid (younger than max_age, an nsfs file of a mount namespace in our
 * tmpfs), else a namespace prepared now (eb_mount_ns_prepare) and pinned. When the pin cannot
 * be made (no /run/execbox, a mount refused), the prepared fd is still returned, unpinned, and
 * *ret_pinned says so. 0, or -errno with err set when no namespace could be prepared. */
int eb_mntns_pin_open(const char *dir, const char *root_dir,
                      const struct eb_mount_plan *const *plans, size_t nplans, double max_age,
                      int *ret_fd, bool *ret_pinned, struct execbox_error *err);

/* Detaches and removes every pin older than max_age, and every entry that is not a pin (a
 * mount point left by a process killed while pinning). Never blocks: skipped while another
 * process holds the lock. */
void eb_mntns_pin_sweep(const char *dir, double max_age);

/* Test and teardown: detaches every pin and the tmpfs. 0 or -errno. */
int eb_mntns_pin_remove_all(const char *dir);

#endif
