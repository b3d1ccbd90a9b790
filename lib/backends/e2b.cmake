# SPDX-License-Identifier: MIT
# The e2b backend (e2b.c: the backend's table and the run; e2b_api.c: the client of E2B's API
# and envd; e2b_exec.c: the execute stream): E2B's REST API and code-interpreter stream over
# libcurl, loaded with dlopen on first use (backends/curl_load.c, shared with the docker
# backend): only libcurl's headers are needed to build.
pkg_check_modules(CURL REQUIRED libcurl)
list(APPEND EB_LIB_SOURCES backends/e2b.c backends/e2b_api.c backends/e2b_exec.c)
if(NOT "backends/curl_load.c" IN_LIST EB_LIB_SOURCES)
  list(APPEND EB_LIB_SOURCES backends/curl_load.c)
  list(APPEND EB_LIB_LIBS ${CMAKE_DL_LIBS})
endif()
list(APPEND EB_LIB_DEFINES HAVE_E2B)
include_directories(${CURL_INCLUDE_DIRS})
