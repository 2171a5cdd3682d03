#!/usr/bin/env bash
# Memory of a run of giant snapshot frames: pi's old message_update, each carrying the
# whole message twice (as `partial` and `message`), four of them of about 117 MB. The
# bound (issue 12) is 64 MiB + the window's index + 2x the longest line. Peak memory of
# pack and unpack, with the default threads and with one, and from a pipe; the round trip.
#   bash bench/giant.sh        (TEXT=30000000 for frames of about 60 MB)
source "$(dirname "$0")/lib.sh"
TEXT=${TEXT:-58000000}
build
log=$OUT/giant-$TEXT.jsonl
if [ ! -s "$log" ]; then
  echo "generating $log" >&2
  # The text grows in a file: held in a shell variable, it took minutes.
  text=$(mktemp)
  head -c "$TEXT" /dev/zero | tr '\0' w >"$text"
  open='{"role":"assistant","content":[{"type":"text","text":"'
  close='"}]}'
  for k in 1 2 3 4; do
    printf 'more%d ' "$k" >>"$text"
    printf '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"more%d ","partial":%s' "$k" "$open"
    cat "$text"
    printf '%s},"message":%s' "$close" "$open"
    cat "$text"
    printf '%s}\n' "$close"
  done >"$log"
  rm -f "$text"
fi
bytes=$(stat -c %s "$log")
longest=$(longest_line "$log")
echo "== $bytes bytes, longest line $longest bytes"
printf '  memory bound %.1f MiB (64 MiB + 2 x %d bytes; no values interned)\n' \
  "$(echo "64 + 2 * $longest / 1048576" | bc -l)" "$longest"
for threads in default 1; do
  flag=()
  [ "$threads" = 1 ] && flag=(--threads 1)
  measure "sess pack (threads: $threads)" "$bytes" "$SESS" pack --quiet "${flag[@]}" "$log"
  cp "$LAST_OUTPUT" "$OUT/giant.sess.zst"
  measure "sess unpack (threads: $threads)" "$bytes" "$SESS" unpack --quiet "${flag[@]}" "$OUT/giant.sess.zst"
  cmp -s "$LAST_OUTPUT" "$log" && echo "  byte-exact" || echo "  MISMATCH"
done
echo "  packed size $(stat -c %s "$OUT/giant.sess.zst")"
# From a pipe, frames are written as windows close (sh's peak is the larger of its two).
measure "sess pack (from a pipe)" "$bytes" sh -c 'cat "$1" | "$2" pack --quiet' sh "$log" "$SESS"
"$SESS" unpack --quiet "$LAST_OUTPUT" | cmp -s - "$log" && echo "  byte-exact" || echo "  MISMATCH"
