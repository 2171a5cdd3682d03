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
