#!/usr/bin/env bash
# Builds the Debian package out/rocplay_VERSION_amd64.deb (CPack DEB: dependencies computed by
# dpkg-shlibdeps, the debuggers as Suggests) from the developer build in build/ (only rocplay and
# its man page are built; nothing is compiled twice), then with --check proves it:
#   - installs it with dpkg into a fresh root (dpkg --root) whose package database is a copy of
#     this machine's, so dpkg really checks the Depends line without touching the machine;
#   - runs the installed rocplay from an empty directory with an empty HOME: version, a built-in
#     playbook, the man page (man -l), bash completion, and a post-mortem of a fixture, whose
#     report must equal the build tree's;
#   - dpkg -r, after which nothing is left under the root but dpkg's own database.
# Usage: scripts/package.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ROCPLAY_BUILD_DIR:-build}
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  scripts/build.sh rocplay rocplay_man
else
  cmake --build "$build_dir" --parallel "$(nproc)" --target rocplay rocplay_man
fi
mkdir -p out
out=$(cd out && pwd)
(cd "$build_dir" && cpack -G DEB -B "$out/cpack" >/dev/null)
deb=$(ls -t "$out"/cpack/rocplay_*_amd64.deb | head -1)
mv "$deb" "$out/"
deb=$out/$(basename "$deb")
rm -rf "$out/cpack"
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb -f "$deb" Package Version Depends Suggests | sed 's/^/  /'
[ "${1:-}" = "--check" ] || exit 0

fail() {
  echo "package check: $*" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers" "$work/empty" "$work/home"
cp /var/lib/dpkg/status "$admin/status"
touch "$admin/available"
# Those packages' files are not in the root: empty file lists (dpkg would warn about each).
dpkg-query -W -f='${binary:Package}\n' | while IFS= read -r p; do : >"$admin/info/$p.list"; done
dpkg_root() { dpkg --root="$root" --log="$work/dpkg.log" --force-not-root "$@"; }

depends=$(dpkg-deb -f "$deb" Depends)
case "$depends" in
*libc6* ) ;;
*) fail "the package's Depends ($depends) names no libc6: dpkg-shlibdeps did not run" ;;
esac
dpkg-deb -f "$deb" Suggests | grep -q gdb || fail "the package does not suggest a debugger"

dpkg_root -i "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "dpkg -i failed"; }
status=$(dpkg-query --admindir="$admin" -W -f='${Status}' rocplay)
[ "$status" = "install ok installed" ] || fail "after dpkg -i the status is '$status'"

bin=$root/usr/bin/rocplay
run() { (cd "$work/empty" && env -i PATH=/usr/bin:/bin HOME="$work/home" "$@"); }
run "$bin" version | grep -qx "rocplay $(dpkg-deb -f "$deb" Version)" ||
  fail "the installed rocplay's version is not the package's"
run "$bin" playbooks show hang-triage | grep -q 'steps:' ||
  fail "the installed rocplay does not find its built-in playbook hang-triage"
for f in usr/share/man/man1/rocplay.1 usr/share/bash-completion/completions/rocplay \
  usr/share/zsh/vendor-completions/_rocplay usr/share/rocplay/playbooks/hang-triage.yaml \
  usr/share/doc/rocplay/README.md; do
  [ -f "$root/$f" ] || fail "the package installs no /$f"
done
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$root/usr/share/man/man1/rocplay.1" 2>/dev/null | grep -q 'rocplay postmortem' ||
    fail "man -l cannot render the installed rocplay(1)"
fi
got=$(run bash -c "source '$root/usr/share/bash-completion/completions/rocplay'
  PATH=\"$root/usr/bin:\$PATH\"; COMP_WORDS=(rocplay post); COMP_CWORD=1; _rocplay; echo \"\${COMPREPLY[*]}\"")
[ "$got" = postmortem ] || fail "the installed bash completion of 'rocplay post' gave '$got'"

# A post-mortem through the installed binary; the report must be the build tree's, byte for byte.
fixture=$PWD/fixtures/rocgdb/tp8-missing-rank
set +e
run "$bin" postmortem --format json --color=never "$fixture"/rank*.mi >"$work/installed.json" 2>"$work/installed.err"
rc_installed=$?
run "$PWD/$build_dir/rocplay" postmortem --format json --color=never "$fixture"/rank*.mi >"$work/built.json" 2>/dev/null
rc_built=$?
set -e
[ "$rc_installed" = 1 ] || { cat "$work/installed.err" >&2; fail "postmortem of $fixture exited $rc_installed (1 expected: findings)"; }
[ "$rc_built" = "$rc_installed" ] || fail "exit codes differ: installed $rc_installed, build tree $rc_built"
sed -i '/"seconds": /d' "$work/installed.json" "$work/built.json" # wall-clock times
cmp -s "$work/installed.json" "$work/built.json" || fail "the installed rocplay's report differs from the build tree's"
grep -q missing-rank "$work/installed.json" || fail "the installed rocplay's report has no missing-rank finding"

dpkg_root -r rocplay >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; fail "dpkg -r failed"; }
left=$(cd "$root" && find . -mindepth 1 ! -path './var' ! -path './var/lib' ! -path './var/lib/dpkg' ! -path './var/lib/dpkg/*')
[ -z "$left" ] || fail "dpkg -r left behind: $left"
status=$(dpkg-query --admindir="$admin" -W -f='${Status}' rocplay 2>/dev/null || true)
case "$status" in
"" | *not-installed* | "deinstall ok config-files") ;;
*) fail "after dpkg -r the status is '$status'" ;;
esac
echo "package check: installed into a fresh root (Depends checked against this machine's packages)," \
  "ran version, playbooks, man, completion and a post-mortem (report identical to the build's)," \
  "removed with nothing left"
