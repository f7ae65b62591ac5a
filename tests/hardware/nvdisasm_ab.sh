#!/usr/bin/env bash
# Issue 46: which nvdisasm options finish sooner on fixtures/cuda-fatbin/native.cubin? WAYS
# (default "whole fun"): `whole` is `-c`, `fun` is `-c -fun 12` (one function), `ndf` is `-c -ndf`
# (no dataflow analysis after the disassembly), `funndf` both. Alternating, ROUNDS (default 15)
# of each; medians, user CPU too; each way's listing is kept and compared with `whole`'s.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-nvdab
cubin=$here/../../fixtures/cuda-fatbin/native.cubin
read -r -a ways <<<"${WAYS:-whole fun}"
args_of() {
  case $1 in
  whole) echo "-c" ;;
  fun) echo "-c -fun 12" ;;
  ndf) echo "-c -ndf" ;;
  funndf) echo "-c -ndf -fun 12" ;;
  esac
}
for ((r = 0; r < ${ROUNDS:-15}; ++r)); do
  for way in "${ways[@]}"; do
    read -r -a args <<<"$(args_of "$way")"
    t0=$(date +%s%N)
    /usr/bin/time -f "%U" -o "$work/cpu" nvdisasm "${args[@]}" "$cubin" >"$work/$way.sass" 2>&1
    echo "$way $(hw_ms "$t0") $(cat "$work/cpu")" >>"$work/times"
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for way in "${ways[@]}"; do
  say "$way ($(args_of "$way")): median $(grep "^$way " "$work/times" | cut -d' ' -f2 | median) ms, user $(grep "^$way " "$work/times" | cut -d' ' -f3 | median) s; all $(grep "^$way " "$work/times" | cut -d' ' -f2 | tr '\n' ' ')"
  [ "$way" = whole ] || say "  listing against whole's: $(diff "$work/whole.sass" "$work/$way.sass" | grep -c '^[<>]') lines differ"
done
diff "$work/whole.sass" "$work/ndf.sass" 2>/dev/null | head -20 | tee -a "$summary"
cp "$summary" "$out/nvdisasm-ab.txt"
cp "$work"/*.sass "$out/" 2>/dev/null
