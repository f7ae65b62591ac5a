#!/usr/bin/env bash
# Installs rocplay's build and test dependencies from Debian packages (Debian 12).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config gdb strace clang libclang-rt-14-dev
  libboost1.81-dev libyaml-cpp-dev libfmt-dev libcli11-dev catch2 nlohmann-json3-dev
  libbenchmark-dev procps util-linux python3
  libelf-dev libmsgpuck-dev libllvm14 llvm-14
  zlib1g-dev dpkg-dev file zsh man-db patchelf
  libgraphviz-dev libgvc6 chromium
  munge slurmctld slurmd slurm-client iproute2)
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
