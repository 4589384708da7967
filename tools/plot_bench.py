#!/usr/bin/env python3
"""Charts from one bench_engine JSON run, drawn by gnuplot (Debian: gnuplot-nox).

    build/release/bench/bench_engine --benchmark_format=json > engine.json
    tools/plot_bench.py engine.json docs/

writes
    decode_scaling.svg  cached decode step vs complete-prefix replay, over the context
    throughput.svg      decode and prefill tokens/s per model size, 1 vs 2 threads
    batching.svg        aggregate decode tokens/s and per-sequence step latency
                        against concurrent sequences (BatchedDecode rows)
Medians of the repetitions are plotted when the run has them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def medians(path):
    """name -> benchmark row, preferring the median aggregate of repetitions."""
    with open(path) as f:
        rows = {}
        for row in json.load(f)["benchmarks"]:
            name = row.get("run_name", row["name"])
            kind = row.get("aggregate_name")
            if kind == "median" or (kind is None and name not in rows):
                rows[name] = row
        return rows


def decode_scaling(rows, directory):
    points = []
    for name, row in rows.items():
        match = re.match(r"DecodeScaling/(\w+)/t:(\d+)", name)
        if match:
            points.append((int(match.group(2)), row["cached_step_ms"], row["replay_step_ms"], match.group(1)))
    if not points:
        return None
    points.sort()
    data = os.path.join(directory, "decode_scaling.dat")
    with open(data, "w") as f:
        for context, cached, replay, _ in points:
            f.write(f"{context} {cached} {replay}\n")
    model = points[0][3]
    return f"""
set output '{{out}}/decode_scaling.svg'
set title 'Time per new token at context t ({model}, f32, 1 thread)'
set xlabel 'context length t (tokens)'
set ylabel 'time per new token (ms)'
set logscale xy 2
set key top left
plot '{data}' using 1:3 with linespoints title 'complete-prefix replay', \\
     '{data}' using 1:2 with linespoints title 'KV-cached decode'
unset logscale
"""


def throughput(rows, directory):
    table = {}
    for name, row in rows.items():
        match = re.match(r"EndToEnd/(\w+)/(decode|prefill)/threads:(\d)", name)
        if match:
            table.setdefault(match.group(1), {})[(match.group(2), match.group(3))] = row["tokens_per_second"]
    if not table:
        return None
    order = sorted(table, key=lambda model: int(model.rstrip("M")))
    data = os.path.join(directory, "throughput.dat")
    with open(data, "w") as f:
        for model in order:
            values = [table[model].get((phase, threads), 0) for phase in ("decode", "prefill") for threads in "12"]
            f.write(model + " " + " ".join(str(v) for v in values) + "\n")
    return f"""
set output '{{out}}/throughput.svg'
set title 'End-to-end tokens/s (f32)'
set xlabel 'model shape (TinyStories family, synthetic weights)'
set ylabel 'tokens/s'
set logscale y
set style data histograms
set style fill solid 0.8
set key top right
plot '{data}' using 2:xtic(1) title 'decode, 1 thread', '' using 3 title 'decode, 2 threads', \\
     '' using 4 title 'prefill 512, 1 thread', '' using 5 title 'prefill 512, 2 threads'
"""


def batching(rows, directory):
    series = {}
    for name, row in rows.items():
        match = re.match(r"BatchedDecode/(\w+)/seqs:(\d+)/threads:(\d)", name)
        if match:
            key = (match.group(1), match.group(3))
            series.setdefault(key, []).append(
                (int(match.group(2)), row["decode_tokens_per_second"], row["sequence_latency_ms"]))
    if not series:
        return None
    plots_rate, plots_latency = [], []
    for (model, threads) in sorted(series, key=lambda k: (int(k[0].rstrip("M")), k[1])):
        data = os.path.join(directory, f"batching_{model}_{threads}.dat")
        with open(data, "w") as f:
            for seqs, rate, latency in sorted(series[(model, threads)]):
                f.write(f"{seqs} {rate} {latency}\n")
        title = f"{model}, {threads} thread{'s' if threads != '1' else ''}"
        plots_rate.append(f"'{data}' using 1:2 with linespoints title '{title}'")
        plots_latency.append(f"'{data}' using 1:3 with linespoints title '{title}'")
    return f"""
set output '{{out}}/batching.svg'
set multiplot layout 1,2 title 'Sequences decoding together in one cache (f32, one step per token)'
set xlabel 'concurrent sequences'
set logscale xy 2
set key top left
set ylabel 'aggregate decode tokens/s'
plot {", ".join(plots_rate)}
set ylabel 'per-sequence latency per token (ms)'
plot {", ".join(plots_latency)}
unset multiplot
unset logscale
"""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    # Check for gnuplot first: without it the run would end in a FileNotFoundError
    # traceback after the data files were already written.
    if shutil.which("gnuplot") is None:
        sys.exit("error: gnuplot not found on PATH (Debian: apt-get install gnuplot-nox)")
    try:
        rows = medians(sys.argv[1])
    except (OSError, ValueError, KeyError, TypeError) as problem:
        sys.exit(f"error: {sys.argv[1]} is not a readable Google Benchmark JSON run: {problem}")
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        parts = [p for p in (decode_scaling(rows, scratch), throughput(rows, scratch),
                             batching(rows, scratch)) if p]
        if not parts:
            sys.exit("no DecodeScaling, EndToEnd or BatchedDecode rows in " + sys.argv[1])
        script = "set terminal svg size 800,480 dynamic noenhanced font 'sans,12'\n" + "".join(parts)
        plotted = subprocess.run(["gnuplot"], input=script.replace("{out}", out), text=True)
        if plotted.returncode != 0:
            sys.exit(f"error: gnuplot failed with status {plotted.returncode}")
    print("wrote", ", ".join(f for f in ("decode_scaling.svg", "throughput.svg", "batching.svg")
                             if os.path.exists(os.path.join(out, f))))


if __name__ == "__main__":
    main()
