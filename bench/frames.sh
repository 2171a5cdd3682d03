#!/usr/bin/env bash
# The zstd container against the zstd CLI on the same ~1 GiB log, in the same run:
# pack-to-zstd vs zstd -3 (one thread and -T2), unpack and cat vs zstd -dc, cat --tail 10
# vs a full decompression, and the output size per frame size. The ratios are issue 13's
# container bars (sess on both cores, as by default).
#   bash bench/frames.sh        (SIZE=256M for a quicker run; KIND=pi-old for a pi log)
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
KIND=${KIND:-dsh}
# Timed to /dev/null (lib.sh's measure); SINK=file times the writes to bench/out too.
SINK=${SINK:-null}
build
LOG=$OUT/$KIND-$SIZE.jsonl
gen "$LOG" "$KIND" "$SIZE"
BYTES=$(stat -c %s "$LOG")
echo "input: $LOG, $BYTES bytes"
cat "$LOG" >/dev/null

measure "sess pack (zstd frames, level 3)" "$BYTES" "$SESS" pack --quiet "$LOG"
SP=$LAST_SECONDS
cp "$LAST_OUTPUT" "$OUT/$KIND-$SIZE.jsonl.zst"
Z=$OUT/$KIND-$SIZE.jsonl.zst
measure "zstd -3" "$BYTES" zstd -3 -q -c "$LOG"
ZP=$LAST_SECONDS
cp "$LAST_OUTPUT" "$OUT/$KIND-$SIZE.stock.zst"
measure "zstd -3 -T2" "$BYTES" zstd -3 -T2 -q -c "$LOG"
ZP2=$LAST_SECONDS
measure "sess unpack (of sess pack)" "$BYTES" "$SESS" unpack --quiet "$Z"
SU=$LAST_SECONDS
cmp -s "$LAST_OUTPUT" "$LOG" && echo "  byte-exact" || echo "  MISMATCH"
measure "zstd -dc (of zstd -3)" "$BYTES" zstd -dc -q "$OUT/$KIND-$SIZE.stock.zst"
ZD=$LAST_SECONDS
measure "zstd -dc (of sess pack)" "$BYTES" zstd -dc -q "$Z"
measure "sess cat (of sess pack)" "$BYTES" "$SESS" cat --quiet "$Z"
SC=$LAST_SECONDS
measure "sess cat --tail 10" "$BYTES" "$SESS" cat --quiet --tail 10 "$Z"
ST=$LAST_SECONDS
echo "ratios:"
ratio "pack throughput vs zstd -3 (target >= 1.5)" "$ZP" "$SP"
ratio "pack throughput vs zstd -3 -T2 (target >= 0.9)" "$ZP2" "$SP"
ratio "cat throughput vs zstd -dc (target >= 1.2)" "$ZD" "$SC"
ratio "unpack throughput vs zstd -dc" "$ZD" "$SU"
printf '  cat --tail 10 time as a share of zstd -dc: %.2f%% (target < 5%%)\n' "$(echo "$ST * 100 / $ZD" | bc -l)"
echo "sizes: sess $(stat -c %s "$Z"), zstd -3 $(stat -c %s "$OUT/$KIND-$SIZE.stock.zst")"
echo "output size by --frame-size (relative to one zstd -3 stream):"
ZS=$(stat -c %s "$OUT/$KIND-$SIZE.stock.zst")
for fs in 65536 262144 1048576 4194304; do
  s=$("$SESS" pack --quiet --frame-size "$fs" "$LOG" | wc -c)
  printf '  %8d  %12d  %.3f\n' "$fs" "$s" "$(echo "$s / $ZS" | bc -l)"
done
