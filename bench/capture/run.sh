#!/usr/bin/env bash
# Capture harness: runs the real Claude Code and Codex CLIs (pinned in package.json, installed
# in ./node_modules) against the scripted mock model (mock.js + scenarios.js) on 127.0.0.1,
# inside a new network namespace that has only loopback, with a private HOME per run and
# telemetry/auto-update off, and collects the session files and the JSON stdout they write.
#
# usage: bench/capture/run.sh [OUT_DIR] [options]
#   OUT_DIR               where to put the results (default: bench/capture/out)
#   --only claude|codex   run one producer only
#   --scenarios "A B"     scenarios to run (default: "small medium"; also: large)
#   --turns N             number of tool turns in the "large" scenario (default 60)
#   --compact-every N     large/Codex: report a context overflow every N steps (default 0 = never)
#   --port P              mock port (default 8787)
#   --root DIR            scratch root for private HOMEs and working folders
#                         (default /tmp/sess-capture; wiped at start)
#   --dump                also save every request body the mock received (OUT/logs/bodies/)
#   --strace              run each CLI under `strace -f` (connect/sendto/sendmsg) and list
#                         every address it tried to reach (OUT/logs/connect-summary.txt)
#
# Needs: node, npm ci done in bench/capture, util-linux unshare and iproute2 ip, and either
# root or unprivileged user namespaces (then `unshare -rn` is used).
set -euo pipefail

B="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$B/out"
ONLY=""
SCENARIOS="small medium"
TURNS=60
COMPACT_EVERY=0
PORT=8787
ROOT=/tmp/sess-capture
DUMP=0
STRACE=0
ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --scenarios) SCENARIOS="$2"; shift 2 ;;
    --turns) TURNS="$2"; shift 2 ;;
    --compact-every) COMPACT_EVERY="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --root) ROOT="$2"; shift 2 ;;
    --dump) DUMP=1; shift ;;
    --strace) STRACE=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT="$1"; shift ;;
  esac
done

CLAUDE="$B/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
CODEX_JS="$B/node_modules/@openai/codex/bin/codex.js"
for f in "$CLAUDE" "$CODEX_JS"; do
  [ -e "$f" ] || { echo "run.sh: $f missing; run (cd $B && npm ci) first" >&2; exit 1; }
done

# ------------------------------------------------------------------ enter a new network namespace
if [ "${CAPTURE_IN_NETNS:-}" != 1 ]; then
  if unshare -n true 2>/dev/null; then
    exec unshare -n env CAPTURE_IN_NETNS=1 bash "$0" "${ARGS[@]}"
  elif unshare -rn true 2>/dev/null; then
    exec unshare -rn env CAPTURE_IN_NETNS=1 bash "$0" "${ARGS[@]}"
  else
    echo "run.sh: cannot create a network namespace (unshare -n / unshare -rn failed); refusing to run with the host network" >&2
    exit 1
  fi
fi
ip link set lo up

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rm -rf "$OUT/claude-code" "$OUT/claude-code-stream" "$OUT/codex" "$OUT/codex-stream" "$OUT/logs"
mkdir -p "$OUT/logs"
rm -rf "$ROOT"
mkdir -p "$ROOT"

# ------------------------------------------------------------------ proof of isolation
{
  echo "# network check, $(date -u +%Y-%m-%dT%H:%M:%SZ), inside the capture namespace"
  echo "\$ ip -o link";  ip -o link
  echo "\$ ip -o addr";  ip -o addr
  echo "\$ ip route";    ip route; ip -6 route
  echo "\$ node: connect to outside addresses (each must fail)"
  node -e '
    const net = require("net"), dns = require("dns");
    const tries = [["1.1.1.1", 443], ["8.8.8.8", 53], ["104.16.0.1", 443], ["2606:4700:4700::1111", 443]];
    let left = tries.length + 2;
    const done = () => { if (--left === 0) process.exit(0); };
    for (const [h, p] of tries) {
      const s = net.connect({ host: h, port: p, timeout: 3000 });
      s.on("connect", () => { console.log(`CONNECTED ${h}:${p}  <-- NOT ISOLATED`); s.destroy(); done(); });
      s.on("timeout", () => { console.log(`${h}:${p} timeout`); s.destroy(); done(); });
      s.on("error", (e) => { console.log(`${h}:${p} ${e.code}`); done(); });
    }
    for (const h of ["registry.npmjs.org", "api.anthropic.com"]) dns.lookup(h, (e, a) => { console.log(`dns ${h}: ${e ? e.code : "RESOLVED " + a + "  <-- NOT ISOLATED"}`); done(); });
  '
} > "$OUT/NETCHECK.txt" 2>&1
if grep -q "NOT ISOLATED" "$OUT/NETCHECK.txt"; then
  cat "$OUT/NETCHECK.txt" >&2; echo "run.sh: the namespace can reach outside; stopping" >&2; exit 1
fi

# ------------------------------------------------------------------ mock
rm -f "$OUT/mock-requests.jsonl" "$ROOT/mock.port"
DUMP_ARGS=()
if [ "$DUMP" = 1 ]; then mkdir -p "$OUT/logs/bodies"; DUMP_ARGS=(--dump-dir "$OUT/logs/bodies"); fi
node "$B/mock.js" --port "$PORT" --log "$OUT/mock-requests.jsonl" --turns "$TURNS" "${DUMP_ARGS[@]}" \
  --compact-every "$COMPACT_EVERY" --ready-file "$ROOT/mock.port" > "$OUT/logs/mock.stdout" 2>&1 &
MOCK_PID=$!
trap 'kill $MOCK_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$ROOT/mock.port" ] && break; sleep 0.1; done
[ -s "$ROOT/mock.port" ] || { echo "run.sh: mock did not start" >&2; cat "$OUT/logs/mock.stdout" >&2; exit 1; }
BASE="http://127.0.0.1:$PORT"

# Every run gets a minimal environment (env -i). HTTP(S)_PROXY points at the mock, which
# refuses and logs any attempt to reach another host ("proxy-attempt" lines in
# mock-requests.jsonl); without the proxy those attempts would just fail in the namespace.
COMMON_ENV=(PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb LANG=C.UTF-8 TZ=UTC
  HTTPS_PROXY="$BASE" HTTP_PROXY="$BASE" https_proxy="$BASE" http_proxy="$BASE"
  NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost)

# optional: trace every connect() of the CLI and its children
tracer() { # name
  if [ "$STRACE" = 1 ]; then echo strace -f -qq -e trace=connect,sendto,sendmsg,sendmmsg -o "$OUT/logs/strace-$1.txt"; fi
}

# a v4-shaped UUID derived from a name, so Claude Code session ids are the same on every run
uuid_for() { node -e 'const h=require("crypto").createHash("sha256").update("sess-capture:"+process.argv[1]).digest("hex");
  console.log(`${h.slice(0,8)}-${h.slice(8,12)}-4${h.slice(13,16)}-${"89ab"[parseInt(h[16],16)%4]}${h.slice(17,20)}-${h.slice(20,32)}`)' "$1"; }

# ------------------------------------------------------------------ Claude Code
claude_run() { # name home cwd stream-file args...
  local name="$1" home="$2" cwd="$3" stream="$4"; shift 4
  echo "[claude] $name: claude $*" | tee -a "$OUT/logs/commands.txt"
  (cd "$cwd" && env -i "${COMMON_ENV[@]}" HOME="$home" \
      ANTHROPIC_API_KEY=sk-ant-test-not-a-real-key ANTHROPIC_BASE_URL="$BASE" \
      DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_BUG_COMMAND=1 \
      IS_SANDBOX=1 \
      timeout 600 $(tracer "claude-$name") "$CLAUDE" "$@" < /dev/null > "$stream" 2> "$OUT/logs/claude-$name.stderr") \
    || echo "[claude] $name: exit $?" | tee -a "$OUT/logs/commands.txt"
}
CLAUDE_FLAGS=(--output-format stream-json --verbose --include-partial-messages --dangerously-skip-permissions)

run_claude() {
  local sc="$1" home="$ROOT/home/claude-$1" cwd="$ROOT/work/claude/$1" sid
  mkdir -p "$home" "$cwd" "$OUT/claude-code-stream"
  sid="$(uuid_for "claude-$sc")"
  case "$sc" in
    small)
      claude_run small "$home" "$cwd" "$OUT/claude-code-stream/small.jsonl" \
        -p "scenario=small Say hello and run one shell command." --session-id "$sid" "${CLAUDE_FLAGS[@]}" ;;
    medium)
      claude_run medium "$home" "$cwd" "$OUT/claude-code-stream/medium.jsonl" \
        -p "scenario=medium Write a notes file, edit it, run some long commands, ask a subagent for a summary, then explain everything at length." \
        --session-id "$sid" "${CLAUDE_FLAGS[@]}"
      claude_run medium-resume "$home" "$cwd" "$OUT/claude-code-stream/medium-resume.jsonl" \
        -p "scenario=medium-resume Check the status line again." --resume "$sid" "${CLAUDE_FLAGS[@]}"
      claude_run medium-continue "$home" "$cwd" "$OUT/claude-code-stream/medium-continue.jsonl" \
        -p "scenario=medium-continue One more short answer, please." --continue "${CLAUDE_FLAGS[@]}"
      claude_run medium-fork "$home" "$cwd" "$OUT/claude-code-stream/medium-fork.jsonl" \
        -p "scenario=medium-fork Branch off and print a marker." --resume "$sid" --fork-session \
        --session-id "$(uuid_for "claude-$sc-fork")" "${CLAUDE_FLAGS[@]}"
      claude_run medium-compact "$home" "$cwd" "$OUT/claude-code-stream/medium-compact.jsonl" \
        -p "/compact" --resume "$sid" "${CLAUDE_FLAGS[@]}"
      claude_run medium-after-compact "$home" "$cwd" "$OUT/claude-code-stream/medium-after-compact.jsonl" \
        -p "scenario=medium-after-compact What is the state after the compaction?" --resume "$sid" "${CLAUDE_FLAGS[@]}" ;;
    large)
      claude_run large "$home" "$cwd" "$OUT/claude-code-stream/large.jsonl" \
        -p "scenario=large Run the long script." --session-id "$sid" "${CLAUDE_FLAGS[@]}" ;;
    *) echo "[claude] unknown scenario $sc" >&2; return ;;
  esac
  # transcripts (+ subagents/, tool-results/) exactly as written under ~/.claude/projects/
  if [ -d "$home/.claude/projects" ]; then
    mkdir -p "$OUT/claude-code"
    cp -a "$home/.claude/projects/." "$OUT/claude-code/"
  fi
}

# ------------------------------------------------------------------ Codex
codex_home_setup() { # home
  mkdir -p "$1/.codex"
  cat > "$1/.codex/config.toml" <<EOF
# written by bench/capture/run.sh: the model is the mock on 127.0.0.1, nothing else
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false
# the mock reports a context overflow on scripted steps (compactAfter) to trigger compaction
model_auto_compact_token_limit = 200000

[model_providers.mock]
name = "mock"
base_url = "$BASE/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
log_user_prompt = false

[features]
# the plugin marketplace sync clones from github.com and calls api.github.com / chatgpt.com
plugins = false
EOF
}
codex_run() { # name home cwd stream-file args...
  local name="$1" home="$2" cwd="$3" stream="$4"; shift 4
  echo "[codex] $name: codex $*" | tee -a "$OUT/logs/commands.txt"
  (cd "$cwd" && env -i "${COMMON_ENV[@]}" HOME="$home" CODEX_HOME="$home/.codex" \
      OPENAI_API_KEY=sk-test-not-a-real-key \
      timeout 600 $(tracer "codex-$name") node "$CODEX_JS" "$@" < /dev/null > "$stream" 2> "$OUT/logs/codex-$name.stderr") \
    || echo "[codex] $name: exit $?" | tee -a "$OUT/logs/commands.txt"
}
thread_id() { node -e 'for (const l of require("fs").readFileSync(process.argv[1],"utf8").split("\n")) { try { const o=JSON.parse(l); if (o.type==="thread.started") { console.log(o.thread_id); break; } } catch {} }' "$1"; }

run_codex() {
  local sc="$1" home="$ROOT/home/codex-$1" cwd="$ROOT/work/codex/$1" tid
  mkdir -p "$home" "$cwd" "$OUT/codex-stream"
  codex_home_setup "$home"
  case "$sc" in
    small)
      codex_run small "$home" "$cwd" "$OUT/codex-stream/small.jsonl" \
        exec --json --strict-config --skip-git-repo-check "scenario=cx-small Say hello and run one shell command." ;;
    medium)
      codex_run medium "$home" "$cwd" "$OUT/codex-stream/medium.jsonl" \
        exec --json --strict-config --skip-git-repo-check "scenario=cx-medium Add a notes file, patch it, run some long commands, then explain everything at length."
      tid="$(thread_id "$OUT/codex-stream/medium.jsonl")"
      codex_run medium-resume "$home" "$cwd" "$OUT/codex-stream/medium-resume.jsonl" \
        exec resume --json --strict-config --skip-git-repo-check "$tid" "scenario=cx-medium-resume Check the file again." ;;
    large)
      codex_run large "$home" "$cwd" "$OUT/codex-stream/large.jsonl" \
        exec --json --strict-config --skip-git-repo-check "scenario=cx-large Run the long script." ;;
    *) echo "[codex] unknown scenario $sc" >&2; return ;;
  esac
  if [ -d "$home/.codex/sessions" ]; then
    mkdir -p "$OUT/codex"
    find "$home/.codex/sessions" -name 'rollout-*.jsonl' -exec cp -p {} "$OUT/codex/" \;
  fi
}

# ------------------------------------------------------------------ run
: > "$OUT/logs/commands.txt"
for sc in $SCENARIOS; do
  [ "$ONLY" = codex ] || run_claude "$sc"
  [ "$ONLY" = claude ] || run_codex "$sc"
done

# ------------------------------------------------------------------ versions
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -sr)"
  echo "node: $(node --version)"
  echo "npm: $(npm --version 2>/dev/null || echo '?')"
  echo "claude: $("$CLAUDE" --version 2>/dev/null)"
  echo "codex: $(node "$CODEX_JS" --version 2>/dev/null)"
  echo "@anthropic-ai/claude-code: $(node -p 'require(process.argv[1]).version' "$B/node_modules/@anthropic-ai/claude-code/package.json")"
  echo "@openai/codex: $(node -p 'require(process.argv[1]).version' "$B/node_modules/@openai/codex/package.json")"
  echo "scenarios: $SCENARIOS (turns=$TURNS compact-every=$COMPACT_EVERY)"
  echo "network: unshare -n (new network namespace, loopback only; see NETCHECK.txt)"
} > "$OUT/VERSIONS"

# summary of what the mock saw (paths, and attempts to reach other hosts)
node -e '
  const fs = require("fs"); const c = {}; const hosts = {};
  for (const l of fs.readFileSync(process.argv[1], "utf8").split("\n")) {
    if (!l) continue; const o = JSON.parse(l);
    if (o.kind === "request") { const k = `${o.method} ${o.path.split("?")[0]} -> ${String(o.answer || "").split(":")[0]}`; c[k] = (c[k] || 0) + 1; }
    if (o.kind === "proxy-attempt") hosts[o.host] = (hosts[o.host] || 0) + 1;
  }
  console.log("requests answered by the mock:"); for (const k in c) console.log(`  ${c[k]}\t${k}`);
  console.log("attempts to reach other hosts (refused):"); if (!Object.keys(hosts).length) console.log("  none");
  for (const h in hosts) console.log(`  ${hosts[h]}\t${h}`);
' "$OUT/mock-requests.jsonl" | tee "$OUT/logs/summary.txt"
if [ "$STRACE" = 1 ]; then
  # every connect() destination seen, per traced run (AF_UNIX paths shortened)
  for f in "$OUT"/logs/strace-*.txt; do
    echo "== $(basename "$f" .txt | sed 's/^strace-//')"
    # internet-family destinations of connect/sendto/sendmsg (all must be 127.0.0.1 / ::1)
    grep -oE 'sa_family=AF_INET6?, [^}]*' "$f" | sed -E 's/sin6?_flowinfo=[^,]*, //; s/sin6_scope_id=[^,]*//' | sort | uniq -c || true
    # local (AF_UNIX) sockets, by path
    grep -oE 'sa_family=AF_UNIX, sun_path=[^}]*\}[^=]*= -?[0-9]+( E[A-Z]+)?' "$f" | sed -E 's/\}, [0-9]+\)//' | sort | uniq -c || true
  done > "$OUT/logs/connect-summary.txt"
  cat "$OUT/logs/connect-summary.txt"
fi
echo "done: $OUT"
