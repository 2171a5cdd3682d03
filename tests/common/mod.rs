//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod store;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `sess` binary under test.
pub fn sess() -> Command {
    Command::cargo_bin("sess").expect("the sess binary is built")
}

/// `sess ARGS` run by bash, for what only a shell gives: a pipe named as a path
/// (`<(cat f)`), a `ulimit`, a trapped signal. `prelude` runs first.
pub fn sess_in_bash(prelude: &str, args: &str) -> std::process::Command {
    let mut c = std::process::Command::new("bash");
    c.arg("-c")
        .arg(format!("{prelude}'{}' {args}", env!("CARGO_BIN_EXE_sess")));
    c
}

/// A file in `testdata/`.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The fixtures of every dialect in `testdata/`.
pub const FIXTURES: &[&str] = &[
    "pi-old.jsonl",
    "pi-new.jsonl",
    "pi-session.jsonl",
    "dsh.jsonl",
    "oplist.jsonl",
];

/// Runs a prepared `sess` command, which must succeed (else the test fails with its
/// stderr), and returns its stdout.
pub fn stdout_ok(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().expect("sess runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A corpus file's name without its suffix (`NAME.events.jsonl` gives `DIR/NAME`).
pub fn stem(path: &Path, suffix: &str) -> String {
    path.to_string_lossy().trim_end_matches(suffix).to_string()
}

/// `../shared/conformance/SUB`. Tests that call this are marked
/// `#[cfg_attr(sess_no_conformance, ignore = "...")]`: the build script sets that cfg when
/// the corpus is absent (a user who cloned only this project), so they show as ignored, and
/// fails the build under `CI=true`, where the corpus must be there.
pub fn conformance(sub: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance")
        .join(sub);
    assert!(
        dir.is_dir(),
        "{} is absent (rebuild so that the build script marks the conformance tests ignored)",
        dir.display()
    );
    dir
}

/// The files in `dir` whose names end with `suffix`, sorted.
pub fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// `data` cut every `every` bytes into zstd frames of their own, each with a content
/// checksum, as pzstd or `cat a.zst b.zst` may write it: lines run across frames.
pub fn zstd_frames(data: &[u8], every: usize) -> Vec<u8> {
    let mut z = zstd::bulk::Compressor::new(3).expect("a zstd context");
    z.include_checksum(true).expect("a zstd parameter");
    data.chunks(every)
        .flat_map(|c| z.compress(c).expect("zstd in memory"))
        .collect()
}

/// Base64 of random bytes (`n` of its characters), as an image is: zstd cannot shrink it
/// much, so a copy of it compressed whole takes room too, and a cut at a fraction of the
/// compressed bytes lands near that fraction of the text.
pub fn noise(n: usize, seed: u64) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            B64[(x >> 58) as usize] as char
        })
        .collect()
}

/// zstd-compresses bytes the way any standard tool would.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("zstd in memory")
}

/// A value with object keys sorted, for comparing values without regard to key order (op
/// lists do not replicate it, and DSH's events are compared by value).
pub fn canon(v: &sess::value::Value) -> sess::value::Value {
    use sess::value::Value;
    match v {
        Value::Object(m) => {
            let mut m: Vec<(Vec<u16>, Value)> =
                m.iter().map(|(k, v)| (k.clone(), canon(v))).collect();
            m.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(m)
        }
        Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
        // JSON.stringify writes non-finite numbers as null.
        Value::Number(n) if !n.is_finite() => Value::Null,
        other => other.clone(),
    }
}

/// One JSON text as JavaScript's `JSON.parse` sees it (lone surrogates allowed, numbers as
/// doubles), keys sorted. serde_json rejects lone surrogate escapes, so tests use this.
pub fn parse_j(text: &[u8]) -> sess::value::Value {
    canon(
        &sess::value::Value::parse(text)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(text))),
    )
}

/// Every line of a JSONL text as a value.
pub fn parse_lines(text: &[u8]) -> Vec<sess::value::Value> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(parse_j)
        .collect()
}

/// The frame index of a packed file's bytes, and where it starts; the file must have a
/// good one.
pub fn index_of(bytes: &[u8]) -> (sess::frames::index::Index, u64) {
    sess::frames::index::Index::read_from(&mut std::io::Cursor::new(bytes))
        .unwrap()
        .expect("an index")
        .expect("a good index")
}

/// Runs `cmd` to its end, its output thrown away; its exit code and its peak resident
/// memory in bytes. The child is reaped by wait4 itself, which reports the memory of this
/// child alone (and of the children it waited for). Unix only.
// std's `wait` would not report the memory.
#[allow(clippy::zombie_processes)]
pub fn peak_memory(cmd: &mut std::process::Command) -> (i32, u64) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value, filled in by wait4 for a child of ours
    // that nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, child.id() as i32);
    assert!(libc::WIFEXITED(status), "the child was killed: {status}");
    // ru_maxrss is in KiB on Linux.
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

/// [`peak_memory`], after this process's peak is set back to what it holds now
/// (clear_refs): a child's peak starts from this process's, as it was when the child began
/// (it shares its memory until it execs). For a test alone in its file, which holds
/// little, with no other test beside it. Linux only.
pub fn peak_memory_alone(cmd: &mut std::process::Command) -> (i32, u64) {
    std::fs::write("/proc/self/clear_refs", "5").expect("cannot reset this process's peak");
    peak_memory(cmd)
}

/// An old-generation pi stream of one reply streamed in `n` deltas: each update holds the
/// reply so far twice (the event's `partial` and the `message`).
pub fn pi_old_reply(n: usize) -> String {
    // As written in JSON: escapes stay escaped.
    let words = [
        "build",
        " the",
        " 文字",
        r#" \"quoted\""#,
        r" path\\to",
        r" tab\there",
        "✓",
        r" new\nline",
    ];
    let (mut text, mut x) = (String::new(), 7u32);
    pi_old_frames((0..n).map(|k| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let delta = format!("{}{}", words[(x >> 16) as usize % words.len()], k % 10);
        text += &delta;
        (delta, text.clone())
    }))
}

/// A pi 0.73 reply whose `message_update` frames carry these deltas and texts, written in
/// JSON (escapes stay escaped).
pub fn pi_old_frames(frames: impl Iterator<Item = (String, String)>) -> String {
    let mut out = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/tmp\"}\n{\"type\":\"agent_start\"}\n\
         {\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"content\":[]}}\n",
    );
    for (k, (delta, text)) in frames.enumerate() {
        let message = format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"model":"m","usage":{{"output":{k}}}}}"#
        );
        out += &format!(
            r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"{delta}","partial":{message}}},"message":{message}}}"#
        );
        out.push('\n');
    }
    out + "{\"type\":\"message_end\",\"message\":{}}\n{\"type\":\"agent_end\",\"messages\":[]}\n"
}

/// Every line `plain` (the output of `sess filter`) holds is in `live` (of `sess filter
/// --include-live-events`) as often, byte for byte: the option adds live frames, bounded,
/// and never takes the only copy of a run that got no successor.
pub fn assert_live_keeps_all_plain_keeps(plain: &[u8], live: &[u8], what: &str) {
    let mut have = std::collections::HashMap::<&[u8], usize>::new();
    for l in live.split(|&b| b == b'\n') {
        *have.entry(l).or_default() += 1;
    }
    for (k, l) in plain.split(|&b| b == b'\n').enumerate() {
        let n = have.entry(l).or_default();
        assert!(
            *n > 0,
            "{what}: line {} of filter's output ({} bytes) is not in its output with \
             --include-live-events",
            k + 1,
            l.len()
        );
        *n -= 1;
    }
}
