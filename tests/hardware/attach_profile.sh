#!/usr/bin/env bash
# Where cuda-gdb's attach to a PyTorch process spends the stop, and whether symbols read before
# the attach (rocplay's preload: `add-symbol-file LIB -o BASE` for each mapped library) are
# reused by it. Device-side, as root; ROCPLAY=path to rocplay (its recording lists the preload).
# Each way is plain `cuda-gdb -batch` with `maint set per-command time on`, timed from outside
# by mi_drive.py (stop = window the target's main thread was seen stopped). Writes
# $OUT/profile.txt and $OUT/profile.tar.gz.
#
#   raw            attach, detach
#   twice          no attach: add-symbol-file libtorch_cuda.so twice (is the second one free?)
#   ltc+attach     add-symbol-file libtorch_cuda.so, then attach (does the attach get cheaper?)
#   all+attach     the whole preload, then attach (rocplay as of 2026-11-22)
#   all+nosolib    the whole preload, `set auto-solib-add off`, attach, every thread's backtrace
#   fast           `set auto-solib-add off` alone, attach, every thread's backtrace
#   sample         raw attach, cuda-gdb's own stacks sampled by gdb during it (when gdb exists)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/hw-out}
work=/tmp/hw-prof
src=/home/dev/repro
rm -rf "$work" && mkdir -p "$work" "$src" "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
drive="python3 $here/mi_drive.py"
rocplay=${ROCPLAY:?set ROCPLAY}
report=$work/profile.txt
say() { echo "$*" | tee -a "$report"; }
save() { tar czf "$out/profile.tar.gz" -C "$work" . 2>/dev/null; cp "$report" "$out/"; }

cp "$here/torch_item_hang.py" "$src/"
CUDA_MODULE_LOADING=LAZY python3 "$src/torch_item_hang.py" >"$work/torch.out" 2>&1 &
launcher=$!
pid=
for _ in $(seq 1 600); do
  pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$work/torch.out" | head -1)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { say "torch did not get ready"; tail -5 "$work/torch.out"; exit 1; }
sleep 1
say "torch pid $pid"

# One rocplay run: warms the page cache, and its recording holds the preload commands.
"$rocplay" run hang-triage --pid "$pid" --debugger cuda-gdb --record "$work/warm.rec" \
  --format json --output "$work/warm.json" --quiet --allow-unsafe-commands >/dev/null 2>&1
python3 - "$work/warm.rec" "$work/preload.gdb" <<'EOF'
import re, sys
out = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if not line.startswith("> "):
        continue
    cmd = re.sub(r"^\d+", "", line.split(" ", 2)[2].rstrip("\n"))
    if cmd.startswith("-file-exec-and-symbols "):
        out.append("file " + cmd.split(" ", 1)[1])
    elif "add-symbol-file" in cmd:
        out.append(cmd[cmd.index("add-symbol-file"):].rstrip('"'))
    elif cmd.startswith("-target-attach"):
        break
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF
ltc=$(grep -m1 '/libtorch_cuda.so ' "$work/preload.gdb")
say "preload: $(wc -l <"$work/preload.gdb") commands; libtorch_cuda: ${ltc:-none}"

way() { # label cuda-gdb-args...
  local label=$1; shift
  $drive wrap --pid "$pid" --scenario "$label" --times "$work/times.jsonl" --log "$work/$label.log" \
    --timeout 120 -- cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" \
    -iex "maint set per-command time on" "$@" >/dev/null
  local stop
  stop=$(tail -1 "$work/times.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("stop_window_s"), r.get("total_s"))')
  say "== $label: stop(outside) total = $stop"
  # The commands' own times, and what tells reuse apart (bfds, unwinding).
  grep -E 'Command execution time|^ *[0-9a-f]+ +[0-9]+ +[0-9]+ .*libtorch_cuda|Unable to access|cudaStreamSynchronize|_local_scalar_dense' \
    "$work/$label.log" | head -20 | sed 's/^/   /' | tee -a "$report"
}
bt="thread apply all bt 30"
way raw -ex "attach $pid" -ex detach
way twice -ex "$ltc" -ex "$ltc" -ex "maint info bfds"
way ltc+attach -ex "$ltc" -ex "attach $pid" -ex "maint info bfds" -ex detach
way all+attach -x "$work/preload.gdb" -ex "attach $pid" -ex detach
way all+nosolib -x "$work/preload.gdb" -ex "set auto-solib-add off" -ex "attach $pid" -ex "$bt" \
  -ex detach
way fast -iex "set auto-solib-add off" -ex "attach $pid" -ex "$bt" -ex detach
save

if command -v gdb >/dev/null; then
  cuda-gdb -batch -nx -q -ex "attach $pid" -ex detach >"$work/sample-target.log" 2>&1 &
  cg=$!
  for at in 2 4 6 8; do
    sleep 2
    kill -0 "$cg" 2>/dev/null || break
    timeout 30 gdb -batch -nx -q -p "$cg" -ex "thread apply all bt 25" >"$work/sample-$at.log" 2>&1
    say "== sample at ~${at}s: $(grep -c '^#' "$work/sample-$at.log") frames"
    grep '^#' "$work/sample-$at.log" | head -25 | cut -c1-160 | sed 's/^/   /' | tee -a "$report"
  done
  wait "$cg"
else
  say "== sample: no gdb on this machine"
fi
say "state after: $(awk '{print $3}' /proc/"$pid"/stat)"
kill -9 "$pid" "$launcher" 2>/dev/null
save
