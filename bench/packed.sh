#!/usr/bin/env bash
# Reading a packed log against reading the log itself (issue 13's first bar): `cat --type
# message_end` and `filter` on the ~1 GiB old-generation pi log and on its packed `.zst`, in
# one run, each the median of RUNS (default 3). A ratio under 1 means the packed log reads
# faster.
#   bash bench/packed.sh            (SIZE=256M bash bench/packed.sh for a quicker run)
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
RUNS=${RUNS:-3}
build
LOG=$OUT/pi-old-$SIZE.jsonl
gen "$LOG" pi-old "$SIZE"
PACKED=$OUT/pi-old-$SIZE.jsonl.zst
[ -s "$PACKED" ] || "$SESS" pack --quiet -o "$PACKED" "$LOG"
BYTES=$(stat -c %s "$LOG")
echo "input: $LOG, $BYTES bytes; packed: $(stat -c %s "$PACKED") bytes"
cat "$LOG" "$PACKED" >/dev/null # warm the page cache

for what in "cat --type message_end" "filter"; do
  # shellcheck disable=SC2086
  measure "sess $what (plain)" "$BYTES" "$SESS" $what --quiet "$LOG"
  P=$LAST_SECONDS
  cp "$LAST_OUTPUT" "$OUT/packed-plain-output"
  # shellcheck disable=SC2086
  measure "sess $what (packed)" "$BYTES" "$SESS" $what --quiet "$PACKED"
  Z=$LAST_SECONDS
  cmp -s "$LAST_OUTPUT" "$OUT/packed-plain-output" || echo "  OUTPUTS DIFFER"
  printf '  packed/plain time: %.2fx\n' "$(echo "$Z / $P" | bc -l)"
done
rm -f "$OUT/packed-plain-output"
