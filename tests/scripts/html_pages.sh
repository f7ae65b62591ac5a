#!/usr/bin/env bash
# `--format html` on real recordings, as a person opens them: each page is written by
# `rocplay postmortem --format html`, checked for anything that would reach the network (no
# http(s) URL in a src, href, CSS url() or @import), for the cause text and the graph's <svg>,
# then opened in headless Chromium (Debian's `chromium`) with every host name unresolvable and a
# net log: the log must hold no request for an http(s) or ws(s) URL and no host lookup, and the
# screenshot must not be blank (many distinct colours). Pages and screenshots land in OUT_DIR
# (build/html-shots/) for a person to open. With UPDATE_DOCS=1 the missing-rank page's picture
# is copied to docs/images/html-report.png (docs/html-report.md shows it).
# Usage: tests/scripts/html_pages.sh ROCPLAY SOURCE_DIR OUT_DIR
set -euo pipefail
bin=$1 src=$2 out=$3
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$src"
fail=0

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "html_pages: no chromium here; install Debian's chromium package (scripts/setup.sh does)" >&2
  exit 1
fi

# The number of distinct colours in the top quarter of a PNG (8-bit RGB or RGBA, non-interlaced,
# as Chromium writes them): a blank or failed screenshot has one or two. A quarter (the header,
# the cause, the graph's start) keeps this pure-Python reader to a fraction of a second.
png_colours() {
  python3 - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, "unexpected PNG layout"
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, prev, colours = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set()
for y in range(h // 4):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255  # (Chromium's most common filter)
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 2 == 0:  # every other row and pixel is plenty to tell a page from a blank
        colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 2))
    prev = line
print(len(colours))
EOF
}

# The requests for anything but file: and data: URLs that a page made, from Chromium's net log:
# those whose isolation key is the page's (file://) or that name an initiator. Chromium's own
# background requests (its updater, sign-in) have no origin and are not the page's.
page_requests() {
  python3 - "$1" <<'EOF'
import json, sys
try:
    log = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(1)
types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
asked = set()
for e in log.get("events", []):
    p = e.get("params", {})
    url = p.get("url", "")
    if types.get(e["type"]) != "URL_REQUEST_START_JOB" or url.split(":")[0] in ("file", "data"):
        continue
    if "file://" in p.get("network_isolation_key", "") or p.get("initiator") != "not an origin":
        asked.add(url[:80])
print(" ".join(sorted(asked)))
EOF
}

# section ID FILE: the page's <section id="ID"> (the page writes no section inside another).
section() {
  perl -0777 -ne 'print $1 if /<section id="\Q'"$1"'\E">(.*?)<\/section>/s' "$2"
}

# browse HTML PNG NETLOG CONSOLE-LOG [WIDTH,HEIGHT]: HTML in headless Chromium, host names
# unresolvable.
browse() {
  local profile rc=0
  profile=$(mktemp -d)
  rm -f "$2" "$3"
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$profile" --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --disable-default-apps --disable-extensions \
    --host-resolver-rules='MAP * ~NOTFOUND' --log-net-log="$3" --net-log-capture-mode=Default \
    --window-size="${5:-1280,1800}" --screenshot="$2" "file://$1" >"$4" 2>&1 || rc=$?
  rm -rf "$profile"
  return "$rc"
}

# The net-log check must see a request when a page makes one: a page with a remote image first.
printf '<!DOCTYPE html><title>canary</title><img src="http://rocplay.invalid/x.png">' \
  >"$out/canary.html"
browse "$out/canary.html" "$out/canary.png" "$out/canary.netlog.json" "$out/canary.chromium.log" ||
  true
if ! page_requests "$out/canary.netlog.json" | grep -q 'rocplay.invalid'; then
  echo "html_pages: the net-log check did not see the canary page's request; it proves nothing" >&2
  exit 1
fi

# page NAME EXPECTED-CAUSE-TEXT GRAPH INPUT...: write, check, open and photograph one page.
# GRAPH: `drawn` (an <svg>), or `none` for inputs with no wait to draw (crash logs alone): then
# the section must say so.
page() {
  local name=$1 cause=$2 graph=$3
  shift 3
  local html="$out/$name.html" png="$out/$name.png" log="$out/$name.netlog.json" rc=0
  "$bin" postmortem --no-progress --format html -o "$html" "$@" || rc=$?
  if [ "$rc" -ge 64 ] || [ ! -s "$html" ]; then
    echo "html_pages: $name: \`rocplay postmortem --format html $*\` failed (exit $rc)" >&2
    fail=1
    return
  fi
  local problems=()
  # Nothing to fetch: no remote src/href/url()/@import (the only URLs are SVG's xmlns names).
  if grep -Eiq '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?[[:space:]]*(https?:|//|ftp:)|url\([[:space:]]*["'"'"']?(https?:|//)|@import' "$html"; then
    problems+=("it names a remote resource")
  fi
  grep -q '<script' "$html" && problems+=("it holds a <script>")
  # The cause (the text's first lines) and the graph drawn.
  local lead
  lead=$(section cause "$html")
  grep -qF -- "$cause" <<<"$lead" || problems+=("the cause section lacks \`$cause\`")
  local drawing
  drawing=$(section graph "$html")
  if [ "$graph" = drawn ]; then
    grep -q '<svg' <<<"$drawing" || problems+=("the graph is not drawn (no <svg>)")
  else
    grep -q 'No wait was seen' <<<"$drawing" || problems+=("the graph section says nothing")
  fi
  # The browser: every host name unresolvable, the net log kept, a screenshot taken.
  browse "$html" "$png" "$log" "$out/$name.chromium.log" ||
    problems+=("chromium failed (see $out/$name.chromium.log)")
  if [ ! -s "$png" ]; then
    problems+=("no screenshot")
  else
    local colours
    colours=$(png_colours "$png")
    [ "$colours" -ge 24 ] || problems+=("the screenshot looks blank ($colours colours)")
  fi
  local asked
  if ! asked=$(page_requests "$log"); then
    problems+=("no readable net log")
  elif [ -n "$asked" ]; then
    problems+=("the page asked the network: $asked")
  fi
  if [ "${#problems[@]}" -gt 0 ]; then
    for p in "${problems[@]}"; do
      echo "html_pages: $name: $p" >&2
    done
    fail=1
  else
    echo "html_pages: $name: $(wc -c <"$html") bytes, screenshot $png"
  fi
}

page missing-rank-2 "rank 1" drawn fixtures/cuda-gdb/h200x2-scenarios/skip_rank-rank0.rec \
  fixtures/cuda-gdb/h200x2-scenarios/skip_rank-rank1.rec
page missing-rank-8 "rank 5" drawn fixtures/rocgdb/tp8-missing-rank/rank*.mi
page ipc-sync-lanes "flag" drawn fixtures/cuda-gdb/h200x2-scenarios/ipc-rank0.rec \
  fixtures/cuda-gdb/h200x2-scenarios/ipc-rank1.rec
page splitk-clean "_clean" drawn fixtures/rocgdb/splitk-clean-two-queues/snapshot.mi
page host-deadlock "cycle" drawn fixtures/rocgdb/host-mutex-deadlock/snapshot.mi
page crash-verdict "rank 2" none fixtures/crash/tp4-rank2-first
page device-assert "fault" drawn fixtures/cuda-gdb/h100-launch/device_assert.rec

# Without Graphviz the page still comes, the graph listed as text with what to install.
nogv="$out/no-graphviz.html"
if ROCPLAY_LIBGVC=/nonexistent/libgvc.so.6 "$bin" postmortem --no-progress --format html \
  -o "$nogv" fixtures/rocgdb/host-mutex-deadlock/snapshot.mi; [ "$?" -lt 64 ] &&
  grep -q 'The graph is listed, not drawn: Graphviz&#39;s libgvc.so.6 could not be loaded' "$nogv" &&
  grep -q 'apt-get install libgvc6' "$nogv" && grep -q '<b>waits for</b>' "$nogv" &&
  ! grep -q '<svg' "$nogv"; then
  echo "html_pages: no-graphviz: the graph listed, and how to get the drawing"
else
  echo "html_pages: no-graphviz: without libgvc the page does not list the graph and say why" >&2
  fail=1
fi

# Printed, the collapsed sections come out whole: the page prints more pages than the same page
# with its print rule for <details> taken out.
pdf_pages() { # html pdf
  local profile
  profile=$(mktemp -d)
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
    --no-first-run --host-resolver-rules='MAP * ~NOTFOUND' --no-pdf-header-footer \
    --print-to-pdf="$2" "file://$1" >/dev/null 2>&1 || true
  rm -rf "$profile"
  { grep -ao '/Type */Pages\?' "$2" 2>/dev/null || true; } | grep -vc Pages || true
}
sed 's/@supports selector(::details-content)/@supports selector(:no-such-thing)/' \
  "$out/missing-rank-8.html" >"$out/print-collapsed.html"
printed=$(pdf_pages "$out/missing-rank-8.html" "$out/print.pdf")
collapsed=$(pdf_pages "$out/print-collapsed.html" "$out/print-collapsed.pdf")
if [ "$printed" -gt "$collapsed" ] && [ "$collapsed" -gt 0 ]; then
  echo "html_pages: printed, the collapsed sections come out: $printed pages ($collapsed without)"
else
  echo "html_pages: printing: $printed pages, $collapsed with the sections collapsed" >&2
  fail=1
fi

if [ "${UPDATE_DOCS:-0}" = 1 ] && [ "$fail" = 0 ]; then
  # The top of the page (cause, graph, ranks, the tree's start), kept small for the repository.
  mkdir -p docs/images
  browse "$out/missing-rank-8.html" docs/images/html-report.png "$out/docs.netlog.json" \
    "$out/docs.chromium.log" 1280,1150
  echo "html_pages: docs/images/html-report.png updated"
fi
exit "$fail"
