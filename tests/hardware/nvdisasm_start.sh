#!/usr/bin/env bash
# Issue 46: nvdisasm costs about 0.5 s whatever it decodes, after the detach of a cuda-gdb look
# at a small program. Where does that time go, and can it be paid before the device ELF exists?
# Probes: nvdisasm's wall and CPU on a syncspin cubin and on --version; whether its start-up
# happens before it opens its input (started on a FIFO, its CPU read while it waits there, then
# fed); whether a pipe on /dev/stdin works.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
hw_start /tmp/hw-nvd
nvd=$(command -v nvdisasm || echo /usr/local/cuda/bin/nvdisasm)
say "nvdisasm: $nvd $(stat -Lc %s "$nvd") bytes; $(ldd "$nvd" | wc -l) libraries: $(ldd "$nvd" | awk '{print $1}' | tr '\n' ' ')"
cp "$here/syncspin.cu" "$here/common.cuh" "$src/"
(cd "$src" && nvcc -cubin -arch=sm_90 -lineinfo -o syncspin.cubin syncspin.cu) >"$work/cubin.log" 2>&1 ||
  { tail "$work/cubin.log"; exit 1; }
cubin=$src/syncspin.cubin
timed() { # label command...
  local label=$1 t0; shift
  t0=$(date +%s%N)
  /usr/bin/time -f "%e s wall %U user %S sys %M KiB %F major %R minor" -o "$work/time.txt" "$@" >"$work/$label.out" 2>&1
  say "$label: rc $? $(hw_ms "$t0") ms; $(cat "$work/time.txt")"
}
if [ "${PART:-all}" = all ]; then
for i in 1 2 3; do timed version "$nvd" --version; done
for i in 1 2 3; do timed whole "$nvd" -c "$cubin"; done
timed help "$nvd" --help
grep -iE "binary|stdin|input" "$work/help.out" | head -12 | tee -a "$summary"
# Fed through a FIFO after 1 s: CPU spent while waiting is start-up done before the open.
for i in 1 2 3; do
  rm -f "$work/fifo" && mkfifo "$work/fifo"
  "$nvd" -c "$work/fifo" >"$work/fifo.out" 2>&1 &
  p=$!
  sleep 1
  read -r -a st <"/proc/$p/stat"
  say "fifo $i: waiting in $(cat /proc/$p/wchan 2>/dev/null) after 1 s: utime ${st[13]} stime ${st[14]} ticks, rss ${st[23]} pages"
  t0=$(date +%s%N)
  cat "$cubin" >"$work/fifo"
  wait "$p"
  say "fifo $i: rc $? $(hw_ms "$t0") ms from feeding to exit; output $(cmp -s "$work/fifo.out" "$work/whole.out" && echo same || echo DIFFERENT)"
  head -3 "$work/fifo.out" | cut -c1-200 | tee -a "$summary"
done
t0=$(date +%s%N)
cat "$cubin" | "$nvd" -c /dev/stdin >"$work/pipe.out" 2>&1
say "pipe /dev/stdin: rc $? $(hw_ms "$t0") ms; output $(cmp -s "$work/pipe.out" "$work/whole.out" && echo same || echo DIFFERENT)"
head -3 "$work/pipe.out" | cut -c1-200 | tee -a "$summary"
# Where the start-up goes: perf when there is one, else the loader's statistics.
if command -v perf >/dev/null; then
  perf record -o "$work/perf.data" -g "$nvd" -c "$cubin" >/dev/null 2>&1
  perf report -i "$work/perf.data" --stdio --no-children 2>/dev/null | grep -v '^#' | grep '%' | head -25 | tee -a "$summary"
else
  say "no perf"
fi
LD_DEBUG=statistics "$nvd" --version 2>&1 >/dev/null | grep -E "total startup|relocation" | head -4 | tee -a "$summary"
fi
# Can the decode start before the attach, from the program's own device code? cuobjdump's cost,
# whether the fatbin holds the ELF uncompressed, and whether the code cuda-gdb keeps for the
# running kernel (relocated by the driver) has the same bytes as the program's cubin.
hw_nvcc syncspin
exe=$src/syncspin
for i in 1 2 3; do rm -rf "$work/x" && mkdir "$work/x" && (cd "$work/x" && timed "xelf$i" cuobjdump -xelf all "$exe"); done
ls -l "$work/x" | tee -a "$summary"
objcopy -O binary --only-section=.nv_fatbin "$exe" "$work/fatbin.bin"
say "fatbin $(stat -c %s "$work/fatbin.bin") bytes, ELF magics inside: $(grep -c $'\x7fELF' "$work/fatbin.bin")"
hw_start_syncspin
cat >"$work/keep.py" <<'PY'
import os, re, gdb
s = gdb.execute("info symbol $pc", to_string=True)
print("INFO-SYMBOL", repr(s))
m = re.search(r" in section (\S+) of (\S+)\s*$", s)
if m:
    os.link(m.group(2), os.environ["KEEP"])
    print("SECTION", m.group(1))
PY
rm -f "$work/kept.elf"
KEEP=$work/kept.elf cuda-gdb -batch -nx -q -iex "set pagination off" -iex "set confirm off" \
  -ex "attach $pid" -ex "source $work/keep.py" -ex detach >"$work/keep.log" 2>&1
grep -E "INFO-SYMBOL|SECTION" "$work/keep.log" | tee -a "$summary"
sec=$(sed -n 's/^SECTION //p' "$work/keep.log")
kill -9 "$pid"
section() { # file name: the section's bytes (objcopy does not know CUDA's ELF machine)
  python3 - "$@" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
hdr = lambda i: struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize)
stroff = hdr(shstrndx)[4]
for i in range(shnum):
    h = hdr(i)
    name = d[stroff + h[0]:d.index(b"\0", stroff + h[0])].decode()
    if name == sys.argv[2]:
        sys.stdout.buffer.write(d[h[4]:h[4] + h[5]])
PY
}
for f in "$work"/x/*; do
  section "$f" "$sec" >"$work/cubin.text"
  section "$work/kept.elf" "$sec" >"$work/kept.text"
  say "$(basename "$f"): $sec $(stat -c %s "$work/cubin.text") bytes against kept $(stat -c %s "$work/kept.text"): $(cmp "$work/cubin.text" "$work/kept.text" >/dev/null && echo SAME || cmp "$work/cubin.text" "$work/kept.text" | head -1)"
  readelf -SW "$work/kept.elf" | grep -F "$sec" | tee -a "$summary"
  readelf -SW "$f" | grep -F "$sec" | tee -a "$summary"
  "$nvd" -c "$f" | grep -A3 -F "$sec:" | tail -2 | tee -a "$summary"
  "$nvd" -c "$work/kept.elf" | grep -A3 -F "$sec:" | tail -2 | tee -a "$summary"
  diff <("$nvd" -c "$f" | sed 's,/\*[0-9a-f]*\*/,,') <("$nvd" -c "$work/kept.elf" | sed 's,/\*[0-9a-f]*\*/,,') | head -20 | tee -a "$summary"
done
cp "$summary" "$out/"
