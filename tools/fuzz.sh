#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a while.
#
#   tools/fuzz.sh [--seconds N] [--build-only] [--with-tests] [target...]
#
# --with-tests also builds every test suite in the same clang ASan+UBSan tree and
# runs them (all but `install`, as tools/sanitize.sh address does with g++) before
# fuzzing. CI uses it: one sanitized build of the library serves the tests and the
# fuzzers, where a second, g++ ASan build was the longest step of a CI run.
#
# Targets: checkpoint tokenizer session llama2c gguf slots gguf_tokenizer
# batch_requests (default: all, one after the other, never in parallel). Each runs
# N seconds (default $KVRT_FUZZ_SECONDS or 60) at nice $KVRT_FUZZ_NICE (default 19)
# on its growing corpus in
# $BUILD/corpus/<target>, seeded from fixtures/ at build time. Any crash, leak,
# undefined behaviour, violated property, timeout or out-of-memory fails the
# script; the reproducer is left in $BUILD/artifacts/. Rerun one with
#   $BUILD/tests/fuzz/fuzz_<target> <artifact>
#
# Build dir: $KVRT_FUZZ_BUILD_DIR (default build/fuzz). Needs clang-16 and
# libclang-rt-16-dev from Debian, installed when missing (root or sudo).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$ROOT/tools/lib/common.sh"
BUILD="${KVRT_FUZZ_BUILD_DIR:-$ROOT/build/fuzz}"
SECONDS_PER_TARGET="${KVRT_FUZZ_SECONDS:-60}"
NICE="${KVRT_FUZZ_NICE:-19}"
JOBS="$(nproc 2>/dev/null || echo 2)"
CLANG_VERSION=16
PACKAGES=(clang-$CLANG_VERSION libclang-rt-$CLANG_VERSION-dev cmake make pkg-config libhwy-dev
          libtbb-dev libgtest-dev nlohmann-json3-dev libpcre2-dev)
ALL_TARGETS=(checkpoint tokenizer session llama2c gguf slots gguf_tokenizer batch_requests)

usage() { sed -n '2,21p' "$0"; exit 2; }


build() {
  local launcher
  ccache_launcher launcher
  # clang < 19 hides libstdc++'s <expected> behind __cpp_concepts (see
  # cmake/KvrtFuzzers.cmake); the GCC-only warning flags are not errors.
  # -O2 for fuzzing speed; -g1 (line tables) names every frame of a report at about
  # half the compile time of -g.
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang-$CLANG_VERSION -DCMAKE_CXX_COMPILER=clang++-$CLANG_VERSION \
    "-DCMAKE_CXX_FLAGS=-D__cpp_concepts=202002L -Wno-macro-redefined -Wno-unknown-warning-option" \
    -DKVRT_SANITIZE=address -DKVRT_BUILD_FUZZERS=ON -DKVRT_BUILD_TESTS=ON -DKVRT_BUILD_BENCH=OFF \
    "${launcher[@]}" >/dev/null
  cmake --build "$BUILD" --target kvrt_fuzzers -j "$JOBS"
}

# Every test suite but `install`, with the sanitizer options of the asan test
# preset: the `fuzz` test preset of CMakePresets.json inherits them, pointed at $BUILD.
run_tests() {
  cmake --build "$BUILD" -j "$JOBS"
  echo "== ctest (clang ASan+UBSan) in $BUILD"
  (cd "$ROOT" && ctest --preset fuzz --test-dir "$BUILD" -j "$JOBS")
}

# Longest input libFuzzer may generate, per target (checkpoints get their
# seeds' size automatically).
max_len() {
  case "$1" in
    session|slots) echo 4096 ;;
    tokenizer|gguf_tokenizer|batch_requests) echo 4096 ;;
    *) echo 0 ;;
  esac
}

run_target() {
  local target="$1" binary="$BUILD/tests/fuzz/fuzz_$1"
  local corpus="$BUILD/corpus/$target" seeds="$BUILD/tests/fuzz/seeds/$target"
  local log="$BUILD/logs/$target.log"
  mkdir -p "$corpus" "$BUILD/artifacts" "$BUILD/logs"
  echo "== fuzz_$target for ${SECONDS_PER_TARGET}s (corpus $corpus)"
  # -timeout is wall-clock: on a loaded machine (nice 19 behind two builds) a 16 ms
  # input once took 49 s and was reported as a hang; 120 s still catches a real one.
  local options=(-max_total_time="$SECONDS_PER_TARGET" -timeout=120 -rss_limit_mb=2048
                 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$target-")
  [ "$(max_len "$target")" -gt 0 ] && options+=(-max_len="$(max_len "$target")")
  local status=0
  # allocator_may_return_null: a runtime buffer that cannot be allocated must come
  # back as a typed error, as it does without ASan, not abort the process.
  ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}" \
    nice -n "$NICE" "$binary" "${options[@]}" "$corpus" "$seeds" >"$log" 2>&1 || status=$?
  local runs seconds
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  seconds="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)"
  if [ "$status" -ne 0 ]; then
    echo "FAILED fuzz_$target (exit $status) after ${runs:-?} runs; log: $log"
    grep -E "property violated|ERROR:|SUMMARY:|runtime error" "$log" | head -n 5 || true
    return 1
  fi
  echo "ok fuzz_$target: ${runs:-?} runs in ${seconds:-?}s, no crash, leak or UB"
}

main() {
  local build_only=0 with_tests=0 targets=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --seconds) SECONDS_PER_TARGET="$2"; shift 2 ;;
      --build-only) build_only=1; shift ;;
      --with-tests) with_tests=1; shift ;;
      -h|--help) usage ;;
      checkpoint|tokenizer|session|llama2c|gguf|slots|gguf_tokenizer|batch_requests) targets+=("$1"); shift ;;
      *) echo "unknown argument: $1"; usage ;;
    esac
  done
  [ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
  install_missing "${PACKAGES[@]}"
  build
  if [ "$with_tests" -eq 1 ]; then run_tests; fi
  [ "$build_only" -eq 1 ] && return 0
  local failed=0
  for target in "${targets[@]}"; do run_target "$target" || failed=1; done
  return "$failed"
}

main "$@"
