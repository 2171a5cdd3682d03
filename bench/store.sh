#!/usr/bin/env bash
# A whole log store, generated: FILES logs (default 10000) of SIZE bytes in all (default
# 5G), laid out as Claude Code, Codex, Gemini CLI and pi lay theirs out, with ages spread
# over two years. Some old logs are held open for writing by background processes, and
# some are appended to while the run goes on (as a live agent does).
#
# It measures `sess stats DIR` with 1 and 2 threads, then `compact --apply` and
# `compact --undo`, checks that every file came back byte for byte (sha256 of the tree)
# and that held and live logs were never touched; then kills `compact --apply` and
# `compact --undo` with SIGKILL at random moments (TRIALS, default 10, alternating), and
# after each checks that every log is either as it was or in its packed form that unpacks
# to it, and that a rerun finishes the job.
#
#   bash bench/store.sh                      # 10,000 logs, 5 GB
#   FILES=1000 SIZE=500M TRIALS=4 bash bench/store.sh
#
# Everything it makes is under bench/out/store (removed first). Results are printed.

source "$(dirname "$0")/lib.sh"
FILES=${FILES:-10000}
SIZE=${SIZE:-5G}
TRIALS=${TRIALS:-10}
STORE=$OUT/store
build

echo "== generating the store: $FILES logs, $SIZE"
for t in claude-code:64M codex:64M pi-new:32M dsh:16M; do
  gen "$OUT/template-${t%%:*}.jsonl" "${t%%:*}" "${t##*:}"
done
rm -rf "$STORE"
python3 - "$OUT" "$STORE" "$FILES" "$SIZE" <<'EOF'
import os, random, sys, time
out, store, files, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
total = int(float(size[:-1]) * unit[size[-1]]) if size[-1] in unit else int(size)
rng = random.Random(7)
templates = {k: open(f"{out}/template-{k}.jsonl", "rb").read()
             for k in ["claude-code", "codex", "pi-new", "dsh"]}
# Log-normal sizes (many small logs, a few large ones), scaled to the total.
raw = [rng.lognormvariate(0, 1.6) for _ in range(files)]
scale = total / sum(raw)
now = time.time()
def piece(t, n):
    start = rng.randrange(0, max(1, len(t) - n))
    start = t.rfind(b"\n", 0, start) + 1
    end = t.find(b"\n", start + max(n, 1))
    return t[start:end + 1 if end >= 0 else len(t)]
for i, r in enumerate(raw):
    n = min(int(r * scale), 60 << 20)
    p = rng.choice(["claude-code"] * 5 + ["codex"] * 3 + ["gemini"] + ["pi-new"])
    proj = f"p{i % 40}"
    if p == "claude-code":
        rel = f"claude/projects/-w-{proj}/s{i}.jsonl"
        if i % 7 == 0:
            rel = f"claude/projects/-w-{proj}/s{i - 1}/subagents/agent-{i}.jsonl"
        data = piece(templates["claude-code"], n)
    elif p == "codex":
        d = time.gmtime(now - rng.randrange(0, 700) * 86400)
        rel = f"codex/sessions/{d.tm_year}/{d.tm_mon:02}/{d.tm_mday:02}/rollout-{i}.jsonl"
        data = piece(templates["codex"], n)
    elif p == "gemini":
        rel = f"gemini/tmp/{proj}/chats/session-{i}.jsonl"
        data = piece(templates["dsh"], n)
    else:
        rel = f"pi/agent/sessions/--w-{proj}--/{i}.jsonl"
        data = piece(templates["pi-new"], n)
    path = os.path.join(store, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    age = rng.choice([0.2, 2, 5] + [rng.uniform(8, 730) for _ in range(7)])
    t = now - age * 86400
    os.utime(path, (t, t))
EOF
echo "store: $(find "$STORE" -type f | wc -l) files, $(du -sb "$STORE" | cut -f1) bytes"

# Held: old logs a process keeps open for writing. Live: logs appended to meanwhile.
mapfile -t OLD < <(find "$STORE" -name '*.jsonl' -mtime +30 | sort | head -20)
HELD=("${OLD[@]:0:10}")
LIVE=("${OLD[@]:10:10}")
PIDS=()
for f in "${HELD[@]}"; do
  sh -c 'exec 3>>"$1"; exec sleep 100000' sh "$f" &
  PIDS+=($!)
done
for f in "${LIVE[@]}"; do
  sh -c 'while :; do echo "{\"type\":\"live\",\"at\":$(date +%s%N)}" >>"$1"; sleep 0.5; done' sh "$f" &
  PIDS+=($!)
done
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
sleep 1

# sha256 of every file but the live ones and sess's journal, by path.
sums() {
  (cd "$STORE" && find . -type f ! -name '.sess-compact.jsonl' -print0 | sort -z |
    xargs -0 -P2 -n 200 sha256sum | sort -k2) | grep -v -F -f <(printf '%s\n' "${LIVE[@]#$STORE/}")
}
sums >"$OUT/store.before"
BYTES=$(du -sb "$STORE" | cut -f1)

echo "== sess stats DIR"
RUNS=1 measure "stats DIR, --threads 1" "$BYTES" "$SESS" stats -q --threads 1 "$STORE"
RUNS=1 measure "stats DIR, --threads 2" "$BYTES" "$SESS" stats -q --threads 2 "$STORE"
sed -n '/what each would write/,$p' "$LAST_OUTPUT"

echo "== compact --apply, then --undo"
RUNS=1 measure "compact --apply" "$BYTES" "$SESS" compact -q --apply "$STORE"
tail -1 "$LAST_OUTPUT"
grep -c '^left alone.*open for writing' "$LAST_OUTPUT" | sed 's/^/held logs reported open for writing: /'
for f in "${HELD[@]}" "${LIVE[@]}"; do
  [ -f "$f" ] && [ ! -e "$f.sess.zst" ] || { echo "FAIL: $f was touched"; exit 1; }
done
echo "compacted store: $(du -sb "$STORE" | cut -f1) bytes"
"$SESS" stats -q "$STORE" | sed -n '/^producer/,/^$/p'
RUNS=1 measure "compact --undo" "$BYTES" "$SESS" compact -q --undo "$STORE"
tail -1 "$LAST_OUTPUT"
sums | cmp - "$OUT/store.before" && echo "undo: every file back, byte for byte"

# Every log either as it was or in its packed form, unpacking to it.
check_whole() {
  local bad=0 line sum path
  while read -r sum path; do
    local f="$STORE/${path#./}"
    if [ -f "$f" ]; then
      [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$sum" ] || { echo "CHANGED: $f"; bad=1; }
    elif [ -f "$f.sess.zst" ]; then
      [ "$("$SESS" unpack "$f.sess.zst" | sha256sum | cut -d' ' -f1)" = "$sum" ] ||
        { echo "PACKED WRONG: $f"; bad=1; }
    else
      echo "MISSING: $f"; bad=1
    fi
  done <"$OUT/store.before"
  return $bad
}

echo "== kill -9 during compact, $TRIALS trials"
APPLY=$LAST_SECONDS
for ((t = 0; t < TRIALS; t++)); do
  if ((t % 2 == 0)); then what=--apply; else what=--undo; fi
  "$SESS" compact -q $what "$STORE" >/dev/null &
  pid=$!
  at=$(python3 -c "import random; random.seed($t); print(round(random.uniform(0.2, $APPLY), 2))")
  sleep "$at"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if check_whole; then verdict=whole; else verdict=BROKEN; fi
  "$SESS" compact -q $what "$STORE" >"$OUT/store.rerun"
  printf 'trial %d: kill -9 of compact %s after %ss: %s; rerun: %s\n' "$t" "$what" "$at" \
    "$verdict" "$(tail -1 "$OUT/store.rerun")"
  [ "$verdict" = whole ] || exit 1
done
"$SESS" compact -q --undo "$STORE" >/dev/null
sums | cmp - "$OUT/store.before" && echo "after the trials and an undo: every file back, byte for byte"
