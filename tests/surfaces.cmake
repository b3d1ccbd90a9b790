# SPDX-License-Identifier: MIT
# What the surfaces (serve, mcp) share in src/common/, as cmocka unit tests.
add_executable(test_runner unit/test_runner.c ${PROJECT_SOURCE_DIR}/src/common/runner.c
                           ${PROJECT_SOURCE_DIR}/src/common/io.c)
target_include_directories(test_runner PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_runner PRIVATE execbox Threads::Threads PkgConfig::CMOCKA)
add_test(NAME unit.runner COMMAND test_runner)
set_tests_properties(unit.runner PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

add_executable(test_sessions unit/test_sessions.c ${PROJECT_SOURCE_DIR}/src/common/sessions.c
               ${PROJECT_SOURCE_DIR}/src/common/io.c)
target_include_directories(test_sessions PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_sessions PRIVATE execbox Threads::Threads m PkgConfig::CMOCKA)
add_test(NAME unit.sessions COMMAND test_sessions)
set_tests_properties(unit.sessions PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# The manual pages the build makes from the programs' --help (scripts/manpages.sh).
eb_integration_test(manpages)
