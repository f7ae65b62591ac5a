#!/usr/bin/env bash
# Fails when a function outside the parser's avx2 namespace holds an AVX instruction: rocplay must
# run on every x86-64, so only code that runs after the CPU check may use one.
# Usage: avx_confined.sh BINARY
set -euo pipefail
code=$(objdump -d --no-show-raw-insn "$1")
if ! grep -q 'GLOBAL__N_14avx2' <<<"$code"; then
  echo "no avx2 item parser in $1 (not x86-64?): nothing to check"
  exit 0
fi
leaks=$(awk '
  /^[0-9a-f]+ <.*>:$/ { fn = $2; next }
  /\tv[a-z0-9]+[ \t]/ || /%ymm/ { if (fn !~ /GLOBAL__N_14avx2/) print fn }' <<<"$code" | sort -u)
if [[ -n "$leaks" ]]; then
  echo "AVX instructions outside the avx2 item parser:" >&2
  c++filt <<<"$leaks" >&2
  exit 1
fi
echo "AVX instructions only in the avx2 item parser"
