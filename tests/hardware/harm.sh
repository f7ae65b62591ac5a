#!/usr/bin/env bash
# Do no harm (issue 40): a HEALTHY N-rank data-parallel job (harm_ddp.py under torchrun, a step
# counter per rank) looked at in several ways; after each look every rank's step count must still
# rise. A frozen or dead job is restarted before the next look. docs/hardware-validation.md, "Do no
# harm".
#
#   ROCPLAY=/path/to/rocplay OUT=/path/to/out NPROC=2 tests/hardware/harm.sh WAY[*N] ...
#
# HARM_WORK (default /tmp/harm-work) and MASTER_PORT (default 29531) let two instances run side by
# side on one host, each given its own GPUs with CUDA_VISIBLE_DEVICES. CHECK_SECONDS (default 8):
# how long after the look every step count must have risen.
#
# WAY (N: how many runs, default 1):
#   raw-seq     raw `cuda-gdb -batch -p PID` (info cuda kernels, thread apply all bt, detach), one
#               rank after the other
#   raw-both    the same on every rank at once
#   raw-light   raw-seq with `set sysroot` to a mirror whose huge libraries are symbol-light
#               (light_mirror.py, made once per rank before the look; issue 46)
#   raw-hold    rank 0 held stopped by raw cuda-gdb (a 6 s `shell sleep`) while rank 1's attach runs
#   rp-default, rp-jobs1, rp-jobs1-s1, rp-jobs1-fast, rp-s1, rp-s3, rp-pids, rp-jobs1-rev
#               `rocplay run hang-triage` with --workers-of TORCHRUN (or --pids) and those options
#   rp-rank0, rp-rank1  `rocplay run hang-triage --pid` of one rank
#   rpb-...     any rp- way with the rocplay in $ROCPLAY_B (an A/B of two builds)
# The summary (harm-summary.txt, also in harm.tar.gz with every report and recording) has a line
# per run: way, run, exit code, wall time, each rank's steps before and after, the verdict
# (stepping / FROZEN / DEAD), whether a debugger's GPU attach failed, and for rocplay's looks the
# report's verdict on the healthy job (its error findings must be none).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=${HARM_WORK:-/tmp/harm-work} # outside $OUT: only the summary and one archive go back
hw_start "$work"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rocplay=$(hw_rocplay)
NPROC=${NPROC:-2}
CHECK_SECONDS=${CHECK_SECONDS:-8}
say "rocplay: $("$rocplay" version 2>&1 | head -1); gpus: $(nvidia-smi -L | wc -l)" \
  "(CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-all}); ranks: $NPROC; check: $CHECK_SECONDS s"
cp "$here/harm_ddp.py" "$src/"
steps=$work/steps
job_group=
torchrun_pid=
pids=()

stop_job() {
  [ -n "$job_group" ] && kill -9 -- "-$job_group" 2>/dev/null
  job_group=
  sleep 2
}
trap stop_job EXIT

start_job() {
  local i
  stop_job
  rm -rf "$steps" && mkdir -p "$steps"
  setsid env STEP_DIR="$steps" torchrun --nproc-per-node "$NPROC" --master-port "${MASTER_PORT:-29531}" \
    "$src/harm_ddp.py" >"$work/job.out" 2>&1 &
  job_group=$!
  torchrun_pid=$job_group
  for i in $(seq 1 1200); do
    [ "$(grep -c '^ready' "$work/job.out")" -ge "$NPROC" ] && [ "$(ls "$steps" | grep -c step$)" -ge "$NPROC" ] && break
    sleep 0.1
  done
  mapfile -t pids < <(for r in $(seq 0 $((NPROC - 1))); do
    sed -n "s/^.*ready pid=\([0-9]*\) rank=$r\$/\1/p" "$work/job.out" | head -1
  done)
  say "job: torchrun $torchrun_pid, ranks ${pids[*]} (ready after $((i / 10)) s)"
  sleep 3
}

read_steps() {
  local r s out=
  for r in $(seq 0 $((NPROC - 1))); do
    s=$(cat "$steps/rank$r.step" 2>/dev/null)
    out+="${s:-0} "
  done
  echo "$out"
}

# Every rank's step count must rise within CHECK_SECONDS once the look has ended.
check_job() { # label
  local before after r dead=0 frozen=0 a b
  before=($(read_steps))
  sleep "$CHECK_SECONDS"
  after=($(read_steps))
  for r in $(seq 0 $((NPROC - 1))); do
    kill -0 "${pids[r]}" 2>/dev/null || dead=$((dead + 1))
    a=${before[r]}
    b=${after[r]}
    [ "$b" -gt "$a" ] || frozen=$((frozen + 1))
  done
  local verdict=stepping
  [ $frozen -gt 0 ] && verdict="FROZEN($frozen)"
  [ $dead -gt 0 ] && verdict="DEAD($dead)"
  echo "steps ${before[*]} -> ${after[*]}: $verdict"
  [ "$verdict" = stepping ]
}

raw_look() { # log pid [extra -ex args]
  local log=$1 pid=$2
  shift 2
  timeout 90 cuda-gdb -batch -nx -q -p "$pid" -ex 'info cuda kernels' "$@" \
    -ex 'thread apply all bt 30' -ex detach >"$log" 2>&1
}

# What rocplay's JSON report made of the healthy job: its error findings (there must be none) and
# the first finding of each target and across ranks.
verdict() { # report.json
  python3 - "$1" <<'EOF' 2>&1
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no report ({type(e).__name__})"); sys.exit()
reports = [t.get("report", {}) for t in j.get("targets", [])] if "targets" in j else [j]
findings = [f for r in reports for f in r.get("findings", [])] + j.get("cross_rank_findings", [])
errors = [f for f in findings if f.get("severity") == "error"]
firsts = [(r.get("findings") or [{}])[0] for r in reports] + j.get("cross_rank_findings", [])[:1]
print(f"errors {len(errors)}; first: " + " | ".join(
    f"[{f.get('severity', '-')}] {f.get('id', '-')}" for f in firsts))
EOF
}

look() { # way stem
  local way=$1 stem=$2 r p list rocplay=$rocplay
  # rpb-*: the same ways with a second binary ($ROCPLAY_B), for an A/B of two builds.
  if [[ $way == rpb-* ]]; then
    rocplay=$ROCPLAY_B
    way=rp-${way#rpb-}
  fi
  list=$(IFS=,; echo "${pids[*]}")
  local common=(--debugger cuda-gdb --record "$work/$stem-%r.rec" --format json --output "$work/$stem.json")
  case $way in
  raw-seq) for r in $(seq 0 $((NPROC - 1))); do raw_look "$work/$stem-$r.log" "${pids[r]}"; done ;;
  raw-light) for r in $(seq 0 $((NPROC - 1))); do
    raw_look "$work/$stem-$r.log" "${pids[r]}" -iex "set sysroot $work/mirror-${pids[r]}"
  done ;;
  raw-both)
    local waiters=()
    for r in $(seq 0 $((NPROC - 1))); do raw_look "$work/$stem-$r.log" "${pids[r]}" & waiters+=($!); done
    wait "${waiters[@]}" ;; # never a bare wait: the job is a child too
  raw-hold)
    raw_look "$work/$stem-0.log" "${pids[0]}" -ex 'shell sleep 6' &
    local holder=$!
    for _ in $(seq 1 300); do
      grep -q '^State:.*t (tracing stop)' "/proc/${pids[0]}/status" 2>/dev/null && break
      sleep 0.05
    done
    for r in $(seq 1 $((NPROC - 1))); do raw_look "$work/$stem-$r.log" "${pids[r]}"; done
    wait "$holder" ;;
  rp-default) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" "${common[@]}" ;;
  rp-jobs1) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --jobs 1 "${common[@]}" ;;
  rp-jobs1-s1) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --jobs 1 --samples 1 "${common[@]}" ;;
  rp-jobs1-fast) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --jobs 1 --fast "${common[@]}" ;;
  rp-jobs1-rev) timeout 150 "$rocplay" run hang-triage --pids "$(echo "$list" | tr , '\n' | tac | paste -sd,)" --jobs 1 "${common[@]}" ;;
  rp-s1) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --samples 1 "${common[@]}" ;;
  rp-s3) timeout 150 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --samples 3 "${common[@]}" ;;
  rp-pids) timeout 150 "$rocplay" run hang-triage --pids "$list" "${common[@]}" ;;
  rp-rank0) timeout 150 "$rocplay" run hang-triage --pid "${pids[0]}" "${common[@]}" ;;
  rp-rank1) timeout 150 "$rocplay" run hang-triage --pid "${pids[1]}" "${common[@]}" ;;
  *) say "unknown way $way"; return 99 ;;
  esac
}

start_job
run=0
for spec in "$@"; do
  way=${spec%\**}
  n=1
  [ "$spec" != "$way" ] && n=${spec#*\*}
  for k in $(seq 1 "$n"); do
    run=$((run + 1))
    if [ "$way" = raw-light ]; then # the mirrors, outside the look
      for p in "${pids[@]}"; do
        [ -d "$work/mirror-$p" ] || python3 "$here/light_mirror.py" "$p" "$work/mirror-$p" >>"$work/mirrors.txt" 2>&1
      done
    fi
    stem=$run-$way
    t0=$(date +%s%N)
    look "$way" "$stem" >"$work/$stem.stdout" 2>"$work/$stem.stderr"
    rc=$?
    ms=$(hw_ms "$t0")
    # The live RAS answer rocplay kept beside the recordings: one per look.
    [ -f "$work/ncclras.txt" ] && mv "$work/ncclras.txt" "$work/$stem.ncclras.txt"
    failed=$(cat "$work/$stem"* 2>/dev/null | grep -c 'internal error while attaching\|cudbgApiAttach) will be abandoned')
    result=$(check_job "$stem")
    ok=$?
    said=
    [[ $way == rp* ]] && said=", verdict: $(verdict "$work/$stem.json")"
    say "$stem: exit $rc, $ms ms, gpu-attach-failed lines $failed, $result$said"
    cp "$summary" "$out/harm-summary.txt"
    [ $ok -eq 0 ] || { tail -3 "$work/$stem.stderr" | sed 's/^/    /' | tee -a "$summary"; start_job; }
  done
done
cp "$summary" "$out/harm-summary.txt"
(cd "$work" && tar czf "$out/harm.tar.gz" ./*.rec ./*.json ./*.log ./*.ncclras.txt ./*.stderr ./*.stdout summary.txt job.out env.txt 2>/dev/null)
