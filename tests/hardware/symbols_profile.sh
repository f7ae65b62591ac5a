#!/usr/bin/env bash
# Issue 13's PyTorch cost: cuda-gdb spends most of a PyTorch attach reading .symtab of a few huge
# libraries (libtorch_cuda.so: 235,633 entries). Would copies without .symtab (`objcopy
# --strip-all`, .dynsym and .eh_frame kept) do for the preload? For each library the target maps:
# its .symtab size; for the big ones the copy's cost and size; then the whole preload, full and
# with the copies, each followed by `set auto-solib-add off`, the attach and every thread's
# backtrace: the time, and which frames lose their names. ROCPLAY=path. Output in $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-sym
export NCCL_NVLS_ENABLE=0
rocplay=${ROCPLAY:?set ROCPLAY}
cp "$here/torch_item_hang.py" "$src/"
CUDA_MODULE_LOADING=LAZY python3 "$src/torch_item_hang.py" >"$work/torch.out" 2>&1 &
pid=$(hw_ready_pid "$work/torch.out" 60)
[ -n "$pid" ] || { say "torch did not get ready"; tail -5 "$work/torch.out"; exit 1; }
sleep 1
"$rocplay" run hang-triage --pid "$pid" --debugger cuda-gdb --samples 1 --record "$work/warm.rec" \
  --format json --output "$work/warm.json" --quiet >/dev/null 2>&1
grep -o 'add-symbol-file [^ ]* -o 0x[0-9a-f]*' "$work/warm.rec" | sort -u >"$work/preload.gdb"
exe=$(readlink "/proc/$pid/exe")
say "preload: $(wc -l <"$work/preload.gdb") libraries"
mkdir -p "$work/copies"
: >"$work/preload-copies.gdb"
while read -r _ lib _ base; do
  hex=$(readelf -S -W "$lib" 2>/dev/null |
    sed -n 's/.*\] \.symtab  *SYMTAB  *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\) .*/\1/p')
  n=$(( 16#${hex:-0} / 24 ))
  echo "$n $lib" >>"$work/symtab-sizes.txt"
  if [ "$n" -gt 50000 ]; then
    t0=$(date +%s%N)
    copy="$work/copies/$(basename "$lib")"
    objcopy --strip-all -R .nv_fatbin -R __nv_relfatbin "$lib" "$copy"
    say "copy $(basename "$lib"): .symtab $n, objcopy $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(( $(stat -c %s "$lib") >> 20 )) -> $(( $(stat -c %s "$copy") >> 20 )) MiB"
    echo "add-symbol-file $copy -o $base" >>"$work/preload-copies.gdb"
  else
    echo "add-symbol-file $lib -o $base" >>"$work/preload-copies.gdb"
  fi
done <"$work/preload.gdb"
sort -rn "$work/symtab-sizes.txt" | head -8 | sed 's/^/   /' | tee -a "$summary"
way() { # label preload-file
  local t0 t1 t2
  t0=$(date +%s%N)
  cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" -ex "file $exe" \
    -x "$2" -ex "set auto-solib-add off" -ex "echo ATTACH\n" -ex "attach $pid" \
    -ex "thread apply all bt 30" -ex detach >"$work/$1.log" 2>&1
  t1=$(date +%s%N)
  say "== $1: total $(( (t1 - t0) / 1000000 )) ms, frames $(grep -c '^#' "$work/$1.log"), frames without a name $(grep '^#' "$work/$1.log" | grep -c ' in ?? ')"
}
for round in 1 2; do
  way "full-$round" "$work/preload.gdb"
  way "copies-$round" "$work/preload-copies.gdb"
done
# Frames whose names the copies lose (the thread with the .item()).
diff <(grep '^#' "$work/full-2.log" | sed 's/0x[0-9a-f]*//g') \
  <(grep '^#' "$work/copies-2.log" | sed 's/0x[0-9a-f]*//g') | head -40 >"$work/lost.txt"
head -30 "$work/lost.txt" | cut -c1-200 | tee -a "$summary"
grep -A16 '^Thread 1 ' "$work/copies-2.log" | cut -c1-200 | tee -a "$summary" | cut -c1-200 | tee -a "$summary"
say "state after: $(awk '{print $3}' /proc/"$pid"/stat)"
kill -9 "$pid" 2>/dev/null
rm -rf "$work/copies"
tar czf "$out/sym.tar.gz" -C "$work" . 2>/dev/null
