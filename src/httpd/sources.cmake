# SPDX-License-Identifier: MIT
# `execbox serve`: the HTTP service on libmicrohttpd (included from src/CMakeLists.txt).
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
list(APPEND EB_CLI_SOURCES httpd/serve.c httpd/server.c httpd/request.c httpd/metrics.c)
list(APPEND EB_CLI_DEFINES HAVE_SERVE)
list(APPEND EB_CLI_LIBS PkgConfig::MHD)
