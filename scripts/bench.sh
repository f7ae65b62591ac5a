#!/usr/bin/env bash
# Runs every benchmark program built in build/bench. `--short` is the CI mode: small inputs, one
# run, just enough to prove the programs still build and run. Figures: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build/bench ] || scripts/build.sh
status=0
for b in build/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b") $*"
  "$b" "$@" || { echo "benchmark $(basename "$b") failed"; status=1; }
done
exit $status
