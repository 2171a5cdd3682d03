//! Deterministic generator of big, realistic session logs for tests and benchmarks.
//!
//!     cargo run --release --example synth -- pi-old --size 1G --seed 7 -o big.jsonl
//!     cargo run --release --example synth -- subagent --turns 40 --deltas 150 --tool-result-bytes 40000
//!     cargo run --release --example synth -- dsh --size 100M
//!
//! Kinds:
//! - `pi-old`: pi 0.73 `--mode json`; every `message_update` carries two whole snapshots.
//! - `pi-new`: pi 1.6 `--mode json`; `message_update` carries only the delta.
//! - `subagent`: seed 001's pathological run. A parent pi run whose `subagent` tool emits a
//!   `tool_execution_update` on every child delta, carrying the child's whole transcript so
//!   far. `--turns`, `--deltas` (per child turn) and `--tool-result-bytes` shape the child.
//! - `dsh`: a DeepSeek Harness log where `assistant/chunk` deltas are most of the lines.
//! - `oplist`: an op list of a rolling tool-output window: a base batch every 5,000 batches
//!   and exactly 100 batches after the last one, so recovery replays 100 whatever the size.
//! - `claude-code`: a Claude Code transcript whose subagents' `agent_progress` records
//!   repeat the subagent's whole history (`claude.rs`).
//! - `codex`: a Codex rollout whose `compacted` records repeat the earlier history and a
//!   1 MB image (`codex.rs`).
//!
//! The same arguments always produce the same bytes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

mod claude;
mod codex;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kind {
    PiOld,
    PiNew,
    Subagent,
    Dsh,
    /// An op list (Chord batches) whose last base batch is 100 batches from the end.
    Oplist,
    /// A Claude Code transcript (users' reports: progress repeating subagent histories).
    ClaudeCode,
    /// A Codex rollout (users' reports: compactions repeating the history and an image).
    Codex,
}

#[derive(Debug, Parser)]
#[command(about = "Generate deterministic synthetic session logs")]
struct Args {
    kind: Kind,
    /// Stop after about this many bytes (K, M, G suffixes). All kinds but subagent.
    #[arg(long, default_value = "10M", value_parser = parse_size)]
    size: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// subagent: child turns.
    #[arg(long, default_value_t = 40)]
    turns: usize,
    /// subagent: deltas per child turn.
    #[arg(long, default_value_t = 150)]
    deltas: usize,
    /// subagent: bytes of each child tool result.
    #[arg(long, default_value_t = 40_000)]
    tool_result_bytes: usize,
    /// Output file (default stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|e| format!("bad size '{s}': {e}"))
}

/// splitmix64: small, fast, and stable across platforms and versions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "test",
    "build",
    "error",
    "function",
    "return",
    "value",
    "config",
    "module",
    "import",
    "change",
    "output",
    "command",
    "check",
    "agent",
    "token",
    "stream",
    "session",
    "log",
    "fix",
    "read",
    "write",
    "line",
    "path",
    "src",
    "main",
    "run",
    "cargo",
    "result",
    "文字",
    "テスト",
    "✓",
    "naïve",
    "\"quoted\"",
    "tab\there",
    "new\nline",
    "🦀",
];

/// A token-sized delta: a word with a leading space, sometimes a punctuation mark.
fn delta(rng: &mut Rng) -> String {
    let w = WORDS[rng.below(WORDS.len() as u64) as usize];
    match rng.below(10) {
        0 => format!("{w}."),
        1 => format!("{w},"),
        _ => format!(" {w}"),
    }
}

fn text_of(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(&delta(rng));
        if rng.below(12) == 0 {
            s.push('\n');
        }
    }
    s
}

fn js(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

const USAGE: &str = r#"{"input":120,"output":48,"cacheRead":0,"cacheWrite":0,"totalTokens":168,"cost":{"input":0.0004,"output":0.0007,"cacheRead":0,"cacheWrite":0,"total":0.0011}}"#;

/// Counts bytes as they go out.
struct Out {
    w: Box<dyn Write>,
    written: u64,
}

impl Out {
    fn line(&mut self, s: &str) -> io::Result<()> {
        self.w.write_all(s.as_bytes())?;
        self.w.write_all(b"\n")?;
        self.written += s.len() as u64 + 1;
        Ok(())
    }
}

fn assistant(content: &str, ts: u64) -> String {
    format!(
        r#"{{"role":"assistant","content":[{content}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{USAGE},"stopReason":"stop","timestamp":{ts}}}"#
    )
}

fn user(text: &str, ts: u64) -> String {
    format!(
        r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":{ts}}}"#,
        js(text)
    )
}

fn tool_result(id: &str, text: &str, ts: u64) -> String {
    format!(
        r#"{{"role":"toolResult","toolCallId":{},"toolName":"bash","content":[{{"type":"text","text":{}}}],"isError":false,"timestamp":{ts}}}"#,
        js(id),
        js(text)
    )
}

/// One pi run: turns of streamed assistant text, each followed by a bash tool call whose
/// output grows through cumulative `tool_execution_update`s.
fn pi(out: &mut Out, rng: &mut Rng, size: u64, snapshots: bool, seed: u64) -> io::Result<()> {
    let mut ts = 1_796_010_989_851u64;
    out.line(&format!(
        r#"{{"type":"session","version":3,"id":"synth-{seed:016x}","timestamp":"2026-11-30T03:56:29.825Z","cwd":"/tmp/synth"}}"#
    ))?;
    let mut run = 0u64;
    while out.written < size {
        run += 1;
        out.line(r#"{"type":"agent_start"}"#)?;
        let u = user(&format!("task {run}: {}", text_of(rng, 60)), ts);
        out.line(&format!(r#"{{"type":"message_start","message":{u}}}"#))?;
        out.line(&format!(r#"{{"type":"message_end","message":{u}}}"#))?;
        let mut messages = vec![u];
        let turns = rng.range(2, 6);
        for turn in 0..turns {
            out.line(r#"{"type":"turn_start"}"#)?;
            ts += rng.range(50, 900);
            let empty = assistant("", ts);
            out.line(&format!(r#"{{"type":"message_start","message":{empty}}}"#))?;
            let mut text = String::new();
            let n = rng.range(20, 400);
            for i in 0..n {
                let d = delta(rng);
                text.push_str(&d);
                let kind = if i == 0 { "text_start" } else { "text_delta" };
                if snapshots {
                    let snap = assistant(&format!(r#"{{"type":"text","text":{}}}"#, js(&text)), ts);
                    out.line(&format!(
                        r#"{{"type":"message_update","assistantMessageEvent":{{"type":"{kind}","contentIndex":0,"delta":{},"partial":{snap}}},"message":{snap}}}"#,
                        js(&d)
                    ))?;
                } else {
                    out.line(&format!(
                        r#"{{"type":"message_update","usage":{USAGE},"assistantMessageEvent":{{"type":"{kind}","contentIndex":0,"delta":{}}}}}"#,
                        js(&d)
                    ))?;
                }
            }
            let id = format!("call_{run}_{turn}");
            let content = format!(
                r#"{{"type":"text","text":{}}},{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{"command":"cargo test"}}}}"#,
                js(&text)
            );
            let done = assistant(&content, ts);
            out.line(&format!(r#"{{"type":"message_end","message":{done}}}"#))?;
            messages.push(done.clone());
            let args = r#"{"command":"cargo test"}"#;
            out.line(&format!(
                r#"{{"type":"tool_execution_start","toolCallId":"{id}","toolName":"bash","args":{args}}}"#
            ))?;
            out.line(&format!(
                r#"{{"type":"tool_execution_update","toolCallId":"{id}","toolName":"bash","args":{args},"partialResult":{{"content":[]}}}}"#
            ))?;
            let mut output = String::new();
            for _ in 0..rng.range(1, 12) {
                let len = rng.range(40, 400) as usize;
                output.push_str(&text_of(rng, len));
                out.line(&format!(
                    r#"{{"type":"tool_execution_update","toolCallId":"{id}","toolName":"bash","args":{args},"partialResult":{{"content":[{{"type":"text","text":{}}}],"details":{{}}}}}}"#,
                    js(&output)
                ))?;
            }
            out.line(&format!(
                r#"{{"type":"tool_execution_end","toolCallId":"{id}","toolName":"bash","result":{{"content":[{{"type":"text","text":{}}}],"details":{{}}}},"isError":false,"durationMs":{}}}"#,
                js(&output),
                rng.range(5, 5000)
            ))?;
            let tr = tool_result(&id, &output, ts);
            out.line(&format!(r#"{{"type":"message_start","message":{tr}}}"#))?;
            out.line(&format!(r#"{{"type":"message_end","message":{tr}}}"#))?;
            messages.push(tr.clone());
            out.line(&format!(
                r#"{{"type":"turn_end","message":{done},"toolResults":[{tr}]}}"#
            ))?;
        }
        let retry = if snapshots {
            ""
        } else {
            r#","willRetry":false"#
        };
        out.line(&format!(
            r#"{{"type":"agent_end","messages":[{}]{retry}}}"#,
            messages.join(",")
        ))?;
        if !snapshots {
            out.line(r#"{"type":"agent_settled","aborted":false}"#)?;
        }
    }
    Ok(())
}

/// Seed 001: the parent's `subagent` tool republishes the child's whole transcript on every
/// child delta. The transcript changes only when a child message ends.
fn subagent(out: &mut Out, rng: &mut Rng, a: &Args) -> io::Result<()> {
    let mut ts = 1_796_010_989_851u64;
    out.line(&format!(
        r#"{{"type":"session","version":3,"id":"synth-subagent-{:016x}","timestamp":"2026-11-30T03:56:29.825Z","cwd":"/tmp/synth"}}"#,
        a.seed
    ))?;
    out.line(r#"{"type":"agent_start"}"#)?;
    out.line(r#"{"type":"turn_start"}"#)?;
    let u = user("Delegate the refactor to a subagent.", ts);
    out.line(&format!(r#"{{"type":"message_start","message":{u}}}"#))?;
    out.line(&format!(r#"{{"type":"message_end","message":{u}}}"#))?;
    let call = r#"{"type":"toolCall","id":"call_sub","name":"subagent","arguments":{"task":"refactor the parser"}}"#;
    let parent = assistant(call, ts);
    out.line(&format!(r#"{{"type":"message_start","message":{parent}}}"#))?;
    out.line(&format!(r#"{{"type":"message_end","message":{parent}}}"#))?;
    let args = r#"{"task":"refactor the parser"}"#;
    out.line(&format!(
        r#"{{"type":"tool_execution_start","toolCallId":"call_sub","toolName":"subagent","args":{args}}}"#
    ))?;
    // The child's transcript as serialized messages joined by commas.
    let mut transcript = user("refactor the parser", ts);
    let mut last_text = String::new();
    for turn in 0..a.turns {
        let mut text = String::new();
        for _ in 0..a.deltas {
            text.push_str(&delta(rng));
            ts += 30;
            out.line(&format!(
                r#"{{"type":"tool_execution_update","toolCallId":"call_sub","toolName":"subagent","args":{args},"partialResult":{{"content":[{{"type":"text","text":{}}}],"details":{{"results":[{{"agent":"worker","task":"refactor the parser","messages":[{transcript}]}}]}}}}}}"#,
                js(&text)
            ))?;
        }
        let id = format!("child_call_{turn}");
        let content = format!(
            r#"{{"type":"text","text":{}}},{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{"command":"cargo build"}}}}"#,
            js(&text)
        );
        transcript.push(',');
        transcript.push_str(&assistant(&content, ts));
        transcript.push(',');
        transcript.push_str(&tool_result(&id, &text_of(rng, a.tool_result_bytes), ts));
        last_text = text;
    }
    let result = format!(
        r#"{{"content":[{{"type":"text","text":{}}}],"details":{{"results":[{{"agent":"worker","task":"refactor the parser","messages":[{transcript}]}}]}}}}"#,
        js(&last_text)
    );
    out.line(&format!(
        r#"{{"type":"tool_execution_end","toolCallId":"call_sub","toolName":"subagent","result":{result},"isError":false,"durationMs":{}}}"#,
        ts - 1_796_010_989_851
    ))?;
    let tr = tool_result("call_sub", &last_text, ts);
    out.line(&format!(r#"{{"type":"message_start","message":{tr}}}"#))?;
    out.line(&format!(r#"{{"type":"message_end","message":{tr}}}"#))?;
    out.line(&format!(
        r#"{{"type":"turn_end","message":{parent},"toolResults":[{tr}]}}"#
    ))?;
    out.line(&format!(
        r#"{{"type":"agent_end","messages":[{u},{parent},{tr}]}}"#
    ))?;
    Ok(())
}

/// A DSH log: turns of steps, each streaming reasoning, text and tool-call deltas.
fn dsh(out: &mut Out, rng: &mut Rng, size: u64, seed: u64) -> io::Result<()> {
    out.line(&format!(
        r#"{{"type":"session","version":0,"id":"synth-{seed:016x}","createdAt":1783352165190,"cwd":"/tmp/synth","delegationDepth":0}}"#
    ))?;
    let mut seq = 0u64;
    let mut time = 1_783_352_170_000u64;
    let mut ev = |out: &mut Out, rng: &mut Rng, ty: &str, data: &str| {
        time += rng.below(40);
        let line = format!(r#"{{"type":"{ty}","seq":{seq},"time":{time},"data":{data}}}"#);
        seq += 1;
        out.line(&line)
    };
    let mut turn = 0;
    while out.written < size {
        turn += 1;
        ev(out, rng, "turn/start", &format!(r#"{{"turn":{turn}}}"#))?;
        let prompt = js(&text_of(rng, 80));
        ev(
            out,
            rng,
            "user/message",
            &format!(
                r#"{{"content":[{{"type":"text","text":{prompt}}}],"source":{{"kind":"user"}},"role":"user","id":"u{turn}"}}"#
            ),
        )?;
        for step in 1..=rng.range(1, 4) {
            ev(
                out,
                rng,
                "step/start",
                &format!(r#"{{"turn":{turn},"step":{step}}}"#),
            )?;
            let chunk = |c: String| format!(r#"{{"turn":{turn},"step":{step},"chunk":{c}}}"#);
            let blocks = [("reasoning", "reasoning-delta"), ("text", "text-delta")];
            for (index, (block, kind)) in blocks.iter().enumerate() {
                ev(
                    out,
                    rng,
                    "assistant/chunk",
                    &chunk(format!(
                        r#"{{"type":"block-start","index":{index},"blockType":"{block}"}}"#
                    )),
                )?;
                let mut all = String::new();
                for _ in 0..rng.range(10, 300) {
                    let d = delta(rng);
                    all.push_str(&d);
                    ev(
                        out,
                        rng,
                        "assistant/chunk",
                        &chunk(format!(
                            r#"{{"type":"{kind}","index":{index},"text":{}}}"#,
                            js(&d)
                        )),
                    )?;
                }
                ev(
                    out,
                    rng,
                    "assistant/chunk",
                    &chunk(format!(
                        r#"{{"type":"block-end","index":{index},"block":{{"type":"{block}","text":{}}}}}"#,
                        js(&all)
                    )),
                )?;
            }
            let id = format!("call_{turn}_{step}");
            ev(
                out,
                rng,
                "assistant/chunk",
                &chunk(r#"{"type":"block-start","index":2,"blockType":"tool-call"}"#.to_string()),
            )?;
            for a in ["", "{\"command\"", ": \"cargo", " test", "\"}"] {
                ev(
                    out,
                    rng,
                    "assistant/chunk",
                    &chunk(format!(
                        r#"{{"type":"tool-call-delta","index":2,"id":"{id}","name":"bash","argumentsDelta":{}}}"#,
                        js(a)
                    )),
                )?;
            }
            ev(out, rng, "assistant/chunk", &chunk(r#"{"type":"usage","usage":{"inputTokens":2877,"outputTokens":90,"cacheReadTokens":0,"reasoningTokens":18}}"#.to_string()))?;
            ev(
                out,
                rng,
                "assistant/chunk",
                &chunk(r#"{"type":"finish","reason":{"kind":"tool-calls"}}"#.to_string()),
            )?;
            ev(
                out,
                rng,
                "tool/call",
                &format!(
                    r#"{{"turn":{turn},"step":{step},"callId":"{id}","name":"bash","arguments":"{{\"command\": \"cargo test\"}}"}}"#
                ),
            )?;
            let len = rng.range(50, 2000) as usize;
            let result = js(&text_of(rng, len));
            ev(
                out,
                rng,
                "tool/result",
                &format!(
                    r#"{{"turn":{turn},"step":{step},"message":{{"source":{{"kind":"tool","callId":"{id}"}},"content":[{{"type":"tool-result","toolCallId":"{id}","content":[{{"type":"text","text":{result}}}]}}]}}}}"#
                ),
            )?;
            ev(
                out,
                rng,
                "step/end",
                &format!(r#"{{"turn":{turn},"step":{step}}}"#),
            )?;
        }
        ev(
            out,
            rng,
            "turn/end",
            &format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
        )?;
    }
    Ok(())
}

/// A rolling window: each batch drops 40 units from the front and appends 40.
fn oplist(out: &mut Out, rng: &mut Rng, size: u64) -> io::Result<()> {
    let window = |rng: &mut Rng| text_of(rng, 4000).chars().take(4000).collect::<String>();
    let base = |seq: u64, rng: &mut Rng| {
        format!(
            r#"{{"seq":{seq},"tag":"base","ops":[["r",{{"out":{},"n":{seq},"items":[]}}]]}}"#,
            js(&window(rng))
        )
    };
    let batch = |seq: u64, rng: &mut Rng| {
        let chunk: String = text_of(rng, 40).chars().take(40).collect();
        format!(
            r#"{{"seq":{seq},"tag":null,"ops":[["t",["out"],40],["a",{}],["s",["n"],{seq}]]}}"#,
            js(&chunk)
        )
    };
    // Size the list from a sample batch so the last base lands 100 batches from the end.
    let per_batch = batch(1_000_000, &mut Rng(1)).len() as u64 + 1;
    let total = (size / per_batch).max(200);
    let last_base = total - 101;
    for seq in 0..total {
        let line = if seq == 0 || seq == last_base || (seq % 5000 == 0 && seq < last_base) {
            base(seq, rng)
        } else {
            batch(seq, rng)
        };
        out.line(&line)?;
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let a = Args::parse();
    let w: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(BufWriter::with_capacity(1 << 20, File::create(p)?)),
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())),
    };
    let mut out = Out { w, written: 0 };
    let mut rng = Rng(a.seed);
    let result = match a.kind {
        Kind::PiOld => pi(&mut out, &mut rng, a.size, true, a.seed),
        Kind::PiNew => pi(&mut out, &mut rng, a.size, false, a.seed),
        Kind::Subagent => subagent(&mut out, &mut rng, &a),
        Kind::Dsh => dsh(&mut out, &mut rng, a.size, a.seed),
        Kind::Oplist => oplist(&mut out, &mut rng, a.size),
        Kind::ClaudeCode => claude::claude_code(&mut out, &mut rng, a.size, a.seed),
        Kind::Codex => codex::codex(&mut out, &mut rng, a.size, a.seed),
    };
    match result.and_then(|()| out.w.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
