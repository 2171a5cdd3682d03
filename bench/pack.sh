#!/usr/bin/env bash
# sess pack / unpack on a ~1 GiB DSH log where chunk events are most of the lines, against
# zstd -3 and zstd -19 --long=27 on the same log, in the same run.
#   bash bench/pack.sh     (SIZE=256M for a quicker run; SKIP_ZSTD19=1 skips the slow level)
# It ends with the L3 shape (rows of 150,000 members).
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
# Timed to /dev/null (lib.sh's measure); SINK=file times the writes to bench/out too.
SINK=${SINK:-null}
build
LOG=$OUT/dsh-$SIZE.jsonl
gen "$LOG" dsh "$SIZE"
BYTES=$(stat -c %s "$LOG")
echo "input: $LOG, $BYTES bytes, $(wc -l <"$LOG") lines, longest line $(longest_line "$LOG") bytes"
cat "$LOG" >/dev/null

measure "sess pack --plain" "$BYTES" "$SESS" pack --quiet --plain "$LOG"
cp "$LAST_OUTPUT" "$OUT/dsh-$SIZE.packed.jsonl"
# The same from a pipe, as an agent's output arrives (the streaming path).
measure "sess pack --plain, from a pipe" "$BYTES" bash -c 'cat "$1" | "$0" pack --quiet --plain' "$SESS" "$LOG"
PACKED=$OUT/dsh-$SIZE.packed.jsonl
PBYTES=$(stat -c %s "$PACKED")
measure "sess unpack (rate of logical bytes)" "$BYTES" "$SESS" unpack --quiet "$PACKED"
cmp -s "$LAST_OUTPUT" "$LOG" && echo "  unpack(pack(log)) is byte-exact" || echo "  MISMATCH after round trip"
measure "zstd -3" "$BYTES" zstd -3 -q -c "$LOG"
Z3=$(stat -c %s "$LAST_OUTPUT")
measure "zstd -3 of the packed log" "$PBYTES" zstd -3 -q -c "$PACKED"
PZ3=$(stat -c %s "$LAST_OUTPUT")
if [ -z "${SKIP_ZSTD19:-}" ]; then
  measure "zstd -19 --long=27" "$BYTES" zstd -19 --long=27 -q -c "$LOG"
  Z19=$(stat -c %s "$LAST_OUTPUT")
fi
echo "sizes (share of the input):"
printf '  %-28s %12d  %6.2f%%\n' "sess pack --plain" "$PBYTES" "$(echo "$PBYTES * 100 / $BYTES" | bc -l)"
printf '  %-28s %12d  %6.2f%%\n' "zstd -3" "$Z3" "$(echo "$Z3 * 100 / $BYTES" | bc -l)"
printf '  %-28s %12d  %6.2f%%\n' "sess pack + zstd -3" "$PZ3" "$(echo "$PZ3 * 100 / $BYTES" | bc -l)"
if [ -n "${Z19:-}" ]; then
  printf '  %-28s %12d  %6.2f%%\n' "zstd -19 --long=27" "$Z19" "$(echo "$Z19 * 100 / $BYTES" | bc -l)"
fi

# The L3 shape (dsh-codec's large/L3: one row of 150,000 members): runs of 150,000 text
# deltas of one block each, about 63 MB, so that rows are as long as DSH makes them.
L3=$OUT/dsh-l3.jsonl
if [ ! -s "$L3" ]; then
  awk 'BEGIN {
    seq = 1; t = 1783352170000
    print "{\"type\":\"session\",\"version\":0,\"id\":\"l3\",\"createdAt\":1783352170000,\"cwd\":\"/w\",\"delegationDepth\":0}"
    split("session path token the build agent value read write", w, " ")
    for (run = 0; run < 3; run++)
      for (k = 0; k < 150000; k++) {
        printf "{\"type\":\"assistant/chunk\",\"seq\":%d,\"time\":%.0f,\"data\":{\"turn\":1,\"step\":%d,\"chunk\":{\"type\":\"text-delta\",\"index\":%d,\"text\":\" %s\"}}}\n", seq++, t += (k * 7) % 40, run + 1, run, w[k % 9 + 1]
      }
  }' >"$L3"
fi
LBYTES=$(stat -c %s "$L3")
echo "L3 shape: $L3, $LBYTES bytes"
measure "sess pack --plain (L3 shape)" "$LBYTES" "$SESS" pack --quiet --plain "$L3"
cp "$LAST_OUTPUT" "$OUT/dsh-l3.packed.jsonl"
echo "  rows of $(awk 'length > m { m = length } END { print m }' "$OUT/dsh-l3.packed.jsonl") bytes at most"
measure "sess unpack (L3 shape)" "$LBYTES" "$SESS" unpack --quiet "$OUT/dsh-l3.packed.jsonl"
cmp -s "$LAST_OUTPUT" "$L3" && echo "  byte-exact" || echo "  MISMATCH after round trip"
