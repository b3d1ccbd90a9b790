# SPDX-License-Identifier: MIT
# network "allow": the allow-list proxy against loopback servers, attacks and workloads in real
# jails (root only; skips otherwise).
eb_integration_test(network)
set_tests_properties(integration.network PROPERTIES TIMEOUT 300)
