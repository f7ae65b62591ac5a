"""The heartbeat the hardware scenarios write, so a script can tell a rank runs after the detach.

Every 50 ms: `<beats> <steps>` into PATH, replaced atomically (x2_scenarios.sh's `alive` reads
the first number and expects it to rise).
"""

import os
import time


def heartbeat(path: str, state: dict) -> None:
    beats = 0
    while True:
        beats += 1
        with open(path + ".tmp", "w") as f:
            f.write(f"{beats} {state['steps']}\n")
        os.replace(path + ".tmp", path)
        time.sleep(0.05)
