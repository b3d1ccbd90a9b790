# SPDX-License-Identifier: MIT
# Tests of `execbox mcp`: the official MCP TypeScript SDK clients from the npm registry (1.x,
# and the 2.x client package) over stdio, raw malformed frames from a plain child process, and
# a libFuzzer run over the frame parser; stateful.mjs covers --stateful (sessions, the jail).
# tests/mcp/run.sh installs the pinned packages (npm ci, committed lock file) into the build
# tree once and skips (77) only without node/npm.
set(EB_MCP_ENV
  "EXECBOX=$<TARGET_FILE:execbox_cli>"
  "EXECBOX_SOURCE=${PROJECT_SOURCE_DIR}"
  "MCP_NODE_DIR=${CMAKE_CURRENT_BINARY_DIR}/mcp-node")
# The framing and classifier of src/common/jsonrpc.c, as a cmocka unit test.
add_executable(test_jsonrpc unit/test_jsonrpc.c ${PROJECT_SOURCE_DIR}/src/common/jsonrpc.c)
target_include_directories(test_jsonrpc PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_jsonrpc PRIVATE PkgConfig::JANSSON PkgConfig::CMOCKA)
add_test(NAME unit.jsonrpc COMMAND test_jsonrpc)
set_tests_properties(unit.jsonrpc PROPERTIES TIMEOUT 60)

foreach(t sdk1 sdk2 raw stateful)
  add_test(NAME mcp.${t} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mcp/run.sh ${t}.mjs)
  set_tests_properties(mcp.${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "${EB_MCP_ENV}")
endforeach()
# The same SDK suite with every call served from the warm pool (numpy preloaded): nothing an
# MCP client sees may differ.
add_test(NAME mcp.sdk1_pool COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mcp/run.sh sdk1.mjs)
set_tests_properties(mcp.sdk1_pool PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "${EB_MCP_ENV};EXECBOX_MCP_EXTRA=--pool 2 --preload numpy")

# The frame parser under libFuzzer. It needs clang (with compiler-rt's libFuzzer); the project
# itself may be built with gcc, so the target is one clang command of its own.
find_program(EB_CLANG NAMES clang clang-14)
if(EB_CLANG AND NOT DEFINED EB_CLANG_LIBFUZZER)
  # clang without compiler-rt's libFuzzer (libclang-rt-14-dev) must not break the build.
  set(_probe ${CMAKE_CURRENT_BINARY_DIR}/libfuzzer-probe)
  file(WRITE ${_probe}.c "#include <stddef.h>\n#include <stdint.h>\n"
       "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${EB_CLANG} -fsanitize=fuzzer,address ${_probe}.c -o ${_probe}
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(EB_CLANG_LIBFUZZER ON CACHE INTERNAL "clang can link libFuzzer")
  else()
    set(EB_CLANG_LIBFUZZER OFF CACHE INTERNAL "clang can link libFuzzer")
  endif()
endif()
if(EB_CLANG AND EB_CLANG_LIBFUZZER)
  set(EB_FUZZ_MCP ${CMAKE_CURRENT_BINARY_DIR}/fuzz_mcp_frame)
  add_custom_command(OUTPUT ${EB_FUZZ_MCP}
    COMMAND ${EB_CLANG} -g -O1 -std=gnu11 -D_GNU_SOURCE
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -I${PROJECT_SOURCE_DIR}/src -I${PROJECT_SOURCE_DIR}/include ${JANSSON_CFLAGS}
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_mcp_frame.c ${PROJECT_SOURCE_DIR}/src/common/jsonrpc.c
            ${JANSSON_LDFLAGS} -o ${EB_FUZZ_MCP}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_mcp_frame.c
            ${PROJECT_SOURCE_DIR}/src/common/jsonrpc.c ${PROJECT_SOURCE_DIR}/src/common/jsonrpc.h
            ${PROJECT_SOURCE_DIR}/include/execbox/execbox.h
    COMMENT "Building the libFuzzer target fuzz_mcp_frame with clang"
    VERBATIM)
  add_custom_target(eb_fuzz_mcp_frame ALL DEPENDS ${EB_FUZZ_MCP})
  # A brief run: the committed seeds, then new inputs (kept in the build tree) for 20 s.
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/mcp_frame
                      ${CMAKE_CURRENT_BINARY_DIR}/fuzz-artifacts)
  add_test(NAME fuzz.mcp_frame
    COMMAND ${EB_FUZZ_MCP} -max_total_time=20 -max_len=8192 -timeout=10 -rss_limit_mb=1024
            -print_final_stats=1
            -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz-artifacts/
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus/mcp_frame
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/mcp_frame)
  set_tests_properties(fuzz.mcp_frame PROPERTIES TIMEOUT 120
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
else()
  message(STATUS "clang with libFuzzer not found: the MCP frame fuzzer is not built "
                 "(scripts/deps/mcp.apt lists clang and libclang-rt-14-dev)")
endif()
