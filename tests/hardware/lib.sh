# Shared by the hardware scripts (sourced): the rocplay they run. Needs $repo, $work and say().

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
