#!/bin/bash
# Runs fr_hang.py's four scenarios on two GPUs, one after another, each ending by itself when
# PyTorch's watchdog fires (FR_HANG_TIMEOUT_S, 25 s by default; about 45 s a scenario, under
# 4 minutes in all). Usage: bash run_all.sh OUTDIR [SCENARIO...]
# Each OUTDIR/SCENARIO/ gets: fr_rank{0,1} (the watchdog's pickle dumps), ondemand_hang_rank*.pkl
# and .json (dumped 8 s into the hang), nccl.HOST.PID.log (NCCL_DEBUG=INFO), torchrun.log (the
# ranks' stderr with the watchdog's timeout lines), ras_status.txt/.json and ncclras.* (RAS asked
# 8 s into the hang), env.txt.
# With ROCPLAY set, rocplay also looks at both ranks 12 s into the hang (`run hang-triage
# --workers-of TORCHRUN --debugger cuda-gdb`): gdb-rank0.rec, gdb-rank1.rec and triage.json beside
# the rest, the watchdog's timeout raised to 45 s so that the look ends before it fires.
set -u
OUT=${1:?usage: run_all.sh OUTDIR [SCENARIO...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
SCENARIOS=${*:-missing_rank op_mismatch size_mismatch order_deadlock}
for sc in $SCENARIOS; do
  d="$OUT/$sc"
  mkdir -p "$d"
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' >"$d/env.txt" 2>&1
  nvidia-smi -L >>"$d/env.txt" 2>&1
  echo "== $sc $(date -u +%T)"
  TORCH_NCCL_TRACE_BUFFER_SIZE=2000 \
  TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
  TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$d/fr_rank" \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,COLL \
  NCCL_DEBUG_FILE="$d/nccl.%h.%p.log" \
  FR_HANG_TIMEOUT_S=$([ -n "${ROCPLAY:-}" ] && echo 45 || echo 25) \
  timeout -k 5 120 torchrun --nproc-per-node 2 --master-port 29517 \
    "$HERE/fr_hang.py" "$sc" "$d" >"$d/torchrun.log" 2>&1 &
  job=$!
  if [ -n "${ROCPLAY:-}" ]; then
    for _ in $(seq 1 600); do
      grep -q 'scenario .* begins' "$d/torchrun.log" 2>/dev/null && break
      sleep 0.1
    done
    sleep 12
    torchrun_pid=$(pgrep -P "$job" | head -1) # $job is timeout's; torchrun is its child
    timeout 60 "$ROCPLAY" run hang-triage --workers-of "$torchrun_pid" --debugger cuda-gdb \
      --record "$d/gdb-rank%r.rec" --format json -o "$d/triage.json" >"$d/rocplay.log" 2>&1
    echo "   rocplay exit $? $(date -u +%T)"
  fi
  wait "$job"
  echo "   exit $? $(date -u +%T); files: $(ls "$d" | tr '\n' ' ')"
done
