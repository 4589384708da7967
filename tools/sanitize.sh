#!/usr/bin/env bash
# Sanitizer builds of the test suite, each in its own build directory.
#
#   tools/sanitize.sh address [ctest args...]   ASan + UBSan, every suite but `install`
#   tools/sanitize.sh thread  [ctest args...]   TSan, the suites that run threads
#                                               (runtime, reliability, threading)
#
# The configuration, the suites and the sanitizer options are the `asan` and
# `tsan` presets of CMakePresets.json, built in build/asan and build/tsan (the
# reasons are in tools/sanitizers/README.md); this script installs what is
# missing, adds ccache when available (CCACHE_DISABLE=1 measures a cold build),
# builds, and runs ctest. Exits non-zero on any sanitizer report or failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/common.sh
source "$ROOT/tools/lib/common.sh"
JOBS="$(nproc 2>/dev/null || echo 2)"
PACKAGES=(g++ cmake make ccache pkg-config libhwy-dev libtbb-dev libgtest-dev
          nlohmann-json3-dev libpcre2-dev)

usage() { sed -n '2,12p' "$0"; exit 2; }


main() {
  local preset
  case "${1:-}" in
    address) preset=asan ;;
    thread) preset=tsan ;;
    *) usage ;;
  esac
  shift
  local launcher
  ccache_launcher launcher
  install_missing "${PACKAGES[@]}"
  cd "$ROOT"
  echo "== configure ($preset) in build/$preset"
  cmake --preset "$preset" "${launcher[@]}" >/dev/null
  echo "== build"
  cmake --build --preset "$preset" -j "$JOBS"
  echo "== test"
  ctest --preset "$preset" "$@"
}

main "$@"
