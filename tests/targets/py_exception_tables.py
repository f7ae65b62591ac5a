# Writes the exception tables of real code objects, with the entries CPython's own dis module
# reads from them (start and end in code units, the handler's stack depth), as JSON: the
# fixtures under fixtures/pyframes/ that tests/unit/pyframes/linetable.cpp decodes with
# rocplay's own reader (pyframes::handler_depth). Run with the interpreter whose tables are
# wanted:  python3.X tests/targets/py_exception_tables.py > fixtures/pyframes/exception-tables-3.X.json
import dis
import json
import sys
import threading
import json.decoder as decoder
import queue

LIMIT = 200


def nested_with(a, b):
    with a:
        x = 1
        with b:
            pass
    return x


def codes(obj, out):
    for c in obj.co_consts:
        if hasattr(c, "co_exceptiontable") and len(out) < LIMIT:
            out.append(c)
            codes(c, out)


def main():
    found = [nested_with.__code__]
    for module in (threading, queue, decoder):
        with open(module.__file__, "rb") as fh:
            top = compile(fh.read(), module.__file__, "exec")
        codes(top, found)
    tables = []
    for c in found:
        if not c.co_exceptiontable:
            continue
        # dis gives byte offsets, `end` exclusive.
        entries = [[e.start // 2, e.end // 2, e.depth] for e in dis._parse_exception_table(c)]
        tables.append({"name": c.co_qualname, "table": c.co_exceptiontable.hex(),
                       "units": len(c.co_code) // 2, "entries": entries})
    json.dump({"python": sys.version.split()[0], "tables": tables}, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
