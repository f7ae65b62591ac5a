#!/usr/bin/env bash
# `rocplay run hang-triage --slurm-job` over 2 and then 4 nodes of a real Slurm cluster started
# here (scripts/slurm-cluster.sh: one slurmd per network namespace), the same job on each (one
# CPU worker per node, spin_target), ROUNDS runs per size; prints each run's wall time, the
# medians and their ratio, and fails when 4 nodes take more than LIMIT (1.3) times 2 nodes.
#
#   bench/slurm_nodes.sh [ROUNDS=5] [LIMIT=1.3]      as root, after scripts/build.sh rocplay spin_target
#
# One worker per node keeps the debuggers' CPU out of the comparison on a small machine: what it
# measures is the fan-out (srun per node, the agreed window, the frames, the join), which should
# not grow with the node count. Figures: docs/benchmarks.md ("Slurm fan-out").
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
limit=${2:-1.3}
rocplay=$PWD/build/rocplay
spin=$PWD/build/tests/spin_target
[ -x "$rocplay" ] && [ -x "$spin" ] || {
  echo "bench: build first: scripts/build.sh rocplay spin_target" >&2
  exit 1
}
work=$(mktemp -d /tmp/rocplay-slurm-bench-XXXXXX)
export ROCPLAY_SLURM_DIR=$work/cluster ROCPLAY_SLURM_NAME=rpbench ROCPLAY_SLURM_NET=10.79.0 \
  ROCPLAY_SLURM_PORT=6837
export SLURM_CONF=$ROCPLAY_SLURM_DIR/slurm.conf
cleanup() {
  scripts/slurm-cluster.sh down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

measure() { # NODES -> the median wall time in seconds on stdout, each run on stderr
  local n=$1 job times=()
  scripts/slurm-cluster.sh up "$n" 2>/dev/null
  rm -f "$work"/progress-*
  job=$(sbatch --parsable -N"$n" --ntasks-per-node=1 -o /dev/null --wrap \
    "srun bash -c 'exec $spin $work/progress-\$SLURM_PROCID 2 --sleepy'")
  for _ in $(seq 1 50); do
    [ "$(ls "$work"/progress-* 2>/dev/null | wc -l)" -eq "$n" ] && break
    sleep 0.2
  done
  sleep 0.5
  for r in $(seq 1 "$rounds"); do
    local t0 t1 rc=0
    t0=$(date +%s.%N)
    "$rocplay" run hang-triage --slurm-job "$job" --debugger gdb -q --format json >"$work/out.json" || rc=$?
    t1=$(date +%s.%N)
    [ "$rc" -le 1 ] || {
      echo "bench: rocplay exited $rc at $n nodes" >&2
      exit 1
    }
    local examined
    examined=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["incident"]["examined"])' "$work/out.json")
    [ "$examined" -eq "$n" ] || {
      echo "bench: $examined of $n ranks examined" >&2
      exit 1
    }
    times+=("$(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }')")
    echo "  $n nodes, run $r: $(printf '%.3f' "${times[-1]}") s" >&2
  done
  scancel "$job"
  scripts/slurm-cluster.sh down 2>/dev/null
  printf '%s\n' "${times[@]}" | median
}

two=$(measure 2)
four=$(measure 4)
ratio=$(awk -v a="$four" -v b="$two" 'BEGIN { print a / b }')
printf 'slurm fan-out: 2 nodes %.3f s, 4 nodes %.3f s (medians of %d), ratio %.3f (limit %s)\n' \
  "$two" "$four" "$rounds" "$ratio" "$limit"
awk -v r="$ratio" -v l="$limit" 'BEGIN { exit !(r <= l) }' || {
  echo "bench: 4 nodes took more than ${limit}x 2 nodes" >&2
  exit 1
}
