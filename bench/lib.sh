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
# memory and output lines. Sets LAST_SECONDS and LAST_OUTPUT.
measure() {
  local name=$1 bytes=$2
  shift 2
  local tf
  tf=$(mktemp)
  local start end
  start=$(date +%s.%N)
  LAST_OUTPUT=$OUT/last-output
  /usr/bin/time -f '%M' -o "$tf" "$@" >"$LAST_OUTPUT"
  end=$(date +%s.%N)
  LAST_SECONDS=$(echo "$end - $start" | bc -l)
  local rss_kb
  rss_kb=$(tail -1 "$tf")
  rm -f "$tf"
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
