#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the request-parser fuzz target with clang's libFuzzer (+ASan/UBSan) and runs it for a
# short while from the seed corpus. Usage: run_serve_request.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
out=$2/fuzz
seconds=${FUZZ_SECONDS:-20}
if ! command -v clang >/dev/null; then
    echo "skip: clang is not installed (scripts/deps/serve.apt lists it)"
    exit 77
fi
mkdir -p "$out/corpus-serve_request"
# The parser and the few library files it calls, all instrumented; no HTTP, no sandbox.
clang -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -I"$src/include" -I"$src/lib" -I"$src/src" \
    "$src/tests/fuzz/fuzz_serve_request.c" "$src/src/httpd/request.c" "$src/src/common/jsonrpc.c" \
    "$src/lib/model/policy.c" "$src/lib/base/text.c" "$src/lib/base/error.c" "$src/lib/model/lang.c" "$src/lib/base/util.c" \
    "$src/lib/model/hostrule.c" "$src/lib/model/lang_blobs.c" "$src/lib/model/traceback.c" "$src/lib/model/result.c" \
    "$src/lib/ws/workspace.c" -DEB_LANG_DIR="\"$src/lib/lang\"" \
    $(pkg-config --cflags --libs jansson) -lm -o "$out/fuzz_serve_request"
# New inputs go to the build tree; the checked-in seeds are read only.
"$out/fuzz_serve_request" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    "$out/corpus-serve_request" "$src/tests/fuzz/corpus/serve_request" 2>&1 | tail -25
exit "${PIPESTATUS[0]}"
