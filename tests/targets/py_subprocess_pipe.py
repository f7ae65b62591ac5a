# A parent that feeds a child through a pipe and then waits for it without closing the pipe: the
# child reads its stdin until end of file, which never comes, because the parent holds the write
# end while it sits in Popen.wait(). The wait-for graph's root: a cycle, the parent's thread
# (run_filter's line, not subprocess.py) -> the child process -> its read() on the pipe -> the
# pipe's write end, held by the parent. Prints `ready` just before the wait.
import subprocess
import sys


def run_filter():
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    child.stdin.write(b"header\n")
    child.stdin.flush()
    print("ready", flush=True)
    child.wait()  # rocplay-test: Popen.wait line


run_filter()
