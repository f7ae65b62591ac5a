#!/usr/bin/env bash
# The whole test suite: unit and live tests (real gdb), the same under ASan+UBSan, the fuzzers (MI
# parser, transcript reader, snapshot path, crash-evidence readers) for ROCPLAY_FUZZ_SECONDS
# (default 40: CI runs this within 20 minutes on 2 cores; `scripts/fuzz.sh 600` fuzzes longer),
# the benchmarks in short mode, the format check, and the Debian package and release binary built
# and checked (scripts/package.sh --check, scripts/release.sh: docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
scripts/setup.sh

step() { printf '\n== %s (at %ds)\n' "$*" "$SECONDS"; }

step "CPython 3.13-3.15 for the live Python-stack tests (Debian unstable's, cached in build/pythons)"
scripts/fetch_pythons.sh build/pythons

step "build (warnings are errors)"
scripts/build.sh

step "unit and live tests"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300

# --- packaging (issue 30): the Debian package and the self-contained release binary ---
# The package is made from build/ (nothing compiled again); the release binary is its own build
# (build-release: rocplay only, static libstdc++/libgcc/yaml-cpp/libelf/zlib, header-only fmt).
step "Debian package: build, install with dpkg into a fresh root, run, remove"
scripts/package.sh --check
step "release binary: build, only glibc <= 2.34 needed, post-mortem fixtures as build/ reports them"
scripts/release.sh
tests/install/compare_postmortem.sh "$PWD/build-release/rocplay" "$PWD/build/rocplay"
# --- end packaging ---

step "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DROCPLAY_WERROR=ON \
  -DROCPLAY_SANITIZE="address;undefined" -DROCPLAY_BENCH=OFF >/dev/null
cmake --build build-asan --parallel "$jobs" --target unit_tests
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
  UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit --timeout 600

step "fuzzing the MI parser, the snapshot path, the code-object and collective-record readers (libFuzzer, clang)"
CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCPLAY_FUZZ=ON \
  -DROCPLAY_TESTS=OFF -DROCPLAY_BENCH=OFF >/dev/null
cmake --build build-fuzz --parallel "$jobs" --target fuzz_mi_parser fuzz_transcript fuzz_snapshot \
  fuzz_codeobj fuzz_crash fuzz_console_log fuzz_pyframes fuzz_collectives
scripts/fuzz.sh "${ROCPLAY_FUZZ_SECONDS:-40}"

step "benchmarks (short mode)"
scripts/bench.sh --short

step "format check"
scripts/format.sh --check
printf '\nall tests passed in %ds\n' "$SECONDS"
