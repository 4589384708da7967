#!/usr/bin/env bash
# Decode and prefill speed of two kvrt builds, alternated run by run so that both see
# the same moments of a shared machine (a neighbour's burst slows one run of each,
# not one side).
#
#   tools/alternate_decode.sh OLD_KVRT NEW_KVRT MODEL_DIR [ROUNDS]
#
# MODEL_DIR holds S-T.gguf for S in 15M 42M 110M and T in f32 q8_0, made with
#   kvrt synth --shape S --gguf MODEL_DIR/S-T.gguf --type T
# Prints, per model, kind (decode: 128 tokens after a 1-token prompt; prefill: a
# 512-token prompt, 110M only) and thread count (1, 2), the median tokens/s of each
# binary over ROUNDS (default 5) runs, NEW/OLD, and every run.
set -euo pipefail

usage() { sed -n '2,13p' "$0"; exit 2; }
[[ $# -ge 3 ]] || usage
OLD="$1" NEW="$2" MODELS="$3" ROUNDS="${4:-5}"
PROMPT512="$(seq 3 514 | paste -sd, -)"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# tokens_per_second BIN MODEL THREADS KIND: the rate kvrt generate reports on stderr.
tokens_per_second() {
  local bin="$1" model="$2" threads="$3" kind="$4" report
  if [[ "$kind" == decode ]]; then
    report="$("$bin" generate --model "$model" --tokens 1 --max-new-tokens 128 --no-eos --threads "$threads" 2>&1 >/dev/null)"
  else
    report="$("$bin" generate --model "$model" --tokens "$PROMPT512" --max-new-tokens 1 --threads "$threads" 2>&1 >/dev/null)"
  fi
  awk -v kind="($kind)" '$NF == kind {print $(NF - 2)}' <<<"$report"
}

cases=()
for shape in 15M 42M 110M; do
  for type in f32 q8_0; do
    for threads in 1 2; do cases+=("$shape-$type.gguf decode $threads"); done
  done
done
for type in f32 q8_0; do
  for threads in 1 2; do cases+=("110M-$type.gguf prefill $threads"); done
done

printf '%-15s %-7s %7s %10s %10s %8s  %s\n' model kind threads old new new/old "runs: old | new"
for case in "${cases[@]}"; do
  read -r model kind threads <<<"$case"
  old_runs=() new_runs=()
  for ((round = 0; round < ROUNDS; ++round)); do
    old_runs+=("$(tokens_per_second "$OLD" "$MODELS/$model" "$threads" "$kind")")
    new_runs+=("$(tokens_per_second "$NEW" "$MODELS/$model" "$threads" "$kind")")
  done
  old_median="$(median <<<"${old_runs[*]}")"
  new_median="$(median <<<"${new_runs[*]}")"
  printf '%-15s %-7s %7s %10s %10s %8.3f  %s | %s\n' "$model" "$kind" "$threads" "$old_median" "$new_median" \
    "$(awk -v n="$new_median" -v o="$old_median" 'BEGIN {print n / o}')" "${old_runs[*]}" "${new_runs[*]}"
done
