#!/usr/bin/env bash
# Installs rocplay's dependencies from Debian packages (Debian 12).
#   scripts/setup.sh          everything the test command needs (scripts/test.sh)
#   scripts/setup.sh build    what building rocplay and the demo's target needs, and gdb (the
#                             demo): no clang, LLVM, chromium, Slurm or the other test tools
set -euo pipefail
build_packages=(build-essential cmake ninja-build pkg-config gdb procps
  libboost1.81-dev libyaml-cpp-dev libfmt-dev libcli11-dev catch2 nlohmann-json3-dev
  libelf-dev libmsgpuck-dev zlib1g-dev libgraphviz-dev)
test_packages=(strace clang libclang-rt-14-dev util-linux python3
  libllvm14 llvm-14 dpkg-dev file zsh man-db patchelf
  libgvc6 chromium
  munge slurmctld slurmd slurm-client iproute2)
case ${1:-all} in
build) packages=("${build_packages[@]}") ;;
all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
*)
  echo "setup: unknown set '$1'; use 'build' or 'all' (the default)" >&2
  exit 2
  ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
    echo "setup: not root and no sudo; install these Debian packages, then rerun:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}" >/dev/null; then
  "${sudo_cmd[@]}" apt-get update -q >/dev/null
  "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}" >/dev/null || {
    echo "setup: apt-get could not install: ${missing[*]}" >&2
    echo "  try by hand: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  }
fi
