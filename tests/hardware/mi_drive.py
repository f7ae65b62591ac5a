#!/usr/bin/env python3
"""Test harness for the hardware scenarios (not part of rocplay, which is Python-free).

Subcommands:
  record  drive `cuda-gdb --interpreter=mi3 -nx -q` over MI from a command file and save both the
          raw stdout (.mi) and a rocplay recording (`# rocplay-transcript 1`), with the attach,
          stop and total times; this is how fixtures were made before `rocplay run` existed.
  batch   run `cuda-gdb -batch -nx -q -p PID -x FILE` with the CLI form of a recording's commands
          (the baseline rocplay's stop time is compared with).
  wrap    run any command (rocplay) and time it the same way.
  alive   check that a process runs after detach: /proc/PID/stat not stopped and its heartbeat
          file still advancing.

Every mode samples /proc/PID/stat every 2 ms and reports the window in which the target's main
thread was seen stopped (state t or T): an outside measure that treats every tool alike.
"""

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

RESULT_RE = re.compile(rb"^(\d*)\^(done|running|error|exit|connected)")
THREAD_ID_RE = re.compile(r'\{id="(\d+)",target-id="')
PC_RE = re.compile(r"0x[0-9a-f]{6,16}")


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The state follows the last ')' (the command name may hold spaces or parentheses).
    close = data.rfind(b")")
    return data[close + 2 : close + 3].decode() if close >= 0 else None


class StopSampler:
    """Samples the target's state; reports first/last time it was seen stopped."""

    def __init__(self, pid, t0):
        self.pid = pid
        self.t0 = t0
        self.first = None
        self.last = None
        self.samples = 0
        self.stopped_samples = 0
        # Several stops (rocplay --samples N): each window apart, the time between them not
        # counted.
        self.windows = []
        self._open = None
        self._prev = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._done.is_set():
            state = proc_state(self.pid)
            now = time.monotonic() - self.t0
            self.samples += 1
            if state in ("t", "T"):
                self.stopped_samples += 1
                if self.first is None:
                    self.first = now
                self.last = now
                if self._open is None:
                    self._open = now
                self._prev = now
            elif self._open is not None:
                self.windows.append(round(self._prev - self._open, 4))
                self._open = None
            time.sleep(0.002)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        if self._open is not None:
            self.windows.append(round(self._prev - self._open, 4))
            self._open = None

    def result(self):
        if self.first is None:
            return {"stop_window_s": 0.0, "stopped_samples": 0, "samples": self.samples}
        return {
            "first_stop_s": round(self.first, 4),
            "last_stop_s": round(self.last, 4),
            "stop_window_s": round(self.last - self.first, 4),
            "stop_windows_s": self.windows,
            "stopped_samples": self.stopped_samples,
            "samples": self.samples,
        }


def mi_quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mi_unquote(text):
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1].encode().decode("unicode_escape")
    return text


class MiDriver:
    def __init__(self, argv, raw_path, rec_path, meta, t0):
        self.t0 = t0
        # stderr apart: merged, it splits MI lines (the README's recordings are stdout only).
        self.stderr = open(raw_path + ".stderr", "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, bufsize=0)
        self.lines = queue.Queue()
        self.raw = open(raw_path, "wb")
        self.rec = open(rec_path, "w", encoding="utf-8", errors="surrogateescape")
        self.rec.write("# rocplay-transcript 1\n")
        self.rec.write("# meta " + json.dumps(meta, separators=(",", ":")) + "\n")
        self.token = 0
        self.notes = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def now(self):
        return time.monotonic() - self.t0

    def _read(self):
        for line in iter(self.proc.stdout.readline, b""):
            at = self.now()
            self.raw.write(line)
            body = line.rstrip(b"\r\n")
            self.rec.write(f"< {at:.6f} " + body.decode("utf-8", "surrogateescape") + "\n")
            self.lines.put((at, body))
        self.lines.put((self.now(), None))

    def note(self, text):
        self.notes.append(text)
        self.rec.write(f"! {self.now():.6f} {text}\n")

    def wait_for(self, predicate, timeout):
        """Collects lines until predicate(line) is true; returns (lines, matched)."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return got, False
            try:
                _, line = self.lines.get(timeout=left)
            except queue.Empty:
                return got, False
            if line is None:
                return got, False
            got.append(line)
            if predicate(line):
                return got, True

    def send(self, command, timeout=60.0):
        self.token += 1
        tok = str(self.token).encode()
        self.rec.write(f"> {self.now():.6f} {self.token}{command}\n")
        self.proc.stdin.write(f"{self.token}{command}\n".encode())
        self.proc.stdin.flush()

        def is_result(line):
            m = RESULT_RE.match(line)
            return m is not None and m.group(1) == tok

        got, ok = self.wait_for(is_result, timeout)
        if not ok:
            self.note(f"timeout: no result for {command!r} within {timeout:.0f} s")
        return got, ok


def text_of(lines):
    out = []
    for line in lines:
        if line.startswith(b'~"'):
            out.append(mi_unquote(line[1:].decode("utf-8", "replace")))
    return "".join(out)


def cmd_record(args):
    t0 = time.monotonic()
    meta = {"debugger": "cuda-gdb", "pid": args.pid, "scenario": args.scenario,
            "fast": args.fast, "recorder": "tests/hardware/mi_drive.py"}
    if args.rank is not None:
        meta["rank"] = args.rank
    argv = [args.debugger, "--interpreter=mi3", "-nx", "-q"]
    times = {"scenario": args.scenario, "mode": "record", "fast": args.fast}
    with StopSampler(args.pid, t0) as sampler:
        drv = MiDriver(argv, args.raw, args.out, meta, t0)
        drv.wait_for(lambda line: line.startswith(b"(gdb)"), 30)
        attached = False
        last_thread_info = ""
        last_threads_table = ""
        try:
            if args.from_recording:
                lines = commands_from_recording(args.from_recording)
            else:
                lines = open(args.commands, encoding="utf-8").read().splitlines()
            for raw in lines:
                cmd = raw.strip()
                if not cmd or cmd.startswith("#"):
                    continue
                if cmd == "@fast":
                    if args.fast:
                        drv.send("-gdb-set auto-solib-add off")
                    continue
                if cmd.startswith("@sleep"):
                    time.sleep(float(cmd.split()[1]))
                    continue
                if cmd == "@attach":
                    t_attach = drv.now()
                    got, ok = drv.send(f"-target-attach {args.pid}", timeout=args.attach_timeout)
                    attached = ok and not any(b"^error" in g for g in got)
                    if not attached:
                        break
                    if not any(g.startswith(b"*stopped") for g in got):
                        _, ok = drv.wait_for(lambda line: line.startswith(b"*stopped"),
                                             args.attach_timeout)
                        if not ok:
                            drv.note("no *stopped after attach")
                    times["attach_s"] = round(drv.now() - t_attach, 4)
                    times["attach_sent_s"] = round(t_attach, 4)
                    continue
                if cmd == "@host-stacks":
                    for tid in THREAD_ID_RE.findall(last_thread_info):
                        drv.send(f"-stack-list-frames --thread {tid}")
                    continue
                if cmd == "@info-lines":
                    seen = []
                    for row in last_threads_table.splitlines():
                        m = PC_RE.search(row)
                        if m and m.group(0) not in seen:
                            seen.append(m.group(0))
                    for pc in seen[: args.max_pcs]:
                        drv.send("-interpreter-exec console " + mi_quote(f"info line *{pc}"))
                    continue
                if cmd == "@detach":
                    got, ok = drv.send("-target-detach", timeout=30)
                    times["detached_s"] = round(drv.now(), 4)
                    if "attach_sent_s" in times:
                        times["stop_s"] = round(times["detached_s"] - times["attach_sent_s"], 4)
                    attached = False
                    continue
                got, _ = drv.send(cmd.replace("$PID", str(args.pid)))
                joined = b"\n".join(got).decode("utf-8", "replace")
                if cmd.startswith("-thread-info"):
                    last_thread_info = joined
                if "info cuda threads" in cmd:
                    last_threads_table = text_of(got)
        finally:
            if attached:
                drv.note("detaching on the way out")
                drv.send("-target-detach", timeout=30)
            try:
                drv.send("-gdb-exit", timeout=15)
            except (BrokenPipeError, OSError):
                pass
            try:
                drv.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                drv.proc.kill()
            drv.reader.join(timeout=5)
            drv.raw.close()
            drv.rec.close()
            drv.stderr.close()
    times["total_s"] = round(time.monotonic() - t0, 4)
    times.update(sampler.result())
    times["notes"] = drv.notes
    times["state_after"] = proc_state(args.pid)
    emit(args.times, times)


def cli_of(command):
    """The CLI form of an MI command, for the raw -batch baseline; None to skip."""
    command = re.sub(r"^\d+", "", command.strip())
    if command.startswith("-interpreter-exec console "):
        return mi_unquote(command[len("-interpreter-exec console "):])
    parts = command.split()
    if not parts:
        return None
    head = parts[0]
    if head == "-gdb-set":
        return "set " + " ".join(parts[1:])
    if head.startswith("-cuda-info-"):
        return "info cuda " + head[len("-cuda-info-"):].replace("-", " ")
    if head == "-thread-info":
        return "info threads"
    if head == "-stack-list-frames":
        # Thread ids differ between sessions: the per-thread stacks become one
        # `thread apply all bt` (the script keeps it once).
        if "--thread" in parts:
            return "thread apply all bt"
        return "bt"
    if head == "-data-evaluate-expression":
        return "print " + " ".join(parts[1:])
    if head == "-target-detach":
        return "detach"
    if head == "-thread-select":
        return "thread " + parts[1]
    return None


def recorded_commands(path):
    """The commands of a rocplay recording (`> TIME TOKENcommand` lines), tokens stripped."""
    sent = []
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("> "):
            sent.append(re.sub(r"^\d+", "", line.split(" ", 2)[2].rstrip("\n")))
    return sent


def commands_from_recording(path):
    """record's command list that replays a rocplay recording over MI without its symbol
    preload: the same start-up commands, @attach, the same commands while stopped, @detach.
    The way that tells what the preload does to the stop (same MI session, same commands)."""
    out = []
    attached = False
    sent = recorded_commands(path)
    preloaded = any(c.startswith("-file-exec-and-symbols") or "add-symbol-file" in c
                    for c in sent)
    for command in sent:
        if command.startswith("-target-attach"):
            out.append("@attach")
            attached = True
        elif command.startswith("-target-detach"):
            out.append("@detach")
            break
        elif command.startswith("-gdb-exit"):
            break
        elif not attached and (command.startswith("-file-exec-and-symbols")
                               or "add-symbol-file" in command):
            continue  # the preload
        elif preloaded and command.startswith("-gdb-set auto-solib-add"):
            continue  # set after the preload: without it, the attach reads the libraries
        else:
            out.append(command)
    return out


def cmd_batch(args):
    sent = recorded_commands(args.recording)
    script = ["set pagination off", "set confirm off"]
    if args.fast:
        script.append("set auto-solib-add off")
    attached = False
    for command in sent:
        attached = attached or command.startswith("-target-attach")
        cli = cli_of(command)
        # Before the attach only settings count: rocplay's symbol preload (`add-symbol-file`,
        # sent while the target runs) would, in a script that runs after `-p`, happen inside
        # the stop; plain cuda-gdb reads the libraries' symbols during its own attach.
        if not attached and cli and not cli.startswith("set "):
            continue
        # rocplay sets auto-solib-add off after its preload (cuda-gdb); plain cuda-gdb reads the
        # libraries during the attach. --fast sets it above, before the attach (-iex).
        if cli and cli.startswith("set auto-solib-add"):
            continue
        # Once each: an MI command and its console twin map to the same CLI line. rocplay's
        # `may-call-functions off` is left out: cuda-gdb calls into the target to attach and
        # to detach, so with it the raw baseline cannot even detach.
        if cli and cli not in script and "may-call-functions" not in cli:
            script.append(cli)
    if "detach" not in script:
        script.append("detach")
    with open(args.script, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")
    argv = [args.debugger, "-batch", "-nx", "-q"]
    if args.fast:
        argv += ["-iex", "set auto-solib-add off"]
    argv += ["-p", str(args.pid), "-x", args.script]
    run_timed(args, argv, {"mode": "raw-batch", "fast": args.fast})


def cmd_wrap(args):
    run_timed(args, args.argv, {"mode": "wrap"})


def run_timed(args, argv, times):
    times["scenario"] = args.scenario
    times["argv"] = argv
    t0 = time.monotonic()
    with StopSampler(args.pid, t0) as sampler:
        with open(args.log, "wb") as log:
            try:
                rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                                    timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
    times["rc"] = rc
    times["total_s"] = round(time.monotonic() - t0, 4)
    times.update(sampler.result())
    times["state_after"] = proc_state(args.pid)
    emit(args.times, times)


def read_status(path):
    try:
        with open(path, encoding="utf-8") as f:
            beats, progress = f.read().split()
            return int(beats), int(progress)
    except (OSError, ValueError):
        return None


def cmd_alive(args):
    state1 = proc_state(args.pid)
    s1 = read_status(args.status)
    time.sleep(args.wait)
    state2 = proc_state(args.pid)
    s2 = read_status(args.status)
    out = {"scenario": args.scenario, "state": [state1, state2], "status": [s1, s2]}
    running = state2 is not None and state2 not in ("t", "T")
    beating = s1 is not None and s2 is not None and s2[0] > s1[0]
    out["running"] = running
    out["heartbeat_advances"] = beating
    if args.expect_progress:
        out["progress_advances"] = beating and s2[1] > s1[1]
    out["ok"] = running and beating and out.get("progress_advances", True)
    emit(args.times, out)
    sys.exit(0 if out["ok"] else 1)


def emit(path, obj):
    line = json.dumps(obj, separators=(",", ":"))
    print(line, flush=True)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)

    def common(sp):
        sp.add_argument("--pid", type=int, required=True)
        sp.add_argument("--scenario", default="")
        sp.add_argument("--times", default="", help="append a JSON line with the times here")

    r = sub.add_parser("record")
    common(r)
    r.add_argument("--debugger", default="cuda-gdb")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--commands", help="a command file (triage.cmds)")
    how.add_argument("--from-recording", help="replay a rocplay recording without its preload")
    r.add_argument("--out", required=True)
    r.add_argument("--raw", required=True)
    r.add_argument("--fast", action="store_true")
    r.add_argument("--rank", type=int)
    r.add_argument("--attach-timeout", type=float, default=120)
    r.add_argument("--max-pcs", type=int, default=32)
    r.set_defaults(func=cmd_record)

    b = sub.add_parser("batch")
    common(b)
    b.add_argument("--debugger", default="cuda-gdb")
    b.add_argument("--recording", required=True, help="take the commands from this recording")
    b.add_argument("--script", required=True, help="write the CLI script here")
    b.add_argument("--log", required=True)
    b.add_argument("--fast", action="store_true")
    b.add_argument("--timeout", type=float, default=180)
    b.set_defaults(func=cmd_batch)

    w = sub.add_parser("wrap")
    common(w)
    w.add_argument("--log", required=True)
    w.add_argument("--timeout", type=float, default=180)
    w.add_argument("argv", nargs=argparse.REMAINDER)
    w.set_defaults(func=cmd_wrap)

    a = sub.add_parser("alive")
    common(a)
    a.add_argument("--status", required=True)
    a.add_argument("--wait", type=float, default=1.0)
    a.add_argument("--expect-progress", action="store_true")
    a.set_defaults(func=cmd_alive)

    args = p.parse_args()
    if args.mode == "wrap" and args.argv and args.argv[0] == "--":
        args.argv = args.argv[1:]
    args.func(args)


if __name__ == "__main__":
    main()
