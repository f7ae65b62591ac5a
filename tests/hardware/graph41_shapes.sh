#!/usr/bin/env bash
# Issue 41 (wait-for graph): the GPU shapes today's rules miss, each run and recorded with
# rocplay's default hang-triage (cuda-gdb, 2 samples), then killed. Recordings and reports go to
# $OUT (default /tmp/hw-out) as graph41-*.rec / *.json / *.log, and graph41.tar.gz holds them all.
#
#   ROCPLAY=/path/to/rocplay OUT=/path/to/out tests/hardware/graph41_shapes.sh [SHAPE...]
#
# SHAPE: barrier (graph_barrier_poll.cu, 1 GPU), lazy (graph_lazy_launch.cu, 1 GPU), lazywait
# (the same with a stream wait ahead of the spin kernel), item (graph_item_deep.py, PyTorch,
# 1 GPU), order (graph_group_order.py under torchrun, 2 GPUs). Default: all five.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=$out/graph41
hw_start "$work"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rocplay=$(hw_rocplay)
[ -n "$rocplay" ] || { say "no rocplay: nothing to do"; exit 1; }
say "rocplay: $("$rocplay" version 2>&1 | head -1)"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(barrier lazy lazywait item order)
cp "$here"/graph_*.cu "$here"/graph_*.py "$here"/common.cuh "$src"/
(cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o graph_barrier_poll \
  graph_barrier_poll.cu -lpthread) >"$work/barrier.build.log" 2>&1 || say "barrier build failed"
(cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o graph_lazy_launch \
  graph_lazy_launch.cu -lcuda -lpthread) >"$work/lazy.build.log" 2>&1 || say "lazy build failed"

group=
stop_group() { [ -n "$group" ] && kill -KILL -- "-$group" 2>/dev/null; group=; sleep 1; }
trap stop_group EXIT

# One process: start it in its own process group, wait for `ready pid=`, let it settle, record.
one() { # stem command...
  local stem=$1 pid
  shift
  (cd "$src" && exec setsid "$@") >"$work/$stem.out" 2>&1 &
  group=$!
  pid=$(hw_ready_pid "$work/$stem.out" 90)
  if [ -z "$pid" ]; then say "$stem: never ready"; stop_group; return; fi
  sleep 3
  say "$stem: pid $pid, threads: $(ls /proc/"$pid"/task | wc -l)"
  timeout 200 "$rocplay" record --pid "$pid" --debugger cuda-gdb -o "$work/graph41-$stem.rec" \
    >"$work/$stem.record.log" 2>&1
  say "$stem: record exit $?"
  "$rocplay" postmortem "$work/graph41-$stem.rec" >"$work/$stem.report.txt" 2>&1
  head -8 "$work/$stem.report.txt" | tee -a "$summary"
  stop_group
}

for s in "${shapes[@]}"; do
  case $s in
  barrier) one barrier ./graph_barrier_poll ;;
  lazy) one lazy ./graph_lazy_launch ;;
  lazywait) one lazywait ./graph_lazy_launch streamwait ;;
  item) one item python3 graph_item_deep.py ;;
  order)
    (cd "$src" && exec setsid torchrun --nproc-per-node 2 graph_group_order.py) \
      >"$work/order.out" 2>&1 &
    group=$!
    for _ in $(seq 1 900); do
      [ "$(grep -c '^ready pid=' "$work/order.out" 2>/dev/null)" -ge 2 ] && break
      sleep 0.1
    done
    torchrun_pid=$(sed -n 's/.*torchrun_pid=\([0-9]*\).*/\1/p' "$work/order.out" | head -1)
    if [ -z "$torchrun_pid" ]; then say "order: never ready"; stop_group; continue; fi
    sleep 5
    say "order: torchrun pid $torchrun_pid; $(grep '^ready' "$work/order.out" | tr '\n' ' ')"
    timeout 300 "$rocplay" run hang-triage --workers-of "$torchrun_pid" --debugger cuda-gdb \
      --record "$work/graph41-order-%r.rec" --format json -o "$work/order.json" \
      >"$work/order.record.log" 2>&1
    say "order: run exit $?"
    "$rocplay" postmortem "$work"/graph41-order-*.rec >"$work/order.report.txt" 2>&1
    head -12 "$work/order.report.txt" | tee -a "$summary"
    stop_group
    ;;
  *) say "unknown shape $s" ;;
  esac
done
(cd "$work" && tar czf "$out/graph41.tar.gz" --ignore-failed-read ./*.rec ./*.json ./*.log \
  ./*.out ./*.txt 2>/dev/null)
cp "$summary" "$out/graph41-summary.txt"
