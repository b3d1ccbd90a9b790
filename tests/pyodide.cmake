# SPDX-License-Identifier: MIT
# The pyodide backend's tests: the contract's cases and escapes through Pyodide's JS bridge,
# inside the jail. tests/pyodide/run.sh installs the pinned Pyodide into the build tree first.
get_target_property(_eb_defs execbox_internal INTERFACE_COMPILE_DEFINITIONS)
if(";${_eb_defs};" MATCHES ";HAVE_PYODIDE;")
  add_test(NAME integration.pyodide COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pyodide/run.sh)
  set_tests_properties(integration.pyodide PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};PYODIDE_TEST_DIR=${CMAKE_CURRENT_BINARY_DIR}/pyodide-node")
  # `cmake --install` of this build tree into a temporary prefix and a DESTDIR: the backend's
  # setup runs on the installed directory and the installed `execbox` runs Pyodide.
  eb_integration_test(pyodide_install)
  set_tests_properties(integration.pyodide_install PROPERTIES TIMEOUT 900)
endif()
