#!/usr/bin/env bash
# `cmake --install` into a fresh prefix gives a working rocplay: the binary (run from an empty
# directory, with an empty HOME), its built-in playbooks (compiled in, and as YAML in
# share/rocplay/playbooks), the man page matching its --help, bash and zsh completion, the docs,
# and a post-mortem of a fixture with the build tree's findings.
# Usage: tests/install/install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
fail() {
  echo "install_check: $*" >&2
  exit 1
}
for f in bin/rocplay share/man/man1/rocplay.1 share/bash-completion/completions/rocplay \
  share/zsh/site-functions/_rocplay share/doc/rocplay/README.md share/doc/rocplay/session.md; do
  [ -f "$prefix/$f" ] || fail "cmake --install put no $f under the prefix"
done
for p in "$src"/playbooks/*.yaml; do
  cmp -s "$p" "$prefix/share/rocplay/playbooks/$(basename "$p")" ||
    fail "share/rocplay/playbooks/$(basename "$p") is not the source tree's"
done
mkdir "$work/empty"
run() { (cd "$work/empty" && env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$work/empty" "$@"); }
run rocplay version | grep -q '^rocplay [0-9]' || fail "the installed rocplay version printed no version"
for p in "$src"/playbooks/*.yaml; do
  name=$(basename "$p" .yaml)
  run rocplay playbooks show "$name" >/dev/null || fail "the installed rocplay cannot show the built-in $name"
done
"$src/tests/install/man_check.sh" "$prefix/bin/rocplay" "$prefix/share/man/man1/rocplay.1" >/dev/null ||
  fail "the installed man page disagrees with the installed binary (above)"
"$src/tests/install/completion_check.sh" "$prefix/bin" "$prefix/share/bash-completion/completions/rocplay" \
  "$prefix/share/zsh/site-functions/_rocplay" >/dev/null || fail "the installed completions fail (above)"
set +e
run rocplay postmortem --format json --color=never "$src/fixtures/rocgdb/splitk-clean-two-queues/snapshot.mi" >"$work/pm.json"
rc=$?
set -e
[ "$rc" = 1 ] || fail "the installed rocplay's postmortem of splitk-clean-two-queues exited $rc, 1 expected"
grep -q splitk-clean-race "$work/pm.json" || fail "the installed rocplay's postmortem found no split-K finding"
echo "ok: cmake --install gives a working rocplay, man page, completions, playbooks and docs"
