#!/usr/bin/env bash
# Soak test of `kvrt batch` (issue 38): serves many small requests and samples
# the process's RSS along the way; memory must stay flat, bounded by the slots
# and not by the number of requests (100,000 requests once ran into the OOM
# killer at 24 GB).
#
#   tools/soak_batch.sh [--requests N] [--build DIR] [--work DIR] [--threads T]
#
# Defaults: 100000 requests, build/release, a temporary work directory, 1 thread.
# The model is a synthetic 15M-shaped GGUF (vocabulary 32,000: what made each
# request's sampler buffers large); each request is 3 prompt tokens and 2 new
# tokens, sampled with temperature and top-k. RSS (VmRSS) is sampled every 0.2 s
# with the number of result lines written so far, and reported at the first
# sample past each checkpoint (1% of N, 10% and the end: 1,000 / 10,000 /
# 100,000 by default; the last one is the last sample while requests were still
# being served), with the whole run's peak (GNU time, load included). Fails
# (exit 1) unless every checkpoint's RSS is within 10% of the first one's, or
# when kvrt batch fails or prints the wrong number of lines. ctest runs a short form
# (reliability_soak_batch, 2,000 requests).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQUESTS=100000
BUILD="$ROOT/build/release"
WORK=""
THREADS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) REQUESTS="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
KVRT="$BUILD/tools/kvrt"
[ -x "$KVRT" ] || { echo "no kvrt binary at $KVRT (build kvrt_cli first)" >&2; exit 2; }
if [ -z "$WORK" ]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"

"$KVRT" synth --shape 15M --seq-len 64 --gguf "$WORK/soak.gguf" >/dev/null
awk -v n="$REQUESTS" 'BEGIN {
  for (i = 0; i < n; ++i)
    printf "{\"tokens\":[1,2,3],\"max_new_tokens\":2,\"temperature\":0.8,\"top_k\":40,\"seed\":%d}\n", i
}' >"$WORK/requests.jsonl"

checkpoints=($((REQUESTS / 100)) $((REQUESTS / 10)) "$REQUESTS")
# GNU time, where installed, records the whole run's peak RSS; the samples come
# from kvrt itself.
timer_command=()
if [ -x /usr/bin/time ]; then timer_command=(/usr/bin/time -f "%M" -o "$WORK/peak_kib"); fi
echo "?" >"$WORK/peak_kib"
"${timer_command[@]}" "$KVRT" batch --model "$WORK/soak.gguf" --requests "$WORK/requests.jsonl" --threads "$THREADS" \
  >"$WORK/out.jsonl" 2>"$WORK/err.txt" &
timer=$!
pid="$timer"
if [ ${#timer_command[@]} -gt 0 ]; then  # kvrt is GNU time's child
  pid=""
  while [ -z "$pid" ] && kill -0 "$timer" 2>/dev/null; do
    pid="$(pgrep -P "$timer" || true)"
    sleep 0.05
  done
fi
next=0
declare -a rss_at lines_at
last_rss="" last_lines=0
start=$SECONDS
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
  rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
  lines="$(wc -l <"$WORK/out.jsonl")"
  if [ -n "$rss" ] && [ "$lines" -lt "$REQUESTS" ]; then  # still serving, not tearing down
    last_rss="$rss"
    last_lines="$lines"
  fi
  while [ -n "$rss" ] && [ "$next" -lt 2 ] && [ "$lines" -ge "${checkpoints[$next]}" ]; do
    rss_at[$next]="$rss"
    lines_at[$next]="$lines"
    next=$((next + 1))
  done
  sleep 0.2
done
status=0
wait "$timer" || status=$?
elapsed=$((SECONDS - start))
lines="$(wc -l <"$WORK/out.jsonl")"
if [ "$status" -ne 0 ] || [ "$lines" -ne "$REQUESTS" ]; then
  echo "kvrt batch exited $status after $lines of $REQUESTS lines:" >&2
  head -c 2000 "$WORK/err.txt" >&2
  exit 1
fi
# The end: the last sample taken while requests were still being served (once
# every line is out the process is tearing down and frees its memory), if it
# came after 99% of them.
if [ -n "$last_rss" ] && [ "$last_lines" -ge $((REQUESTS - REQUESTS / 100)) ]; then
  rss_at[2]="$last_rss"
  lines_at[2]="$last_lines"
fi
peak="$(tail -n 1 "$WORK/peak_kib")"
echo "kvrt batch: $REQUESTS requests in ${elapsed} s, $THREADS thread(s), peak RSS $peak KiB"
[ -n "${rss_at[0]:-}" ] || { echo "no RSS sample at ${checkpoints[0]} requests" >&2; exit 1; }
failed=0
report() {  # label kib
  local ratio
  ratio="$(awk -v a="$2" -v b="${rss_at[0]}" 'BEGIN { printf "%.3f", a / b }')"
  echo "  $1: $2 KiB ($ratio of the first)"
  if awk -v r="$ratio" 'BEGIN { exit !(r > 1.10 || r < 0.90) }'; then failed=1; fi
}
for i in 0 1 2; do
  if [ -z "${rss_at[$i]:-}" ]; then
    echo "  RSS at ${checkpoints[$i]} requests: no sample (the run ended between samples)"
    continue
  fi
  report "RSS at ${checkpoints[$i]} requests (sampled at ${lines_at[$i]} lines)" "${rss_at[$i]}"
done
# The peak includes the load (the GGUF file's bytes beside the weights built
# from them), so it is reported, not judged.
echo "  peak RSS of the whole run, load included: $peak KiB"
if [ "$failed" -ne 0 ]; then
  echo "RSS is not flat within 10% of the first checkpoint's" >&2
  exit 1
fi
echo "RSS flat within 10%"
