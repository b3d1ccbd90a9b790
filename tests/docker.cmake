# SPDX-License-Identifier: MIT
# The docker backend's tests: end to end against podman's Docker-compatible service, started
# on a private socket by tests/docker/setup.sh (the first run on a machine also builds the test
# image with debootstrap, about a minute; later runs reuse it from /var/cache/execbox-test).
get_target_property(_eb_defs execbox_internal INTERFACE_COMPILE_DEFINITIONS)
if(";${_eb_defs};" MATCHES ";HAVE_DOCKER;")
  eb_unit_test(docker)
  # One executor, several threads, a cancel from another thread (run by docker.py).
  add_executable(docker_threads docker/threads.c)
  target_link_libraries(docker_threads PRIVATE execbox_internal)
  eb_integration_test(docker)
  set_tests_properties(integration.docker PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
endif()
