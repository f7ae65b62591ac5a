#!/usr/bin/env bash
# The stop of a later sample, two ways, with plain gdb over MI against tests/targets/spin_target:
#   continue: -exec-continue, wait, SIGINT to gdb, *stopped, -thread-info   (in one session)
#   reattach: -target-detach, wait, -target-attach, *stopped, -thread-info  (symbols kept)
# The stop is what the target saw: spin_target's longest gap between two ticks of its main
# thread, reset just before the second stop; with TARGET_PID=PID (any process, e.g. a CUDA
# program) only the tool's own time is measured. GDB=cuda-gdb for cuda-gdb (as rocplay drives it:
# no `maint set target-non-stop off`).
# Usage: [GDB=...] [TARGET_PID=...] bench/sample_modes.sh SPIN_TARGET THREADS ROUNDS
set -euo pipefail
target_bin=${1:?spin_target path}; threads=${2:-10}; rounds=${3:-5}
gdb_bin=${GDB:-gdb}
work=$(mktemp -d); trap '{ [ -n "${TARGET_PID:-}" ] || kill $tpid; kill $gpid; } 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
if [ -n "${TARGET_PID:-}" ]; then
  tpid=$TARGET_PID
  gap() { echo 0; }
  reset_gap() { :; }
else
  "$target_bin" "$work/progress" "$threads" --sleepy --blocked 1 > "$work/target.out" &
  tpid=$!
  until grep -q ready "$work/target.out" 2>/dev/null; do sleep 0.1; done
  gap() { od -A n -t u8 -j 32 -N 8 "$work/progress" | tr -d ' '; }
  reset_gap() { printf '\0\0\0\0\0\0\0\0' | dd of="$work/progress" bs=1 seek=32 conv=notrunc status=none; }
fi
mkfifo "$work/in"
"$gdb_bin" -nx -q --interpreter=mi3 < "$work/in" > "$work/out" 2>&1 &
gpid=$!
exec 3> "$work/in"
n=0
count() { grep -c -- "$1" "$work/out" || true; }
# do_wait PATTERN ACTION...: runs ACTION, then waits for one more output line matching PATTERN.
do_wait() {
  local pat=$1; shift
  local want=$(( $(count "$pat") + 1 ))
  "$@"
  local deadline=$((SECONDS + 60))
  until [ "$(count "$pat")" -ge "$want" ]; do
    [ $SECONDS -lt $deadline ] || { echo "no '$pat' within 60 s; last output:" >&2; tail -5 "$work/out" >&2; exit 1; }
    sleep 0.002
  done
}
send() { n=$((n + 1)); echo "$n$1" >&3; }
now() { date +%s.%N; }
[ "$gdb_bin" = gdb ] && do_wait '\^done' send '-interpreter-exec console "maint set target-non-stop off"'
do_wait '\^done' send '-gdb-set print thread-events off'
do_wait '\*stopped' send "-target-attach $tpid"
do_wait '\^done,threads' send '-thread-info'
for mode in continue reattach; do
  for r in $(seq "$rounds"); do
    if [ $mode = continue ]; then
      do_wait '\^running' send '-exec-continue'
      sleep 0.5; reset_gap; t0=$(now)
      do_wait '\*stopped' kill -INT $gpid
      do_wait '\^done,threads' send '-thread-info'
      do_wait '\^running' send '-exec-continue'; t1=$(now)
      sleep 0.3; g=$(gap)
      do_wait '\*stopped' kill -INT $gpid
    else
      do_wait 'detached' send '-target-detach'
      sleep 0.5; reset_gap; t0=$(now)
      do_wait '\*stopped' send "-target-attach $tpid"
      do_wait '\^done,threads' send '-thread-info'
      do_wait 'detached' send '-target-detach'; t1=$(now)
      sleep 0.3; g=$(gap)
      do_wait '\*stopped' send "-target-attach $tpid"
    fi
    awk -v m=$mode -v n="$threads" -v r="$r" -v g="$g" -v a="$t0" -v b="$t1" 'BEGIN {
      printf "%s threads=%s round=%s stop_seen_by_target=%.3f tool_seconds=%.3f\n", m, n, r, g / 1e9, b - a }'
  done
done
do_wait 'detached' send '-target-detach'
send '-gdb-exit'
