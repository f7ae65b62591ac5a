#!/bin/bash
# Runs fr_hang.py's four scenarios on two GPUs, one after another, each ending by itself when
# PyTorch's watchdog fires (FR_HANG_TIMEOUT_S, 25 s by default; about 45 s a scenario, under
# 4 minutes in all). Usage: bash run_all.sh OUTDIR [SCENARIO...]
# Each OUTDIR/SCENARIO/ gets: fr_rank{0,1} (the watchdog's pickle dumps), ondemand_hang_rank*.pkl
# and .json (dumped 8 s into the hang), nccl.HOST.PID.log (NCCL_DEBUG=INFO), torchrun.log (the
# ranks' stderr with the watchdog's timeout lines), ras_status.txt/.json and ncclras.* (RAS asked
# 8 s into the hang), env.txt.
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
  timeout -k 5 90 torchrun --nproc-per-node 2 --master-port 29517 \
    "$HERE/fr_hang.py" "$sc" "$d" >"$d/torchrun.log" 2>&1
  echo "   exit $? $(date -u +%T); files: $(ls "$d" | tr '\n' ' ')"
done
