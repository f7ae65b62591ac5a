# A Python process whose helper thread holds the GIL inside one long C call that never returns
# (tests/targets/shared/busy_lib.cpp through ctypes.PyDLL, which keeps the GIL), while the main
# thread, back in its training loop, waits for the GIL in take_gil. The wait-for graph's root: the
# helper (tokenize_batch's line) in one C call; the chain: the GIL <- the main thread (train_loop's
# line). argv[1]: the library. Prints `ready` just before the helper enters its call.
import ctypes
import sys
import threading

lib = ctypes.PyDLL(sys.argv[1])
go = threading.Event()


def tokenize_batch():
    go.wait()
    lib.rocplay_tokenize_forever()  # rocplay-test: GIL C call line


def train_loop():
    helper = threading.Thread(target=tokenize_batch, name="tokenizer", daemon=True)
    helper.start()
    print("ready", flush=True)
    go.set()
    step = 0
    while True:
        step += 1  # rocplay-test: train loop line


train_loop()
