#!/usr/bin/env bash
# The device runs that decide issues 40 (do no harm), 41 (GPU shapes), 43 (real collective
# records) and 48 (launch --verify) on one four-GPU host, as one plan detached from the device call
# that starts it: the plan takes longer than one call may (10 minutes), so later calls only wait
# for it and bring back what it has made so far.
#
#   ROCPLAY=/path/to/rocplay tests/hardware/acceptance.sh start [confirm]  # returns at once
#   tests/hardware/acceptance.sh collect SECONDS                      # waits up to SECONDS, then
#                                                                     # copies the results to $OUT
#
# The plan, in order of what matters most:
#   1. all four GPUs: a healthy four-rank job looked at 5 times with the defaults (harm.sh), then
#      the hung four-rank server (server_tree.py, rank 3 skips) triaged 3 times, and rank 0 alone;
#   2. two pairs of GPUs side by side, each a healthy two-rank job of its own (harm.sh):
#      GPUs 0,1: 10 runs each of the defaults, --pids, --samples 1; then the collective records;
#      GPUs 2,3: 10 runs each of --jobs 1, --samples 3; then launch --verify, then the GPU shapes.
#   On a host of two GPUs, step 1 is left out and step 2's steps run one after the other on GPUs
#   0,1, then the cuda-gdb time to verdict (verdict_cuda.sh, issue 46).
# `start confirm` skips step 1 and runs 10 default and 10 --samples 1 looks (GPUs 0,1 and 2,3), the
# re-run that confirms the healthy job's verdicts (errors 0), before the same later steps.
# `start rest` runs the later steps only (see rest()).
# Results under /tmp/accept (one folder per step); `collect` copies each folder's tarball (or the
# folder, packed) and one file of every summary so far (accept-summary.txt) to $OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
results=/tmp/accept

plan() { # [confirm]
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export CHECK_SECONDS=${CHECK_SECONDS:-5}
  local ways_a=('rp-default*10' 'rp-pids*10' 'rp-s1*10') ways_b=('rp-jobs1*10' 'rp-s3*10') gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "${1:-}" = rest ]; then
    rest
    return
  fi
  if [ "${1:-}" = confirm ]; then
    ways_a=('rp-default*10')
    ways_b=('rp-s1*10')
  elif [ "$gpus" -ge 4 ]; then
    four_gpus
  fi
  if [ "$gpus" -ge 4 ]; then
    echo "== $(date -u +%T) two pairs"
    (
      export CUDA_VISIBLE_DEVICES=0,1
      harm_pair A 29531 "${ways_a[@]}"
      step_collectives
    ) >"$results/pairA.log" 2>&1 &
    (
      export CUDA_VISIBLE_DEVICES=2,3
      harm_pair B 29541 "${ways_b[@]}"
      step_verify
      step_graph41
    ) >"$results/pairB.log" 2>&1 &
    wait
  else
    # Two GPUs: the same steps one after the other, the healthy job looked at every way in one go.
    echo "== $(date -u +%T) one pair ($gpus GPUs)"
    (
      export CUDA_VISIBLE_DEVICES=0,1
      harm_pair A 29531 "${ways_a[@]}" "${ways_b[@]}"
      step_verify
      step_graph41
      step_collectives
      OUT=$results/verdict ROUNDS=${ROUNDS:-5} "$here/verdict_cuda.sh"
    ) >"$results/pairA.log" 2>&1
  fi
  echo "== $(date -u +%T) done"
}

# `start rest`: what a two-GPU lease lost when it went back mid-plan (2026-11-28), the debugger
# work on GPU 0 beside the collectives (no debugger) on GPUs 0,1, then the time to verdict alone.
rest() {
  echo "== $(date -u +%T) rest"
  (
    export CUDA_VISIBLE_DEVICES=0,1
    step_collectives
    echo "== $(date -u +%T) graph41 order"
    OUT=$results/graph41o "$here/graph41_shapes.sh" order
  ) >"$results/pairA.log" 2>&1 &
  (
    export CUDA_VISIBLE_DEVICES=0
    echo "== $(date -u +%T) verify"
    OUT=$results/verify "$here/verify_faults.sh" race static
    echo "== $(date -u +%T) graph41 lazywait"
    OUT=$results/graph41 "$here/graph41_shapes.sh" lazywait
  ) >"$results/pairB.log" 2>&1 &
  wait
  echo "== $(date -u +%T) verdict, load $(cut -d' ' -f1-3 /proc/loadavg)"
  OUT=$results/verdict ROUNDS=${ROUNDS:-3} "$here/verdict_cuda.sh" >"$results/verdict.log" 2>&1
  echo "== $(date -u +%T) done"
}

harm_pair() { # NAME PORT WAY...
  local name=$1 port=$2
  shift 2
  NPROC=2 OUT=$results/harm$name HARM_WORK=/tmp/harm$name MASTER_PORT=$port "$here/harm.sh" "$@"
}
step_collectives() {
  echo "== $(date -u +%T) collectives"
  bash "$here/collectives/run_all.sh" "$results/collectives"
}
step_verify() { echo "== $(date -u +%T) verify" && OUT=$results/verify "$here/verify_faults.sh"; }
step_graph41() { echo "== $(date -u +%T) graph41" && OUT=$results/graph41 "$here/graph41_shapes.sh"; }

four_gpus() {
  echo "== $(date -u +%T) four GPUs: healthy job"
  NPROC=4 OUT=$results/harm4 HARM_WORK=/tmp/harm4 "$here/harm.sh" 'rp-default*5'
  echo "== $(date -u +%T) four GPUs: hung server"
  TP=4 SKIP=3 ALONE=server OUT=$results/server4 "$here/x2_scenarios.sh" server server server
}

collect() { # seconds
  shopt -s nullglob
  local until=$((SECONDS + $1)) d name tars
  while [ ! -e "$results/rc" ] && [ $SECONDS -lt $until ]; do sleep 5; done
  mkdir -p "$OUT"
  {
    echo "plan: $(cat "$results/rc" 2>/dev/null || echo "still running")"
    cat "$results/plan.log"
    for f in "$results"/*/*summary*.txt "$results"/verdict/*/summary.txt; do echo "--- $f" && cat "$f"; done
    for f in "$results"/pair*.log; do echo "--- $f (tail)" && tail -15 "$f"; done
  } >"$OUT/accept-summary.txt" 2>&1
  for d in "$results"/*/; do
    name=$(basename "$d")
    tars=("$d"*.tar.gz)
    if [ ${#tars[@]} -gt 0 ]; then
      cp "${tars[0]}" "$OUT/$name.tar.gz"
    else
      tar czf "$OUT/$name.tar.gz" -C "$results" "$name"
    fi
  done
  cat "$OUT/accept-summary.txt"
}

case ${1:-} in
start)
  : "${ROCPLAY:?ROCPLAY must name the rocplay to run}"
  rm -rf "$results" /tmp/accept-copy && mkdir -p "$results" /tmp/accept-copy/bin
  # The plan runs from copies: a later call's fresh working tree must not change a script that bash
  # is still reading, nor the binary under the runs.
  cp -r "$here" /tmp/accept-copy/hardware
  cp -r "$(dirname "$ROCPLAY")"/. /tmp/accept-copy/bin/
  ROCPLAY=/tmp/accept-copy/bin/$(basename "$ROCPLAY") setsid bash -c \
    '"$0" plan "$2" >"$1/plan.log" 2>&1; echo "exit $?" >"$1/rc"' \
    /tmp/accept-copy/hardware/acceptance.sh "$results" "${2:-}" </dev/null >/dev/null 2>&1 &
  echo "started: $results/plan.log"
  ;;
plan) plan "${2:-}" ;;
collect) collect "${2:?collect SECONDS}" ;;
*) echo "usage: $0 start | collect SECONDS" >&2 && exit 2 ;;
esac
