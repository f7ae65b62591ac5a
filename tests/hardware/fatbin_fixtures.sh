#!/usr/bin/env bash
# The .nv_fatbin sections of syncspin.cu as nvcc builds it (for the GPU it runs on, for two
# architectures, and with every entry compressed), and the cubins cuobjdump extracts from them,
# for tests/unit/codeobj's fatbin reader. The sections come back in $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-fatbin
cp "$here/syncspin.cu" "$here/common.cuh" "$src/"
cd "$src"
build() { # name nvcc-args...
  local name=$1; shift
  nvcc -O2 -g -lineinfo -std=c++17 "$@" -o "$name" syncspin.cu -lpthread >"$work/$name.log" 2>&1 || { tail "$work/$name.log"; return; }
  objcopy -O binary --only-section=.nv_fatbin "$name" "$out/$name.nv_fatbin"
  mkdir -p "$work/$name.x" && (cd "$work/$name.x" && cuobjdump -xelf all "$src/$name" >/dev/null)
  say "$name: .nv_fatbin $(stat -c %s "$out/$name.nv_fatbin") bytes; $(cuobjdump -lelf "$name" | tr '\n' ' ')"
  for c in "$work/$name.x"/*; do say "  $(basename "$c") $(stat -c %s "$c") $(sha256sum <"$c" | cut -c1-16)"; done
  od -A d -t x4 -N 96 "$out/$name.nv_fatbin" | tee -a "$summary"
}
build native -arch=native
build two -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
build compressed -arch=native -Xfatbin -compress-all
cp "$work/native.x/"*.cubin "$out/native.cubin"
cp "$summary" "$out/"
# nvdisasm's listing of the cubin as linked (offsets), and of cuda-gdb's copy of the same module
# loaded in a running syncspin (its addresses), for tests/unit/playbook/test_deferred_code.cpp.
nvdisasm -c "$out/native.cubin" >"$out/native.sass"
"$src/native" >"$work/syncspin.out" 2>&1 &
pid=$(hw_ready_pid "$work/syncspin.out")
sleep 1
cat >"$work/keep.py" <<'PY'
import os, re, gdb
s = gdb.execute("info symbol $pc", to_string=True)
print("INFO-SYMBOL", s.strip())
m = re.search(r" in section (\S+) of (\S+)\s*$", s)
if m:
    os.link(m.group(2), os.environ["KEEP"])
PY
KEEP=$out/kept.elf cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" \
  -ex "attach $pid" -ex "source $work/keep.py" -ex detach 2>&1 | grep INFO-SYMBOL | tee -a "$summary"
kill -9 "$pid"
nvdisasm -c "$out/kept.elf" >"$out/kept.sass"
cp "$summary" "$out/"
