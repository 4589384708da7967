#!/usr/bin/env bash
# tools/plot_bench.py on a machine without gnuplot must say so in one line, not
# end in a Python traceback. PATH is emptied of gnuplot by pointing it at an empty
# directory; python3 is called by its absolute path.
set -euo pipefail
root="$1"
# sys.executable: the interpreter itself, not a wrapper script that needs PATH.
python="$(python3 -c "import sys; print(sys.executable)")"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
echo '{"benchmarks": []}' > "$scratch/run.json"
mkdir "$scratch/empty_path"
status=0
PATH="$scratch/empty_path" "$python" "$root/tools/plot_bench.py" "$scratch/run.json" "$scratch/out" \
  2> "$scratch/err" || status=$?
if [[ "$status" -eq 0 ]] || grep -q Traceback "$scratch/err" || ! grep -q '^error: gnuplot not found' "$scratch/err"; then
  echo "plot_bench.py without gnuplot: status $status, stderr:" >&2
  cat "$scratch/err" >&2
  exit 1
fi
