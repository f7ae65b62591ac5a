# Writes the location tables of real code objects, with the line CPython itself gives each range
# of code (code.co_lines()), as JSON: the fixtures under fixtures/pyframes/ that
# tests/unit/pyframes/linetable.cpp decodes with rocplay's own decoder. Run with the interpreter
# whose tables are wanted:  python3.X tests/targets/py_linetables.py > fixtures/pyframes/linetables-3.X.json
import json
import sys
import threading
import json.decoder as decoder

LIMIT = 40


def codes(obj, out):
    for c in obj.co_consts:
        if hasattr(c, "co_lines") and len(out) < LIMIT:
            out.append(c)
            codes(c, out)


def main():
    found = []
    for module in (threading, decoder):
        with open(module.__file__, "rb") as fh:
            top = compile(fh.read(), module.__file__, "exec")
        found.append(top)
        codes(top, found)
    tables = []
    for c in found[:LIMIT * 2]:
        ranges = [[start, end, line] for start, end, line in c.co_lines()]
        tables.append({"name": getattr(c, "co_qualname", c.co_name),
                       "firstlineno": c.co_firstlineno,
                       "linetable": c.co_linetable.hex(),
                       "lines": ranges})
    json.dump({"version": sys.version.split()[0], "tables": tables}, sys.stdout, indent=None)
    sys.stdout.write("\n")


main()
