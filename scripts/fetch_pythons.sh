#!/usr/bin/env bash
# CPython interpreters for the live Python-stack tests and bench_pyframes (docs/python-stacks.md):
# Debian unstable's python3.13, python3.14 and python3.15, which Debian 12 does not carry and
# which need a newer C library than its own. Their packages and that C library are fetched with
# apt-get (a private sources list and state under DEST/apt: the system's apt configuration is not
# changed), unpacked with dpkg -x into DEST/root, and each interpreter is started through that
# directory's dynamic loader: a copy of the executable whose ELF interpreter (PT_INTERP) is
# DEST/root's ld-linux-x86-64.so.2 (patchelf), so that /proc/PID/exe and gdb see the python
# executable itself (started as `ld.so python3.14`, gdb takes the loader for the program and
# names none of python's functions).
#
#   scripts/fetch_pythons.sh [DEST]     (default build/pythons; run by scripts/test.sh)
#
# Writes DEST/python3.X (a wrapper: PYTHONHOME, LD_LIBRARY_PATH, exec) per version and
# DEST/pythons.txt, one line per version: `3.14 PATH` when it runs, `3.14 missing: WHY` when it
# could not be had; tests/live/pyframes_live.cpp reads it and skips a missing one with that
# reason. Interpreters already there and running are kept (nothing fetched again). Never fails
# the caller: a missing interpreter is a line in pythons.txt.
#
# No Debian package of a free-threaded build (3.14t) exists, and this machine reaches Debian's
# binary packages but not CPython's source: the free-threaded reader is tested on images laid
# out as CPython's headers declare (tests/unit/pyframes/walker.cpp); see docs/python-stacks.md.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dest=${1:-build/pythons}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
versions=(3.13 3.14 3.15)
manifest=$dest/pythons.txt
lib=$dest/root/usr/lib/x86_64-linux-gnu

works() { # the wrapper runs and reports the version it is named for
  [ -x "$dest/python$1" ] &&
    [ "$("$dest/python$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$1" ]
}

all_work=1
for v in "${versions[@]}"; do works "$v" || all_work=0; done
if [ "$all_work" = 1 ] && [ -s "$manifest" ]; then
  echo "fetch_pythons: ${versions[*]} already in $dest"
  exit 0
fi

missing() { # VERSION WHY...: record it, say it
  local v=$1
  shift
  echo "$v missing: $*" >>"$manifest.new"
  echo "fetch_pythons: python$v not available: $*" >&2
}

: >"$manifest.new"
if [ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]; then
  for v in "${versions[@]}"; do missing "$v" "only amd64 is fetched (this machine: $(uname -m))"; done
  mv "$manifest.new" "$manifest"
  exit 0
fi
if ! command -v patchelf >/dev/null; then
  apt-get install -y -q patchelf >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q patchelf >/dev/null 2>&1; }
fi

# The archive the system already uses, with unstable for its suite.
# shellcheck disable=SC2016 # $(REPO_URI) is apt's own field, not the shell's
mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' 2>/dev/null |
  grep -v -- '-security' | head -n1)
apt_dir=$dest/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
: >"$apt_dir/status"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror} unstable main" \
  >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=/nonexistent"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::State::status=$apt_dir/status" -o "APT::Architecture=amd64"
  -o "APT::Sandbox::User=root" -o "Acquire::Retries=2")
why=""
if [ -z "$mirror" ]; then
  why="no Debian archive in this machine's apt sources"
elif ! command -v patchelf >/dev/null; then
  why="patchelf could not be installed (apt-get install patchelf)"
elif ! apt-get "${apt_opts[@]}" update -q >"$apt_dir/update.log" 2>&1; then
  why="apt-get update of Debian unstable failed ($(tail -n1 "$apt_dir/update.log"))"
fi
if [ -n "$why" ]; then
  for v in "${versions[@]}"; do missing "$v" "$why"; done
  mv "$manifest.new" "$manifest"
  exit 0
fi

# The C library and what the interpreters link or load (ctypes: libffi).
common=(libc6 libgcc-s1 zlib1g libexpat1 libzstd1 libffi8)
fetched=()
(
  cd "$apt_dir/debs" && rm -f ./*.deb &&
    apt-get "${apt_opts[@]}" download "${common[@]}" >"$apt_dir/download.log" 2>&1
) || {
  for v in "${versions[@]}"; do
    missing "$v" "apt-get download of the C library failed ($(tail -n1 "$apt_dir/download.log"))"
  done
  mv "$manifest.new" "$manifest"
  exit 0
}
for v in "${versions[@]}"; do
  if (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "python$v-minimal" \
    "libpython$v-minimal" "libpython$v-stdlib" >>"$apt_dir/download.log" 2>&1); then
    fetched+=("$v")
  else
    missing "$v" "Debian unstable has no python$v packages now ($(tail -n1 "$apt_dir/download.log"))"
  fi
done
rm -rf "${dest:?}/root" "${dest:?}/bin"
mkdir -p "$dest/root" "$dest/bin"
for deb in "$apt_dir/debs"/*.deb; do
  dpkg -x "$deb" "$dest/root"
done
for v in "${fetched[@]}"; do
  cp "$dest/root/usr/bin/python$v" "$dest/bin/python$v"
  if ! patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" "$dest/bin/python$v"; then
    missing "$v" "patchelf could not set its interpreter"
    continue
  fi
  cat >"$dest/python$v" <<EOF
#!/bin/sh
# python$v from Debian unstable, on its own C library (scripts/fetch_pythons.sh).
here=\$(dirname "\$(readlink -f "\$0")")
PYTHONHOME=\$here/root/usr LD_LIBRARY_PATH=\$here/root/usr/lib/x86_64-linux-gnu \\
  exec "\$here/bin/python$v" "\$@"
EOF
  chmod +x "$dest/python$v"
  if works "$v"; then
    echo "$v $dest/python$v" >>"$manifest.new"
    echo "fetch_pythons: python$v: $("$dest/python$v" -c 'import sys; print(sys.version.split()[0])')"
  else
    missing "$v" "unpacked, but $dest/python$v does not run"
  fi
done
rm -rf "$apt_dir/debs" "$apt_dir/cache" "$apt_dir/lists"
mv "$manifest.new" "$manifest"
exit 0
