# Four collective hangs for issue 43, each leaving PyTorch Flight Recorder dumps (pickle on the
# watchdog's timeout, pickle + JSON on demand while it hangs), NCCL_DEBUG=INFO logs and NCCL RAS
# answers. Run under `torchrun --nproc-per-node 2 fr_hang.py SCENARIO OUTDIR` (run_all.sh does).
#
#   missing_rank   rank 1 skips the 4th all_reduce and sleeps; rank 0 waits in it.
#   op_mismatch    rank 0 all_reduce, rank 1 all_gather_into_tensor on the same group and seq.
#   size_mismatch  rank 0 all_reduce of 1024 floats, rank 1 of 262144 floats.
#   order_deadlock groups A and B over both ranks; rank 0 enters A then B, rank 1 B then A, each
#                  waiting for its first to finish (as an .item() between them would).
#
# NCCL may let a mismatched pair finish (it does not check that peers agree); then rank 0 does one
# more all_reduce that rank 1 skips, so every scenario ends in a watchdog timeout. The first
# divergence stays the mismatch. Waits poll Work.is_completed() so the GIL stays free for the
# dumper thread.
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

SCENARIO, OUTDIR = sys.argv[1], sys.argv[2]
RANK = int(os.environ["RANK"])
LOCAL_RANK = int(os.environ["LOCAL_RANK"])
TIMEOUT_S = int(os.environ.get("FR_HANG_TIMEOUT_S", "25"))


def note(msg):
    print(f"[fr_hang rank{RANK} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def dump_on_demand(tag):
    c10d = torch._C._distributed_c10d
    for name, suffix in (("_dump_nccl_trace", "pkl"), ("_dump_nccl_trace_json", "json")):
        fn = getattr(c10d, name, None)
        if fn is None:
            note(f"no {name} in this build")
            continue
        try:
            try:
                if suffix == "json":
                    data = fn(includeCollectives=True, onlyActive=False)
                else:
                    data = fn(includeCollectives=True, includeStackTraces=True, onlyActive=False)
            except TypeError:  # keyword names differ between releases
                data = fn()
            if isinstance(data, str):
                data = data.encode()
            with open(os.path.join(OUTDIR, f"ondemand_{tag}_rank{RANK}.{suffix}"), "wb") as f:
                f.write(data)
            note(f"wrote on-demand {suffix} dump ({len(data)} bytes)")
        except Exception as e:  # a dump that fails must not change the hang under study
            note(f"{name} failed: {e!r}")


def ras_query(path, verbose=True, fmt=None):
    # The ncclras client's protocol (NCCL src/ras/client.cc): CLIENT PROTOCOL 2, optional
    # SET FORMAT, then [VERBOSE ]STATUS; the answer runs to EOF.
    try:
        s = socket.create_connection(("localhost", 28028), timeout=2)
        s.settimeout(15)
        f = s.makefile("rwb")
        f.write(b"CLIENT PROTOCOL 2\n"); f.flush()
        hello = f.readline()
        if fmt:
            f.write(f"SET FORMAT {fmt}\n".encode()); f.flush()
            ok = f.readline()
            if not ok.startswith(b"OK"):
                note(f"RAS refused SET FORMAT {fmt}: {ok!r}")
                return
        f.write(b"VERBOSE STATUS\n" if verbose else b"STATUS\n"); f.flush()
        body = f.read()
        with open(path, "wb") as out:
            out.write(body)
        note(f"RAS ({hello.strip().decode(errors='replace')}) answered {len(body)} bytes -> {path}")
    except Exception as e:
        note(f"RAS query failed: {e!r}")


def find_ncclras():
    found = shutil.which("ncclras")
    if found:
        return found
    try:
        import nvidia.nccl  # the pip wheel torch depends on
        for root in nvidia.nccl.__path__:
            for sub in ("bin/ncclras", "ncclras"):
                cand = os.path.join(root, sub)
                if os.access(cand, os.X_OK):
                    return cand
    except Exception:
        pass
    return None


def while_hanging(delay_s):
    time.sleep(delay_s)
    dump_on_demand("hang")
    if RANK == 0:
        tool = find_ncclras()
        if tool:
            # NCCL 2.28's ncclras has no JSON option (`-f json`: invalid option); the port gives it.
            for args, name in (([tool, "-v"], "ncclras.txt"),):
                try:
                    r = subprocess.run(args, capture_output=True, timeout=20)
                    with open(os.path.join(OUTDIR, name), "wb") as f:
                        f.write(r.stdout + (b"\n--- stderr ---\n" + r.stderr if r.stderr else b""))
                    note(f"{' '.join(args)} exit {r.returncode}")
                except Exception as e:
                    note(f"{tool} failed: {e!r}")
        else:
            note("no ncclras binary; asking the RAS port directly")
        ras_query(os.path.join(OUTDIR, "ras_status.txt"))
        ras_query(os.path.join(OUTDIR, "ras_status.json"), fmt="json")


def wait_for(work, what):
    # Bounded so a scenario always ends; the watchdog normally kills the process first.
    deadline = time.time() + TIMEOUT_S + 40
    while not work.is_completed():
        if time.time() > deadline:
            note(f"{what} still waiting after the watchdog should have fired; exiting")
            os._exit(3)
        time.sleep(0.05)
    note(f"{what} completed")


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    torch.cuda.set_device(LOCAL_RANK)
    dev = torch.device("cuda", LOCAL_RANK)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=TIMEOUT_S), device_id=dev)
    note(f"pid={os.getpid()} host={socket.gethostname()} torch={torch.__version__} "
         f"nccl={torch.cuda.nccl.version()}")
    x = torch.ones(1024, device=dev)
    group_a = group_b = None
    if SCENARIO == "order_deadlock":
        group_a = dist.new_group([0, 1])
        group_b = dist.new_group([0, 1])
        # One collective on each in the same order on both ranks, so both communicators exist
        # before the swapped order (NCCL creates them lazily, and creation is itself collective).
        wait_for(dist.all_reduce(x, group=group_a, async_op=True), "warm-up A")
        wait_for(dist.all_reduce(x, group=group_b, async_op=True), "warm-up B")
    for _ in range(3):  # healthy history: seq 1..3 completed on both ranks
        wait_for(dist.all_reduce(x, async_op=True), "healthy all_reduce")
    threading.Thread(target=while_hanging, args=(8,), daemon=True).start()
    note(f"scenario {SCENARIO} begins")
    if SCENARIO == "missing_rank":
        if RANK == 0:
            wait_for(dist.all_reduce(x, async_op=True), "all_reduce rank 1 never enters")
        else:
            time.sleep(TIMEOUT_S + 40)
            os._exit(0)
    elif SCENARIO == "op_mismatch":
        if RANK == 0:
            wait_for(dist.all_reduce(x, async_op=True), "all_reduce (peer in all_gather)")
        else:
            out = torch.empty(2 * x.numel(), device=dev)
            wait_for(dist.all_gather_into_tensor(out, x, async_op=True), "all_gather (peer in all_reduce)")
    elif SCENARIO == "size_mismatch":
        y = x if RANK == 0 else torch.ones(256 * 1024, device=dev)
        wait_for(dist.all_reduce(y, async_op=True), f"all_reduce of {y.numel()} floats")
    elif SCENARIO == "order_deadlock":
        first, second = (group_a, group_b) if RANK == 0 else (group_b, group_a)
        wait_for(dist.all_reduce(x, group=first, async_op=True), "first group's all_reduce")
        wait_for(dist.all_reduce(x, group=second, async_op=True), "second group's all_reduce")
    else:
        raise SystemExit(f"unknown scenario {SCENARIO}")
    # Only reached when NCCL let the mismatched pair finish: force the timeout.
    if RANK == 0:
        wait_for(dist.all_reduce(x, async_op=True), "guard all_reduce rank 1 never enters")
    else:
        time.sleep(TIMEOUT_S + 40)
        os._exit(0)


if __name__ == "__main__":
    main()
