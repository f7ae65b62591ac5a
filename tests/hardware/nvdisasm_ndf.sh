#!/usr/bin/env bash
# Issue 46: does nvdisasm's `-ndf` (no dataflow analysis after the disassembly) change the listing
# rocplay reads? On the hardware scenarios' kernels (each .cu here built to an sm_90 cubin) and
# on a few cubins of PyTorch's own libraries (cuobjdump -xelf), `nvdisasm -c` against
# `nvdisasm -c -ndf`: time, and the lines that differ (the first few shown).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-ndf
mkdir -p "$work/cubins"
for cu in "$here"/*.cu; do
  name=$(basename "$cu" .cu)
  (cd "$here" && nvcc -cubin -arch=sm_90 -O2 -lineinfo -std=c++17 -o "$work/cubins/$name.cubin" "$cu") \
    >/dev/null 2>&1 || say "$name: does not build as a cubin"
done
torchlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
if [ -n "$torchlib" ] && [ -f "$torchlib/libtorch_cuda.so" ]; then
  mkdir -p "$work/torch"
  (cd "$work/torch" && timeout 120 cuobjdump -xelf all "$torchlib/libtorch_cuda.so" >/dev/null 2>&1)
  # A few sm_90 cubins of different sizes, the largest first.
  ls -S "$work"/torch/*sm_90*.cubin 2>/dev/null | awk 'NR==1 || NR==50 || NR==200 || NR==400' |
    while read -r f; do mv "$f" "$work/cubins/torch-$(basename "$f")"; done
  say "libtorch_cuda.so: $(ls "$work/torch" | wc -l) device files"
  rm -rf "$work/torch"
fi
total=0 differ=0
for f in "$work"/cubins/*.cubin; do
  n=$(basename "$f")
  t0=$(date +%s%N); nvdisasm -c "$f" >"$work/a.sass" 2>&1; ta=$(hw_ms "$t0")
  t0=$(date +%s%N); nvdisasm -c -ndf "$f" >"$work/b.sass" 2>&1; tb=$(hw_ms "$t0")
  d=$(diff "$work/a.sass" "$work/b.sass" | grep -c '^[<>]')
  total=$((total + 1)); [ "$d" -gt 0 ] && differ=$((differ + 1))
  say "$n: $(stat -c %s "$f") bytes, $(grep -c '^ *[/]\*[0-9a-f]*\*/' "$work/a.sass") instructions; -c $ta ms, -c -ndf $tb ms; $d lines differ"
  if [ "$d" -gt 0 ]; then diff "$work/a.sass" "$work/b.sass" | head -8 | cut -c1-160 | tee -a "$summary"; fi
done
say "$differ of $total cubins decode differently with -ndf"
cp "$summary" "$out/nvdisasm-ndf.txt"
