#!/usr/bin/env bash
# The whole fault matrix (tests/live/fault_sweep.cpp): every built-in playbook x every exchange x
# {SIGKILL the debugger, SIGINT rocplay, SIGTERM rocplay}, against real gdb and a real target.
# CI runs its short form; this runs all of it (a few hundred runs, several minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ROCPLAY_BUILD_DIR:-build}
if [ ! -x "$build_dir/tests/test_live" ]; then
  scripts/build.sh test_live spin_target rocplay
fi
exec "$build_dir/tests/test_live" "[.fault-sweep]" --durations yes "$@"
