# SPDX-License-Identifier: MIT
# The jail's syscall filter and Landlock wall (lib/jail/seccomp.c, lib/jail/landlock.c), unit
# tests in forked children; and the syscall-level attacks run through the CLI inside the jail.
eb_unit_test(seccomp)
eb_unit_test(landlock)
eb_integration_test(jail_syscalls)
