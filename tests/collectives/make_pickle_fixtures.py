#!/usr/bin/env python3
# Writes the pickle-reader fixtures (fixtures/collectives/pickle/) with CPython's own pickler:
# one data-only value in protocols 2 to 5 (memo shared, nested, every scalar kind), and pickles
# that name code (GLOBAL, STACK_GLOBAL/REDUCE), which rocplay must refuse without running them.
# Usage: make_pickle_fixtures.py OUTDIR
import collections
import os
import pickle
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
shared = {"name": "f", "filename": "x.py", "line": 7}
value = {
    "version": "2.10",
    "ints": [0, 1, 255, 256, 65535, 65536, -1, -2**31, 2**31, 2**62, -2**63],
    "floats": [0.25, -1.5e300],
    "flags": (True, False, None),
    "text": "héllo",
    "raw": b"\x00\x01bytes",
    "nested": {"a": [[1, 2], [3]], 7: "int key"},
    "shared": [shared, shared],
    "tuple5": (1, 2, 3, 4, 5),
    "set": {3},
}
for proto in (2, 3, 4, 5):
    v = dict(value)
    if proto < 4:  # protocols 2 and 3 write sets (and 2 bytes) through a REDUCE of a global
        v["set"] = [3]
    if proto == 2:
        v["raw"] = "\x00\x01bytes"
    with open(os.path.join(out, f"data_protocol{proto}.pkl"), "wb") as f:
        pickle.dump(v, f, protocol=proto)
with open(os.path.join(out, "global_protocol2.pkl"), "wb") as f:
    pickle.dump({"hook": collections.OrderedDict}, f, protocol=2)  # GLOBAL
with open(os.path.join(out, "reduce_protocol4.pkl"), "wb") as f:
    pickle.dump(collections.OrderedDict(a=1), f, protocol=4)  # STACK_GLOBAL + REDUCE
