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
hw_start_syncspin
focus="cuda kernel 0 block 0,0,0 thread 0,0,0"
for r in 1 2; do
  hw_stamped_cuda_gdb "plain-$r" -ex "$hw_stamp" -ex "attach $pid" -ex "$hw_stamp" -ex "$focus" -ex "$hw_stamp" \
    -ex 'x/4i $pc' -ex "$hw_stamp" -ex detach
  hw_stamped_cuda_gdb "cubin-first-$r" -ex "$hw_stamp" -ex "file $src/tiny.cubin" -ex "$hw_stamp" \
    -ex "x/4i tiny_kernel" -ex "$hw_stamp" -ex "attach $pid" -ex "$hw_stamp" -ex "$focus" -ex "$hw_stamp" \
    -ex 'x/4i $pc' -ex "$hw_stamp" -ex detach
  hw_stamped_cuda_gdb "bytes-$r" -ex "$hw_stamp" -ex "attach $pid" -ex "$hw_stamp" -ex "$focus" -ex "$hw_stamp" \
    -ex 'x/96xb $pc-32' -ex "$hw_stamp" -ex 'dump binary memory '"$work"'/window.bin $pc-256 $pc+128' \
    -ex "$hw_stamp" -ex detach
done
sed -n '/x\/4i tiny_kernel/,+6p;/tiny_kernel/p' "$work/cubin-first-1.log" | head -8 | tee -a "$summary"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
t0=$(date +%s%N)
nvdisasm --binary "SM$cc" -hex "$work/window.bin" >"$work/window.sass" 2>&1
say "nvdisasm --binary SM$cc: $(hw_ms "$t0") ms, $(wc -l <"$work/window.sass") lines"
head -30 "$work/window.sass" | tee -a "$summary"
kill -9 "$pid" 2>/dev/null
tar czf "$out/dwarm.tar.gz" -C "$work" . 2>/dev/null
