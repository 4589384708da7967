#!/usr/bin/env bash
# Fails when a script that runs under `set -o pipefail` pipes into `head`: head
# exits after its lines, the writer dies of SIGPIPE (status 141) and pipefail turns
# that into the script's failure (tools/dev.sh demo did exactly this).
set -euo pipefail
root="$1"
status=0
while IFS= read -r script; do
  grep -q 'pipefail' "$script" || continue
  # `... | head || true` is deliberate: the failure is swallowed.
  if grep -nE '\|[[:space:]]*head([[:space:]]|$)' "$script" | grep -v '|| true'; then
    echo "$script: pipes into head under pipefail (capture the output first)" >&2
    status=1
  fi
done < <(find "$root/tools" "$root/.ci" -type f \( -name '*.sh' -o -name run \) 2>/dev/null)
exit "$status"
