#!/usr/bin/env bash
# Issue 46: nvdisasm spends 0.45-0.6 s of CPU on any cubin. Is cuobjdump's SASS printer as slow,
# and what does it print? Times both on the syncspin cubin (fixtures/cuda-fatbin/native.cubin),
# five runs each, and keeps cuobjdump's listing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-sass
cubin=$here/../../fixtures/cuda-fatbin/native.cubin
for tool in "nvdisasm -c" "cuobjdump -sass" "nvdisasm -c -fun 12" "cuobjdump -sass -fun _Z13allgather_vecPViiPKfPf"; do
  for i in 1 2 3 4 5; do
    /usr/bin/time -f "%e %U %M" -o "$work/t" $tool "$cubin" >"$work/out.txt" 2>&1
    echo "$(cat "$work/t")"
  done | awk -v t="$tool" '{w = w " " $1; u = u " " $2; m = $3} END {print t ": wall" w "; user" u "; " m " KiB"}' | tee -a "$summary"
  cp "$work/out.txt" "$out/$(echo "$tool" | tr ' ' '_' | cut -c1-40).txt"
done
cp "$summary" "$out/"
