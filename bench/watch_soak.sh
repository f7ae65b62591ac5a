#!/usr/bin/env bash
# `rocplay watch`'s cost while healthy, as an operator runs it: the real binary against
# tests/targets/fake_server (two workers appending to their log every 50 ms), a check every 10 ms
# for SECONDS (default 120: about 12,000 checks), a status line every 10 s with the checks done,
# the CPU per check and the RSS; then /usr/bin/time's totals for the whole watcher process.
# Figures: docs/benchmarks.md ("Watch").
#
#   bench/watch_soak.sh [SECONDS]      (after scripts/build.sh rocplay fake_server)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-120}
dir=$(mktemp -d /tmp/rocplay-soak-XXXXXX)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
: >"$dir/fake-kfd"
build/tests/fake_server "$dir/server.log" "$dir/fake-kfd" --workers 2 >"$dir/server.out" &
server=$!
until grep -q ready "$dir/server.out"; do sleep 0.1; done
/usr/bin/time -v build/rocplay watch --workers-of "$server" --gpu-device "$dir/fake-kfd" \
  --log "$dir/server.log" --debugger gdb --quiet-for 60s --check-every 10ms \
  --status-every 10s --watch-for "${secs}s" --out "$dir/out" 2>&1 |
  grep -E 'rocplay watch: (healthy|quiet|--watch-for|watching)|Maximum resident|User time|System time|Elapsed'
