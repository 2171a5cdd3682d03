#!/usr/bin/env bash
# `sess stats` on the ~1 GiB old-generation pi log (issue 13: at least 500 MB/s), with the
# snapshot rows estimated (the default) and built (--exact), against `jq` counting the same
# types and `zstd -3` reading the same bytes, in one run. Then how near the estimate is to
# what `sess pack` writes. Each time is the median of RUNS (default 3; jq runs once).
#   bash bench/stats.sh         (SIZE=256M for a quicker run; KIND=pi-new, codex, claude-code,
#                                dsh for another shape; SKIP_JQ=1 to leave jq out)
source "$(dirname "$0")/lib.sh"
SIZE=${SIZE:-1G}
KIND=${KIND:-pi-old}
RUNS=${RUNS:-3}
build
LOG=$OUT/$KIND-$SIZE.jsonl
gen "$LOG" "$KIND" "$SIZE"
BYTES=$(stat -c %s "$LOG")
echo "input: $LOG, $BYTES bytes"
cat "$LOG" >/dev/null # warm the page cache

measure "sess stats" "$BYTES" "$SESS" stats --quiet "$LOG"
S=$LAST_SECONDS
measure "sess stats --json" "$BYTES" "$SESS" stats --quiet --json "$LOG"
ESTIMATE=$(jq '.files[0].pack.bytes' "$LAST_OUTPUT")
measure "sess stats --threads 1" "$BYTES" "$SESS" stats --quiet --threads 1 "$LOG"
RUNS=1 measure "sess stats --exact --json" "$BYTES" "$SESS" stats --quiet --exact --json "$LOG"
X=$LAST_SECONDS
EXACT=$(jq '.files[0].pack.bytes' "$LAST_OUTPUT")
measure "zstd -3 -T1 (reads the same bytes)" "$BYTES" zstd -3 -T1 -q -c "$LOG"
Z=$LAST_SECONDS
if [ -z "${SKIP_JQ:-}" ]; then
  RUNS=1 measure "jq -r .type | sort | uniq -c" "$BYTES" \
    sh -c 'jq -r .type "$1" | sort | uniq -c' sh "$LOG"
  J=$LAST_SECONDS
fi
RUNS=1 measure "sess pack" "$BYTES" "$SESS" pack --quiet "$LOG"
PACKED=$(stat -c %s "$LAST_OUTPUT")

echo "ratios:"
printf '  sess stats: %.1f MB/s (target >= 500)\n' "$(echo "$BYTES / $S / 1000000" | bc -l)"
ratio "sess stats speed vs --exact" "$X" "$S"
ratio "sess stats speed vs zstd -3 -T1" "$Z" "$S"
[ -z "${SKIP_JQ:-}" ] && ratio "sess stats speed vs jq" "$J" "$S"
echo "what sess pack writes: $PACKED bytes; stats estimates $ESTIMATE ($(echo "$ESTIMATE / $PACKED" | bc -l | cut -c1-5)x), --exact $EXACT ($(echo "$EXACT / $PACKED" | bc -l | cut -c1-5)x)"
