#!/usr/bin/env python3
"""Checks that kvrt's folders include only folders on lower floors.

usage: tools/check_layers.py [--graph]

Each folder of runtime/src sits on a floor (FLOORS); simd/ and threading/ are
the libraries beneath the runtime; machine/ (the FMA and bandwidth probes the
benchmarks and `kvrt bench` share) sits on the thread pool, beside core/. An installed header (runtime/include/kvrt)
belongs to the folder that implements it (OWNERS). A file may include its own
folder and folders on lower floors, nothing else: no arrow runs back up and
none runs sideways between folders of one floor. Prints every offending
include and exits 1; with --graph it also prints the folder-to-folder include
counts. Run by ctest (the layering test) and CI.
"""
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Bottom to top; docs/architecture.md describes every folder.
FLOORS = {
    "simd": 1, "threading": 1,
    "core": 2, "machine": 2,
    "tokenizer": 3, "model": 3,
    "weights": 4, "kv": 4, "chat": 4,
    "engine": 5,
    "session": 6, "formats": 6,
    "generate": 7,
    "api": 8, "course": 8,
    "c_api": 9,
}

# The folder that implements each installed header.
OWNERS = {
    "error.h": "core", "rng.h": "core", "engine_options.h": "core",
    "weight_format.h": "core", "version.h": "core",
    "config.h": "model",
    "tokenizer.h": "tokenizer",
    "chat.h": "chat",
    "steps.h": "kv",
    "sampling.h": "generate", "generation.h": "generate",
    "model_file.h": "formats", "synthetic.h": "formats",
    "model.h": "api", "session.h": "api", "load_model.h": "api",
    "course.h": "course",
    "kvrt.h": "c_api",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of_include(path):
    parts = path.split("/")
    if parts[0] == "kvrt":
        if parts[1] in ("simd", "threading", "machine"):
            return parts[1]
        return OWNERS.get(parts[1], "<unowned kvrt/" + parts[1] + ">")
    if parts[0] in FLOORS and (ROOT / "runtime/src" / path).exists():
        return parts[0]
    return None  # a file of the including folder, or a system header


def sources():
    for path in sorted((ROOT / "runtime/src").rglob("*")):
        if path.suffix in (".h", ".cc"):
            yield path, path.relative_to(ROOT / "runtime/src").parts[0]
    for path in sorted((ROOT / "runtime/include/kvrt").glob("*.h")):
        yield path, OWNERS.get(path.name, "<unowned kvrt/" + path.name + ">")
    for library in ("simd", "threading", "machine"):
        for path in sorted((ROOT / library).rglob("*")):
            if path.suffix in (".h", ".cc"):
                yield path, library


def main():
    edges = collections.Counter()
    problems = []
    for path, folder in sources():
        if folder not in FLOORS:
            problems.append(f"{path.relative_to(ROOT)}: {folder} has no floor in tools/check_layers.py")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = folder_of_include(match.group(1))
            if target is None or target == folder:
                continue
            edges[(folder, target)] += 1
            if target not in FLOORS or FLOORS[target] >= FLOORS[folder]:
                problems.append(f"{path.relative_to(ROOT)}:{number}: {folder} (floor "
                                f"{FLOORS[folder]}) includes {match.group(1)} ({target}, floor "
                                f"{FLOORS.get(target, '?')})")
    if "--graph" in sys.argv:
        for (source, target), count in sorted(edges.items(), key=lambda e: (-FLOORS[e[0][0]], e[0])):
            print(f"{source:>10} -> {target:<10} {count}")
    for problem in problems:
        print(problem)
    print(f"layers: {len(edges)} folder arrows, {len(problems)} running up or sideways")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
