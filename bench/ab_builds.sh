#!/usr/bin/env bash
# Two builds of rocplay side by side (before and after a change, issue 21's "no slower"): MI
# parsing, the snapshot of a full node, the post-mortem batch and the live stop of a hang-triage
# run against tests/targets/spin_target, each taking turns between OLD and NEW (the order flipped
# every round) so a machine that gets busier or quieter weighs on both alike. Prints each
# figure per round and the medians.
#
#   bench/ab_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]   (default 5; both built with
#                                                             bench_mi_parse bench_snapshot
#                                                             bench_postmortem rocplay spin_target)
#   BENCHES="stop" bench/ab_builds.sh ...   only those figures (default: parse snapshot
#                                           postmortem stop), e.g. more rounds of a noisy one
set -euo pipefail
old=${1:?old build directory}
new=${2:?new build directory}
rounds=${3:-5}
work=$(mktemp -d)
target=
cleanup() {
  [ -n "$target" ] && kill "$target" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# One figure from a build: prints the number.
figure() {
  local dir=$1 what=$2
  case $what in
  parse) "$dir/bench/bench_mi_parse" --corpus-mb 32 --stream-mb 1 --runs 3 |
    sed -n 's/^parse:.*median \([0-9.]*\) MB\/s.*/\1/p' ;;
  snapshot) "$dir/bench/bench_snapshot" --runs 5 |
    sed -n 's/^ *total CPU time (median) *\([0-9.]*\) ms.*/\1/p' ;;
  postmortem) "$dir/bench/bench_postmortem" --runs 3 |
    sed -n 's/.* s = \([0-9.]*\) MB\/s.*/\1/p' ;;
  stop) "$dir/rocplay" run hang-triage --pid "$target" --debugger gdb --samples 1 --format json \
    -o "$work/r.json" -q &&
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["target"]["stop_seconds"])' \
      "$work/r.json" ;;
  esac
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$new/tests/spin_target" "$work/progress" 1000 --sleepy >"$work/target.out" 2>&1 &
target=$!
until grep -q ready "$work/target.out" 2>/dev/null; do sleep 0.1; done
figure "$new" stop >/dev/null # the symbols into the page cache

for what in ${BENCHES:-parse snapshot postmortem stop}; do
  : >"$work/old.$what"
  : >"$work/new.$what"
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then order="old new"; else order="new old"; fi
    for side in $order; do
      dir=$old
      [ "$side" = new ] && dir=$new
      figure "$dir" "$what" >>"$work/$side.$what"
    done
  done
  unit="MB/s (higher is better)"
  case $what in
  snapshot) unit="ms of CPU (lower is better)" ;;
  postmortem) unit="MB/s (higher is better)" ;;
  stop) unit="s of stop, 1,000 threads (lower is better)" ;;
  esac
  echo "$what, $unit"
  echo "  old: $(tr '\n' ' ' <"$work/old.$what")-> median $(median <"$work/old.$what")"
  echo "  new: $(tr '\n' ' ' <"$work/new.$what")-> median $(median <"$work/new.$what")"
done
