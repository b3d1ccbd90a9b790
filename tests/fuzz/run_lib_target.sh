#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds a library fuzz target (tests/fuzz/fuzz_NAME.c) with clang's libFuzzer (+ASan/UBSan)
# and runs it from its seeds in tests/fuzz/corpus/NAME. New inputs go to the build tree, or with
# FUZZ_KEEP=1 (long runs outside CI) into tests/fuzz/corpus/NAME itself.
# Usage: run_lib_target.sh SOURCE_DIR BUILD_DIR NAME [SECONDS]
set -euo pipefail
src=$1
out=$2/fuzz
name=$3
seconds=${4:-${FUZZ_SECONDS:-20}}
if ! command -v clang >/dev/null; then
    echo "skip: clang is not installed (scripts/deps/serve.apt lists it)"
    exit 77
fi
mkdir -p "$out/corpus-$name" "$src/tests/fuzz/corpus/$name"
first=$out/corpus-$name
[ "${FUZZ_KEEP:-0}" = 1 ] && first=$src/tests/fuzz/corpus/$name
if [ "$name" = docker_logs ]; then
    # The target includes lib/backends/docker_logs.c itself (so the parser is instrumented);
    # the rest of the library comes from the build's internal archive.
    clang -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -I"$src/include" -I"$src/lib" -I"$src/src" -I"$2/lib" -I"$2" \
        "$src/tests/fuzz/fuzz_$name.c" "$2/lib/libexecbox_internal.a" \
        $(pkg-config --cflags --libs jansson libcurl) -lm -lpthread -ldl -o "$out/fuzz_$name"
else
clang -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -I"$src/include" -I"$src/lib" -I"$src/src" \
    "$src/tests/fuzz/fuzz_$name.c" "$src/lib/model/policy.c" "$src/lib/model/traceback.c" "$src/lib/model/result.c" \
    "$src/lib/base/text.c" "$src/lib/base/error.c" "$src/lib/model/lang.c" "$src/lib/base/util.c" "$src/lib/ws/workspace.c" "$src/lib/model/hostrule.c" "$src/lib/jail/tlshello.c" \
    "$src/lib/model/lang_blobs.c" -DEB_LANG_DIR="\"$src/lib/lang\"" \
    $(pkg-config --cflags --libs jansson) -lm -o "$out/fuzz_$name"
fi
"$out/fuzz_$name" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/" "$first" "$src/tests/fuzz/corpus/$name" 2>&1 |
    tail -25
exit "${PIPESTATUS[0]}"
