#!/usr/bin/env bash
# Issue 14: cuda-gdb keeps each device ELF it was given under /tmp/cuda-dbg/PID/session1/, and
# `info symbol $pc` names that file, the function's section and the PC's offset at no cost. Can
# rocplay keep the file (a hard link) in the stop and decode the window with nvdisasm after the
# detach, leaving cuda-gdb's first disassembly (0.5-0.6 s of CPU) out of the stop? Probes
# syncspin and the PyTorch hang: the costs, whether the file outlives the detach, nvdisasm's
# output forms (whole module, and one function by its .symtab index) and time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-delf
hw_nvcc syncspin
cat >"$work/keep.py" <<'PY'
import os, re, time, gdb
t0 = time.monotonic()
s = gdb.execute("info symbol $pc", to_string=True)
t1 = time.monotonic()
print("INFO-SYMBOL", repr(s), "ms", round((t1 - t0) * 1000, 2))
m = re.search(r" in section (\S+) of (\S+)\s*$", s)
if m:
    dest = os.environ["KEEP"]
    if os.path.exists(dest):
        os.unlink(dest)
    os.link(m.group(2), dest)
    print("LINKED", m.group(1), m.group(2), os.path.getsize(dest), "ms", round((time.monotonic() - t1) * 1000, 2))
    print("SESSIONDIR", os.path.dirname(m.group(2)))
PY
probe() { # label pid
  local label=$1 pid=$2 t0
  t0=$(date +%s%N)
  KEEP=$work/$label.elf cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" \
    -ex "attach $pid" -ex 'print $pc' -ex "source $work/keep.py" -ex detach \
    -ex 'python import os,glob; print("AFTER-DETACH", len(glob.glob("/tmp/cuda-dbg/*/session*/elf.*")))' \
    >"$work/$label.log" 2>&1
  say "== $label: $(hw_ms "$t0") ms"
  grep -E "INFO-SYMBOL|LINKED|AFTER-DETACH|^\\\$1" "$work/$label.log" | cut -c1-400 | tee -a "$summary"
  local sec; sec=$(sed -n 's/^LINKED \(\S*\) .*/\1/p' "$work/$label.log")
  local fun=${sec#.text.}
  [ -s "$work/$label.elf" ] || return
  say "after cuda-gdb exit: $(ls /tmp/cuda-dbg/*/session*/ 2>/dev/null | wc -l) files under /tmp/cuda-dbg"
  # -fun takes the function's .symtab index, not its name (13.0: "expected a number").
  local index
  index=$(readelf -sW "$work/$label.elf" | awk -v f="$fun" '$NF == f && / FUNC / {sub(":", "", $1); print $1; exit}')
  say "$fun: .symtab index ${index:-none}"
  for opts in "-c -fun $index" "-c -hex -fun $index" "-c -g -fun $index" "-c"; do
    t0=$(date +%s%N)
    nvdisasm $opts "$work/$label.elf" >"$work/$label.sass" 2>&1
    say "nvdisasm $opts: rc $? $(hw_ms "$t0") ms, $(wc -l <"$work/$label.sass") lines"
    [ "$opts" = "-c" ] || head -40 "$work/$label.sass" | cut -c1-160 | tee -a "$summary"
  done
}
hw_start_syncspin
probe syncspin "$pid"
probe syncspin2 "$pid"
kill -9 "$pid" 2>/dev/null
cp "$here/torch_item_hang.py" "$src/"
CUDA_MODULE_LOADING=LAZY python3 "$src/torch_item_hang.py" >"$work/torch.out" 2>&1 &
pid=$(hw_ready_pid "$work/torch.out" 120)
if [ -n "$pid" ]; then
  sleep 1
  probe torch "$pid"
  kill -9 "$pid" 2>/dev/null
else
  say "torch did not get ready: $(tail -3 "$work/torch.out")"
fi
tar czf "$out/delf.tar.gz" -C "$work" --exclude='*.elf' . 2>/dev/null
