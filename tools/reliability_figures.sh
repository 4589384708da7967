#!/usr/bin/env bash
# The must-show figures of issue 38 in one run (docs/reliability.md quotes one):
# each hostile-input reproduction through the CLI (or the C API host where the
# case is a host's), with its exit status, first stderr line and peak RSS (GNU
# time), then the truncation race on a 110M GGUF and kvrt batch's RSS over
# 100,000 requests (tools/soak_batch.sh).
#
#   tools/reliability_figures.sh [--build DIR] [--work DIR] [--quick] [--no-soak]
#
# --quick skips the two long parts (the 110M files and the 100,000-request
# soak); --no-soak skips the soak only (run tools/soak_batch.sh alone). Needs a release build of kvrt_cli, kvrt_truncation_race and
# reliability_concurrency_tests, python3 and GNU time. Prints Markdown.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build/release"
WORK=""
QUICK=0
SOAK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --quick) QUICK=1; SOAK=0; shift ;;
    --no-soak) SOAK=0; shift ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
KVRT="$BUILD/tools/kvrt"
RACE="$BUILD/tests/reliability/kvrt_truncation_race"
CONCURRENCY="$BUILD/tests/reliability/reliability_concurrency_tests"
EDIT=(python3 "$ROOT/tools/gguf_edit.py")
for binary in "$KVRT" "$RACE" "$CONCURRENCY" /usr/bin/time; do
  [ -x "$binary" ] || { echo "missing $binary" >&2; exit 2; }
done
if [ -z "$WORK" ]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
cd "$WORK"

# measure LABEL STDOUT COMMAND...: runs COMMAND with stdout to STDOUT (a path)
# and stderr to $LAST.err, and prints one table row.
CASES=0
LAST=""
measure() {
  local label="$1" stdout="$2"
  shift 2
  CASES=$((CASES + 1))
  LAST="case$CASES"
  local status=0
  /usr/bin/time -f "%M" -o "$LAST.rss" "$@" >"$stdout" 2>"$LAST.err" || status=$?
  row "$label" "$status" "$(head -n 1 "$LAST.err")" "$(tail -n 1 "$LAST.rss")"
}

# row LABEL STATUS FIRST_STDERR_LINE PEAK_KIB
row() {
  local first="$3"
  [ -n "$first" ] || first="(none)"
  [ "${#first}" -le 220 ] || first="${first:0:220}… (${#3} bytes)"
  printf '| %s | %s | `%s` | %s MiB |\n' "$1" "$2" "${first//|/\\|}" \
    "$(awk -v k="$4" 'BEGIN { printf "%.1f", k / 1024 }')"
}

header() {
  printf '\n### %s\n\n| case | exit | first stderr line | peak RSS |\n|---|---|---|---|\n' "$1"
}

max_abs_logit() {  # JSON file of kvrt logits --json
  python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["logits"]; print(f"max |logit| {max(abs(x) for x in l):.4g}, {sum(x == 0 for x in l)}/{len(l)} zero")' "$1"
}

max_logit_difference() {  # two JSON files of kvrt logits --json
  python3 -c 'import json,sys; a,b=(json.load(open(p))["logits"] for p in sys.argv[1:]); print(f"{max(abs(x-y) for x,y in zip(a,b)):.4g}")' "$1" "$2"
}

echo "# kvrt reliability figures ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, commit $(git -C "$ROOT" rev-parse --short=12 HEAD))"

"$KVRT" synth --dim 64 --layers 2 --heads 4 --ffn 96 --vocab 300 --seq-len 64 --seed 4 --gguf small.gguf \
  --type f32 --llama2c small.bin --tokenizer small_tok.bin >/dev/null

if [ "$QUICK" -eq 0 ]; then
  header "1. A GGUF truncated while kvrt loads it (before: SIGBUS, exit 135, no message)"
  "$KVRT" synth --shape 110M --gguf r110-q8_0.gguf --type q8_0 >/dev/null
  "$KVRT" synth --shape 110M --gguf r110-f32.gguf --type f32 >/dev/null
  for type in q8_0 f32; do
    for delay in 0.05 0.25 0.45; do
      cp "r110-$type.gguf" victim.gguf
      half=$(($(stat -c %s victim.gguf) / 2))
      (sleep "$delay"; truncate -s "$half" victim.gguf) &
      measure "generate 110M $type, truncated to half after $delay s" /dev/null \
        "$KVRT" generate --model victim.gguf --tokens 1,2,3 --max-new-tokens 4 --threads 2
      wait
    done
  done
  rm -f victim.gguf
  echo
  echo "C API host loading the 110M q8_0 file while another process truncates it (tests/reliability/truncation_race.cc):"
  echo
  echo '```'
  race_status=0
  "$RACE" r110-q8_0.gguf 20 "$WORK" >race.txt 2>&1 || race_status=$?
  grep -v '^round' race.txt
  echo "exit $race_status"
  echo '```'
fi

header "2. Wrong answers with exit 0"
"${EDIT[@]}" small.gguf norm.gguf --fill blk.0.attn_norm.weight 1e19
"${EDIT[@]}" small.gguf down.gguf --fill blk.0.ffn_down.weight 1e30
for file in norm down; do
  for engine in "--precision f32" "--precision f64" "--backend reference"; do
    # shellcheck disable=SC2086
    measure "$file.gguf logits, $engine" "$file-${engine##* }.json" \
      "$KVRT" logits --model "$file.gguf" --tokens 1,2,3,4 --json --threads 2 $engine
  done
done
echo
for file in norm down; do
  for engine in f32 f64 reference; do
    if [ -s "$file-$engine.json" ]; then echo "- $file.gguf, $engine: $(max_abs_logit "$file-$engine.json")"; fi
  done
done
header "2. llama keys kvrt used to ignore"
"${EDIT[@]}" small.gguf scaled.gguf --set llama.rope.scaling.factor 4.0
"${EDIT[@]}" small.gguf scale_linear.gguf --set llama.rope.scale_linear 4.0
"${EDIT[@]}" small.gguf linear.gguf --set llama.rope.scaling.type '"linear"' --set llama.rope.scaling.factor 4.0
"${EDIT[@]}" small.gguf yarn.gguf --set llama.rope.scaling.type '"yarn"' --set llama.rope.scaling.factor 4.0
"${EDIT[@]}" small.gguf key_length.gguf --set llama.attention.key_length 8
"${EDIT[@]}" small.gguf value_length.gguf --set llama.attention.value_length 32
"${EDIT[@]}" small.gguf experts.gguf --set llama.expert_count 8
tokens=1,2,3,4,5,6,7,8,9,10,11,12
for file in small scaled scale_linear linear; do
  for engine in "--precision f32" "--backend reference"; do
    # shellcheck disable=SC2086
    measure "$file.gguf logits, $engine" "$file-${engine##* }.json" \
      "$KVRT" logits --model "$file.gguf" --tokens "$tokens" --json --threads 2 $engine
  done
done
for file in yarn key_length value_length experts; do
  measure "$file.gguf logits" /dev/null "$KVRT" logits --model "$file.gguf" --tokens 1
done
echo
for file in scaled scale_linear linear; do
  for engine in f32 reference; do
    echo "- $file.gguf, $engine: max |logit − logit without the key| = $(max_logit_difference "$file-$engine.json" "small-$engine.json")"
  done
done
header "2. A prompt holding U+0000 in a request file (before: cut at the NUL, BOS + \"Once\")"
printf '{"prompt":"Once\\u0000 upon","max_new_tokens":1}\n' >nul.jsonl
printf '{"prompt":"Once","max_new_tokens":1}\n' >once.jsonl
measure "batch, prompt \"Once\\\\u0000 upon\"" nul.out "$KVRT" batch --model small.bin --tokenizer small_tok.bin --requests nul.jsonl
measure "batch, prompt \"Once\"" once.out "$KVRT" batch --model small.bin --tokenizer small_tok.bin --requests once.jsonl
echo
echo "- prompt ids of \"Once\\u0000 upon\": $(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["prompt"])' nul.out)"
echo "- prompt ids of \"Once\": $(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["prompt"])' once.out)"

header "3. Memory per request (before: 1,000 requests 287 MB, 4,000 1.04 GB, 100,000 OOM-killed at 24 GB)"
"$KVRT" synth --shape 15M --seq-len 64 --gguf wide.gguf >/dev/null
for n in 1000 4000; do
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; ++i)
    printf "{\"tokens\":[1,2,3],\"max_new_tokens\":2,\"temperature\":0.8,\"top_k\":40,\"seed\":%d}\n", i }' >"r$n.jsonl"
  measure "batch, $n requests, 15M model (vocabulary 32,000)" "r$n.out" \
    "$KVRT" batch --model wide.gguf --requests "r$n.jsonl" --threads 1
done
"${EDIT[@]}" small.gguf many_tokens.gguf --tokens 10000000
measure "tokenizer.ggml.tokens of 10^7 entries, 300-row model (before: 21 s, 1.8 GB; file $(($(stat -c %s many_tokens.gguf) >> 20)) MiB)" \
  /dev/null "$KVRT" logits --model many_tokens.gguf --tokens 1
rm -f many_tokens.gguf
python3 -c 'import sys; open("huge.jsonl","w").write("{\"prompt\":\"" + "a" * (100 << 20) + "\",\"max_new_tokens\":1}\n")'
measure "batch, one 100 MB prompt, 64-token context (before: 7 GB, then PromptTooLong)" /dev/null \
  "$KVRT" batch --model small.bin --tokenizer small_tok.bin --requests huge.jsonl
rm -f huge.jsonl

header "4. Request fields parsed as flags (before: \"flag --prompt needs a value\")"
for prompt in "--- Title" "--help"; do
  printf '{"prompt":"%s","max_new_tokens":2}\n' "$prompt" >flag.jsonl
  measure "batch, prompt \"$prompt\"" flag.out "$KVRT" batch --model small.bin --tokenizer small_tok.bin --requests flag.jsonl
done

header "5. File strings in error lines (before: a forged second error line, a cut message, a 1 MB line)"
"${EDIT[@]}" small.gguf newline.gguf --set general.architecture '"qwen2\nerror: Io: injected"'
"${EDIT[@]}" small.gguf nul.gguf --set general.architecture '"qw\u0000en2"'
python3 -c 'import json; open("long.json","w").write(json.dumps("q" * (1 << 20)))'
"${EDIT[@]}" small.gguf long.gguf --set general.architecture @long.json
for file in newline nul long; do
  measure "logits, architecture from $file.gguf" /dev/null "$KVRT" logits --model "$file.gguf" --tokens 1
  echo "|   stderr of $file.gguf: $(wc -l <"$LAST.err") line(s), $(wc -c <"$LAST.err") bytes | | | |"
done

header "6. A failed write of stdout (before: exit 0, no error)"
measure "logits --json > /dev/full" /dev/full "$KVRT" logits --model small.gguf --tokens 1,2 --json
measure "generate > /dev/full" /dev/full "$KVRT" generate --model small.bin --tokenizer small_tok.bin --prompt Once --max-new-tokens 4
measure "inspect > /dev/full" /dev/full "$KVRT" inspect small.gguf
measure "tokenize > /dev/full" /dev/full "$KVRT" tokenize --model small.bin --tokenizer small_tok.bin --prompt Once
measure "batch > /dev/full" /dev/full "$KVRT" batch --model small.bin --tokenizer small_tok.bin --requests once.jsonl

header "7. synth over a FIFO or a device (before: replaced by a regular file)"
mkfifo fifo
mknod full_device c 1 7 2>/dev/null || true  # the major/minor of /dev/full, made here (root only)
measure "synth --gguf FIFO" /dev/null "$KVRT" synth --dim 64 --layers 2 --heads 4 --ffn 96 --vocab 300 --seq-len 64 --gguf fifo
echo "|   fifo afterwards: $(stat -c %F fifo) | | | |"
if [ -e full_device ]; then
  measure "synth --tokenizer <character device 1,7>" /dev/null \
    "$KVRT" synth --dim 64 --layers 2 --heads 4 --ffn 96 --vocab 300 --seq-len 64 --tokenizer full_device
  echo "|   device afterwards: $(stat -c %F full_device) | | | |"
fi

header "8. One C session entered from two threads (before: SIGSEGV, 3/3)"
measure "reliability_concurrency_tests --gtest_filter=CApiConcurrency.*" concurrency.out \
  "$CONCURRENCY" --gtest_filter='CApiConcurrency.*'
echo
echo "- $(grep -m 1 -E '^\[  (PASSED|FAILED)' concurrency.out)"

if [ "$SOAK" -eq 1 ]; then
  echo
  echo "### kvrt batch RSS over 100,000 requests (tools/soak_batch.sh)"
  echo
  echo '```'
  soak_status=0
  bash "$ROOT/tools/soak_batch.sh" --requests 100000 --build "$BUILD" --work "$WORK/soak" || soak_status=$?
  echo "exit $soak_status"
  echo '```'
fi
