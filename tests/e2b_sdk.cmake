# SPDX-License-Identifier: MIT
# `execbox serve`'s E2B routes driven by E2B's official JavaScript SDK (@e2b/code-interpreter,
# pinned by tests/e2b_sdk/package-lock.json). run.sh installs it with npm ci into the build tree
# once and skips (77) only without node/npm; sdk.mjs skips when the sandbox cannot run here.
add_test(NAME serve.e2b_sdk COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/e2b_sdk/run.sh)
set_tests_properties(serve.e2b_sdk PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "EXECBOX=$<TARGET_FILE:execbox_cli>;EXECBOX_SOURCE=${PROJECT_SOURCE_DIR};E2B_NODE_DIR=${CMAKE_CURRENT_BINARY_DIR}/e2b-node")
