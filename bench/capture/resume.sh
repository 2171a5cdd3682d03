#!/usr/bin/env bash
# Resume experiment: can Claude Code resume a transcript after `sess filter` rewrote it, and
# does the resumed session send the model the same conversation? (Results: RESUME.md.)
#
#   1. An older Claude Code (old/: 2.1.39, which still writes `progress` records) runs the
#      `rs` scenario (scenarios.js) interactively in tmux: a Bash whose output streams for 6 s
#      (bash_progress), a foreground subagent via Task (agent_progress), PreToolUse and
#      PostToolUse hooks on Bash from ~/.claude/settings.json (hook_progress).
#   2. Variants of that transcript: orig; filtered (`sess filter` of <sid>.jsonl); filtered-all
#      (also subagents/agent-*.jsonl filtered). `sess stats` of each, and a record-by-record
#      account of what filter changed (compare/filter-diff.*.json).
#   3. Each variant is placed in a fresh HOME (~/.claude/projects/<slug>/<sid>.jsonl plus its
#      <sid>/ folder), with the same session id and the same working folder, and resumed by
#      2.1.39 and by 2.1.332 (../node_modules) in three ways:
#        resume       claude -p --resume <sid> "scenario=rs-next ..."   (Bash call + text)
#        continue     claude -p --continue "scenario=rs-cont ..."       (text)
#        interactive  claude --resume <sid> in tmux, the rs-next prompt typed, then /exit
#      A fresh mock per run dumps every request body (bodies/<run>/).
#   4. The same (orig, filtered) for the 2.1.332 `medium` capture in
#      testdata/captures/claude-code (copied, never written), resumed by 2.1.332.
#   5. resume-compare.js pairs the requests of orig vs each filtered variant: `messages`
#      deep-equal, the rest of the body (metadata.user_id masked), exit code, stderr, whether
#      the placed file is still a byte prefix of the transcript afterwards, what was appended;
#      for interactive runs also the screen (tmux capture-pane) after loading and at the end.
#      Table: OUT/results.tsv.
# Everything runs inside `unshare -n -m`: loopback only, as in run.sh (the mock also refuses
# and logs proxy CONNECTs: logs/proxy-attempts.txt), and a private mount namespace in which
# /tmp/sess-capture (the cwd recorded in the testdata capture) is bind-mounted from the
# scratch root, so a concurrent run.sh is not disturbed. About 5 minutes on 2 cores.
#
# usage: bench/capture/resume.sh [OUT_DIR] [--root DIR] [--sess PATH]
#   OUT_DIR     results (default bench/capture/out-resume; replaced)
#   --root DIR  scratch root (default /tmp/sess-resume; wiped)
#   --sess P    sess binary (default /tmp/sess-bin/sess)
# Needs: npm ci in bench/capture and in bench/capture/old, tmux, root (unshare -n -m, mount).
set -euo pipefail

B="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$B/out-resume"
ROOT=/tmp/sess-resume
SESS=/tmp/sess-bin/sess
PORT=8787
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT="$2"; shift 2 ;;
    --sess) SESS="$2"; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    -*) echo "resume.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT="$1"; shift ;;
  esac
done

NEW_CLAUDE="$B/node_modules/@anthropic-ai/claude-code/bin/claude.exe"   # 2.1.332, native
OLD_CLI="$B/old/node_modules/@anthropic-ai/claude-code/cli.js"          # 2.1.39, node script
TESTDATA="$B/../../testdata/captures/claude-code/-tmp-sess-capture-work-claude-medium"
MED_SID=23cafa91-94dd-4151-b191-b5907c763b4b
MED_CWD=/tmp/sess-capture/work/claude/medium     # the cwd recorded in that transcript
for f in "$NEW_CLAUDE" "$OLD_CLI" "$SESS" "$TESTDATA/$MED_SID.jsonl"; do
  [ -e "$f" ] || { echo "resume.sh: $f missing (npm ci in bench/capture and bench/capture/old?)" >&2; exit 1; }
done
command -v tmux > /dev/null || { echo "resume.sh: tmux missing" >&2; exit 1; }

# ------------------------------------------------------------------ namespaces
if [ "${RESUME_IN_NS:-}" != 1 ]; then
  exec unshare -n -m env RESUME_IN_NS=1 bash ${RESUME_TRACE:+-x} "$0" "${ARGS[@]}"
fi
ip link set lo up
mount --make-rprivate /

rm -rf "$ROOT" "$OUT"
mkdir -p "$ROOT" "$OUT"/{logs,bodies,src,after,compare,screens}
OUT="$(cd "$OUT" && pwd)"
# private /tmp/sess-capture (only in this mount namespace)
mkdir -p /tmp/sess-capture "$ROOT/sess-capture"
mount --bind "$ROOT/sess-capture" /tmp/sess-capture

node -e '
  const net = require("net"), dns = require("dns"); let left = 3; const done = () => { if (--left === 0) process.exit(0); };
  for (const [h, p] of [["1.1.1.1", 443], ["8.8.8.8", 53]]) { const s = net.connect({ host: h, port: p, timeout: 3000 });
    s.on("connect", () => { console.log(`CONNECTED ${h}:${p}  <-- NOT ISOLATED`); s.destroy(); done(); });
    s.on("timeout", () => { console.log(`${h}:${p} timeout`); s.destroy(); done(); }); s.on("error", (e) => { console.log(`${h}:${p} ${e.code}`); done(); }); }
  dns.lookup("api.anthropic.com", (e, a) => { console.log(`dns api.anthropic.com: ${e ? e.code : "RESOLVED " + a + "  <-- NOT ISOLATED"}`); done(); });
' > "$OUT/NETCHECK.txt" 2>&1
{ ip -o link; ip -o addr; ip route; } >> "$OUT/NETCHECK.txt" 2>&1
if grep -q "NOT ISOLATED" "$OUT/NETCHECK.txt"; then cat "$OUT/NETCHECK.txt" >&2; exit 1; fi

BASE="http://127.0.0.1:$PORT"
KEY=sk-ant-test-not-a-real-key
COMMON_ENV=(PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 TZ=UTC
  HTTPS_PROXY="$BASE" HTTP_PROXY="$BASE" https_proxy="$BASE" http_proxy="$BASE"
  NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
  ANTHROPIC_API_KEY="$KEY" ANTHROPIC_BASE_URL="$BASE"
  DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_BUG_COMMAND=1 IS_SANDBOX=1)
# interactive runs: a real terminal type, and no prompt suggestions (an extra request after
# each turn)
TTY_ENV=(TERM=xterm-256color CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION=false)
FLAGS=(--output-format stream-json --verbose --dangerously-skip-permissions)
NEXT_PROMPT="scenario=rs-next Pick up where we left off and run one more command."
CONT_PROMPT="scenario=rs-cont One more short answer, please."

uuid_for() { node -e 'const h=require("crypto").createHash("sha256").update("sess-capture:"+process.argv[1]).digest("hex");
  console.log(`${h.slice(0,8)}-${h.slice(8,12)}-4${h.slice(13,16)}-${"89ab"[parseInt(h[16],16)%4]}${h.slice(17,20)}-${h.slice(20,32)}`)' "$1"; }
slug() { echo "$1" | sed 's#[^A-Za-z0-9]#-#g'; }

# a fresh mock per run, so both runs of a pair get byte-identical answers and their own dumps
MOCK_PID=
# scenarios.js takes the working folder from "Primary working directory:" in the system
# prompt (2.1.332); 2.1.39 writes "Working directory:", so the mock also gets it as CAPTURE_WORK
MOCK_CWD=/tmp
mock_start() { # name
  mkdir -p "$OUT/bodies/$1"; rm -f "$ROOT/mock.port"
  CAPTURE_WORK="$MOCK_CWD" node "$B/mock.js" --port "$PORT" --log "$OUT/logs/mock-$1.jsonl" --dump-dir "$OUT/bodies/$1" \
    --ready-file "$ROOT/mock.port" > "$OUT/logs/mock-$1.stdout" 2>&1 &
  MOCK_PID=$!
  for _ in $(seq 100); do [ -s "$ROOT/mock.port" ] && return; sleep 0.1; done
  echo "resume.sh: mock did not start" >&2; exit 1
}
mock_stop() { [ -n "$MOCK_PID" ] || return 0; kill "$MOCK_PID" 2>/dev/null || true; wait "$MOCK_PID" 2>/dev/null || true; MOCK_PID=; }
TM=(tmux -L sess-resume)
trap 'mock_stop; "${TM[@]}" kill-server 2>/dev/null || true' EXIT

# a HOME with the hooks (the same in every run); interactive: home cwd -> also ~/.claude.json
# with onboarding, the API key, bypass mode and the folder's trust dialog pre-accepted
home_setup() { # home [cwd]
  mkdir -p "$1/.claude"
  cat > "$1/.claude/settings.json" <<'EOF'
{
  "hooks": {
    "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "echo pre-hook-ran; sleep 1" }] }],
    "PostToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "echo post-hook-ran" }] }]
  }
}
EOF
  [ -z "${2:-}" ] || cat > "$1/.claude.json" <<EOF
{"hasCompletedOnboarding": true, "theme": "dark", "bypassPermissionsModeAccepted": true,
 "customApiKeyResponses": {"approved": ["${KEY: -20}"], "rejected": []},
 "projects": {"$2": {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}}
EOF
}
bin_for() { if [ "$1" = old ]; then echo "node $(printf %q "$OLD_CLI")"; else printf %q "$NEW_CLAUDE"; fi; }

# print mode: name which(old|new) home cwd args...   -> exit code in logs/NAME.rc
claude_run() {
  local name="$1" which="$2" home="$3" cwd="$4"; shift 4
  local bin; read -r -a bin <<< "$(bin_for "$which")"
  echo "[$name] cd $cwd && env -i ... HOME=$home ${bin[*]} $(printf '%q ' "$@")" >> "$OUT/logs/commands.txt"
  mock_start "$name"
  local rc=0
  (cd "$cwd" && env -i "${COMMON_ENV[@]}" HOME="$home" timeout 600 "${bin[@]}" "$@" \
      < /dev/null > "$OUT/logs/$name.stdout.jsonl" 2> "$OUT/logs/$name.stderr") || rc=$?
  mock_stop
  echo "$rc" > "$OUT/logs/$name.rc"
  echo "[$name] exit $rc" >> "$OUT/logs/commands.txt"
}

# interactive: the REPL in a detached tmux (200x50). `timeout --foreground`: without it the CLI
# is not in the terminal's foreground process group and stops (SIGTTIN) reading the keyboard.
#   name which home cwd typed-prompt wait-for args...
# typed-prompt (may be empty) is typed once the input box is shown; wait-for is the mock's
# answer label (mock-NAME.jsonl) after which the session is ended with /exit.
# Screens: screens/NAME.start.txt (after loading, before typing; whole scrollback) and
# screens/NAME.end.txt (after the answer); exit code in logs/NAME.rc.
tmux_run() {
  local name="$1" which="$2" home="$3" cwd="$4" typed="$5" wait_for="$6"; shift 6
  local cmd q
  cmd="cd $(printf %q "$cwd") && env -i"
  for q in "${COMMON_ENV[@]}" "${TTY_ENV[@]}" HOME="$home"; do cmd+=" $(printf %q "$q")"; done
  cmd+=" timeout --foreground 600 $(bin_for "$which")"
  for q in "$@"; do cmd+=" $(printf %q "$q")"; done
  cmd+=" 2> $(printf %q "$OUT/logs/$name.stderr"); echo EXITED \$?; sleep 600"
  echo "[$name] (interactive, tmux) $cmd" >> "$OUT/logs/commands.txt"
  [ -z "$typed" ] || echo "[$name] typed: $typed" >> "$OUT/logs/commands.txt"
  mock_start "$name"
  "${TM[@]}" new-session -d -x 200 -y 50 "$cmd"
  if [ -n "$typed" ]; then
    for _ in $(seq 60); do "${TM[@]}" capture-pane -p | grep -q '^❯ *$' && break; sleep 1; done
    sleep 2
    "${TM[@]}" capture-pane -p -S - > "$OUT/screens/$name.start.txt"
    "${TM[@]}" send-keys -l "$typed"; sleep 1; "${TM[@]}" send-keys Enter
  fi
  for _ in $(seq 300); do
    grep -q "\"$wait_for\"" "$OUT/logs/mock-$name.jsonl" 2>/dev/null && break
    "${TM[@]}" capture-pane -p | grep -q "^EXITED " && break
    sleep 1
  done
  sleep 3
  "${TM[@]}" capture-pane -p -S - > "$OUT/screens/$name.end.txt"
  for _ in $(seq 10); do
    "${TM[@]}" send-keys -l '/exit'; sleep 1; "${TM[@]}" send-keys Enter; sleep 3
    "${TM[@]}" capture-pane -p > "$OUT/screens/$name.exit.txt"
    grep -q '^EXITED ' "$OUT/screens/$name.exit.txt" && break
  done
  if grep -q '^EXITED ' "$OUT/screens/$name.exit.txt"; then
    grep -o '^EXITED [0-9]*' "$OUT/screens/$name.exit.txt" | awk '{print $2}' > "$OUT/logs/$name.rc"
  else
    echo no-exit > "$OUT/logs/$name.rc"
  fi
  "${TM[@]}" kill-server 2>/dev/null || true
  mock_stop
  echo "[$name] exit $(cat "$OUT/logs/$name.rc")" >> "$OUT/logs/commands.txt"
}

# ------------------------------------------------------------------ 1. capture with 2.1.39
# 2.1.39 writes `progress` records only in the interactive REPL: a -p run of the same
# scenario wrote none into the main transcript (only bash_progress into the subagent's file).
SRC_SID="$(uuid_for claude-rs-old)"
SRC_CWD="$ROOT/work/rs"
MOCK_CWD="$SRC_CWD"
mkdir -p "$SRC_CWD"
echo "a file for the subagent to see" > "$SRC_CWD/readme.txt"
H="$ROOT/home/capture"; home_setup "$H" "$SRC_CWD"
tmux_run capture-old old "$H" "$SRC_CWD" "" "script:rs#3" \
  --session-id "$SRC_SID" --dangerously-skip-permissions "scenario=rs Run a slow command, ask a subagent to look around, then summarize."
cp -a "$H/.claude/projects/$(slug "$SRC_CWD")" "$OUT/src/old-rs.captured"
cp -a "$SRC_CWD" "$ROOT/work-rs.snapshot"        # the working folder as the capture left it
# the 2.1.332 medium capture from testdata (read-only: copied)
cp -a "$TESTDATA" "$OUT/src/new-medium.captured"

# ------------------------------------------------------------------ 2. filter
# variants, each a folder holding <sid>.jsonl and its <sid>/ sidecar (subagents/, tool-results/):
#   orig          the transcript as written
#   filtered      <sid>.jsonl through `sess filter`, sidecar as written
#   filtered-all  (old-rs only) also every subagents/agent-*.jsonl through `sess filter`
make_variants() { # src sid variants...
  local src="$1" sid="$2" v f; shift 2
  for v in "$@"; do
    mkdir -p "$OUT/src/$src/$v"
    if [ -d "$OUT/src/$src.captured/$sid" ]; then cp -a "$OUT/src/$src.captured/$sid" "$OUT/src/$src/$v/$sid"; fi
    case "$v" in
      orig) cp -p "$OUT/src/$src.captured/$sid.jsonl" "$OUT/src/$src/$v/$sid.jsonl" ;;
      filtered|filtered-all)
        echo "\$ sess filter --stats -o $v/$sid.jsonl $sid.jsonl" > "$OUT/logs/filter-$src.$v.txt"
        "$SESS" filter -q --stats -o "$OUT/src/$src/$v/$sid.jsonl" "$OUT/src/$src.captured/$sid.jsonl" 2>> "$OUT/logs/filter-$src.$v.txt"
        if [ "$v" = filtered-all ]; then
          for f in "$OUT/src/$src/$v/$sid"/subagents/*.jsonl; do
            [ -e "$f" ] || continue
            echo "\$ sess filter --stats -o $v/$sid/subagents/${f##*/} $sid/subagents/${f##*/}" >> "$OUT/logs/filter-$src.$v.txt"
            "$SESS" filter -q --stats -o "$f" "$OUT/src/$src.captured/$sid/subagents/${f##*/}" 2>> "$OUT/logs/filter-$src.$v.txt"
          done
        fi ;;
    esac
    "$SESS" stats -q "$OUT/src/$src/$v/$sid.jsonl" > "$OUT/logs/stats-$src.$v.txt"
    if [ "$v" != orig ]; then
      node "$B/resume-compare.js" --filter-diff "$OUT/src/$src/orig/$sid.jsonl" "$OUT/src/$src/$v/$sid.jsonl" > "$OUT/compare/filter-diff.$src.$v.json"
    fi
  done
}
make_variants old-rs "$SRC_SID" orig filtered filtered-all
make_variants new-medium "$MED_SID" orig filtered
for f in "$OUT/src/old-rs/orig/$SRC_SID"/subagents/*.jsonl; do
  [ -e "$f" ] || continue
  "$SESS" stats -q "$f" > "$OUT/logs/stats-old-rs.orig.subagent-${f##*/}.txt"
  "$SESS" stats -q "$OUT/src/old-rs/filtered-all/$SRC_SID/subagents/${f##*/}" > "$OUT/logs/stats-old-rs.filtered-all.subagent-${f##*/}.txt"
done

# ------------------------------------------------------------------ 3./4. resume
# place a variant in a fresh HOME and resume it: name src(old-rs|new-medium) variant which(old|new) mode
resume_run() {
  local name="$1" src="$2" variant="$3" which="$4" mode="$5"
  local sid cwd
  if [ "$src" = old-rs ]; then sid="$SRC_SID"; cwd="$SRC_CWD"; else sid="$MED_SID"; cwd="$MED_CWD"; fi
  MOCK_CWD="$cwd"
  # the same HOME path for every resume run (wiped first), so HOME-derived paths in the
  # requests (the memory folder in 2.1.332's system prompt) are the same in both runs of a pair
  local home="$ROOT/home/resume" pdir
  rm -rf "$home"
  if [ "$mode" = interactive ]; then home_setup "$home" "$cwd"; else home_setup "$home"; fi
  pdir="$home/.claude/projects/$(slug "$cwd")"
  mkdir -p "$pdir"
  cp -a "$OUT/src/$src/$variant/." "$pdir/"
  # the same working folder contents for every run
  rm -rf "$cwd"; mkdir -p "$(dirname "$cwd")"
  if [ "$src" = old-rs ]; then cp -a "$ROOT/work-rs.snapshot" "$cwd"; else mkdir -p "$cwd"; fi
  case "$mode" in
    resume) claude_run "$name" "$which" "$home" "$cwd" -p "$NEXT_PROMPT" --resume "$sid" "${FLAGS[@]}" ;;
    continue) claude_run "$name" "$which" "$home" "$cwd" -p "$CONT_PROMPT" --continue "${FLAGS[@]}" ;;
    interactive) tmux_run "$name" "$which" "$home" "$cwd" "$NEXT_PROMPT" "script:rs-next#1" --resume "$sid" --dangerously-skip-permissions ;;
  esac
  cp -a "$pdir" "$OUT/after/$name"
  cp -a "$home" "$OUT/after/$name.home"   # the whole HOME after the run, for inspection
}

PAIRS=()   # "src which mode variantB": compared with variant orig of the same src/which/mode
for which in old new; do
  for mode in resume continue interactive; do
    for variant in orig filtered filtered-all; do
      resume_run "old-rs.$variant.by-$which.$mode" old-rs "$variant" "$which" "$mode"
    done
    PAIRS+=("old-rs $which $mode filtered" "old-rs $which $mode filtered-all")
  done
done
for mode in resume continue interactive; do
  for variant in orig filtered; do
    resume_run "new-medium.$variant.by-new.$mode" new-medium "$variant" new "$mode"
  done
  PAIRS+=("new-medium new $mode filtered")
done

# ------------------------------------------------------------------ 5. compare
# screens: masked for what differs between any two runs (the spinner's random verb and time,
# clock times)
mask_screen() { sed -E 's/^(.)[[:space:]]+[A-Z][a-zé]+ for [0-9]+[a-z]+( · .*)?$/\1 <spinner>/; s/[0-9]{1,2}:[0-9]{2} ?[AP]M/<time>/g; s/[[:space:]]+$//' "$1"; }
{
  printf 'written by\tresumed by\tmode\torig vs\texit\tstderr bytes\tresult\trequests\tmessages identical\trest of body identical\tscreens identical (masked)\tplaced bytes kept as prefix\tappended records\tappended records same (masked)\tsame parentUuid of 1st appended\tnew prompt recorded\tsession files after\n'
  for p in "${PAIRS[@]}"; do
    read -r src which mode vb <<< "$p"
    a="$src.orig.by-$which.$mode" b="$src.$vb.by-$which.$mode" pair="$src.orig-vs-$vb.by-$which.$mode"
    if [ "$src" = old-rs ]; then sid="$SRC_SID"; else sid="$MED_SID"; fi
    node "$B/resume-compare.js" "$OUT/bodies/$a" "$OUT/bodies/$b" \
      "$OUT/src/$src/orig/$sid.jsonl" "$OUT/after/$a/$sid.jsonl" \
      "$OUT/src/$src/$vb/$sid.jsonl" "$OUT/after/$b/$sid.jsonl" > "$OUT/compare/$pair.json"
    screens=-
    if [ "$mode" = interactive ]; then
      screens=yes
      for s in start end; do
        if ! diff <(mask_screen "$OUT/screens/$a.$s.txt") <(mask_screen "$OUT/screens/$b.$s.txt") > "$OUT/compare/$pair.screen-$s.diff"; then screens="NO ($s)"; fi
      done
    fi
    node -e '
      const [f, src, which, mode, vb, rca, rcb, ea, eb, fa, fb, sa, sb, screens] = process.argv.slice(1); const r = require(f), t = r.transcripts;
      const ver = { old: "2.1.39", new: "2.1.332" }, wrote = src === "old-rs" ? "2.1.39 (rs)" : "2.1.332 (testdata medium)";
      const result = (file) => { try { const l = require("fs").readFileSync(file, "utf8").trim().split("\n").pop(); const o = JSON.parse(l); return o.type + "/" + o.subtype; } catch { return "-"; } };
      const yn = (x) => (x ? "yes" : "NO");
      console.log([wrote, ver[which], mode, vb, `${rca}/${rcb}`, `${ea}/${eb}`, mode === "interactive" ? "-" : `${result(sa)} ${result(sb)}`,
        `${r.requests_a}/${r.requests_b}`, yn(r.all_messages_identical), yn(r.all_rest_identical), screens,
        `${yn(t.a.prefix_kept)}/${yn(t.b.prefix_kept)}`, `${t.a.appended}/${t.b.appended}`,
        t.appended_identical_masked ? "yes" : t.appended_identical_masked_without_bookkeeping ? "yes, but for bookkeeping records" : "NO",
        yn(t.same_first_parent), `${yn(t.a.new_prompt_recorded)}/${yn(t.b.new_prompt_recorded)}`, `${fa}/${fb}`].join("\t"));
    ' "$OUT/compare/$pair.json" "$src" "$which" "$mode" "$vb" "$(cat "$OUT/logs/$a.rc")" "$(cat "$OUT/logs/$b.rc")" \
      "$(wc -c < "$OUT/logs/$a.stderr")" "$(wc -c < "$OUT/logs/$b.stderr")" \
      "$(ls "$OUT/after/$a" | grep -c '\.jsonl$')" "$(ls "$OUT/after/$b" | grep -c '\.jsonl$')" \
      "$OUT/logs/$a.stdout.jsonl" "$OUT/logs/$b.stdout.jsonl" "$screens"
  done
} > "$OUT/results.tsv"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -sr)"
  echo "node: $(node --version)"
  echo "tmux: $(tmux -V)"
  echo "old claude: $(cd /tmp && env -i PATH=/usr/bin:/bin HOME="$ROOT/home/capture" node "$OLD_CLI" --version 2>/dev/null) (package $(node -p 'require(process.argv[1]).version' "$B/old/node_modules/@anthropic-ai/claude-code/package.json"))"
  echo "new claude: $(cd /tmp && env -i PATH=/usr/bin:/bin HOME="$ROOT/home/capture" "$NEW_CLAUDE" --version 2>/dev/null) (package $(node -p 'require(process.argv[1]).version' "$B/node_modules/@anthropic-ai/claude-code/package.json"))"
  echo "sess: $("$SESS" --version) ($SESS)"
  echo "network: unshare -n -m (loopback only; see NETCHECK.txt)"
} > "$OUT/VERSIONS"

# every attempt to reach another host, as logged by the mock's refusing proxy
node -e '
  const fs = require("fs"), path = require("path"), dir = process.argv[1], c = {};
  for (const f of fs.readdirSync(dir).filter((f) => /^mock-.*\.jsonl$/.test(f)).sort())
    for (const l of fs.readFileSync(path.join(dir, f), "utf8").split("\n").filter(Boolean)) {
      const o = JSON.parse(l); if (o.kind === "proxy-attempt") { const k = f.slice(5, -6) + "\t" + o.host; c[k] = (c[k] || 0) + 1; } }
  console.log("run\thost\tcount (refused with 403; the namespace has no route anyway)");
  for (const k in c) console.log(k + "\t" + c[k]);
' "$OUT/logs" > "$OUT/logs/proxy-attempts.txt"
column -t -s "$(printf '\t')" "$OUT/results.tsv"
echo "done: $OUT"
