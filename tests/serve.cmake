# SPDX-License-Identifier: MIT
# `execbox serve`: real HTTP over loopback, and a libFuzzer target for its request parser.
eb_integration_test(serve)
set_tests_properties(integration.serve PROPERTIES TIMEOUT 600)

# The fuzz target is built with clang's libFuzzer inside the test (the project itself builds
# with the default compiler), and runs for a short while from tests/fuzz/corpus/serve_request.
add_test(NAME fuzz.serve_request
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_serve_request.sh
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(fuzz.serve_request PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "FUZZ_SECONDS=20")

# Library parsers under libFuzzer the same way: the traceback parser (any guest stderr) and the
# policy JSON (a --policy file, a request's limits), and the TLS server-name parser (a tunnel's hello).
foreach(t traceback policy tls_sni)
  add_test(NAME fuzz.${t}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_lib_target.sh
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${t})
  set_tests_properties(fuzz.${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "FUZZ_SECONDS=20")
endforeach()

# The front door's check of each request head's framing (src/httpd/front.c) the same way.
add_test(NAME fuzz.front_head
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_front_head.sh
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(fuzz.front_head PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "FUZZ_SECONDS=20")

# Sessions over HTTP (docs/sessions.md): real serve on loopback and the real jail.
eb_integration_test(sessions)
set_tests_properties(integration.sessions PROPERTIES TIMEOUT 600)

# One-shot runs give values and plots back (issue 24 item 4): `run --rich` prints the value and
# saves figures and image files; files' origin; serve and mcp one-shots inline a figure.
eb_integration_test(rich_oneshot)

# Three attacks on serve, run for real (tests/integration/serve_hardening.py): a steady reader
# of an endless stream, twenty slow downloads of a 64 MiB file (serve's memory stays bounded),
# and DNS rebinding against a server without a token (421 on every route).
eb_integration_test(serve_hardening)
set_tests_properties(integration.serve_hardening PROPERTIES TIMEOUT 300)
# One number format on every surface (tests/integration/number_format.py): run --json, MCP, the agent,
# serve's JSON and SSE.
eb_integration_test(number_format)

# docs/openapi.yaml against a real serve: every route documented, every answer a listed one.
eb_integration_test(openapi_routes)

# The tenants file (`serve --tokens FILE`): parsing, token hashes, ceilings, quotas, reload.
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
eb_unit_test(tenants ${PROJECT_SOURCE_DIR}/src/httpd/tenants.c
             ${PROJECT_SOURCE_DIR}/src/common/io.c)
target_include_directories(test_tenants PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(test_tenants PRIVATE PkgConfig::GNUTLS)
eb_integration_test(tenants)
