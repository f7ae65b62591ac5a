# A consumer in queue.get() that nothing feeds: the only other thread, the producer, waits for a
# go-ahead nobody gives, so no thread could ever put to the queue. The wait-for graph's root: the
# consumer's queue (the line that called queue.get, not threading.py). Prints `ready` once both
# threads wait.
import queue
import threading

go = threading.Event()
items = queue.Queue()


def produce():
    go.wait()  # rocplay-test: producer waits line
    items.put("work")


def consume():
    print("ready", flush=True)
    return items.get()  # rocplay-test: queue.get line


threading.Thread(target=produce, name="producer", daemon=True).start()
consume()
