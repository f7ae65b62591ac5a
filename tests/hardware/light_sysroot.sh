#!/usr/bin/env bash
# Issue 46: does cuda-gdb's stop on a PyTorch worker shrink, harmlessly, when its own shared-library
# load reads symbol-light copies of the huge libraries (a sysroot made by light_mirror.py) instead
# of rocplay preloading them (which broke cudbgApiAttach, issue 40)? Raw cuda-gdb with the
# commands hang-triage runs, with and without `set sysroot MIRROR`, alternating, ROUNDS rounds;
# each way's wall and attach-to-detach stamps, the libraries without symbols, the worker's state.
#   OUT=/path/to/out ROUNDS=3 tests/hardware/light_sysroot.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=/tmp/hw-light # outside $OUT: only the summary and one archive go back
hw_start "$work"
rounds=${ROUNDS:-3}
cp "$here/torch_item_hang.py" "$here/light_mirror.py" "$src/"
hw_start_worker python3 "$src/torch_item_hang.py"
t0=$(date +%s%N)
python3 "$src/light_mirror.py" "$pid" /tmp/light-mirror >"$work/mirror.txt" 2>&1
say "mirror: $(hw_ms "$t0") ms; $(tr '\n' ';' <"$work/mirror.txt")"
say "worker pid $pid, $(ls /proc/$pid/task | wc -l) threads; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' 'info cuda devices' 'info cuda kernels' 'info cuda warps' 'info cuda threads' \
  'info threads' 'thread apply all bt 30' 'info sharedlibrary' 'detach' >"$work/cmds"
running() {
  local st
  st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
  [ "$st" != t ] && [ "$st" != T ] && [ "$st" != gone ] && echo ok || echo "LEFT $st (FAIL)"
}
look() { # way round
  local t0 ms extra=()
  [ "$1" = light ] && extra=(-iex "set sysroot /tmp/light-mirror")
  t0=$(date +%s%N)
  cuda-gdb -q -nx -batch "${extra[@]}" -iex "$hw_stamp" -p "$pid" -x "$work/cmds" -ex "$hw_stamp" \
    >"$work/$1-$2.log" 2>&1
  ms=$(hw_ms "$t0")
  echo "$1 $ms" >>"$work/times"
  echo "$1 $ms ms (attach to detach $(grep '^T ' "$work/$1-$2.log" |
    awk 'NR>1{printf "%.0f", ($2-p)*1000} {p=$2}') ms; libraries without symbols" \
    "$(grep -cE '^0x[0-9a-f]+ +0x[0-9a-f]+ +No ' "$work/$1-$2.log"); frames" \
    "$(grep -c '^#' "$work/$1-$2.log"), '??' $(grep -c ' in ?? ' "$work/$1-$2.log");" \
    "kernel lines $(grep -c 'spin_kernel\|_sleep' "$work/$1-$2.log")) $(running)"
}
for ((r = 0; r < rounds; ++r)); do
  if ((r % 2)); then ways=(light raw); else ways=(raw light); fi
  for w in "${ways[@]}"; do say "round $r: $(look "$w" "$r")"; done
done
for w in raw light; do
  say "$w: median $(grep "^$w " "$work/times" | cut -d' ' -f2 | sort -n |
    awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') ms over $rounds"
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$work" && tar czf "$out/light.tar.gz" summary.txt times ./*.log cmds worker.out mirror.txt)
cp "$summary" "$out/light-summary.txt"
