# SPDX-License-Identifier: MIT
# network "allow": the allow-list proxy against loopback servers, attacks and workloads in real
# jails (root only; skips otherwise).
eb_integration_test(network)
set_tests_properties(integration.network PROPERTIES TIMEOUT 300)
# The same suite with every run forked from a template (`run --warm`): the proxy is made in each
# fork's own network namespace.
add_test(NAME integration.network_warm COMMAND ${PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/integration/network.py)
set_tests_properties(integration.network_warm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};EXECBOX_BUILD=${PROJECT_BINARY_DIR};EXECBOX_TEST_WARM=1")
