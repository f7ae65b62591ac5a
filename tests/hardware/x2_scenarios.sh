#!/usr/bin/env bash
# Real workers on two GPUs (and two one-GPU kernels), each triaged by rocplay with its default
# options (`run hang-triage ... --debugger cuda-gdb`: 2 samples, symbol preload), recorded, and
# checked running after the detach. Issue 27; docs/hardware-validation.md, "Two-GPU workers".
#
#   ROCPLAY=/path/to/rocplay OUT=/path/to/out tests/hardware/x2_scenarios.sh [SCENARIO...]
#
# SCENARIO (server may be named more than once: its later runs are server-2, server-3, ...): skip_rank (tests/hardware/nccl_skip_rank.py under torchrun), mismatch (two ranks in
# different collectives), ipc (custom all-reduce over CUDA IPC, rank 1 one call short), server
# (server_tree.py under --workers-of SERVER; TP=N SKIP=R from the environment, default 2 and 1),
# healthy_long (a minute-long healthy kernel), graph (a graph-replayed kernel polling a flag never
# set), mapped (a kernel polling mapped host memory). Default: ipc server graph mapped healthy_long
# skip_rank mismatch.
# TP, SKIP: the server's tensor-parallel size and the rank that skips (2 and 1). ROCPLAY_ARGS:
# more options for every rocplay run (e.g. "--jobs 2"). ALONE: the
# two-rank scenarios that are also triaged on rank 0 alone (default: all four).
# ROCPLAY: the rocplay to run (default: build one from this tree, as run.sh does). OUT: where the
# recordings, reports and x2-summary.txt go (default /tmp/hw-out); `$OUT/x2.tar.gz` holds them all.
# Needs: nvcc, cuda-gdb, python3 with torch (the two-GPU scenarios need two GPUs). Sources and
# binaries are put under /home/dev/repro, so recorded paths need no scrubbing.
#
# The summary says, per scenario: each target's pid and rank, rocplay's exit code and wall time,
# each rank's stop (seconds per sample, from its report), the two-rank wall time against the same
# run over rank 0 alone, the headline (first finding and progress verdict) of each target, and
# whether each target still ran after the detach (not stopped in /proc, heartbeat still rising).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=$out/x2
hw_start "$work"
summary=$work/x2-summary.txt
cat "$work/summary.txt" >"$summary" 2>/dev/null
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rocplay=$(hw_rocplay)
[ -n "$rocplay" ] || { say "no rocplay: nothing to do"; exit 1; }
say "rocplay: $("$rocplay" version 2>&1 | head -1)"
say "gpus: $(nvidia-smi -L 2>/dev/null | wc -l)"
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(ipc server graph mapped healthy_long skip_rank mismatch)
TP=${TP:-2}
ALONE=${ALONE:-ipc server skip_rank mismatch}
SKIP=${SKIP:-1}

cp "$here"/*.cu "$here"/*.cuh "$here"/*.py "$src"/
for s in ipc_allreduce graph_flag mapped_flag healthy_long; do
  (cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o "$s" "$s.cu" -lpthread \
    >"$work/$s.build.log" 2>&1 || echo "build of $s failed" >>"$work/$s.build.log") &
done
wait

# Everything back in one file (the device returns at most a few files).
pack() {
  (cd "$work" && tar czf "$out/x2.tar.gz" --ignore-failed-read ./*.rec ./*.json ./*.log ./*.out \
    x2-summary.txt env.txt ./*.build.log ./server*-ps.txt 2>/dev/null)
  cp "$summary" "$out/x2-summary.txt"
}

launched=() # every process group started, killed at the end
cleanup() {
  local g
  for g in "${launched[@]}"; do kill -9 -- "-$g" 2>/dev/null; done
}
trap cleanup EXIT

# Runs ARGV in its own process group with output to $work/NAME.out; waits until COUNT `ready`
# lines appear (default 1), up to 240 s. Returns 1 when they never do.
start() { # name count argv...
  local name=$1 count=$2 i
  shift 2
  setsid "$@" >"$work/$name.out" 2>&1 &
  launched+=($!)
  for i in $(seq 1 2400); do
    [ "$(grep -c '^ready' "$work/$name.out" 2>/dev/null)" -ge "$count" ] && return 0
    kill -0 "${launched[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  say "$name: did not get ready"
  tail -8 "$work/$name.out" | tee -a "$summary"
  return 1
}

# The pids of `ready pid=N` lines of NAME.out (rank order when they name rank=).
ready_pids() {
  python3 - "$work/$1.out" <<'EOF'
import re, sys
seen = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"ready pid=(\d+)(?:.*?rank=(\d+))?", line)
    if m:
        seen.setdefault(int(m.group(2)) if m.group(2) else len(seen), m.group(1))
print(",".join(seen[k] for k in sorted(seen)))
EOF
}

# Heartbeat of a status file: its first number.
beats() {
  local b
  b=$(awk 'NR == 1 {print $1}' "$1" 2>/dev/null)
  echo "${b:-0}"
}

# Each pid: running (not T/t in /proc/PID/stat), and its heartbeat file rising within 2 s.
alive() { # name pids(comma) status-files(comma, may be empty)
  local name=$1 pids=$2 files=${3:-} p f st b0 b1 i=0
  IFS=, read -ra P <<<"$pids"
  IFS=, read -ra F <<<"$files"
  sleep 2
  for p in "${P[@]}"; do
    st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || echo gone)
    f=${F[i]:-}
    i=$((i + 1))
    if [ -n "$f" ]; then
      b0=$(beats "$f")
      sleep 1
      b1=$(beats "$f")
    else
      b0=-
      b1=-
    fi
    if [ "$st" = T ] || [ "$st" = t ] || [ "$st" = gone ]; then
      say "$name: pid $p state $st after the detach -> LEFT STOPPED OR GONE (FAIL)"
    elif [ -n "$f" ] && [ "$b1" = "$b0" ]; then
      say "$name: pid $p state $st, heartbeat $b0 -> $b1: NOT RISING (FAIL)"
    else
      say "$name: pid $p state $st, heartbeat $b0 -> $b1: running after the detach (PASS)"
    fi
  done
}

# rocplay on TARGET-ARGS with default options; $work/STEM.{json,log} and the recordings
# $work/STEM[-rank%r].rec. Says exit code and wall time.
triage() { # stem target-args...
  local stem=$1 t0 rc rec
  shift
  rec=$work/$stem.rec
  [ "$1" = --pid ] || rec=$work/$stem-rank%r.rec
  t0=$(date +%s%N)
  # shellcheck disable=SC2086 # ROCPLAY_ARGS: options split on spaces, e.g. "--jobs 2"
  timeout 150 "$rocplay" run hang-triage "$@" ${ROCPLAY_ARGS:-} --debugger cuda-gdb --record "$rec" \
    --format json --output "$work/$stem.json" >"$work/$stem.log" 2>&1
  rc=$?
  say "$stem: rocplay $* -> exit $rc in $(hw_ms "$t0") ms"
  headline "$stem"
}

# Each target's stop per sample, verdict and first finding, from the JSON report.
headline() {
  python3 - "$work/$1.json" "$1" <<'EOF' 2>&1 | tee -a "$summary"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}: no report ({e})"); sys.exit()
def one(label, r):
    stops = ",".join(f"{s.get('stop_seconds', 0):.3f}" for s in r.get("samples", []))
    t = r.get("run", {}).get("target", {})
    f = (r.get("findings") or [{}])[0]
    p = r.get("progress", {})
    print(f"  {label}: stops {stops or '-'} s (attach {t.get('attach_seconds')}, stopped "
          f"{t.get('stop_seconds')}, detached {t.get('detached')}, left_stopped "
          f"{t.get('left_stopped')}); progress: {p.get('verdict_text', '-')}; first finding: "
          f"[{f.get('severity', '-')}] {f.get('id', '-')}: {f.get('title', '-')}")
if "targets" in j:
    for t in j["targets"]:
        one(f"pid {t.get('pid')} rank {t.get('rank')} ({t.get('seconds', 0):.2f} s)",
            t.get("report", {}))
    for f in j.get("cross_rank_findings", []):
        print(f"  cross-rank: [{f.get('severity')}] {f.get('id')}: {f.get('title')}")
    for s in j.get("sample_skew", []):
        print(f"  sample {s.get('sample')}: stops {s.get('seconds')} s apart, lockstep {s.get('lockstep')}")
else:
    one("target", j)
EOF
}

# Two ranks: both at once, then (scenarios in $ALONE) rank 0 alone, the wall time against one
# rank, then alive.
two_ranks() { # stem pids status-files
  local stem=$1 pids=$2 files=$3
  triage "$stem" --pids "$pids"
  [[ " $ALONE " == *" $stem "* ]] && triage "$stem-rank0-alone" --pid "${pids%%,*}"
  alive "$stem" "$pids" "$files"
}

declare -A runs_of
for s in "${scenarios[@]}"; do
  runs_of[$s]=$((${runs_of[$s]:-0} + 1))
  say "== $s (run ${runs_of[$s]})"
  case $s in
  skip_rank)
    mkdir -p "$work/skip_rank"
    start skip_rank 2 env STATUS_DIR="$work/skip_rank" torchrun --nproc-per-node 2 --master-port 29517 \
      "$src/nccl_skip_rank.py" || continue
    sleep 3
    two_ranks skip_rank "$(ready_pids skip_rank)" "$work/skip_rank/rank0.status,$work/skip_rank/rank1.status"
    ;;
  mismatch)
    mkdir -p "$work/mismatch"
    start mismatch 2 env STATUS_DIR="$work/mismatch" torchrun --nproc-per-node 2 --master-port 29518 \
      "$src/collective_mismatch.py" || continue
    sleep 3
    two_ranks mismatch "$(ready_pids mismatch)" "$work/mismatch/rank0.status,$work/mismatch/rank1.status"
    ;;
  ipc)
    rm -rf "$work/ipc" && mkdir -p "$work/ipc"
    setsid env RANK=1 "$src/ipc_allreduce" "$work/ipc" 5 "$work/ipc/rank1.status" >"$work/ipc1.out" 2>&1 &
    launched+=($!)
    start ipc 1 env RANK=0 "$src/ipc_allreduce" "$work/ipc" 5 "$work/ipc/rank0.status" || continue
    for _ in $(seq 1 100); do grep -q '^ready' "$work/ipc1.out" && break; sleep 0.1; done
    cat "$work/ipc1.out" >>"$work/ipc.out"
    sleep 2
    two_ranks ipc "$(ready_pids ipc)" "$work/ipc/rank0.status,$work/ipc/rank1.status"
    ;;
  server)
    stem=server
    [ "${runs_of[$s]}" -gt 1 ] && stem=server-${runs_of[$s]}
    rm -rf "${work:?}/$stem" && mkdir -p "$work/$stem"
    start "$stem" 1 env STATUS_DIR="$work/$stem" python3 "$src/server_tree.py" --tp "$TP" \
      --skip-rank "$SKIP" || continue
    sleep 3
    server=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$work/$stem.out" | head -1)
    workers=$(sed -n 's/^ready .*workers=\([0-9,]*\).*/\1/p' "$work/$stem.out" | head -1)
    say "$stem: pid $server, workers $workers (TP=$TP, skip rank $SKIP)"
    "$rocplay" ps --workers-of "$server" >"$work/$stem-ps.txt" 2>&1
    triage "$stem" --workers-of "$server"
    say "$stem: GPU attaches failed: $(cat "$work/$stem"-rank*.rec 2>/dev/null |
      grep -c 'internal error while attaching')"
    [[ " $ALONE " == *" server "* ]] && triage "$stem-rank0-alone" --pid "${workers%%,*}"
    files=
    for r in $(seq 0 $((TP - 1))); do files=$files${files:+,}$work/$stem/rank$r.status; done
    alive "$stem" "$workers" "$files"
    alive "$stem-root" "$server" ""
    ;;
  healthy_long)
    start healthy_long 1 "$src/healthy_long" "$work/healthy_long.status" 60 || continue
    sleep 3
    p=$(ready_pids healthy_long)
    triage healthy_long --pid "$p"
    alive healthy_long "$p" "$work/healthy_long.status"
    ;;
  graph)
    start graph 1 "$src/graph_flag" "$work/graph.status" || continue
    sleep 2
    p=$(ready_pids graph)
    triage graph --pid "$p"
    alive graph "$p" "$work/graph.status"
    ;;
  mapped)
    start mapped 1 "$src/mapped_flag" "$work/mapped.status" || continue
    sleep 2
    p=$(ready_pids mapped)
    triage mapped --pid "$p"
    alive mapped "$p" "$work/mapped.status"
    ;;
  *) say "unknown scenario $s" ;;
  esac
  cleanup
  launched=()
  sleep 1
  pack # after each scenario: a run cut short still returns what it made
done
say "done: $out/x2.tar.gz"
pack
