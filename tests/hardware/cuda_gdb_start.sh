#!/usr/bin/env bash
# Issue 46: what cuda-gdb's start costs, and which of its binaries pays it. `cuda-gdb` is a shell
# wrapper that picks a binary (with Python and the TUI, or the minimal one); rocplay needs neither
# (it reads Python frames itself). Prints the wrapper, then ROUNDS alternating rounds of each
# binary's bare start (`-nx -q -batch -ex quit`, and MI's `-gdb-exit`), then raw looks at syncspin
# (`-batch -p PID` with hang-triage's commands) through each, the worker checked running after each.
#
#   OUT=/path/to/out ROUNDS=7 tests/hardware/cuda_gdb_start.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=/tmp/hw-cgstart
hw_start "$work"
rounds=${ROUNDS:-7}
wrapper=$(command -v cuda-gdb)
bindir=$(dirname "$(readlink -f "$wrapper")")
say "cuda-gdb: $wrapper -> $(readlink -f "$wrapper") ($(file -b "$(readlink -f "$wrapper")" | cut -c1-60))"
say "binaries: $(cd "$bindir" && ls -1 cuda-gdb* | tr '\n' ' ')"
if file -b "$(readlink -f "$wrapper")" | grep -q text; then
  say "--- the wrapper ---"
  cat "$(readlink -f "$wrapper")" | tee -a "$summary"
  say "---"
fi
ways=(wrapper)
declare -A bin=([wrapper]=$wrapper)
for b in "$bindir"/cuda-gdb-minimal "$bindir"/cuda-gdb-python3.*-tui; do
  [ -x "$b" ] || continue
  name=$(basename "$b"); ways+=("$name"); bin[$name]=$b
  say "$name: $(stat -Lc %s "$b") bytes, $(ldd "$b" | wc -l) libraries"
done
timed() { # label command...
  local label=$1 t0 rc; shift
  t0=$(date +%s%N)
  "$@" >"$work/$label.out" 2>&1; rc=$?
  echo "$label $(hw_ms "$t0")" >>"$work/times"
  echo "rc $rc $(hw_ms "$t0") ms"
}
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < ${#ways[@]}; ++i)); do
    w=${ways[$(((i + r) % ${#ways[@]}))]}
    say "round $r start $w: $(timed "start-$w" "${bin[$w]}" -nx -q -batch -ex quit)"
    say "round $r mi $w: $(timed "mi-$w" sh -c "echo -gdb-exit | '${bin[$w]}' -nx -q --interpreter=mi3")"
  done
done
hw_nvcc syncspin
hw_start_worker "$src/syncspin"
printf '%s\n' 'info cuda devices' 'info cuda kernels' 'info cuda warps' 'info cuda threads' \
  'info threads' 'thread apply all bt 30' 'detach' >"$work/cmds"
running() {
  local st
  st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
  [ "$st" != t ] && [ "$st" != T ] && [ "$st" != gone ] && echo ok || echo "LEFT $st (FAIL)"
}
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < ${#ways[@]}; ++i)); do
    w=${ways[$(((i + r) % ${#ways[@]}))]}
    say "round $r look $w: $(timed "look-$w" "${bin[$w]}" -nx -q -batch -p "$pid" -x "$work/cmds") $(running)"
  done
done
for kind in start mi look; do
  for w in "${ways[@]}"; do
    say "$kind $w: median $(grep "^$kind-$w " "$work/times" | cut -d' ' -f2 | sort -n |
      awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') ms"
  done
done
grep -c "spin" "$work"/look-*.out | tee -a "$summary" >/dev/null
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$work" && tar czf "$out/cgstart.tar.gz" summary.txt times ./*.out cmds 2>/dev/null)
