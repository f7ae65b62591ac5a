#!/usr/bin/env bash
# Time to verdict, issue 33: `rocplay run hang-triage --pid P --samples 1 -q` against raw
# `gdb -q -nx -p P -x CMDS -batch` (info threads, thread apply all bt 30, detach) on one
# spin_target with THREADS threads (napping: --sleepy), ROUNDS rounds, the ways' order rotated
# every round. Ways: raw gdb; rocplay --debugger gdb (the banner from MI, issue 33); `gdb
# --version` and then rocplay --debugger gdb, one after the other: what every run did before
# issue 33 (find_debugger ran `gdb --version` and waited for it before the session started).
# Prints each round's wall seconds and the medians.
#
#   bench/verdict_ab.sh BUILD_DIR [ROUNDS=7] [SPIN_THREADS=8]   (8 spinning + 1 blocked + main = 10)
set -euo pipefail
build=${1:?build directory}
rounds=${2:-7}
spin=${3:-8}
work=$(mktemp -d)
target=
cleanup() {
  [ -n "$target" ] && kill "$target" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$build/tests/spin_target" "$work/progress" "$spin" --sleepy >"$work/target.out" 2>&1 &
target=$!
until grep -q ready "$work/target.out"; do sleep 0.1; done
printf 'info threads\nthread apply all bt 30\ndetach\n' >"$work/cmds"
echo "target pid $target, $(ls /proc/$target/task | wc -l) threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
wall() { # seconds of wall time for one command
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
ways=(raw named before)
run_way() {
  case $1 in
  raw) wall gdb -q -nx -p "$target" -x "$work/cmds" -batch ;;
  named) wall "$build/rocplay" run hang-triage --pid "$target" --debugger gdb --samples 1 -q ;;
  before) wall sh -c 'gdb --version && "$1" run hang-triage --pid "$2" --debugger gdb --samples 1 -q' \
    sh "$build/rocplay" "$target" ;;
  esac
}
for ((r = 0; r < rounds; ++r)); do
  line="round $r:"
  for ((i = 0; i < 3; ++i)); do
    w=${ways[$(((i + r) % 3))]}
    t=$(run_way "$w")
    echo "$w $t" >>"$work/times"
    line+=" $w $(printf %.3f "$t")"
  done
  echo "$line"
done
for w in "${ways[@]}"; do
  printf '%-7s median %.3f s\n' "$w" "$(grep "^$w " "$work/times" | cut -d' ' -f2 | sort -n |
    awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
