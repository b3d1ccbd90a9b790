# SPDX-License-Identifier: MIT
# The jail backend: cgroup v1/v2 file handling against a fake tree (unit), attacks against
# every wall and normal work through the CLI (integration, real kernel).
eb_unit_test(jail_cgroup)
eb_unit_test(jail_threads)
eb_integration_test(jail_walls)
eb_integration_test(jail_work)
eb_integration_test(jail_unprivileged)
