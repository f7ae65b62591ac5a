#!/usr/bin/env bash
# Issue 14: is cuda-gdb's first device disassembly (0.5-0.6 s of CPU inside the stop) a cost per
# process, which a disassembly before the attach could pay, or per module? And what reading the
# window's raw bytes in the stop and disassembling them afterwards (nvdisasm --binary) costs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-dwarm
hw_nvcc syncspin
cat >"$src/tiny.cu" <<'EOF'
__global__ void tiny_kernel(int* p) { if (p[threadIdx.x] == 0) p[threadIdx.x] = 1; }
EOF
(cd "$src" && nvcc -arch=native -cubin -o tiny.cubin tiny.cu) >"$work/build.log" 2>&1 ||
  { tail "$work/build.log"; exit 1; }
"$src/syncspin" >"$work/syncspin.out" 2>&1 &
pid=$(hw_ready_pid "$work/syncspin.out")
[ -n "$pid" ] || { say "syncspin did not get ready"; exit 1; }
sleep 1
focus="cuda kernel 0 block 0,0,0 thread 0,0,0"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
stamp='python import time; print("T", time.monotonic())'
way() { # label cuda-gdb-args... ; prints the times between the T stamps
  local label=$1; shift
  local t0; t0=$(date +%s%N)
  cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" "$@" >"$work/$label.log" 2>&1
  say "== $label: $(ms "$t0") ms; stamps: $(grep '^T ' "$work/$label.log" | awk 'NR>1{printf "%.0f ", ($2-p)*1000} {p=$2}')"
  grep -iE "error|cannot|no symbol|unable" "$work/$label.log" | head -3 | sed 's/^/   /' | tee -a "$summary"
}
for r in 1 2; do
  way "plain-$r" -ex "$stamp" -ex "attach $pid" -ex "$stamp" -ex "$focus" -ex "$stamp" \
    -ex 'x/4i $pc' -ex "$stamp" -ex detach
  way "cubin-first-$r" -ex "$stamp" -ex "file $src/tiny.cubin" -ex "$stamp" \
    -ex "x/4i tiny_kernel" -ex "$stamp" -ex "attach $pid" -ex "$stamp" -ex "$focus" -ex "$stamp" \
    -ex 'x/4i $pc' -ex "$stamp" -ex detach
  way "bytes-$r" -ex "$stamp" -ex "attach $pid" -ex "$stamp" -ex "$focus" -ex "$stamp" \
    -ex 'x/96xb $pc-32' -ex "$stamp" -ex 'dump binary memory '"$work"'/window.bin $pc-256 $pc+128' \
    -ex "$stamp" -ex detach
done
sed -n '/x\/4i tiny_kernel/,+6p;/tiny_kernel/p' "$work/cubin-first-1.log" | head -8 | tee -a "$summary"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
t0=$(date +%s%N)
nvdisasm --binary "SM$cc" -hex "$work/window.bin" >"$work/window.sass" 2>&1
say "nvdisasm --binary SM$cc: $(ms "$t0") ms, $(wc -l <"$work/window.sass") lines"
head -30 "$work/window.sass" | tee -a "$summary"
kill -9 "$pid" 2>/dev/null
tar czf "$out/dwarm.tar.gz" -C "$work" . 2>/dev/null
