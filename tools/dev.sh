#!/usr/bin/env bash
# kvrt developer entry point: installs what is missing, builds, and runs.
#
#   tools/dev.sh demo    Release build, then generate text from the bundled demo
#                        model and print the ch38 report
#   tools/dev.sh test    Release build with tests, then run every test (ctest)
#
# Dependencies come from Debian packages only; run as root on a fresh machine (or
# with sudo available) so missing packages can be installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$ROOT/tools/lib/common.sh"
BUILD="${KVRT_BUILD_DIR:-$ROOT/build/release}"
JOBS="$(nproc 2>/dev/null || echo 2)"
PACKAGES=(g++ cmake make ccache pkg-config python3 libhwy-dev libtbb-dev libmimalloc-dev
          libbenchmark-dev libgtest-dev nlohmann-json3-dev libpcre2-dev)


# configure_and_build TARGET [cmake options...]: TARGET "all" builds everything.
configure_and_build() {
  local target="$1" launcher
  shift
  ccache_launcher launcher
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target "$target"
}

demo() {
  install_missing "${PACKAGES[@]}"
  # A fresh tree builds without tests and benchmarks; an existing one keeps its
  # options (a test build stays one), and only the CLI is built either way.
  if [[ -f "$BUILD/CMakeCache.txt" ]]; then
    configure_and_build kvrt_cli
  else
    configure_and_build kvrt_cli -DKVRT_BUILD_TESTS=OFF -DKVRT_BUILD_BENCH=OFF
  fi
  local kvrt="$BUILD/tools/kvrt" model="$ROOT/fixtures/demo/demo.ckpt"
  echo "== kvrt inspect (first lines)"
  # Capture, then print the first lines: piping into `head` would let it close the
  # pipe early, and under `set -o pipefail` kvrt's SIGPIPE (status 141) ends the demo.
  local inspect_output
  inspect_output="$("$kvrt" inspect "$model")"
  printf '%s\n' "$inspect_output" | sed -n 1,9p
  for prompt in "At dawn" "На рассвете"; do
    echo "== kvrt generate --prompt \"$prompt\" (temperature 0.8, top-k 8, KV-cached)"
    "$kvrt" generate --model "$model" --prompt "$prompt" --temperature 0.8 --top-k 8 --eos 1 --max-new-tokens 64
  done
  echo "== kvrt report (ch38 cached generation)"
  "$kvrt" report
}

test() {
  install_missing "${PACKAGES[@]}"
  configure_and_build all -DKVRT_BUILD_TESTS=ON -DKVRT_BUILD_BENCH=ON
  (cd "$BUILD" && ctest --output-on-failure -j "$JOBS")
}

case "${1:-}" in
  demo) demo ;;
  test) test ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
