# SPDX-License-Identifier: MIT
# The docker backend's tests: end to end against podman's Docker-compatible service, started
# on a private socket by tests/docker/setup.sh (the first run on a machine also builds the test
# image with debootstrap, about a minute; later runs reuse it from /var/cache/execbox-test).
get_target_property(_eb_defs execbox_internal INTERFACE_COMPILE_DEFINITIONS)
if(";${_eb_defs};" MATCHES ";HAVE_DOCKER;")
  eb_unit_test(docker)
  # The engine's log stream parser under libFuzzer (tests/fuzz/fuzz_docker_logs.c).
  add_test(NAME fuzz.docker_logs
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_lib_target.sh
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} docker_logs)
  set_tests_properties(fuzz.docker_logs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "FUZZ_SECONDS=20")
  # One executor, several threads, a cancel from another thread (run by docker.py).
  add_executable(docker_threads docker/threads.c)
  target_link_libraries(docker_threads PRIVATE execbox_internal)
  eb_integration_test(docker)
  set_tests_properties(integration.docker PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
endif()
