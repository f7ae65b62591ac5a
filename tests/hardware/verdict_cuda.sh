#!/usr/bin/env bash
# Time to verdict on a PyTorch worker with cuda-gdb, issue 33: `rocplay run hang-triage --pid P
# --debugger cuda-gdb --samples 1 -q`, and with the default two samples, against raw
# `cuda-gdb -q -nx -batch -p P -x CMDS` with the commands hang-triage runs (info cuda devices,
# kernels, warps and threads, info threads, thread apply all bt 30, detach). The worker is
# torch_item_hang.py: its main thread blocked in `.item()` behind a spin kernel that never ends.
# WORKER=syncspin: a plain CUDA program instead (syncspin.cu, one kernel polling a flag).
# WAYS: the ways to run (default "raw one two"); `plain` is raw without the Python stamps
# (which start cuda-gdb's Python before the attach); `onemin` is `one` with cuda-gdb's minimal
# binary (no Python, no TUI) named by --debugger; `onecold` is `one` without the listing cache
# (ROCPLAY_CACHE_DIR=off: every look a first look); `bare` is cuda-gdb attaching and detaching
# with no command between: the least stop any look through cuda-gdb can cause.
# ROUNDS rounds, the ways' order rotated every round; per way the median wall seconds and the
# median stop as the worker lived it (stop_meter.c, preloaded into it: the gaps over 5 ms in its
# millisecond ticks that the run caused), the same measure for every way; beside it each rocplay
# run's own figure (its JSON report) and raw's attach to detach (the stamps around them). Every
# run must leave the worker running (its state in /proc is checked after each).
#
#   ROCPLAY=/path/to/rocplay OUT=/path/to/out ROUNDS=5 tests/hardware/verdict_cuda.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=/tmp/hw-verdict # outside $OUT: only the summary and one archive go back
hw_start "$work"
rocplay=$(hw_rocplay)
[ -n "$rocplay" ] || { say "no rocplay: nothing to do"; exit 1; }
rounds=${ROUNDS:-5}
# The worker's own account of each look's stop (stop_meter.c, preloaded into it alone).
gcc -O2 -shared -fPIC -pthread -o "$src/stop_meter.so" "$here/stop_meter.c" ||
  { say "stop_meter.c does not build"; exit 1; }
: >"$work/stops"
meter=(env LD_PRELOAD="$src/stop_meter.so" HW_STOP_LOG="$work/stops")
if [ "${WORKER:-torch}" = syncspin ]; then # a plain CUDA program: one kernel polling a flag
  hw_nvcc syncspin
  hw_start_worker "${meter[@]}" "$src/syncspin"
else
  cp "$here/torch_item_hang.py" "$src/"
  hw_start_worker "${meter[@]}" python3 "$src/torch_item_hang.py"
fi
say "worker pid $pid, $(ls /proc/$pid/task | wc -l) threads; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' 'info cuda devices' 'info cuda kernels' 'info cuda warps' 'info cuda threads' \
  'info threads' 'thread apply all bt 30' 'detach' >"$work/cmds"

running() { # the worker's state after a run: anything but t/T
  local st
  st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
  [ "$st" != t ] && [ "$st" != T ] && [ "$st" != gone ] && echo ok || echo "LEFT $st (FAIL)"
}
stop_of() { # the target's stop in seconds, all samples together, by a rocplay JSON report
  python3 - "$1" <<'PY' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{j['run']['target']['stop_seconds']:.3f}")
PY
}
stopped() { # the target's stops since line FROM of its stop log: "N ms in K stops"
  [ -f "$work/stops" ] || return 0
  tail -n +"$(($1 + 1))" "$work/stops" | awk '{s+=$1; n++} END {printf "target stopped %.0f ms in %d; ", s, n}'
}
run_way() { # way round
  local t0 ms seen
  seen=$(wc -l <"$work/stops" 2>/dev/null || echo 0)
  t0=$(date +%s%N)
  case $1 in
  raw) cuda-gdb -q -nx -batch -iex 'python import time; print("T", time.monotonic())' \
    -p "$pid" -x "$work/cmds" -ex 'python import time; print("T", time.monotonic())' \
    >"$work/raw-$2.log" 2>&1 ;;
  plain) cuda-gdb -q -nx -batch -p "$pid" -x "$work/cmds" >"$work/plain-$2.log" 2>&1 ;;
  bare) cuda-gdb -q -nx -batch -p "$pid" -ex detach >"$work/bare-$2.log" 2>&1 ;;
  one) "$rocplay" run hang-triage --pid "$pid" --debugger cuda-gdb --samples 1 -q --format json \
    --output "$work/one-$2.json" >"$work/one-$2.log" 2>&1 ;;
  onecold) ROCPLAY_CACHE_DIR=off "$rocplay" run hang-triage --pid "$pid" --debugger cuda-gdb \
    --samples 1 -q --format json --output "$work/onecold-$2.json" >"$work/onecold-$2.log" 2>&1 ;;
  onemin) "$rocplay" run hang-triage --pid "$pid" --samples 1 -q --format json \
    --debugger "$(dirname "$(readlink -f "$(command -v cuda-gdb)")")/cuda-gdb-minimal" \
    --output "$work/onemin-$2.json" >"$work/onemin-$2.log" 2>&1 ;;
  two) "$rocplay" run hang-triage --pid "$pid" --debugger cuda-gdb -q --format json \
    --output "$work/two-$2.json" >"$work/two-$2.log" 2>&1 ;;
  esac
  ms=$(hw_ms "$t0")
  sleep 0.05 # the meter's line for a stop that ended with the run
  echo "$1 $ms" >>"$work/times"
  [ -f "$work/stops" ] && echo "$1 $(tail -n +"$((seen + 1))" "$work/stops" | awk '{s+=$1} END {print s+0}')" >>"$work/stopped"
  case $1 in
  plain | bare) echo "$1 $ms ms ($(stopped "$seen")) $(running)" ;;
  raw) echo "$1 $ms ms ($(stopped "$seen")attach to detach $(grep '^T ' "$work/raw-$2.log" |
    awk 'NR>1{printf "%.0f", ($2-p)*1000} {p=$2}') ms) $(running)" ;;
  *) echo "$1 $ms ms ($(stopped "$seen")by its report $(stop_of "$work/$1-$2.json") s) $(running)" ;;
  esac
}
read -r -a ways <<<"${WAYS:-raw one two}"
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < ${#ways[@]}; ++i)); do
    say "round $r: $(run_way "${ways[$(((i + r) % ${#ways[@]}))]}" "$r")"
  done
done
for w in "${ways[@]}"; do
  [ -f "$work/stopped" ] && say "$w: the target stopped, median $(grep "^$w " "$work/stopped" |
    cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') ms"
  say "$w: median $(grep "^$w " "$work/times" | cut -d' ' -f2 | sort -n |
    awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') ms over $rounds"
done
say "interval of the default playbook: $(grep -m1 'interval' "$repo/playbooks/hang-triage.yaml")"
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$work" && tar czf "$out/verdict.tar.gz" summary.txt times stopped stops ./*.log ./*.json cmds worker.out 2>/dev/null)
cp "$summary" "$out/verdict-summary.txt"
