# SPDX-License-Identifier: MIT
# The e2b backend's tests: end to end against the scripted E2B of tests/fakes/fake_e2b.py on
# loopback (the real service is not reachable from here).
get_target_property(_eb_defs execbox_internal INTERFACE_COMPILE_DEFINITIONS)
if(";${_eb_defs};" MATCHES ";HAVE_E2B;")
  eb_integration_test(e2b)
  set_tests_properties(integration.e2b PROPERTIES TIMEOUT 180)
endif()
