#!/usr/bin/env python3
"""Independent reference numbers for Kineto traces (run by hand; the values are
pasted into tests/unit/cli/analyze_cli_test.cc).

Per GPU (device = pid, else args.device) of every `X` event with cat
kernel/Kernel: launches, summed duration and busy time (length of the union of
[ts, ts+dur) over all streams), all in exact integer picoseconds computed with
Decimal from the JSON number text (never through a float).
"""
import decimal
import gzip
import json
import sys

decimal.getcontext().prec = 50


def ps(text):
    return int((decimal.Decimal(text) * 1000000).to_integral_value(decimal.ROUND_HALF_EVEN))


def main(path):
    with gzip.open(path, "rb") as f:
        doc = json.load(f, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    devices = {}
    for e in doc.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "Kernel"):
            continue
        dev = e.get("pid")
        if not isinstance(dev, decimal.Decimal):
            dev = (e.get("args") or {}).get("device")
        d = devices.setdefault(int(dev), {"n": 0, "sum": 0, "iv": []})
        ts, dur = ps(str(e["ts"])), ps(str(e.get("dur", 0)))
        d["n"] += 1
        d["sum"] += dur
        d["iv"].append((ts, ts + dur))
    for dev in sorted(devices):
        d = devices[dev]
        busy, cur_s, cur_e = 0, None, None
        for s, e in sorted(d["iv"]):
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            busy += cur_e - cur_s
        print(f"GPU {dev}: kernels={d['n']} kernel_ps={d['sum']} busy_ps={busy}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p)
        main(p)
