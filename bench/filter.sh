#!/usr/bin/env bash
# sess filter against the equivalent jq filter on the same ~1 GiB old-generation pi log.
#   bash bench/filter.sh            (SIZE=256M for a quicker run)
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
build
LOG=$OUT/pi-old-$SIZE.jsonl
gen "$LOG" pi-old "$SIZE"
BYTES=$(stat -c %s "$LOG")
LONGEST=$(longest_line "$LOG")
echo "input: $LOG, $BYTES bytes, longest line $LONGEST bytes"
cat "$LOG" >/dev/null

measure "sess filter" "$BYTES" "$SESS" filter --quiet "$LOG"
S=$LAST_SECONDS
echo "  output $(stat -c %s "$LAST_OUTPUT") bytes"
measure "jq -c 'select(.type != frames)'" "$BYTES" \
  jq -c 'select(.type != "message_update" and .type != "tool_execution_update")' "$LOG"
J=$LAST_SECONDS
echo "speed ratio:"
ratio "sess filter vs jq" "$J" "$S"
echo "memory bound: 64 MiB + 2 x longest line = $(( 64 + 2 * LONGEST / 1048576 )) MiB"

# A log cut off in mid-response: a quarter of SIZE of delta frames whose successor never
# comes, all held until the end of input (16 MiB in memory, the rest in $TMPDIR).
CUT=$OUT/pi-cut-off-$SIZE.jsonl
if [ ! -s "$CUT" ]; then
  # yes ends on SIGPIPE, which pipefail would take for a failure.
  set +o pipefail
  { printf '%s\n' '{"type":"session","version":3,"id":"x"}' \
      '{"type":"message_start","message":{"role":"assistant","content":[]}}'
    yes '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"a word or two of the answer"}}' \
      | head -c "$((BYTES / 4))" | head -n -1
  } >"$CUT"
  set -o pipefail
fi
CUT_BYTES=$(stat -c %s "$CUT")
echo "cut off in mid-response: $CUT, $CUT_BYTES bytes"
measure "sess filter (cut off)" "$CUT_BYTES" "$SESS" filter --quiet "$CUT"
cmp -s "$LAST_OUTPUT" "$CUT" && echo "  every frame kept" || echo "  OUTPUT DIFFERS"
