# SPDX-License-Identifier: MIT
# The remote backend: `execbox serve` instances and a misbehaving fake one on loopback.
eb_integration_test(remote)
set_tests_properties(integration.remote PROPERTIES TIMEOUT 300)
