#!/usr/bin/env bash
# Builds the self-contained release: one rocplay binary with libstdc++, libgcc, yaml-cpp, libelf and
# zlib linked in and fmt header-only, needing nothing but glibc 2.34 or newer (Ubuntu 22.04+,
# Debian 12+, RHEL 9+), packed with its man page, shell completions, playbooks and docs as
#   out/rocplay-VERSION-x86_64-linux.tar.gz    (rocplay-VERSION/bin/rocplay, rocplay-VERSION/share/...)
# in its own build directory (build-release: no tests, no benchmarks), then checks it:
#   - ldd: only glibc's libraries (libc, libm, ld-linux, and the 2.34+ stubs libdl/libpthread);
#   - objdump -T: no GLIBC_ symbol version newer than 2.34, no GLIBCXX_/CXXABI_/GCC_ at all;
#   - rocplay version runs, and exceptions unwind (bad option, missing and malformed playbooks).
# scripts/test.sh then runs the post-mortem fixtures through it (scripts/release_check.sh).
# Usage: scripts/release.sh [--check-only]   (--check-only: check an existing build-release)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ROCPLAY_RELEASE_BUILD_DIR:-build-release}
max_glibc=2.34

if [ "${1:-}" != "--check-only" ]; then
  scripts/setup.sh
  # -O2 like the developer build (RelWithDebInfo), without its debug info: the release is stripped.
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DROCPLAY_WERROR=ON -DROCPLAY_STATIC_RELEASE=ON -DROCPLAY_TESTS=OFF -DROCPLAY_BENCH=OFF \
    -DROCPLAY_FUZZ=OFF -DCMAKE_INSTALL_PREFIX=/usr/local >/dev/null
  cmake --build "$build_dir" --parallel "$(nproc)" --target rocplay rocplay_man
fi
bin=$build_dir/rocplay
[ -x "$bin" ] || { echo "release: no $bin; run scripts/release.sh without --check-only" >&2; exit 1; }

fail=0
# 1. Shared libraries: glibc's only.
libs=$(ldd "$bin" | awk '{print $1}' | sed 's,.*/,,')
for lib in $libs; do
  case "$lib" in
  linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1) ;;
  *)
    echo "release: $bin needs $lib, which is not part of glibc" >&2
    fail=1
    ;;
  esac
done
# 2. Symbol versions: GLIBC_2.34 at most; nothing from libstdc++ or libgcc_s.
versions=$(objdump -T "$bin" | grep -oE '\((GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+\)' | tr -d '()' | sort -u)
for v in $versions; do
  case "$v" in
  GLIBC_*)
    n=${v#GLIBC_}
    if [ "$(printf '%s\n%s\n' "$n" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]; then
      echo "release: $bin uses glibc $n symbols (at most $max_glibc allowed):" >&2
      objdump -T "$bin" | grep -F "($v)" | sed 's/^/  /' >&2
      fail=1
    fi
    ;;
  *)
    echo "release: $bin uses $v symbols (libstdc++/libgcc must be linked in):" >&2
    objdump -T "$bin" | grep -F "($v)" | sed 's/^/  /' >&2
    fail=1
    ;;
  esac
done
newest=$(printf '%s\n' $versions | grep '^GLIBC_' | sed 's/GLIBC_//' | sort -V | tail -1)
version=$("$bin" version | awk '{print $2}')
[ -n "$version" ] || { echo "release: $bin version printed nothing" >&2; fail=1; }
# Exceptions unwind through the statically linked unwinder (scripts/release/glibc_compat.cpp):
# a bad option (CLI11 throws) must end in exit 64, a missing playbook file (rocplay's own error)
# in 66, a malformed playbook (yaml-cpp throws) in 78; a broken unwinder aborts instead.
probe=$(mktemp -d)
printf 'name: [unclosed\n' >"$probe/bad.yaml"
for want in "64 run --no-such-option" "66 playbooks show $probe/none.yaml" "78 playbooks check $probe/bad.yaml"; do
  set -- $want
  code=$1
  shift
  set +e
  "$bin" "$@" >/dev/null 2>&1
  rc=$?
  set -e
  if [ "$rc" != "$code" ]; then
    echo "release: '$bin $*' exited $rc, not $code (exceptions do not unwind?)" >&2
    fail=1
  fi
done
rm -rf "$probe"
if [ "$fail" -ne 0 ]; then
  exit 1
fi
echo "release: $bin needs only glibc ($(echo $libs | tr ' ' ',')), newest symbol version GLIBC_$newest"

# 3. The tarball: the install tree under rocplay-VERSION/, stripped.
name=rocplay-$version-x86_64-linux
mkdir -p out
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR='' cmake --install "$build_dir" --prefix "$stage/rocplay-$version" --strip >/dev/null
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "out/$name.tar.gz" "rocplay-$version"
echo "release: out/$name.tar.gz ($(du -k "out/$name.tar.gz" | cut -f1) KiB)"
