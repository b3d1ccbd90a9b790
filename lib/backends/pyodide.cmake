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
  # Relative, so that a prefix given at install time (`cmake --install --prefix`) applies.
  set(EB_PYODIDE_DEST ${CMAKE_INSTALL_DATADIR}/execbox/pyodide)
  install(FILES backends/pyodide/runner.mjs backends/pyodide/main.py
                backends/pyodide/package.json backends/pyodide/package-lock.json
          DESTINATION ${EB_PYODIDE_DEST})
  install(PROGRAMS backends/pyodide/install.sh DESTINATION ${EB_PYODIDE_DEST})
  # Fetches the pinned Pyodide into the installed directory (under DESTDIR when staging), with
  # the installed install.sh; without node and npm the backend stays unusable and
  # `execbox check -b pyodide` says why. A failure warns with install.sh's status and messages.
  set(_eb_pyodide_setup [=[
set(_dir "@EB_PYODIDE_DEST@")
if(NOT IS_ABSOLUTE "${_dir}")
  set(_dir "${CMAKE_INSTALL_PREFIX}/${_dir}")
endif()
set(_dir "$ENV{DESTDIR}${_dir}")
message(STATUS "pyodide: setting up ${_dir} (install.sh: npm ci of the pinned Pyodide)")
execute_process(COMMAND "${_dir}/install.sh" "${_dir}" RESULT_VARIABLE _rc ERROR_VARIABLE _why)
string(STRIP "${_why}" _why)
if(_rc EQUAL 0)
  if(_why)
    message(STATUS "${_why}")
  endif()
else()
  if(_rc MATCHES "^[0-9]+$")
    set(_rc "exit status ${_rc}")
  endif()
  message(WARNING "pyodide: install.sh failed (${_rc}): ${_why}\nThe pyodide backend is not "
                  "usable until it runs: ${_dir}/install.sh ${_dir}")
endif()
]=])
  string(CONFIGURE "${_eb_pyodide_setup}" _eb_pyodide_setup @ONLY)
  install(CODE "${_eb_pyodide_setup}")
endif()
