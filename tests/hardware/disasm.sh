#!/usr/bin/env bash
# Records a real cuda-gdb `-data-disassemble` transcript for rocplay's fixtures: the syncspin
# scenario (threads spinning in start_sync on a flag that never arrives), cuda-gdb attached over
# MI by mi_drive.py with disasm.cmds, then the scenario killed. Output in $OUT (default
# /tmp/hw-out): disasm.mi (raw MI), disasm.rec (rocplay recording), disasm.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/hw-out}
src=/home/dev/repro
mkdir -p "$out" "$src"
cp "$here"/syncspin.cu "$here"/common.cuh "$src"/
(cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o syncspin syncspin.cu -lpthread) \
  >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
"$src/syncspin" >"$out/syncspin.out" 2>&1 &
launcher=$!
pid=
for _ in $(seq 1 300); do
  pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$out/syncspin.out" | head -1)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "syncspin did not get ready"; cat "$out/syncspin.out"; exit 1; }
sleep 2
python3 "$here/mi_drive.py" record --pid "$pid" --scenario disasm --commands "$here/disasm.cmds" \
  --out "$out/disasm.rec" --raw "$out/disasm.mi" >"$out/disasm.log" 2>&1
echo "record exit $?"
grep -c "asm_insns" "$out/disasm.mi"
state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
echo "target state after detach: ${state:-gone}"
kill -9 "$launcher" "$pid" 2>/dev/null
wait 2>/dev/null
tail -5 "$out/disasm.log"
