# SPDX-License-Identifier: MIT
# The remote backend: another `execbox serve` over HTTP with libcurl, loaded with dlopen on
# first use (backends/curl_load.c, shared with the docker backend): only its headers are
# needed to build, and libexecbox does not link it.
pkg_check_modules(CURL REQUIRED libcurl)
if(NOT "backends/curl_load.c" IN_LIST EB_LIB_SOURCES)
  list(APPEND EB_LIB_SOURCES backends/curl_load.c)
  list(APPEND EB_LIB_LIBS ${CMAKE_DL_LIBS})
endif()
list(APPEND EB_LIB_SOURCES backends/remote.c)
list(APPEND EB_LIB_DEFINES HAVE_REMOTE)
include_directories(${CURL_INCLUDE_DIRS})
