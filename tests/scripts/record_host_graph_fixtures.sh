#!/usr/bin/env bash
# Re-records fixtures/graph/host/: `rocplay run hang-triage --debugger gdb` (two samples) of each
# host shape of issue 41 (tests/targets/py_subprocess_pipe.py, py_pool_starved.py,
# py_queue_unfed.py, and the C++ spin_reader and pool_starved), each target killed afterwards, this checkout's path scrubbed to
# /home/dev/rocplay (in plain text and in hex). fixtures/graph/expected-causes.txt lists what the
# graph makes of each; re-recording changes the LWPs there.
#   tests/scripts/record_host_graph_fixtures.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
here=$PWD
out=fixtures/graph/host
mkdir -p "$out"
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
for shape in subprocess_pipe pool_starved queue_unfed spin_reader pool_starved_cpp; do
  log=$(mktemp)
  if [ "$shape" = spin_reader ] || [ "$shape" = pool_starved_cpp ]; then
    "$build/tests/${shape%_cpp}" >"$log" 2>&1 &
  else
    /usr/bin/python3 "tests/targets/py_$shape.py" >"$log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do grep -q ready "$log" && break; sleep 0.1; done
  sleep 0.5
  rm -f "$out/$shape-gdb.rocplay"
  "$build/rocplay" run hang-triage --pid "$pid" --debugger gdb --record "$out/$shape-gdb.rocplay" \
    >/dev/null 2>&1 || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -f "$log"
  sed -i -e "s|$here|/home/dev/rocplay|g" -e "s|$(hex "$here")|$(hex /home/dev/rocplay)|g" \
    "$out/$shape-gdb.rocplay"
done
if grep -rl "$here" "$out"; then
  echo "record_host_graph_fixtures: $here is still in the files above" >&2
  exit 1
fi
echo "recorded: $(ls "$out"/*.rocplay | wc -l) recordings in $out"
