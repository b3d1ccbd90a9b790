#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the front door's head-check fuzz target with clang's libFuzzer (+ASan/UBSan) and runs it
# for a short while from the seed corpus. Usage: run_front_head.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
out=$2/fuzz
seconds=${FUZZ_SECONDS:-20}
if ! command -v clang >/dev/null; then
    echo "skip: clang is not installed (scripts/deps/serve.apt lists it)"
    exit 77
fi
mkdir -p "$out/corpus-front_head"
clang -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -I"$src/include" -I"$src/lib" -I"$src/src" \
    "$src/tests/fuzz/fuzz_front_head.c" "$src/src/httpd/front.c" "$src/src/httpd/request.c" \
    "$src/src/common/jsonrpc.c" "$src/lib/model/policy.c" "$src/lib/base/text.c" "$src/lib/base/error.c" \
    "$src/lib/model/lang.c" "$src/lib/base/util.c" "$src/lib/model/hostrule.c" "$src/lib/model/lang_blobs.c" \
    "$src/lib/model/traceback.c" "$src/lib/model/result.c" "$src/lib/ws/workspace.c" \
    -DEB_LANG_DIR="\"$src/lib/lang\"" $(pkg-config --cflags --libs jansson) -lm -lpthread \
    -o "$out/fuzz_front_head"
"$out/fuzz_front_head" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    "$out/corpus-front_head" "$src/tests/fuzz/corpus/front_head" 2>&1 | tail -25
exit "${PIPESTATUS[0]}"
