#!/usr/bin/env bash
# sess recover on op lists of 10 MiB and 1 GiB whose last base batch is 100 batches from
# the end: the time should not depend on the size. Also decode+apply throughput from the
# start of both lists.
#   bash bench/recover.sh      (BIG=256M for a quicker run)
source "$(dirname "$0")/lib.sh"
BIG=${BIG:-1G}
build
SMALL_LOG=$OUT/oplist-10M.jsonl
BIG_LOG=$OUT/oplist-$BIG.jsonl
gen "$SMALL_LOG" oplist 10M
gen "$BIG_LOG" oplist "$BIG"
cat "$SMALL_LOG" "$BIG_LOG" >/dev/null
SB=$(stat -c %s "$SMALL_LOG")
BB=$(stat -c %s "$BIG_LOG")
best() { # best of 5 wall times of a command, in seconds
  local b=999
  for _ in 1 2 3 4 5; do
    local s e t
    s=$EPOCHREALTIME; "$@" >/dev/null; e=$EPOCHREALTIME
    t=$(echo "$e - $s" | bc -l)
    b=$(echo "if ($t < $b) $t else $b" | bc -l)
  done
  echo "$b"
}
TS=$(best "$SESS" recover "$SMALL_LOG")
TB=$(best "$SESS" recover "$BIG_LOG")
printf 'recover, 10 MiB list (%d bytes):   %.4f s\n' "$SB" "$TS"
printf 'recover, %s list (%d bytes): %.4f s\n' "$BIG" "$BB" "$TB"
printf '  ratio big/small: %.2fx (target <= 1.5x)\n' "$(echo "$TB / $TS" | bc -l)"
cmp <("$SESS" recover "$SMALL_LOG") <("$SESS" recover --from-start "$SMALL_LOG") && echo "  from the last base == from the start"
measure "recover --from-start (decode+apply)" "$SB" "$SESS" recover --from-start "$SMALL_LOG"
# The small list takes a few hundredths of a second, so starting the process weighs on
# it: throughput is read on the big one.
measure "recover --from-start, $BIG list" "$BB" "$SESS" recover --from-start "$BIG_LOG"
