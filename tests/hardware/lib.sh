# Shared by the hardware scripts (sourced after `here` is set): their directories, summary and
# environment record, and the rocplay they run.

repo=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/hw-out}
src=/home/dev/repro # sources and binaries live here, so recorded paths need no scrubbing

# A fresh work directory WORK with its summary.txt (say() appends to it) and env.txt: the GPU,
# driver, cuda-gdb and nvcc versions, also copied to the summary.
hw_start() {
  work=$1
  summary=$work/summary.txt
  rm -rf "$work" && mkdir -p "$work" "$src" "$out"
  {
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    cuda-gdb --version 2>/dev/null | grep -m1 'NVIDIA (R) cuda-gdb'
    nvcc --version | tail -1
  } >"$work/env.txt" 2>&1
  tee -a "$summary" <"$work/env.txt"
}
say() { echo "$*" | tee -a "$summary"; }

# Prints the path of a rocplay that runs here: $ROCPLAY when it does, else one built from this
# tree into /tmp/rocplay-build (the log in $work/rocplay-build.log); nothing when the build fails.
hw_rocplay() {
  local rocplay=${ROCPLAY:-} t0=$SECONDS
  if [ -n "$rocplay" ] && ! "$rocplay" version >/dev/null 2>&1; then
    say "carried rocplay does not run here ($("$rocplay" version 2>&1 | head -1)); building" >&2
    rocplay=
  fi
  if [ -z "$rocplay" ]; then
    cmake -S "$repo" -B /tmp/rocplay-build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DROCPLAY_TESTS=OFF -DROCPLAY_BENCH=OFF >"$work/rocplay-build.log" 2>&1 &&
      cmake --build /tmp/rocplay-build --target rocplay -j "$(nproc)" >>"$work/rocplay-build.log" 2>&1 &&
      rocplay=/tmp/rocplay-build/rocplay
    say "rocplay build: $((SECONDS - t0)) s, ${rocplay:-FAILED (see rocplay-build.log)}" >&2
  fi
  echo "$rocplay"
}

# Builds NAME.cu of this directory (with common.cuh) into $src/NAME the way run.sh builds the
# scenarios; the script ends, showing the build log's tail, when it does not build.
hw_nvcc() {
  local name=$1
  cp "$here/$name.cu" "$here/common.cuh" "$src/"
  (cd "$src" && nvcc -O2 -g -lineinfo -arch=native -std=c++17 -o "$name" "$name.cu" -lpthread) \
    >"$work/$name.build.log" 2>&1 || { tail -20 "$work/$name.build.log"; exit 1; }
}

# The pid that a program writing to FILE announces (`ready pid=N`), waiting up to SECONDS
# (default 30); nothing when it never does.
hw_ready_pid() {
  local file=$1 tenths=$((${2:-30} * 10)) pid=
  for _ in $(seq 1 "$tenths"); do
    pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$file" 2>/dev/null | head -1)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  echo "$pid"
}
