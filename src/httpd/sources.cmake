# SPDX-License-Identifier: MIT
# `execbox serve`: the HTTP service on libmicrohttpd. A program of its own (execbox-serve) that
# `execbox serve` executes, so that `execbox run` never loads libmicrohttpd and its TLS stack.
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
# gnutls (libmicrohttpd's own TLS library): SHA-256 of the tenants' tokens.
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
eb_program(execbox_serve execbox-serve
  SOURCES common/jsonrpc.c common/runner.c common/sessions.c httpd/main.c httpd/serve.c httpd/server.c httpd/route.c httpd/job.c httpd/v1.c
  httpd/sse.c httpd/respond.c httpd/watchdog.c httpd/log.c httpd/front.c httpd/e2b.c httpd/e2b_api.c httpd/e2b_lines.c httpd/e2b_envd.c httpd/e2b_envd_run.c httpd/request.c
  httpd/metrics.c httpd/tenants.c
  LIBS PkgConfig::MHD PkgConfig::GNUTLS)
list(APPEND EB_CLI_DEFINES HAVE_SERVE)
