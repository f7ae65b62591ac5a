# A thread pool starved by its own tasks: each of the two workers runs a task that submits a
# subtask to the same pool and waits for its result, so every worker waits on a condition only a
# worker could signal, and the main thread waits for the tasks. Every thread of the process is
# asleep with no timer and no fd from outside: a deadlock of the process. Prints `ready` once
# both workers wait.
import concurrent.futures
import threading

pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
started = threading.Barrier(3)


def subtask(n):
    return n * 2


def task(n):
    started.wait()
    inner = pool.submit(subtask, n)
    return inner.result()  # rocplay-test: pool task waits line


def main():
    futures = [pool.submit(task, n) for n in range(2)]
    started.wait()
    print("ready", flush=True)
    return [f.result() for f in futures]  # rocplay-test: pool main waits line


main()
