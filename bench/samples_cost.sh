#!/usr/bin/env bash
# What a second sample costs (issue 13's speed goal, issue 33's: none over the interval):
# `rocplay run hang-triage` with plain gdb against tests/targets/spin_target --sleepy,
# `--samples 1` against the playbook's default (2 samples, 2 s apart), the two taking turns (the
# order flipped every other round) on one target per thread count. Prints each run's wall time
# and stops, then the medians and the 2-sample wall against 1 sample + the 2 s interval (issue
# 33's goal: at most that).
#
#   bench/samples_cost.sh [ROUNDS] [THREADS...]     (default 5 rounds, 10 and 1000 threads;
#                                                    after scripts/build.sh rocplay spin_target)
#   ROCPLAY=OTHER/rocplay bench/samples_cost.sh ... another build's rocplay
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(10 1000)
interval=2 # hang-triage's
work=$(mktemp -d)
target=
cleanup() {
  [ -n "$target" ] && kill "$target" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

rocplay=${ROCPLAY:-build/rocplay}
one_run() { # samples (1, or 2: the playbook's default) -> "wall stop1 [stop2]"
  local s=$1 t0 t1 flags=()
  [ "$s" = 1 ] && flags=(--samples 1)
  t0=$(date +%s.%N)
  "$rocplay" run hang-triage --pid "$target" --debugger gdb "${flags[@]}" \
    --format json -o "$work/r.json" -q
  t1=$(date +%s.%N)
  python3 - "$work/r.json" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
run = j["run"]
stops = ([x["stop_seconds"] for x in run["sampling"]["samples"]] if "sampling" in run
         else [run["target"]["stop_seconds"]])
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.3f}", " ".join(f"{x:.3f}" for x in stops))
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for n in "${threads[@]}"; do
  build/tests/spin_target "$work/progress" "$n" --sleepy >"$work/target.out" 2>&1 &
  target=$!
  until grep -q ready "$work/target.out" 2>/dev/null; do sleep 0.1; done
  one_run 1 >/dev/null # the first attach reads the symbols into the page cache
  : >"$work/one"
  : >"$work/two"
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then
      one_run 1 >>"$work/one"
      one_run 2 >>"$work/two"
    else
      one_run 2 >>"$work/two"
      one_run 1 >>"$work/one"
    fi
  done
  echo "== $n threads, $rounds rounds (wall s, stop s per sample)"
  paste -d'|' "$work/one" "$work/two" | sed 's/^/  1 sample: /; s/|/  |  2 samples: /'
  one=$(cut -d' ' -f1 "$work/one" | median)
  two=$(cut -d' ' -f1 "$work/two" | median)
  awk -v n="$n" -v one="$one" -v two="$two" -v iv="$interval" 'BEGIN {
    printf "  medians: 1 sample %.3f s, 2 samples %.3f s; against 1 sample + %d s (%.3f s): %+.1f%%\n",
      one, two, iv, one + iv, (two / (one + iv) - 1) * 100 }'
  kill "$target"
  wait "$target" 2>/dev/null || true
  target=
done
