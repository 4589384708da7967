#!/usr/bin/env python3
"""Charts of benchmark runs.

A `kvrt bench -o json` run (python3 only, no other program):

    kvrt bench -m model.gguf -t 1,2 --sequences 1,4,16 -o json | tools/plot_bench.py - bench.svg
    tools/plot_bench.py bench.json bench.svg

writes one SVG of two panels: tokens/s against threads (a line per test,
sequences, depth, weights, int8 and K/V cache choice) and tokens/s against
sequences in flight (a line per test, threads, depth, weights, int8 and K/V
cache choice), each point
the mean of the row's runs with a bar of ± one standard deviation.

One bench_engine JSON run, drawn by gnuplot (Debian: gnuplot-nox):

    build/release/bench/bench_engine --benchmark_format=json > engine.json
    tools/plot_bench.py engine.json docs/

writes
    decode_scaling.svg  cached decode step vs complete-prefix replay, over the context
    throughput.svg      decode and prefill tokens/s per model size, 1 vs 2 threads
    batching.svg        aggregate decode tokens/s and per-sequence step latency
                        against concurrent sequences (BatchedDecode rows)
Medians of the repetitions are plotted when the run has them.
"""
import html
import json
import math
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


# --- kvrt bench runs: SVG written here, python3 only ---------------------------

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22"]


def kvrt_bench_rows(run):
    """The mean aggregate of every row of a kvrt bench JSON run, with its threads."""
    rows = []
    for entry in run["benchmarks"]:
        if entry.get("aggregate_name") != "mean":
            continue
        threads = int(re.search(r"/threads:(\d+)/", entry["run_name"]).group(1))
        row = dict(entry, bench_threads=threads)
        row.setdefault("kv_type", "f32")  # runs from before --kv-type existed
        rows.append(row)
    return rows


def series(rows, x_key, label_keys):
    """label -> sorted [(x, mean tokens/s, stddev)] over the rows that differ only in x_key."""
    lines = {}
    for row in rows:
        label = ", ".join(row[key] if key == "test" else f"{key} {int(row[key]) if isinstance(row[key], bool) else row[key]}"
                          for key in label_keys)
        lines.setdefault(label, []).append(
            (row[x_key], row["tokens_per_second"], row["tokens_per_second_stddev"]))
    return {label: sorted(points) for label, points in lines.items()}


def tick_text(value):
    """A short axis label: 250k, 1.5M, 40."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def nice_ceiling(value):
    """The smallest 1, 2 or 5 × 10^k at or above value."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def panel(lines, x_title, left, top, width, height, colours):
    """SVG of one panel: x positions evenly spaced over the distinct x values (threads
    and sequences grow in powers), y linear from 0."""
    xs = sorted({x for points in lines.values() for x, _, _ in points})
    y_max = nice_ceiling(1.05 * max((rate + stddev for points in lines.values() for _, rate, stddev in points),
                                    default=1.0))
    def px(x):
        return left + (width * (xs.index(x) + 0.5) / len(xs))
    def py(y):
        return top + height - height * y / y_max
    out = [f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" stroke="#444"/>']
    for i in range(6):
        y = y_max * i / 5
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + width}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{tick_text(y)}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{top + height + 18}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{left + width / 2}" y="{top + height + 38}" text-anchor="middle">{x_title}</text>')
    out.append(f'<text transform="translate({left - 48},{top + height / 2}) rotate(-90)" '
               f'text-anchor="middle">tokens/s (mean ± stddev)</text>')
    for label, points in lines.items():
        colour = colours[label]
        path = " ".join(f"{px(x):.1f},{py(rate):.1f}" for x, rate, _ in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, rate, stddev in points:
            out.append(f'<line x1="{px(x):.1f}" y1="{py(rate - stddev):.1f}" x2="{px(x):.1f}" '
                       f'y2="{py(rate + stddev):.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(rate):.1f}" r="3.5" fill="{colour}"/>')
    return out


def kvrt_bench_svg(run):
    rows = kvrt_bench_rows(run)
    if not rows:
        raise ValueError("the run has no rows")
    by_threads = series(rows, "bench_threads", ["test", "sequences", "depth", "weights", "int8_activations", "kv_type"])
    by_sequences = series(rows, "sequences", ["test", "bench_threads", "depth", "weights", "int8_activations",
                                              "kv_type"])
    labels = sorted(set(by_threads) | set(by_sequences))
    colours = {label: COLOURS[i % len(COLOURS)] for i, label in enumerate(labels)}
    legend_rows = len(by_threads) + len(by_sequences)
    width, panel_width, panel_height, top = 1100, 440, 300, 60
    height = top + panel_height + 60 + 18 * legend_rows + 30
    context = run.get("context", {})
    facts = context.get("kvrt", {})
    title = (f"kvrt bench: {os.path.basename(str(context.get('model', '')))} — commit {facts.get('commit', '?')}, "
             f"{facts.get('simd_target', '?')}, {context.get('cpu_model', '?')}, {context.get('num_cpus', '?')} cores")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="15">{html.escape(title)}</text>']
    panels = [(by_threads, "threads", 80), (by_sequences, "sequences in flight", 80 + panel_width + 110)]
    for lines, x_title, left in panels:
        out.extend(panel(lines, x_title, left, top, panel_width, panel_height, colours))
    y = top + panel_height + 70
    for heading, lines in (("against threads:", by_threads), ("against sequences:", by_sequences)):
        out.append(f'<text x="80" y="{y}" font-weight="bold">{heading}</text>')
        y += 18
        for label in lines:
            label_text = (label.replace("bench_threads", "threads").replace("int8_activations", "int8")
                          .replace("kv_type", "kv"))
            out.append(f'<rect x="90" y="{y - 10}" width="14" height="10" fill="{colours[label]}"/>')
            out.append(f'<text x="110" y="{y}">{html.escape(label_text)}</text>')
            y += 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source = sys.argv[1]
    if source == "-" or source.endswith(".json"):
        try:
            with (sys.stdin if source == "-" else open(source)) as f:
                run = json.load(f)
        except (OSError, ValueError) as problem:
            sys.exit(f"error: {source} is not a readable JSON run: {problem}")
        if isinstance(run, dict) and run.get("context", {}).get("executable") == "kvrt bench":
            try:
                svg = kvrt_bench_svg(run)
            except (KeyError, TypeError, ValueError, AttributeError) as problem:
                sys.exit(f"error: {source} is not a readable kvrt bench run: {problem}")
            with open(sys.argv[2], "w") as f:
                f.write(svg)
            print("wrote", sys.argv[2])
            return
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
