# SPDX-License-Identifier: MIT
# The jail backend's internals (lib/jail/). Each part appends its own sources.
list(APPEND EB_LIB_SOURCES jail/seccomp.c jail/landlock.c)
# The jail backend itself: namespaces and ids, mounts, cgroups, and the backend table.
list(APPEND EB_LIB_SOURCES backends/jail.c jail/ns.c jail/mounts.c jail/cgroup.c jail/netns.c jail/prewarm.c)
list(APPEND EB_LIB_DEFINES HAVE_JAIL)
