# SPDX-License-Identifier: MIT
# Sessions in the library (lib/core/session.c), driven through a small client of the public API.
pkg_check_modules(JANSSON_T REQUIRED IMPORTED_TARGET jansson)
add_executable(session_driver helpers/session_driver.c)
target_include_directories(session_driver PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(session_driver PRIVATE execbox PkgConfig::JANSSON_T)
eb_integration_test(sessions_lib)
# A cell's attacks on the supervisor itself: a stale "started" aimed at a host pid (SCM_PIDFD and
# the verified-pid fallback), an EB_MSG_DONE record with a flood (also from a template run).
eb_integration_test(sessions_attacks)
