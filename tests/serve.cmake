# SPDX-License-Identifier: MIT
# `execbox serve`: real HTTP over loopback, and a libFuzzer target for its request parser.
eb_integration_test(serve)
set_tests_properties(integration.serve PROPERTIES TIMEOUT 600)
