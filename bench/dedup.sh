#!/usr/bin/env bash
# Long-range dedup: sess pack against zstd -3 and zstd -19 --long=31 on the same generated
# logs, in the same run: size, time, peak memory, and the round trip.
#   bash bench/dedup.sh             (SIZE=64M for a quicker run; the issue asks for 1G;
#                                    KINDS="claude-code codex pi-old" to choose)
# zstd -19 --long=31 takes minutes per GiB; it is the size to beat, not the speed.
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
KINDS=${KINDS:-claude-code codex pi-old}
build
for kind in $KINDS; do
  log=$OUT/$kind-$SIZE.jsonl
  gen "$log" "$kind" "$SIZE"
  bytes=$(stat -c %s "$log")
  longest=$(longest_line "$log")
  echo "== $kind: $bytes bytes, longest line $longest bytes"
  cat "$log" >/dev/null
  measure "sess pack" "$bytes" "$SESS" pack --quiet --stats --json "$log" 2>"$OUT/pack-stats.json"
  sp=$LAST_SECONDS
  # The issue's bound: 64 MiB + the window's index + 2x the longest line.
  index=$(grep -o '"index_bytes":[0-9]*' "$OUT/pack-stats.json" | cut -d: -f2)
  printf '  memory bound %.1f MiB (64 MiB + index %.1f MiB + 2 x %d bytes)\n' \
    "$(echo "64 + ($index + 2 * $longest) / 1048576" | bc -l)" "$(echo "$index / 1048576" | bc -l)" "$longest"
  cp "$LAST_OUTPUT" "$OUT/$kind-$SIZE.sess.zst"
  echo "  size $(stat -c %s "$OUT/$kind-$SIZE.sess.zst")"
  # Its gigabyte timed to /dev/null (lib.sh's measure), not to a file on bench/out.
  SINK=${SINK:-null} measure "sess unpack" "$bytes" "$SESS" unpack --quiet "$OUT/$kind-$SIZE.sess.zst"
  cmp -s "$LAST_OUTPUT" "$log" && echo "  byte-exact" || echo "  MISMATCH"
  measure "zstd -3" "$bytes" zstd -3 -q -c "$log"
  echo "  size $(stat -c %s "$LAST_OUTPUT")"
  measure "zstd -19 --long=31" "$bytes" zstd -19 --long=31 -q -c "$log"
  echo "  size $(stat -c %s "$LAST_OUTPUT")"
  ratio "sess pack faster than zstd -19 --long=31" "$LAST_SECONDS" "$sp"
done
