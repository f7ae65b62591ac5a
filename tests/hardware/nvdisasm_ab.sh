#!/usr/bin/env bash
# Issue 46: does nvdisasm finish sooner on one function (`-fun INDEX`) than on the whole cubin?
# Alternating, ROUNDS (default 15) of each on fixtures/cuda-fatbin/native.cubin; medians.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-nvdab
cubin=$here/../../fixtures/cuda-fatbin/native.cubin
for ((r = 0; r < ${ROUNDS:-15}; ++r)); do
  for way in whole fun; do
    args=(-c); [ $way = fun ] && args+=(-fun 12)
    t0=$(date +%s%N)
    nvdisasm "${args[@]}" "$cubin" >/dev/null
    echo "$way $(hw_ms "$t0")" >>"$work/times"
  done
done
for way in whole fun; do
  say "$way: median $(grep "^$way " "$work/times" | cut -d' ' -f2 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms; all $(grep "^$way " "$work/times" | cut -d' ' -f2 | tr '\n' ' ')"
done
cp "$summary" "$out/nvdisasm-ab.txt"
