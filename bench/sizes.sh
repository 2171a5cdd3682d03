#!/usr/bin/env bash
# Per file: input bytes, zstd -3, zstd -19 --long=31, sess pack --plain, sess pack, and
# whether sess pack is within zstd -3. Every real log in ../shared/conformance and the
# captures in testdata/captures, or the files and folders given.
#   bash bench/sizes.sh [PATH...]
source "$(dirname "$0")/lib.sh"
build
if [ $# -eq 0 ]; then
  set -- "$ROOT/../shared/conformance" "$ROOT/testdata/captures"
fi
printf '%-60s %10s %9s %9s %9s %9s %s\n' file input zstd-3 zstd-19L plain pack ok
over=0
while IFS= read -r f; do
  in=$(stat -c %s "$f")
  z3=$(zstd -q -3 -c "$f" | wc -c)
  z19=$(zstd -q -19 --long=31 -c "$f" | wc -c)
  plain=$("$SESS" pack --quiet --plain "$f" 2>/dev/null | wc -c) || true
  ok=yes
  if "$SESS" pack --quiet "$f" >"$OUT/sizes.zst" 2>/dev/null; then
    pack=$(stat -c %s "$OUT/sizes.zst")
  else
    # A malformed packed row (DSH's invalid fixtures): pack refuses the file, by design.
    pack=0
    ok=refused
  fi
  if [ "$pack" -gt "$z3" ]; then ok=NO; over=$((over + 1)); fi
  name=${f#"$ROOT/"}
  printf '%-60s %10d %9d %9d %9d %9d %s\n' "${name: -60}" "$in" "$z3" "$z19" "$plain" "$pack" "$ok"
done < <(find "$@" -type f \( -name '*.jsonl' -o -name '*.jsonl.zst' -o -name '*.jsonl.zstd' \) | sort)
echo "files where sess pack is larger than zstd -3: $over"
rm -f "$OUT/sizes.zst"
