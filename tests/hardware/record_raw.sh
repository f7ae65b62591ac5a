#!/usr/bin/env bash
# Device-side: builds the single-GPU scenarios and records raw cuda-gdb MI transcripts of each
# (tests/hardware/mi_drive.py), plus the raw `cuda-gdb -batch` baseline and the PyTorch
# fast-vs-normal attach times. Writes $OUT/raw.tar.gz and prints a summary. Run from the repo root.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/hw-out}
src=/home/dev/repro          # sources and binaries live here so recorded paths need no scrubbing
work=/tmp/hw-raw
rm -rf "$work" && mkdir -p "$work" "$src" "$out"
export CUDA_MODULE_LOADING=EAGER
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
only=${HW_ONLY:-"syncspin splitk_two_streams hostsync healthy idle torch"}

save() { tar czf "$out/raw.tar.gz" -C "$work" . 2>/dev/null; }

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  cuda-gdb --version | head -3
  nvcc --version | tail -2
  uname -r
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'
  ldd --version | head -1
  ldconfig -p | grep -E 'yaml-cpp|libfmt|boost' || echo "no yaml-cpp/fmt/boost shared libs"
  ls -d /usr/include/boost /usr/include/yaml-cpp /usr/include/fmt /usr/include/nlohmann \
    /usr/include/CLI 2>&1 | sed 's/^/hdr: /'
  g++ --version | head -1; cmake --version | head -1; ninja --version
} >"$work/env.txt" 2>&1
cat "$work/env.txt"

cp "$here"/*.cu "$here"/*.cuh "$here"/*.py "$src"/
cd "$src"
for s in syncspin splitk_two_streams hostsync healthy idle; do
  nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o "$s" "$s.cu" -lpthread >"$work/$s.build.log" 2>&1 &
done
wait
for s in syncspin splitk_two_streams hostsync healthy idle; do
  [ -x "$s" ] || { echo "build of $s failed:"; cat "$work/$s.build.log"; }
done
ls -la "$src" >>"$work/env.txt"

start() { # name, argv... -> sets pid; waits for the ready line
  local name=$1; shift
  "$@" >"$work/$name.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    grep -q '^ready' "$work/$name.out" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "scenario $name did not get ready:"; cat "$work/$name.out"; return 1
}

drive() { # name, pid, tag, extra args
  local name=$1 pid=$2 tag=$3; shift 3
  timeout 200 python3 "$here/mi_drive.py" record --pid "$pid" --scenario "$name" \
    --commands "$here/triage.cmds" --out "$work/$name$tag.rec" --raw "$work/$name$tag.mi" \
    --times "$work/times.jsonl" "$@"
  timeout 200 python3 "$here/mi_drive.py" batch --pid "$pid" --scenario "$name$tag" \
    --recording "$work/$name$tag.rec" --script "$work/$name$tag.gdb" --log "$work/$name$tag.batch.log" \
    --times "$work/times.jsonl" "$@"
}

for s in $only; do
  [ "$s" = torch ] && continue
  start "$s" "./$s" "$work/$s.status" || continue
  sleep 1.5
  drive "$s" "$pid" ""
  python3 "$here/mi_drive.py" alive --pid "$pid" --scenario "$s" --status "$work/$s.status" \
    --times "$work/times.jsonl" $([ "$s" = healthy ] && echo --expect-progress)
  if [ "$s" = healthy ]; then # a second snapshot, for progress across snapshots
    timeout 200 python3 "$here/mi_drive.py" record --pid "$pid" --scenario "$s" \
      --commands "$here/triage.cmds" --out "$work/${s}_b.rec" --raw "$work/${s}_b.mi" \
      --times "$work/times.jsonl"
  fi
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  save
done

if [[ " $only " == *" torch "* ]]; then
  start torch python3 "$src/torch_item_hang.py" && {
    sleep 1
    drive torch "$pid" "" 
    drive torch "$pid" "_fast" --fast
    python3 "$here/mi_drive.py" alive --pid "$pid" --scenario torch --status /nonexistent \
      --times "$work/times.jsonl" || true
    kill -9 "$pid"; wait "$pid" 2>/dev/null
  }
  save
fi
save
echo "== times"; cat "$work/times.jsonl" | cut -c1-400
