#!/usr/bin/env bash
# tools/plot_bench.py on a `kvrt bench -o json` run (a tiny sweep over two thread
# counts and two sequence counts on the q8_0 fixture, piped in): python3 alone must
# write one SVG with a line per series in both panels and the run's build facts.
set -euo pipefail
root="$1"
kvrt="$2"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$kvrt" bench -m "$root/fixtures/gguf/tiny-q8_0.gguf" -p 8 -n 4 -t 1,2 --sequences 1,2 -r 2 -q -o json \
  > "$scratch/run.json"
python3 "$root/tools/plot_bench.py" - "$scratch/bench.svg" < "$scratch/run.json" > /dev/null
python3 - "$scratch/bench.svg" <<'PY'
import sys
import xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
lines = svg.findall(f"{ns}polyline")
texts = [t.text or "" for t in svg.iter(f"{ns}text")]
# pp8 and tg4 at sequences 1 and 2 against threads (4 lines), and at threads 1 and 2
# against sequences (4 lines).
assert len(lines) == 8, f"{len(lines)} lines"
assert any("commit" in t for t in texts), texts[:3]
assert "threads" in texts and "sequences in flight" in texts, texts
PY
