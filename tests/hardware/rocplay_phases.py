#!/usr/bin/env python3
"""Issue 46: where a `--samples 1` look's time goes outside the debugger session.

Runs `rocplay run hang-triage --pid PID --debugger cuda-gdb --samples 1 --record REC` ROUNDS
times and splits each wall time at the recording's stamps (seconds since the session began): the
detach, cuda-gdb's `^exit`, the last stamp (the code window's notes), and `outside`, the wall time
less the last stamp: rocplay's own start before the session and its end after it (the analysis,
the report). The recording file appears at its first flush, not when the session begins, so it
says nothing of where the session began.

    rocplay_phases.py ROCPLAY PID ROUNDS OUTDIR
"""
import os
import statistics
import subprocess
import sys
import time

rocplay, pid, rounds, outdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rec = os.path.join(outdir, "phases.rec")
rows = []
for i in range(rounds):
    if os.path.exists(rec):
        os.unlink(rec)
    t0 = time.monotonic()
    p = subprocess.Popen([rocplay, "run", "hang-triage", "--pid", pid, "--debugger", "cuda-gdb",
                          "--samples", "1", "-q", "--format", "json", "--output",
                          os.path.join(outdir, "phases.json"), "--record", rec],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.wait()
    end = time.monotonic()
    stamps, detach, exit_answer = [], None, None
    for line in open(rec).read().splitlines():
        if line[:2] in ("> ", "< ", "! "):
            t = float(line.split()[1])
            stamps.append(t)
            if "detached from pid" in line:
                detach = t
            if "^exit" in line:
                exit_answer = t
    row = {"wall": end - t0, "detach": detach, "exit": exit_answer, "last": stamps[-1],
           "outside": end - t0 - stamps[-1]}
    rows.append(row)
    print(" ".join(f"{k} {v * 1000:.0f}" for k, v in row.items() if v is not None), flush=True)
print("medians: " + " ".join(
    f"{k} {statistics.median(r[k] for r in rows if r[k] is not None) * 1000:.0f} ms"
    for k in rows[0]))
