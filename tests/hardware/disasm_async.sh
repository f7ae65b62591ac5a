#!/usr/bin/env bash
# Issue 14: can cuda-gdb disassemble device code while the target runs (background execution,
# `continue &`), so that its first-disassembly cost falls outside the stop? syncspin, cuda-gdb
# batch mode; the target's state is sampled while the disassembly runs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-dasync
hw_nvcc syncspin
hw_start_syncspin
state='python print("STATE", open("/proc/'"$pid"'/stat").read().rsplit(")", 1)[1].split()[0])'
cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" -ex "attach $pid" \
  -ex "cuda kernel 0 block 0,0,0 thread 0,0,0" -ex 'set $dpc = $pc' -ex 'p/x $dpc' \
  -ex "continue &" -ex "$hw_stamp" -ex "$state" -ex 'x/4i $dpc' -ex "$hw_stamp" -ex "$state" \
  -ex interrupt -ex "$hw_stamp" -ex "$state" -ex 'x/4i $dpc' -ex "$hw_stamp" -ex detach \
  >"$work/async.log" 2>&1
grep -vE '^\[(New|Thread)' "$work/async.log" | tail -30 | tee -a "$summary"
say "after: $(awk '{print $3}' /proc/$pid/stat)"
kill -9 "$pid" 2>/dev/null
