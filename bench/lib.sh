# Shared helpers for the benchmark scripts. Source it; do not run it.
# Results are printed, never asserted: time depends on the machine.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${BENCH_OUT:-$ROOT/bench/out}
mkdir -p "$OUT"
SESS=$ROOT/target/release/sess
SYNTH=$ROOT/target/release/examples/synth

build() {
  (cd "$ROOT" && cargo build --release --quiet --bins --examples)
}

# gen FILE KIND SIZE: make a synthetic log once, reuse it after.
gen() {
  local file=$1 kind=$2 size=$3
  if [ ! -s "$file" ]; then
    echo "generating $file ($kind, $size)" >&2
    "$SYNTH" "$kind" --size "$size" --seed 7 -o "$file"
  fi
}

# measure NAME INPUT_BYTES CMD...: run CMD with stdout to a file (not /dev/null: GNU grep
# stops at the first match when it sees /dev/null), print wall time, throughput, peak
# memory and output lines. With RUNS=N (default 1) it runs N times and reports the median
# time and the largest peak. The output file is removed before each run, so that no run
# pays for truncating the last one's gigabyte. Sets LAST_SECONDS and LAST_OUTPUT.
# With SINK=null the timed runs write to /dev/null, and one more run, not timed, writes
# LAST_OUTPUT for the checks: a gigabyte written to a file costs its page cache and
# writeback, which the tools compared pay alike and which is not theirs (on a 2-core
# machine, a 1 GiB unpack took 0.46-0.55 s to /dev/null and 1.2-2.6 s to a file).
measure() {
  local name=$1 bytes=$2
  shift 2
  local tf times=() rss_kb=0 r sink
  tf=$(mktemp)
  LAST_OUTPUT=$OUT/last-output
  sink=$LAST_OUTPUT
  [ "${SINK:-file}" = null ] && sink=/dev/null
  for ((r = 0; r < ${RUNS:-1}; r++)); do
    rm -f "$LAST_OUTPUT"
    # The clock is read in the shell (bash 5): a `date` process on each side added 1.5 to
    # 4.5 ms (timing `true`), up to a twentieth of a run on a 45 MB log.
    local start end
    start=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$tf" "$@" >"$sink"
    end=$EPOCHREALTIME
    times+=("$(echo "$end - $start" | bc -l)")
    rss_kb=$(( $(tail -1 "$tf") > rss_kb ? $(tail -1 "$tf") : rss_kb ))
  done
  [ "$sink" = /dev/null ] && "$@" >"$LAST_OUTPUT"
  rm -f "$tf"
  LAST_SECONDS=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (${#times[@]} + 1) / 2 ))p")
  printf '%-40s %8.2f s %9.1f MB/s %8.1f MiB peak %10d lines out\n' "$name" "$LAST_SECONDS" \
    "$(echo "$bytes / $LAST_SECONDS / 1000000" | bc -l)" "$(echo "$rss_kb / 1024" | bc -l)" \
    "$(wc -l <"$LAST_OUTPUT")"
}

ratio() {
  printf '  %s: %.2fx\n' "$1" "$(echo "$2 / $3" | bc -l)"
}

# longest LINE length of FILE, in bytes
longest_line() {
  LC_ALL=C awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"
}
