#!/usr/bin/env bash
# Where cuda-gdb's two fixed costs go (issues 13 and 14), with plain `cuda-gdb -batch` and
# `maint set per-command time on`. Device-side, as root. Writes $OUT/cost/summary.txt and a tar.
#
#   disasm   syncspin: the first device disassembly after an attach (cuda-gdb's first-time cost),
#            per way: default, each `set cuda disassemble_*` value this cuda-gdb offers; an
#            nvdisasm wrapper first on PATH logs whether cuda-gdb runs nvdisasm and for how long.
#   symbols  PyTorch's libtorch_cuda.so: what it holds (sections, symbol counts) and what
#            `add-symbol-file` costs whole, with one worker thread, and for copies without its
#            device code (`objcopy -R .nv_fatbin`) or without .symtab (`--strip-all`).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-cost
mkdir -p "$work/bin"
cat >"$work/bin/gdbq" <<'EOF2'
#!/bin/sh
exec cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" "$@"
EOF2
chmod +x "$work/bin/gdbq"
gdbq() { "$work/bin/gdbq" "$@"; }
timed() { # label cmd...: wall/user/sys of the whole command, then its per-command times
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/$label.time" "$@" >"$work/$label.log" 2>&1
  say "== $label: wall user sys = $(cat "$work/$label.time")"
  grep -E 'Command execution time|rror|nvdisasm' "$work/$label.log" | head -12 | sed 's/^/   /' |
    tee -a "$summary"
}

# --- disasm -------------------------------------------------------------------------------------
real_nvdisasm=$(command -v nvdisasm || true)
say "nvdisasm: ${real_nvdisasm:-not on PATH}"
if [ -n "$real_nvdisasm" ]; then
  cat >"$work/bin/nvdisasm" <<EOF
#!/bin/sh
t0=\$(date +%s%N)
"$real_nvdisasm" "\$@"
rc=\$?
echo "nvdisasm \$* rc=\$rc \$(( (\$(date +%s%N) - t0) / 1000000 )) ms" >>"$work/nvdisasm.calls"
exit \$rc
EOF
  chmod +x "$work/bin/nvdisasm"
fi
hw_nvcc syncspin
"$src/syncspin" >"$work/syncspin.out" 2>&1 &
pid=$(hw_ready_pid "$work/syncspin.out")
[ -n "$pid" ] || { say "syncspin did not get ready"; exit 1; }
sleep 1
gdbq -ex "help set cuda" >"$work/help-set-cuda.txt"
gdbq -ex "show cuda" >"$work/show-cuda.txt"
grep -i disas "$work/help-set-cuda.txt" "$work/show-cuda.txt" | tee -a "$summary"
focus="cuda kernel 0 block 0,0,0 thread 0,0,0"
disasm_way() { # label commands-after-focus...
  local label=$1; shift
  local cmds=()
  for c in "$@"; do cmds+=(-ex "$c"); done
  : >"$work/nvdisasm.calls"
  PATH="$work/bin:$PATH" timed "$label" "$work/bin/gdbq" -ex "attach $pid" -ex "$focus" \
    "${cmds[@]}" -ex detach
  sed 's/^/   /' "$work/nvdisasm.calls" | head -5 | tee -a "$summary"
}
for round in 1 2 3; do
  disasm_way "focus-only-$round"
  disasm_way "x4i-$round" 'x/4i $pc'
  disasm_way "infoline-$round" 'info line *$pc'
  disasm_way "x4i-from-memory-$round" "set cuda disassemble_from device_memory" 'x/4i $pc'
done
say "tools: $(for t in perf strace ltrace; do command -v $t >/dev/null && printf '%s ' $t; done)"
if command -v perf >/dev/null; then
  perf record -g -o "$work/perf.data" -- "$work/bin/gdbq" -ex "attach $pid" -ex "$focus" \
    -ex 'x/4i $pc' -ex detach >"$work/perf-run.log" 2>&1
  perf report -i "$work/perf.data" --stdio --no-children --sort dso,symbol 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -60 >"$work/perf-report.txt"
  perf report -i "$work/perf.data" --stdio --no-children --sort dso 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -20 | tee -a "$summary"
  rm -f "$work/perf.data"
fi
ls "$(dirname "$(readlink -f "$(command -v cuda-gdb)")")" >"$work/cuda-gdb-dir.txt" 2>&1
ldd "$(readlink -f "$(command -v cuda-gdb)")" >>"$work/cuda-gdb-dir.txt" 2>&1
state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
say "syncspin state after the ways: ${state:-gone}"
kill -9 "$pid" 2>/dev/null

# --- symbols ------------------------------------------------------------------------------------
ltc=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')
say "libtorch_cuda.so: $(stat -c %s "$ltc") bytes"
readelf -S -W "$ltc" | awk '$2 ~ /^\./ || $3 ~ /^\./' | sort -k6 -r | head -40 >"$work/sections.txt"
readelf -S -W "$ltc" >"$work/sections-all.txt"
python3 - "$work/sections-all.txt" <<'EOF' | tee -a "$summary"
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m:
        rows.append((int(m.group(2), 16), m.group(1)))
for size, name in sorted(rows, reverse=True)[:10]:
    print(f"   {name:28} {size / 2**20:9.1f} MiB")
EOF
say "   .symtab entries $(readelf -s -W "$ltc" 2>/dev/null | grep -c ': ')"
say "   .dynsym entries $(readelf --dyn-syms -W "$ltc" 2>/dev/null | grep -c ': ')"
timed ltc-first "$work/bin/gdbq" -ex "add-symbol-file $ltc"
timed ltc-second "$work/bin/gdbq" -ex "add-symbol-file $ltc"
timed ltc-1thread "$work/bin/gdbq" -ex "maint set worker-threads 0" -ex "add-symbol-file $ltc"
if command -v perf >/dev/null; then
  perf record -g -o "$work/perf-ltc.data" -- "$work/bin/gdbq" -ex "add-symbol-file $ltc" \
    >/dev/null 2>&1
  perf report -i "$work/perf-ltc.data" --stdio --no-children --sort dso,symbol 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -60 >"$work/perf-ltc-report.txt"
  rm -f "$work/perf-ltc.data"
fi
if command -v objcopy >/dev/null; then
  objcopy -R .nv_fatbin -R __nv_relfatbin "$ltc" "$work/ltc-nofatbin.so" &&
    timed ltc-nofatbin "$work/bin/gdbq" -ex "add-symbol-file $work/ltc-nofatbin.so"
  objcopy --strip-all "$ltc" "$work/ltc-stripped.so" &&
    timed ltc-stripped "$work/bin/gdbq" -ex "add-symbol-file $work/ltc-stripped.so"
  rm -f "$work"/ltc-*.so
else
  say "objcopy: not here"
fi
tar czf "$out/cost.tar.gz" -C "$work" --exclude='*.so' . 2>/dev/null
cp "$summary" "$out/cost-summary.txt"
