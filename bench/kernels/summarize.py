#!/usr/bin/env python3
"""Summarises one bench_kernels JSON run (medians of the repetitions).

    bench_kernels --benchmark_format=json > run.json
    python3 bench/kernels/summarize.py run.json

Prints, from that single run: fast/twin speedups for every kernel row pair, the
fraction-of-limit counters (fma_peak_fraction, read_bw_fraction) with the limits
they were measured against, the MachineLimits rows, and the 2-thread / 1-thread
speedup of every threaded row.
"""
import json
import re
import sys


def medians(report):
    rows = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/real_time(_median)?$", "", b["run_name"] if "run_name" in b else b["name"])
        rows[name] = b
    return rows


def main():
    with open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin as f:
        report = json.load(f)
    rows = medians(report)

    print("\nfast vs scalar twin (median real time):")
    for name, fast in rows.items():
        if "/fast/" not in name or "/threads:" in name and not name.endswith("threads:1"):
            continue
        twin_name = re.sub(r"/threads:1$", "", name.replace("/fast/", "/twin/"))
        twin = rows.get(twin_name)
        if twin is None:
            continue
        ratio = twin["real_time"] / fast["real_time"]
        print(f"  {name:58s} {fast['real_time']:12.1f} vs {twin['real_time']:12.1f} "
              f"{fast['time_unit']}  x{ratio:7.2f}")

    print("\nfractions of the machine limits (limit measured right before each row):")
    for name, row in rows.items():
        if "fma_peak_fraction" in row:
            print(f"  {name:58s} fma_peak_fraction = {row['fma_peak_fraction']:.3f} "
                  f"of {row['peak_FLOP/s'] * 1e-9:.1f} GFLOP/s")
        if "read_bw_fraction" in row:
            print(f"  {name:58s} read_bw_fraction = {row['read_bw_fraction']:.3f} "
                  f"of {row['read_bw_bytes/s'] * 1e-9:.2f} GB/s")

    print("\nmachine limit rows:")
    for name, row in rows.items():
        if name.startswith("MachineLimits/"):
            value = row.get("FLOP/s", row.get("bytes_per_second", 0)) * 1e-9
            unit = "GFLOP/s" if "FLOP/s" in row else "GB/s"
            print(f"  {name:58s} {value:.2f} {unit}")

    print("\n2 threads vs 1 thread (median real time):")
    for name, row in rows.items():
        if name.endswith("/threads:2"):
            one = rows.get(name[: -len("2")] + "1")
            if one is not None:
                print(f"  {name[:-len('/threads:2')]:58s} x{one['real_time'] / row['real_time']:.2f}")


if __name__ == "__main__":
    main()
