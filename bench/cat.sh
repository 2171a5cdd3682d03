#!/usr/bin/env bash
# sess cat --type against jq and grep -F on the same ~1 GiB old-generation pi log.
#   bash bench/cat.sh            (SIZE=256M bash bench/cat.sh for a quicker run)
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
build
LOG=$OUT/pi-old-$SIZE.jsonl
gen "$LOG" pi-old "$SIZE"
BYTES=$(stat -c %s "$LOG")
echo "input: $LOG, $BYTES bytes, longest line $(longest_line "$LOG") bytes"
cat "$LOG" >/dev/null # warm the page cache

measure "sess cat --type message_end" "$BYTES" "$SESS" cat --quiet --type message_end "$LOG"
S=$LAST_SECONDS
measure "grep -F '\"type\":\"message_end\"'" "$BYTES" grep -F '"type":"message_end"' "$LOG"
G=$LAST_SECONDS
measure "jq -c 'select(.type==\"message_end\")'" "$BYTES" jq -c 'select(.type=="message_end")' "$LOG"
J=$LAST_SECONDS
echo "speed ratios (higher is better for sess):"
ratio "sess vs jq" "$J" "$S"
ratio "sess vs grep -F" "$G" "$S"
