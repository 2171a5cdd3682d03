#!/usr/bin/env bash
# sess filter on the Claude Code and Codex shapes users report, against the nearest jq
# program on the same ~1 GiB file: speed, peak memory against the bound, and output share.
#   bash bench/producers.sh            (SIZE=256M or RUNS=1 for a quicker run)
# The jq programs do less than sess (no frame folding, no key order or escape preservation);
# they are the floor of what a user would write by hand.
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
# each command runs three times; the median counts (RUNS=1 for a quicker run)
export RUNS=${RUNS:-3}
build

CLAUDE_JQ='if .type == "progress" and .data.type == "agent_progress" then
    .data.normalizedMessageCount = (.data.normalizedMessages | length)
    | del(.data.normalizedMessages, .data.prompt)
  elif .type == "progress" and .data.type == "bash_progress" then
    del(.data.output, .data.fullOutput)
  else . end'
CODEX_JQ='select(.type != "event_msg" or (.payload.type
  | IN("user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
       "item_completed") | not))'

run() {
  local kind=$1 program=$2
  local log=$OUT/$kind-$SIZE.jsonl
  gen "$log" "$kind" "$SIZE"
  local bytes longest
  bytes=$(stat -c %s "$log")
  longest=$(longest_line "$log")
  echo "== $kind: $log, $bytes bytes, longest line $longest bytes"
  cat "$log" >/dev/null
  measure "sess filter" "$bytes" "$SESS" filter --quiet "$log"
  local s=$LAST_SECONDS out
  out=$(stat -c %s "$LAST_OUTPUT")
  printf '  output %d bytes (%.2f%% of the input)\n' "$out" "$(echo "100 * $out / $bytes" | bc -l)"
  measure "jq -c (nearest program)" "$bytes" jq -c "$program" "$log"
  ratio "sess filter vs jq" "$LAST_SECONDS" "$s"
  echo "  memory bound: 64 MiB + 2 x longest line = $((64 + 2 * longest / 1048576)) MiB"
  echo "  bytes kept per kind and class:"
  "$SESS" stats --quiet "$log" | sed 's/^/    /'
}

run claude-code "$CLAUDE_JQ"
run codex "$CODEX_JQ"
