# SPDX-License-Identifier: MIT
# The jail backend's internals (lib/jail/). Each part appends its own sources.
list(APPEND EB_LIB_SOURCES jail/seccomp.c jail/landlock.c)
