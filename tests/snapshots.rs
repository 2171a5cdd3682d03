//! Snapshot-delta rows: runs of pi snapshot frames packed as a first event plus op batches,
//! unpacked byte for byte.

mod common;

use common::{conformance, files_in, pi_old_frames, pi_old_reply, sess, stdout_ok, testdata};
use predicates::prelude::*;
use proptest::prelude::*;

fn pack_plain(input: &[u8]) -> Vec<u8> {
    stdout_ok(sess().args(["pack", "--plain"]).write_stdin(input.to_vec()))
}

fn unpack(input: &[u8]) -> Vec<u8> {
    stdout_ok(sess().arg("unpack").write_stdin(input.to_vec()))
}

#[test]
fn pi_logs_pack_into_snapshot_rows_and_back() {
    let original = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let packed = pack_plain(&original);
    assert_eq!(
        String::from_utf8_lossy(&packed)
            .matches("{\"type\":\"snapshot-deltas\",")
            .count(),
        1
    );
    assert!(unpack(&packed) == original);
    // Every reader sees the logical log.
    sess()
        .arg("cat")
        .write_stdin(packed.clone())
        .assert()
        .success()
        .stdout(original.clone());
    sess()
        .arg("verify")
        .write_stdin(packed.clone())
        .assert()
        .success();
    let filtered = sess()
        .arg("filter")
        .write_stdin(original.clone())
        .output()
        .unwrap()
        .stdout;
    sess()
        .arg("filter")
        .write_stdin(packed)
        .assert()
        .success()
        .stdout(filtered);
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn conformance_pi_streams_round_trip() {
    let dir = conformance("pi-streams");
    for f in files_in(&dir, ".jsonl") {
        let original = std::fs::read(&f).unwrap();
        let packed = pack_plain(&original);
        assert!(unpack(&packed) == original, "{}", f.display());
        if f.ends_with("pi-json-small.jsonl") {
            assert!(
                packed.len() * 3 < original.len(),
                "{}: {} of {}",
                f.display(),
                packed.len(),
                original.len()
            );
        }
    }
}

/// A Claude Code transcript whose subagents `a` and `b` report their steps as
/// `agent_progress` records, each with the agent's whole history so far; `order` names the
/// agent of each step.
fn claude_progress(order: &str) -> String {
    let mut history: std::collections::HashMap<char, Vec<String>> = Default::default();
    let mut out = String::new();
    for (n, agent) in order.chars().enumerate() {
        let past = history.entry(agent).or_default();
        let message = format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"step {n} of {agent}: {}"}}]}}"#,
            "checking the build again ".repeat(12)
        );
        out += &format!(
            r#"{{"parentUuid":"u{prev}","isSidechain":false,"sessionId":"s","type":"progress","data":{{"message":{message},"normalizedMessages":[{}],"type":"agent_progress","prompt":"look around","agentId":"{agent}"}},"toolUseID":"t{n}","uuid":"u{n}","timestamp":"2026-01-01T00:00:{n:02}Z"}}"#,
            past.join(","),
            prev = n.saturating_sub(1),
        );
        out.push('\n');
        past.push(message);
    }
    out
}

#[test]
fn claude_code_agent_progress_of_one_agent_packs_into_rows_and_back() {
    // Steps of one agent in a row make one row; another agent's step ends it.
    let log = claude_progress("aaaaaaaaaaaaaaaabbbbbbbbaaaaaaaa");
    let packed = pack_plain(log.as_bytes());
    let text = String::from_utf8_lossy(&packed);
    assert_eq!(
        text.matches(r#"{"type":"snapshot-deltas","#).count(),
        3,
        "{text}"
    );
    assert_eq!(text.lines().count(), 3);
    // Each step costs its new element and message, not the history again.
    assert!(
        packed.len() * 3 < log.len(),
        "{} of {}",
        packed.len(),
        log.len()
    );
    assert!(unpack(&packed) == log.as_bytes());
    // Readers see the logical log: filter projects each step as from the plain log.
    let filtered = stdout_ok(sess().arg("filter").write_stdin(log.clone()));
    sess()
        .arg("filter")
        .write_stdin(packed.clone())
        .assert()
        .success()
        .stdout(filtered);
    for kind in ["progress", "progress:agent_progress"] {
        sess()
            .args(["cat", "--type", kind])
            .write_stdin(packed.clone())
            .assert()
            .success()
            .stdout(log.clone());
    }
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn conformance_claude_code_agent_progress_packs_into_rows_and_back() {
    let mut rows = 0;
    let dir = conformance("claude-code");
    let spotter = dir.join("spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents");
    let files = ["agtrace", "spotter"]
        .iter()
        .map(|d| dir.join(d))
        .chain([spotter])
        .flat_map(|d| files_in(&d, ".jsonl"));
    for f in files {
        let original = std::fs::read(&f).unwrap();
        let packed = pack_plain(&original);
        assert!(unpack(&packed) == original, "{}", f.display());
        rows += String::from_utf8_lossy(&packed)
            .matches(r#"{"type":"snapshot-deltas","first":{"parentUuid""#)
            .count();
    }
    // The fixtures' subagents report several steps in a row.
    assert!(rows > 0);
}

/// Replies a diff of bytes reads wrongly, each frame `n` a change of the last: `edited`
/// changes a letter every 40 in a 4000-byte text, `inserted` puts a word in the middle of
/// it, `cut` takes 5 bytes out of its middle, and `respelled` grows it as a reply does, every 20th frame spelled with a space
/// after a colon (pack cannot rebuild that frame, and ends the run).
fn pi_old_hostile(n: usize) -> [(&'static str, String); 4] {
    let base: String = (0..400).map(|i| format!("word{:05}", i * 7)).collect();
    let mut edited = base.clone().into_bytes();
    let edited = pi_old_frames((0..n).map(|k| {
        for at in (k % 40..edited.len()).step_by(40) {
            edited[at] = b'a' + (k % 26) as u8;
        }
        ("x".into(), String::from_utf8(edited.clone()).unwrap())
    }));
    let mut text = base.clone();
    let inserted = pi_old_frames((0..n).map(|k| {
        text.insert_str(text.len() / 2, &format!(" more{k}"));
        (" more".into(), text.clone())
    }));
    let mut text = base.clone();
    let cut = pi_old_frames((0..n).map(|_| {
        let mid = text.len() / 2;
        text.replace_range(mid..mid + 5, "");
        ("".into(), text.clone())
    }));
    let respelled = pi_old_reply(n)
        .lines()
        .enumerate()
        .map(|(i, line)| match i % 20 {
            19 => line.replacen(r#""model":"m""#, r#""model": "m""#, 2) + "\n",
            _ => format!("{line}\n"),
        })
        .collect();
    [
        ("edited", edited),
        ("inserted", inserted),
        ("cut", cut),
        ("respelled", respelled),
    ]
}

/// What `sess stats --json` says pack writes: its estimate of the frames, the rows alone,
/// and how snapshot rows were counted.
fn pack_figures(log: &str, exact: bool) -> (f64, f64, String) {
    let mut cmd = sess();
    cmd.args(["stats", "--json"]);
    if exact {
        cmd.arg("--exact");
    }
    let out = stdout_ok(cmd.write_stdin(log.to_string()));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let f = &v["files"][0];
    (
        f["pack"]["bytes"].as_f64().unwrap(),
        f["packed_bytes"].as_f64().unwrap(),
        f["pack"]["accuracy"].as_str().unwrap().to_string(),
    )
}

#[test]
fn stats_estimates_snapshot_rows_near_what_it_builds() {
    let logs = [
        ("pi", pi_old_reply(600)),
        ("claude", claude_progress(&"a".repeat(60))),
    ];
    let hostile = pi_old_hostile(300).map(|(name, log)| (name, log, false));
    let logs = logs.map(|(name, log)| (name, log, true));
    for (name, log, joins) in logs.into_iter().chain(hostile) {
        let (frames, rows, how) = pack_figures(&log, false);
        let (exact_frames, exact_rows, exact_how) = pack_figures(&log, true);
        assert_eq!((how.as_str(), exact_how.as_str()), ("estimate", "exact"));
        // --exact builds the rows pack writes (read once, as from a pipe).
        let plain = pack_plain(log.as_bytes());
        assert_eq!(exact_rows, plain.len() as f64, "{name}");
        let real = stdout_ok(sess().arg("pack").write_stdin(log.clone())).len() as f64;
        assert!(
            (0.97..=1.05).contains(&(exact_frames / real)),
            "{name}: {exact_frames} for {real}"
        );
        // Rows nowhere near the log's size: the estimate joins runs as pack does.
        assert!(
            !joins || exact_rows * 4.0 < log.len() as f64,
            "{name}: {exact_rows}"
        );
        // (On the small Claude Code log, the frames are estimated about 170 bytes short of
        // the 1,124 built: 0.85.)
        for (what, got, want) in [("rows", rows, exact_rows), ("frames", frames, exact_frames)] {
            assert!(
                (0.84..=1.15).contains(&(got / want)),
                "{name}: {what} estimated at {got}, built at {want}"
            );
        }
    }
}

#[test]
fn a_damaged_snapshot_row_is_an_error_naming_its_line() {
    let packed = pack_plain(&std::fs::read(testdata("pi-old.jsonl")).unwrap());
    let text = String::from_utf8(packed).unwrap();
    let bad = text.replacen("[\"a\",", "[\"A\",", 1);
    assert_ne!(bad, text, "the row holds an append");
    sess()
        .arg("unpack")
        .write_stdin(bad.clone())
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("<stdin>:8: snapshot-deltas batch")
                .and(predicate::str::contains("unknown op verb: A")),
        );
    sess()
        .arg("verify")
        .write_stdin(bad)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("<stdin>:8: snapshot-deltas batch"));
}

#[test]
fn cat_type_passes_rows_of_other_types_by_unexpanded_and_selects_what_the_plain_log_gives() {
    // Each log packed, then every type it holds selected from both: the same events.
    for name in ["pi-old.jsonl", "pi-new.jsonl", "dsh.jsonl"] {
        let original = std::fs::read(testdata(name)).unwrap();
        let packed = pack_plain(&original);
        let kinds: std::collections::BTreeSet<String> = String::from_utf8_lossy(&original)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["type"].as_str().map(str::to_string))
            .collect();
        for kind in &kinds {
            let plain = stdout_ok(
                sess()
                    .args(["cat", "--type", kind])
                    .write_stdin(original.clone()),
            );
            let from_rows = stdout_ok(
                sess()
                    .args(["cat", "--type", kind])
                    .write_stdin(packed.clone()),
            );
            assert!(plain == from_rows, "{name}: --type {kind}");
        }
    }
    // A row of message_update whose ops cannot be applied: looking for message_end never
    // opens it; looking for message_update does, and fails; --lines counts its events, so
    // it opens it too.
    let packed = String::from_utf8(pack_plain(
        &std::fs::read(testdata("pi-old.jsonl")).unwrap(),
    ))
    .unwrap();
    let broken = packed.replacen("[\"a\",", "[\"A\",", 1);
    assert_ne!(broken, packed);
    let want = stdout_ok(
        sess()
            .args(["cat", "--type", "message_end"])
            .arg(testdata("pi-old.jsonl")),
    );
    sess()
        .args(["cat", "--type", "message_end"])
        .write_stdin(broken.clone())
        .assert()
        .success()
        .stdout(want);
    for args in [
        &["--type", "message_update"][..],
        &["--type", "message_end", "--lines", "1.."],
    ] {
        sess()
            .arg("cat")
            .args(args)
            .write_stdin(broken.clone())
            .assert()
            .code(1)
            .stderr(predicate::str::contains("unknown op verb: A"));
    }
}

#[test]
fn every_event_of_a_snapshot_row_has_the_type_of_its_first() {
    // A batch that sets the type: the reader refuses the row, so that passing rows by
    // their first event's type can never hide an event.
    let row = r#"{"type":"snapshot-deltas","first":{"type":"message_update","n":1},"ops":[[["s",["type"],"message_end"]]]}"#;
    for cmd in ["cat", "unpack"] {
        sess()
            .arg(cmd)
            .write_stdin(format!("{row}\n"))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "not the type of the row's first event",
            ));
    }
    sess()
        .arg("verify")
        .write_stdin(format!("{row}\n"))
        .assert()
        .code(1);
}

/// Writes UTF-16 units as `JSON.stringify` writes a string: short escapes, `\u00xx` for
/// other control characters, `\udxxx` for lone surrogates, everything else raw. Written
/// here again, independently of sess, so that the test does not lean on the code it tests.
fn js(units: &[u16]) -> String {
    let mut out = String::from("\"");
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        let pair = (0xD800..0xDC00).contains(&u)
            && units
                .get(i + 1)
                .is_some_and(|l| (0xDC00..0xE000).contains(l));
        match u {
            0x22 => out.push_str("\\\""),
            0x5C => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0..=0x1F => out.push_str(&format!("\\u{u:04x}")),
            _ if pair => {
                out.push_str(&String::from_utf16(&units[i..i + 2]).unwrap());
                i += 1;
            }
            0xD800..=0xDFFF => out.push_str(&format!("\\u{u:04x}")),
            _ => out.push(char::from_u32(u32::from(u)).unwrap()),
        }
        i += 1;
    }
    out.push('"');
    out
}

/// Text pieces built from the units that make escaping hard: control characters, quotes,
/// backslashes, lone surrogates of both halves, U+2028, a pair (an emoji), CJK.
fn piece() -> impl Strategy<Value = Vec<u16>> {
    let unit = prop_oneof![
        Just(b'a' as u16),
        Just(b' ' as u16),
        Just(0x01u16),
        Just(0x1Fu16),
        Just(0x0Au16),
        Just(b'"' as u16),
        Just(b'\\' as u16),
        Just(0xD800u16),
        Just(0xDC00u16),
        Just(0x2028u16),
        Just(0x4E00u16),
        Just(0x7Fu16),
    ];
    let emoji = Just(vec![0xD83Eu16, 0xDD80]);
    proptest::collection::vec(prop_oneof![unit.prop_map(|u| vec![u]), emoji], 0..8)
        .prop_map(|v| v.concat())
}

#[derive(Debug, Clone)]
enum Step {
    /// Text grows by a piece.
    Grow(Vec<u16>),
    /// A new message starts.
    NewMessage(Vec<u16>),
    /// Tool call k's output rolls: its front is dropped and a piece appended.
    Tool(usize, Vec<u16>),
    /// A fact between updates, ending any run.
    Fact,
    /// A snapshot written with a space, not as JSON.stringify writes it: kept verbatim.
    Spaced,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => piece().prop_map(Step::Grow),
        1 => piece().prop_map(Step::NewMessage),
        3 => (0usize..3, piece()).prop_map(|(k, p)| Step::Tool(k, p)),
        1 => Just(Step::Fact),
        1 => Just(Step::Spaced),
    ]
}

/// A pi 0.73 log of these steps, each line ending in `\r\n` where its flag says so, and
/// whether two snapshot frames of one run and one line ending follow each other somewhere
/// (then the packer must have made a row).
fn render(steps: &[(Step, bool)]) -> (String, bool) {
    let mut log = String::from("{\"type\":\"session\",\"version\":3}\n");
    let mut text: Vec<u16> = Vec::new();
    let mut outs: [Vec<u16>; 3] = Default::default();
    // The run the last line belongs to, if it was a canonical snapshot frame.
    let mut last: Option<String> = None;
    let mut pair = false;
    for (s, crlf) in steps {
        let start = log.len();
        let group = match s {
            Step::Grow(p) => {
                text.extend_from_slice(p);
                let msg = format!(
                    "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}",
                    js(&text)
                );
                log += &format!(
                    "{{\"type\":\"message_update\",\"assistantMessageEvent\":{{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":{},\"partial\":{msg}}},\"message\":{msg}}}\n",
                    js(p)
                );
                Some("message".to_string())
            }
            Step::NewMessage(p) => {
                text = p.clone();
                log += "{\"type\":\"message_start\",\"message\":{}}\n";
                None
            }
            Step::Tool(k, p) => {
                let out = &mut outs[*k];
                let keep = out.len().saturating_sub(3);
                *out = out[out.len() - keep..].to_vec();
                out.extend_from_slice(p);
                log += &format!(
                    "{{\"type\":\"tool_execution_update\",\"toolCallId\":\"c{k}\",\"toolName\":\"bash\",\"partialResult\":{{\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}}}\n",
                    js(out)
                );
                Some(format!("tool c{k}"))
            }
            Step::Fact => {
                log += "{\"type\":\"turn_start\"}\n";
                None
            }
            Step::Spaced => {
                log += "{\"type\":\"tool_execution_update\", \"toolCallId\":\"c0\",\"partialResult\":{}}\n";
                None
            }
        };
        if *crlf {
            log.insert(log.len() - 1, '\r');
        }
        debug_assert_eq!(log[start..].matches('\n').count(), 1);
        let group = group.map(|g| format!("{g} {crlf}"));
        pair |= group.is_some() && group == last;
        last = group;
    }
    (log, pair)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random streams of snapshot updates (text growing, messages restarting, three tool
    /// calls rolling their output, facts and non-canonical lines between, `\n` and `\r\n`
    /// endings mixed) come back byte for byte, and a row is made wherever two frames of one
    /// run follow each other.
    #[test]
    fn random_snapshot_streams_round_trip(
        steps in proptest::collection::vec((step(), proptest::bool::weighted(0.3)), 1..40)
    ) {
        let (log, pair) = render(&steps);
        let packed = pack_plain(log.as_bytes());
        prop_assert!(unpack(&packed) == log.as_bytes());
        let rows = String::from_utf8_lossy(&packed)
            .matches("{\"type\":\"snapshot-deltas\",")
            .count();
        prop_assert_eq!(rows > 0, pair, "rows {}, packed:\n{}", rows, String::from_utf8_lossy(&packed));
    }
}

#[test]
fn the_generator_reaches_what_escaping_gets_wrong() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut logs = String::new();
    let mut pairs = 0;
    for _ in 0..200 {
        let steps = proptest::collection::vec((step(), proptest::bool::weighted(0.3)), 1..40)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let (log, pair) = render(&steps);
        pairs += usize::from(pair);
        logs += &log;
    }
    for needle in [
        "\\u0001",
        "\\u001f",
        "\\ud800",
        "\\udc00",
        "\u{2028}",
        "\u{1F980}",
        "\\\"",
        "\"c0\"",
        "\"c1\"",
        "\"c2\"",
        "\"toolCallId\":\"c0\",\"partialResult\":{}",
        "}\r\n{",
        "}\n{",
    ] {
        assert!(logs.contains(needle), "the generator never writes {needle}");
    }
    assert!(pairs > 100, "runs of frames are common ({pairs} of 200)");
}
