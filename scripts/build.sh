#!/usr/bin/env bash
# Configures and builds rocplay into build/ (dependencies first).
#   scripts/build.sh              everything: rocplay, tests, targets, benchmarks (the test command)
#   scripts/build.sh TARGET...    only these CMake targets (the demo: rocplay spin_target)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  scripts/setup.sh build
else
  scripts/setup.sh
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCPLAY_WERROR=ON >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build --parallel "$(nproc)" --target "$@"
else
  cmake --build build --parallel "$(nproc)"
fi
