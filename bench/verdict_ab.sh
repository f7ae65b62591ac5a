#!/usr/bin/env bash
# Time to verdict, issue 33: `rocplay run hang-triage --pid P --samples 1 -q` against raw
# `gdb -q -nx -p P -x CMDS -batch` (info threads, thread apply all bt 30, detach) on one
# spin_target with SPIN_THREADS napping threads (+ 1 blocked + main), ROUNDS rounds, the ways'
# order rotated every round. Ways (WAYS, default "raw named"):
#   raw     the gdb batch run above
#   named   rocplay --debugger gdb --samples 1 (the banner from MI, issue 33; hang-triage's
#           `stop: copy` since the stops by copy: rocplay holds the threads, gdb reads a copy)
#   attach  the named run with --stop attach (gdb attaches and holds the target, as before)
#   twoatt  the two-sample run with --stop attach
#   before  `gdb --version`, then the named run: what every run did before issue 33
#   two     rocplay --debugger gdb with the playbook's own two samples, 2 s apart
#   base    the named run with BASE_BUILD/rocplay (another build: before and after a change)
#   basetwo the two-sample run with BASE_BUILD/rocplay
# Each run prints its wall seconds and the target's stop: the longest gap between two ticks of
# spin_target's main thread (every 1 ms while it runs) during the run, which for raw gdb is its
# whole attach-to-detach. Then the medians, the ratios to raw, with `named` and `two` the paired
# difference of two samples against one plus the interval, and the load average.
#
#   bench/verdict_ab.sh BUILD_DIR [ROUNDS=7] [SPIN_THREADS=8]   (8 napping + 1 blocked + main = 10)
#   bench/verdict_ab.sh build 7 998                             (1,000 threads)
set -euo pipefail
build=${1:?build directory}
rounds=${2:-7}
spin=${3:-8}
read -r -a ways <<<"${WAYS:-raw named}"
work=$(mktemp -d)
target=
cleanup() {
  [ -n "$target" ] && kill "$target" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# TARGET_ARGS: spin_target's other arguments (default --sleepy); `--sleepy --blocked 998` with
# SPIN_THREADS 0 gives 998 threads blocked on a condition variable, a hung worker's shape.
read -r -a target_args <<<"${TARGET_ARGS:---sleepy}"
"$build/tests/spin_target" "$work/progress" "$spin" "${target_args[@]}" >"$work/target.out" 2>&1 &
target=$!
until grep -q ready "$work/target.out"; do sleep 0.1; done
printf 'info threads\nthread apply all bt 30\ndetach\n' >"$work/cmds"
echo "target pid $target, $(ls /proc/$target/task | wc -l) threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
# spin_target's Progress (tests/targets/spin_target.cpp): max_gap_ns is the fifth u64.
reset_gap() { printf '\0\0\0\0\0\0\0\0' | dd of="$work/progress" bs=1 seek=32 conv=notrunc status=none; }
gap() { echo "$(od -A n -t u8 -j 32 -N 8 "$work/progress" | tr -d ' ') / 1000000000" | bc -l; }
rocplay() { "$build/rocplay" run hang-triage --pid "$target" --debugger gdb -q "$@"; }
base_rocplay() { "${BASE_BUILD:?BASE_BUILD names the other build}/rocplay" run hang-triage --pid "$target" --debugger gdb -q "$@"; }
run_way() { # way -> "wall stop"
  local t0 t1
  reset_gap
  t0=$(date +%s.%N)
  case $1 in
  raw) gdb -q -nx -p "$target" -x "$work/cmds" -batch ;;
  named) rocplay --samples 1 ;;
  attach) rocplay --samples 1 --stop attach ;;
  twoatt) rocplay --stop attach ;;
  before) gdb --version && rocplay --samples 1 ;;
  two) rocplay ;;
  base) base_rocplay --samples 1 ;;
  basetwo) base_rocplay ;;
  esac >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  sleep 0.2 # the ticks after the resume
  echo "$(echo "$t1 - $t0" | bc -l) $(gap)"
}
run_way raw >/dev/null # the first attach reads the symbols into the page cache
for ((r = 0; r < rounds; ++r)); do
  line="round $r:"
  for ((i = 0; i < ${#ways[@]}; ++i)); do
    w=${ways[$(((i + r) % ${#ways[@]}))]}
    read -r t g < <(run_way "$w")
    echo "$w $t $g" >>"$work/times"
    line+=" $w $(printf %.3f "$t") (stop $(printf %.3f "$g"))"
  done
  echo "$line"
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
raw_wall=
raw_stop=
if grep -q '^raw ' "$work/times"; then
  raw_wall=$(grep '^raw ' "$work/times" | cut -d' ' -f2 | median)
  raw_stop=$(grep '^raw ' "$work/times" | cut -d' ' -f3 | median)
fi
for w in "${ways[@]}"; do
  wall=$(grep "^$w " "$work/times" | cut -d' ' -f2 | median)
  stop=$(grep "^$w " "$work/times" | cut -d' ' -f3 | median)
  range=$(grep "^$w " "$work/times" | cut -d' ' -f2 | sort -g | sed -n '1p;$p' | xargs printf '%.3f-%.3f')
  ratio=
  if [ -n "$raw_wall" ] && [ "$w" != raw ]; then
    ratio=$(awk -v a="$wall" -v b="$raw_wall" -v s="$stop" -v rs="$raw_stop" \
      'BEGIN {printf "  %.2fx raw wall, stop %.2fx raw stop", a / b, s / rs}')
  fi
  printf '%-7s median %.3f s (%s), stop %.3f s%s\n' "$w" "$wall" "$range" "$stop" "$ratio"
done
# Two samples against one plus the interval, round by round (each round runs both, one after the
# other): the median of two - (named + 2 s), steadier than the difference of the two medians.
if grep -q '^two ' "$work/times" && grep -q '^named ' "$work/times"; then
  paste <(grep '^named ' "$work/times" | cut -d' ' -f2) <(grep '^two ' "$work/times" | cut -d' ' -f2) |
    awk '{print $2 - $1 - 2}' | sort -g >"$work/paired"
  printf 'paired  two - (named + 2 s): median %+.3f s, under in %d of %d rounds\n' \
    "$(median <"$work/paired")" "$(awk '$1 < 0' "$work/paired" | wc -l)" "$(wc -l <"$work/paired")"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
