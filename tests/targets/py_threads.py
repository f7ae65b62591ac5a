# A CPython process whose threads stop at known lines, for rocplay's Python stacks
# (tests/live/test_pyframes_live.cpp). Each worker blocks where it will stay:
#   waiter   in threading.Event.wait (a lock in C, the GIL released)
#   spinner  in a pure-Python busy loop (one line; it holds the GIL)
#   deep     40 nested calls down, in Lock.acquire on a lock the main thread holds
#   sleeper  in time.sleep (a C extension call)
#   main     in os.read on a pipe nobody writes
# Once all are there, a reporter thread takes sys._current_frames() and writes every thread's
# stack (native id, then frames innermost first: qualified name, file, line) as JSON to the file
# named by argv[1], then ends. Mode `gil` (argv[2]): a thread calls libc's sleep through
# ctypes.PyDLL, which keeps the GIL, so every other Python thread stops behind it.
import ctypes
import json
import os
import sys
import threading
import time

out_path = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "threads"
ready = threading.Barrier(5 if mode == "threads" else 3)
held = threading.Lock()
held.acquire()
never = threading.Event()


def waiter():
    ready.wait()
    never.wait()


def spinner():
    n = 0
    ready.wait()
    while True: n += 1


def nest(depth):
    if depth == 0:
        ready.wait()
        held.acquire()
    return nest(depth - 1) if depth else None


def deep():
    nest(40)


def sleeper():
    ready.wait()
    time.sleep(100000)


def gil_holder():
    ready.wait()
    time.sleep(0.5)  # the reporter writes the file first
    ctypes.PyDLL(None).sleep(100000)


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def report(expected_threads):
    time.sleep(0.3)  # every worker is past the barrier and in its blocking call
    frames = sys._current_frames()
    natives = {t.ident: t.native_id for t in threading.enumerate()}
    me = threading.get_ident()
    stacks = []
    for ident, frame in frames.items():
        if ident == me:
            continue
        stack = []
        f = frame
        while f is not None:
            stack.append([qualname(f.f_code), f.f_code.co_filename, f.f_lineno])
            f = f.f_back
        stacks.append({"lwp": natives.get(ident), "frames": stack})
    with open(out_path + ".tmp", "w") as fh:
        json.dump({"pid": os.getpid(), "version": sys.version.split()[0], "threads": stacks}, fh)
    os.rename(out_path + ".tmp", out_path)


workers = [waiter, spinner, deep, sleeper] if mode == "threads" else [waiter, gil_holder]
for w in workers:
    threading.Thread(target=w, name=w.__name__, daemon=True).start()
ready.wait()
threading.Thread(target=report, args=(len(workers),), name="reporter").start()
r, _w = os.pipe()
os.read(r, 1)
