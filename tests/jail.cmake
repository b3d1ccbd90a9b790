# SPDX-License-Identifier: MIT
# The jail backend: cgroup v1/v2 file handling against a fake tree (unit), attacks against
# every wall and normal work through the CLI (integration, real kernel).
eb_unit_test(jail_cgroup)
eb_unit_test(jail_threads)
eb_unit_test(jail_netns)
eb_unit_test(jail_mntns)
# It counts, sweeps and removes the host's pinned mount namespaces (/run/execbox/mntns), which
# every root run of any other test joins or makes: alone, or the counts race with them.
set_tests_properties(unit.jail_mntns PROPERTIES RUN_SERIAL TRUE)
eb_unit_test(jail_cache)
eb_unit_test(jail_reap)
eb_unit_test(jail_uidpool)
eb_integration_test(jail_walls)
eb_integration_test(jail_work)
eb_integration_test(jail_unprivileged)
eb_integration_test(jail_coldstart)
eb_integration_test(jail_workspace)
eb_integration_test(jail_check)
# The memory cap covers the run's files in its tmpfs: cold, warm and session cell (bombs bounded).
eb_integration_test(jail_memcap)

# Every jail attack and workload again, each run in a sandbox started ahead of time (the warm
# pool's path, `run --warm`): nothing may differ but the time.
foreach(t jail_walls jail_syscalls jail_work)
  add_test(NAME integration.${t}_warm COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/${t}.py)
  set_tests_properties(integration.${t}_warm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR};EXECBOX_TEST_WARM=1")
endforeach()
# And once more with every Python run a session can take run as a session cell (`run --rich`:
# a session of one cell, the state a fork of the template): the walls hold inside a cell too.
foreach(t jail_walls jail_syscalls jail_work)
  add_test(NAME integration.${t}_session COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/${t}.py)
  set_tests_properties(integration.${t}_session PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR};EXECBOX_TEST_SESSION=1")
endforeach()
# The warm and session walls once more on the fallbacks the jail takes on older kernels
# (EXECBOX_JAIL_COMPAT; docs/hosts.md), forced on this newer one: /code's read-only view cloned
# once attached (before Linux 6.15). The VM lane runs them on those kernels themselves.
foreach(t warm session)
  string(TOUPPER ${t} T)
  add_test(NAME integration.jail_walls_${t}_compat COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/jail_walls.py)
  set_tests_properties(integration.jail_walls_${t}_compat PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR};EXECBOX_TEST_${T}=1;EXECBOX_JAIL_COMPAT=detached-clone")
endforeach()
# The walls suites force a re-stage of the shared /etc stage (unlinking its marker) and check
# when the stage's sweep runs; jail_workspace makes sweeps due (removing their stamps): never at
# the same time as each other.
set_tests_properties(integration.jail_walls integration.jail_walls_warm
                     integration.jail_walls_session integration.jail_walls_warm_compat
                     integration.jail_walls_session_compat integration.jail_workspace
                     PROPERTIES RESOURCE_LOCK execbox_etc_stage)

# Templates: warm runs forked from one interpreter (isolation between live forks, uniqueness,
# generations, failures), through `execbox serve --pool` on loopback.
eb_integration_test(templates)
set_tests_properties(integration.templates PROPERTIES TIMEOUT 600)

# An LD_PRELOAD shim that makes execbox's cgroup mkdirs fail on demand (integration.templates:
# a cgroup that cannot be made still gives a structured result and leaves nothing behind).
add_library(eb_fail_cgroup MODULE helpers/fail_cgroup.c)
target_link_libraries(eb_fail_cgroup PRIVATE ${CMAKE_DL_LIBS})
# Preloaded into every build's execbox (the sanitizers' too): it carries no sanitizer itself.
target_compile_options(eb_fail_cgroup PRIVATE -fno-sanitize=all)
target_link_options(eb_fail_cgroup PRIVATE -fno-sanitize=all)
set_tests_properties(integration.templates PROPERTIES
  ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR};EB_FAIL_CGROUP=$<TARGET_FILE:eb_fail_cgroup>")
eb_integration_test(jail_uids)
