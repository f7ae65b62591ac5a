#!/usr/bin/env bash
# Re-records fixtures/launch-verify/: `rocplay launch --verify --repeats 1` of tests/targets/
# race_target (race, moved, static) under gdb, each run's recording kept, this checkout's path
# scrubbed to /home/dev/rocplay (in plain text and in the hex of the exec helper's arguments).
#   tests/scripts/record_verify_fixtures.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
here=$PWD
out=fixtures/launch-verify
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
for mode in race moved static; do
  rm -rf "$out/$mode"
  "$build/rocplay" launch --verify --repeats 1 -q --debugger gdb --record "$out/$mode" \
    -o /dev/null -- "$build/tests/race_target" "$mode" >/dev/null || true
  for f in "$out/$mode"/*.mi; do
    sed -i -e "s|$here|/home/dev/rocplay|g" -e "s|$(hex "$here")|$(hex /home/dev/rocplay)|g" "$f"
  done
done
if grep -rl "$here" "$out"; then
  echo "record_verify_fixtures: $here is still in the files above" >&2
  exit 1
fi
echo "recorded: $(ls "$out"/*/*.mi | wc -l) runs in $out"
