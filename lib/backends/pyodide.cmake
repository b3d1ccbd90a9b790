# SPDX-License-Identifier: MIT
# The pyodide backend: Pyodide (CPython in WebAssembly) under Node, always inside the jail, so
# it is built only with the jail. Pyodide itself comes from the npm registry at install time
# (backends/pyodide/install.sh, `npm ci` with the committed lock file), not at build time.
if("HAVE_JAIL" IN_LIST EB_LIB_DEFINES)
  list(APPEND EB_LIB_SOURCES backends/pyodide.c)
  list(APPEND EB_LIB_DEFINES HAVE_PYODIDE)
  set(EB_PYODIDE_INSTALL_DIR ${CMAKE_INSTALL_FULL_DATADIR}/execbox/pyodide)
  set_source_files_properties(backends/pyodide.c PROPERTIES
    COMPILE_DEFINITIONS "EB_PYODIDE_DIR=\"${EB_PYODIDE_INSTALL_DIR}\"")
  install(FILES backends/pyodide/runner.mjs backends/pyodide/main.py
                backends/pyodide/package.json backends/pyodide/package-lock.json
          DESTINATION ${EB_PYODIDE_INSTALL_DIR})
  install(PROGRAMS backends/pyodide/install.sh DESTINATION ${EB_PYODIDE_INSTALL_DIR})
  # Fetches the pinned Pyodide into the installed directory; without node and npm the backend
  # stays unusable and `execbox check -b pyodide` says why.
  install(CODE "execute_process(COMMAND \"${EB_PYODIDE_INSTALL_DIR}/install.sh\" \"${EB_PYODIDE_INSTALL_DIR}\" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(WARNING \"pyodide: install.sh failed (${_rc}); the pyodide backend is not usable until it runs\")
endif()")
endif()
