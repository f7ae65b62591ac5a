#!/usr/bin/env bash
# Configures and builds rocplay into build/ (dependencies first).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCPLAY_WERROR=ON >/dev/null
cmake --build build --parallel "$(nproc)"
