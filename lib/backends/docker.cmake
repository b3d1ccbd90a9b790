# SPDX-License-Identifier: MIT
# The docker backend (docker.c: the backend's table and the run; docker_api.c: the Engine API
# client; docker_logs.c: the log demultiplexer): Docker Engine API (or podman's compatible
# service) over libcurl, which is loaded with dlopen when the backend is first used (backends/curl_load.c): only its
# headers are needed to build, and libexecbox does not link it.
pkg_check_modules(CURL REQUIRED libcurl)
list(APPEND EB_LIB_SOURCES backends/docker.c backends/docker_api.c backends/docker_logs.c
  backends/curl_load.c)
list(APPEND EB_LIB_DEFINES HAVE_DOCKER)
include_directories(${CURL_INCLUDE_DIRS})
list(APPEND EB_LIB_LIBS ${CMAKE_DL_LIBS})
# The bootstrap, the container's pid 1, is a Python file of its own (lib/lang/python_docker.py),
# embedded by backends/docker_boot.c.
list(APPEND EB_LIB_SOURCES backends/docker_boot.c)
set_source_files_properties(backends/docker_boot.c PROPERTIES
  COMPILE_DEFINITIONS "EB_LANG_DIR=\"${CMAKE_CURRENT_SOURCE_DIR}/lang\""
  OBJECT_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/lang/python_docker.py")
