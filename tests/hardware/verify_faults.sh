#!/usr/bin/env bash
# `rocplay launch --verify` with cuda-gdb on an NVIDIA GPU (issue 48): a two-stream race (must read
# verify-async-race, consume the victim of the host's reuse of its table), the same kernel with a static fault
# (verify-static-fault), and the seeds' PyTorch index_copy_ out of bounds (verify-static-fault,
# its Python line named). Each run recorded; `postmortem DIR` of each must give the same verdict.
# Results in $OUT/verify.tar.gz and $OUT/summary.txt.
#   ROCPLAY=path/to/rocplay tests/hardware/verify_faults.sh [race|static|index_copy ...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
hw_start /tmp/hw-verify
rocplay=$(hw_rocplay)
[ -z "$rocplay" ] && { tar czf "$out/verify.tar.gz" -C "$work" .; exit 1; }
cp "$here/stream_race.cu" "$here/index_copy_oob.py" "$src/"
(cd "$src" && nvcc -g -G -arch=native -o stream_race stream_race.cu) >"$work/build.log" 2>&1 ||
  say "stream_race: build FAILED"
verify() { # name, program words...
  local name=$1
  shift
  say "== $name"
  (cd "$src" && timeout 500 "$rocplay" launch --verify --debugger cuda-gdb --timeout 120s \
    --record "$work/$name.runs" --format json -o "$work/$name.json" -- "$@" \
    >"$work/$name.stdout" 2>"$work/$name.stderr")
  say "exit $?"
  python3 - "$work/$name.json" <<'PY' | tee -a "$summary"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON report:", e); sys.exit(0)
v = (j.get("incident") or {}).get("verification") or {}
print("verdict:", (v.get("verdict") or {}).get("id"), "|", (v.get("verdict") or {}).get("title"))
for r in v.get("runs", []):
    print("  run", r["index"], r["experiment"], r["outcome"], r.get("fault"), r.get("launch_line"),
          r.get("concurrent"), "%.2fs" % r["seconds"])
PY
  (cd "$src" && "$rocplay" postmortem "$work/$name.runs" >"$work/$name.postmortem.txt" 2>&1)
  say "postmortem of the runs: exit $? ($(grep -m1 INCIDENT "$work/$name.postmortem.txt"))"
  say "processes left: $(pgrep -f "$src/" | grep -v "^$$\$" | tr '\n' ' ')"
}
for env in "" CUDA_LAUNCH_BLOCKING=1; do # the programs alone, no debugger
  say "alone ${env:-as given}: $(cd "$src" && env $env ./stream_race 2>&1 | tail -1)," \
    "static: $(cd "$src" && env $env ./stream_race static 2>&1 | tail -1)," \
    "kernels: $(cd "$src" && env $env ./stream_race kernels 2>&1 | tail -1)"
done
# The race between two kernels under raw cuda-gdb: does `consume` run while `produce` spins?
raw_kernels() { # label env-words... -- cuda-gdb-args...
  local label=$1 envs=() t0
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  t0=$(date +%s%N)
  (cd "$src" && timeout 120 env "${envs[@]}" cuda-gdb -q -nx -batch "$@" -ex run -ex bt \
    -ex 'info cuda kernels' -ex kill --args ./stream_race kernels >"$work/raw-$label.log" 2>&1)
  say "raw cuda-gdb $label: $(hw_ms "$t0") ms, $(grep -c 'CUDA Exception\|Illegal Address' \
    "$work/raw-$label.log") exception lines, $(grep -m1 -o 'stream_race kernels: .*' "$work/raw-$label.log")"
}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(race static index_copy)
for c in "${cases[@]}"; do
  case $c in
  race) verify race ./stream_race ;;
  static) verify static ./stream_race static ;;
  index_copy) verify index_copy python3 ./index_copy_oob.py ;;
  kernels) verify kernels ./stream_race kernels ;;
  raw_kernels)
    raw_kernels default --
    raw_kernels default-2 --
    raw_kernels spin8s SPIN_MS=8000 --
    raw_kernels eager CUDA_MODULE_LOADING=EAGER --
    raw_kernels preempt -- -iex 'set cuda software_preemption on'
    raw_kernels no-events -- -iex 'set cuda kernel_events none' -iex 'set cuda context_events off' ;;
  *) say "unknown case $c" ;;
  esac
done
tar czf "$out/verify.tar.gz" -C "$work" .
cp "$summary" "$out/"
