# A CPython process whose threads stop at known lines, for rocplay's Python stacks
# (tests/live/test_pyframes_live.cpp). Each worker blocks where it will stay:
#   waiter   in threading.Event.wait (a lock in C, the GIL released)
#   spinner  in a pure-Python busy loop (one line; it holds the GIL)
#   deep     40 nested calls down, in Lock.acquire on a lock the main thread holds
#   sleeper  in time.sleep (a C extension call)
#   main     in os.read on a pipe nobody writes
# Once all are there, a reporter thread takes sys._current_frames() and prints every thread's
# stack (native id, then frames innermost first: qualified name, file, line) as one JSON line,
# then `ready`, and ends. Mode `gil` (argv[1]): a thread calls libc's sleep through ctypes.PyDLL,
# which keeps the GIL, so every other Python thread stops behind it. Mode `locks`: two threads
# take two threading.Locks in opposite orders and deadlock; main joins one of them.
import ctypes
import json
import os
import sys
import threading
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "threads"
ready = threading.Barrier(5 if mode == "threads" else 3)
first = threading.Lock()
second = threading.Lock()
both_hold_one = threading.Barrier(2)
held = threading.Lock()
held.acquire()
never = threading.Event()
printed = threading.Event()


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
    printed.wait()  # the reporter has written its line
    ctypes.PyDLL(None).sleep(100000)  # rocplay-test: GIL sleep line


def forward():
    ready.wait()
    with first:
        both_hold_one.wait()
        with second:  # rocplay-test: forward lock line
            pass


def backward():
    ready.wait()
    with second:
        both_hold_one.wait()
        with first:  # rocplay-test: backward lock line
            pass


def qualname(code):
    return getattr(code, "co_qualname", code.co_name)


def report():
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
    line = json.dumps({"pid": os.getpid(), "version": sys.version.split()[0], "threads": stacks})
    sys.stdout.write(line + "\nready\n")
    sys.stdout.flush()
    printed.set()


workers = {"threads": [waiter, spinner, deep, sleeper], "gil": [waiter, gil_holder],
           "locks": [forward, backward]}[mode]
started = [threading.Thread(target=w, name=w.__name__, daemon=True) for w in workers]
for t in started:
    t.start()
ready.wait()
threading.Thread(target=report, name="reporter").start()
if mode == "locks":
    started[0].join()  # rocplay-test: join line
r, _w = os.pipe()
os.read(r, 1)
