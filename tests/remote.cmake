# SPDX-License-Identifier: MIT
# The remote backend: `execbox serve` instances and a misbehaving fake one on loopback.
eb_integration_test(remote)
set_tests_properties(integration.remote PROPERTIES TIMEOUT 300)
# Three instances behind HAProxy with the shipped deploy/haproxy/haproxy.cfg; one is drained
# and restarted under load.
eb_integration_test(scaleout)
set_tests_properties(integration.scaleout PROPERTIES TIMEOUT 600)
