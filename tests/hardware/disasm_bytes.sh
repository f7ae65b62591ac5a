#!/usr/bin/env bash
# Issue 14: can the stop read the window's instruction bytes (the @code storage specifier), or
# find the device ELF cuda-gdb holds, so that the SASS is decoded after the detach (nvdisasm)
# rather than by cuda-gdb's first, 0.5-0.6 s disassembly inside the stop?
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-dbytes
hw_nvcc syncspin
hw_start_syncspin
focus="cuda kernel 0 block 0,0,0 thread 0,0,0"
for r in 1 2; do
  hw_stamped_cuda_gdb "code-$r" -ex "$hw_stamp" -ex "attach $pid" -ex "$hw_stamp" -ex "$focus" -ex "$hw_stamp" \
    -ex 'info symbol $pc' -ex 'print $pc' -ex "$hw_stamp" \
    -ex 'x/64xb (@code char *)($pc-32)' -ex "$hw_stamp" \
    -ex 'dump binary memory '"$work"'/code.bin (@code char *)($pc-256) (@code char *)($pc+128)' -ex "$hw_stamp" \
    -ex 'output/x *(@code unsigned char (*)[32])($pc)' -ex 'echo \n' -ex "$hw_stamp" \
    -ex 'x/64xb $pc-32' -ex "$hw_stamp" \
    -ex 'shell find /tmp /var/tmp ${TMPDIR:-/tmp} -maxdepth 4 \( -name "*cubin*" -o -name "*elf*" -o -path "*cuda-dbg*" \) 2>/dev/null | head -30' \
    -ex "$hw_stamp" -ex 'x/4i $pc' -ex "$hw_stamp" -ex detach
done
sed -n '/info symbol/,$p' "$work/code-1.log" | head -80 | tee -a "$summary"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
if [ -s "$work/code.bin" ]; then
  say "code.bin: $(wc -c <"$work/code.bin") bytes, $(tr -d '\0' <"$work/code.bin" | wc -c) not zero"
  t0=$(date +%s%N)
  nvdisasm --binary "SM$cc" -hex "$work/code.bin" >"$work/code.sass" 2>&1
  say "nvdisasm --binary SM$cc: $(hw_ms "$t0") ms, $(wc -l <"$work/code.sass") lines"
  head -40 "$work/code.sass" | tee -a "$summary"
fi
kill -9 "$pid" 2>/dev/null
tar czf "$out/dbytes.tar.gz" -C "$work" . 2>/dev/null
