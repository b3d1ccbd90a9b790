# SPDX-License-Identifier: MIT
# The jail's syscall filter and Landlock wall (lib/jail/seccomp.c, lib/jail/landlock.c): unit
# tests in forked children, and the syscall-level attacks and normal workloads run inside the
# jail through the CLI (integration.jail_syscalls) and behind the two filters alone
# (integration.filters_exec, through the eb_filter_exec helper).
eb_unit_test(seccomp)
eb_unit_test(landlock)

add_executable(eb_filter_exec helpers/filter_exec.c)
target_include_directories(eb_filter_exec PRIVATE ${PROJECT_SOURCE_DIR}/lib)
target_link_libraries(eb_filter_exec PRIVATE execbox_internal)

eb_integration_test(jail_syscalls)
add_test(NAME integration.filters_exec
         COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/jail_syscalls.py --runner filters)
set_tests_properties(integration.filters_exec PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EB_FILTER_EXEC=$<TARGET_FILE:eb_filter_exec>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR}")

# The library's filter is the one eb_seccomp_gen compiled at build time: the test compares it
# with a fresh libseccomp compile of the same rules.
target_link_libraries(test_seccomp PRIVATE eb_seccomp_compiler)
