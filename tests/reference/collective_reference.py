#!/usr/bin/env python3
"""Independent reference numbers for the collective figures of Kineto traces
(run by hand; the values are pasted into tests/unit/aggregate/
real_fixture_test.cc and tests/unit/cli/analyze_cli_test.cc).

A collective call is an `X` event with cat kernel/Kernel whose name starts
with "nccl"; its kind comes from args["Collective name"] when present, else
from the kernel name. Per kind, over every GPU (device = args.device, else
pid): calls, summed duration, bytes (In msg nelems x dtype size; Out for
all-gather), busbw factor by nccl-tests' PERFORMANCE.md, and exposed time:
the length of (union of that kind's kernels) minus (union of the GPU's
non-nccl kernels), per GPU, summed. Exact integer picoseconds computed with
Decimal from the JSON number text.
"""
import decimal
import gzip
import json
import sys

decimal.getcontext().prec = 50

KINDS = {
    "allreduce": "all_reduce",
    "_allgather_base": "all_gather",
    "allgather": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "all_to_allv": "all_to_all",
    "send": "send_recv",
    "recv": "send_recv",
}
NAME_KINDS = [("AllReduce", "all_reduce"), ("AllGather", "all_gather"),
              ("ReduceScatter", "reduce_scatter"), ("Broadcast", "broadcast"),
              ("SendRecv", "send_recv")]
DTYPE = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8}


def ps(text):
    return int((decimal.Decimal(text) * 1000000).to_integral_value(decimal.ROUND_HALF_EVEN))


def union(iv):
    out = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(iv):
    return sum(e - s for s, e in iv)


def minus(a, b):
    """Length of union(a) minus union(b)."""
    return length(union(a + b)) - length(union(b))


def factor(kind, n):
    if kind == "all_reduce":
        return decimal.Decimal(2 * (n - 1)) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return decimal.Decimal(n - 1) / n
    return decimal.Decimal(1)


def main(path):
    with gzip.open(path, "rb") as f:
        doc = json.load(f, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    compute, coll, stats = {}, {}, {}
    for e in doc.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "Kernel"):
            continue
        args = e.get("args") or {}
        dev = args.get("device", e.get("pid"))
        ts, dur = ps(str(e["ts"])), ps(str(e.get("dur", 0)))
        if not e["name"].startswith("nccl"):
            compute.setdefault(dev, []).append((ts, ts + dur))
            continue
        kind = KINDS.get(args.get("Collective name"))
        if kind is None:
            kind = next((k for n, k in NAME_KINDS if n in e["name"]), "other")
        coll.setdefault((dev, kind), []).append((ts, ts + dur))
        s = stats.setdefault(kind, {"calls": 0, "ps": 0, "bytes": 0, "bus": 0, "groups": set()})
        s["calls"] += 1
        s["ps"] += dur
        n = int(args["Group size"])
        s["groups"].add(n)
        nelems = args["Out msg nelems"] if kind == "all_gather" else args["In msg nelems"]
        b = int(nelems) * DTYPE[args["dtype"]]
        s["bytes"] += b
        s["bus"] += b * factor(kind, n)
    for kind in sorted(stats):
        s = stats[kind]
        exposed = sum(minus(iv, compute.get(dev, [])) for (dev, k), iv in coll.items() if k == kind)
        sec = decimal.Decimal(s["ps"]) / decimal.Decimal(10**12)
        print(f"{kind}: calls={s['calls']} kernel_ps={s['ps']} exposed_ps={exposed} "
              f"bytes={s['bytes']} groups={sorted(s['groups'])} "
              f"algbw={s['bytes'] / sec:.6f} busbw={s['bus'] / sec:.6f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p)
        main(p)
