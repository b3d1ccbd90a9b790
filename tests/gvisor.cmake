# SPDX-License-Identifier: MIT
# The gvisor backend's tests, with Debian's runsc (scripts/deps/gvisor.apt); they skip (77)
# where runsc cannot run.
get_target_property(_eb_defs execbox_internal INTERFACE_COMPILE_DEFINITIONS)
if(";${_eb_defs};" MATCHES ";HAVE_GVISOR;")
  eb_integration_test(gvisor)
endif()
