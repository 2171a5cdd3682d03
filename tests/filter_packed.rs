//! `sess filter` on a packed log writes what it writes on the log itself. It takes
//! snapshot-delta rows whole (rebuilding only the last event of a run left without its
//! successor), so these tests pin that shortcut to the event-by-event reading: on real logs,
//! on runs cut short, and on rows whose events differ in what the filter reads (rows sess
//! never writes, but a reader may be given).

mod common;

use std::path::PathBuf;

use common::{conformance, files_in, sess, stdout_ok, testdata};
use proptest::prelude::*;
use sess::json;
use sess::snapshots::SnapshotPacker;

/// What `sess COMMAND --quiet ARGS` writes for `input` on stdin.
fn run(command: &str, input: &[u8], args: &[&str]) -> Vec<u8> {
    let mut cmd = sess();
    cmd.args([command, "--quiet"]).args(args);
    stdout_ok(cmd.write_stdin(input.to_vec()))
}

fn filter(input: &[u8], args: &[&str]) -> Vec<u8> {
    run("filter", input, args)
}

fn pack(input: &[u8], args: &[&str]) -> Vec<u8> {
    run("pack", input, args)
}

/// Packed plain and in small frames, the filter writes what it writes on the log, and so
/// does the event-by-event path (`--stats` takes no row whole).
fn assert_filter_sees_through_packing(name: &str, log: &[u8]) {
    let want = filter(log, &[]);
    for layout in [&["--plain"][..], &["--frame-size", "4K"]] {
        let packed = pack(log, layout);
        assert!(
            filter(&packed, &[]) == want,
            "{name}: filter of the log packed with {layout:?} differs"
        );
        assert!(
            filter(&packed, &["--stats"]) == want,
            "{name}: filter --stats of the log packed with {layout:?} differs"
        );
    }
}

/// The number of snapshot-delta rows in a log packed `--plain`.
fn rows_in(log: &[u8]) -> usize {
    let packed = pack(log, &["--plain"]);
    String::from_utf8_lossy(&packed)
        .matches(r#""type":"snapshot-deltas""#)
        .count()
}

#[test]
fn filter_sees_through_packing_on_the_bundled_logs() {
    let mut logs: Vec<PathBuf> = common::FIXTURES.iter().map(|f| testdata(f)).collect();
    for d in ["claude-code-stream", "codex-stream"] {
        logs.extend(files_in(&testdata("captures").join(d), ".jsonl"));
    }
    for f in &logs {
        let log = std::fs::read(f).unwrap();
        assert_filter_sees_through_packing(&f.display().to_string(), &log);
    }
    assert!(rows_in(&std::fs::read(testdata("pi-old.jsonl")).unwrap()) > 0);
}

/// The `.jsonl` files under `dir`, at any depth.
fn logs_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut logs = files_in(dir, ".jsonl");
    for entry in std::fs::read_dir(dir).unwrap() {
        let sub = entry.unwrap().path();
        if sub.is_dir() {
            logs.extend(logs_under(&sub));
        }
    }
    logs
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn filter_sees_through_packing_on_the_real_logs() {
    let mut rows = 0;
    for dir in [
        "pi-streams",
        "pi-sessions",
        "codex",
        "claude-code",
        "captures",
    ] {
        for f in logs_under(&conformance(dir)) {
            let log = std::fs::read(&f).unwrap();
            assert_filter_sees_through_packing(&f.display().to_string(), &log);
            rows += rows_in(&log);
        }
    }
    assert!(rows >= 6, "the real logs pack into {rows} rows");
}

/// The pi fixture cut at every line: runs left without their successor at every point.
#[test]
fn runs_cut_short_keep_their_last_snapshot_rebuilt() {
    let log = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let lines: Vec<&[u8]> = log.split_inclusive(|&b| b == b'\n').collect();
    let mut cut_in_a_row = 0;
    for n in 1..=lines.len() {
        let head = lines[..n].concat();
        assert_filter_sees_through_packing(&format!("pi-old.jsonl, {n} lines"), &head);
        let last = String::from_utf8_lossy(lines[n - 1]);
        cut_in_a_row += usize::from(last.contains("\"message_update\""));
    }
    assert!(cut_in_a_row > 2);
}

/// Lines of `kind` packed into one row whatever their key or shape, as no packer of sess
/// would: the group is the caller's, and this one says they all belong together.
fn one_row(lines: &[String]) -> Vec<u8> {
    let mut p = SnapshotPacker::default();
    let mut out = Vec::new();
    for l in lines {
        let kind = json::field(l.as_bytes(), "type").unwrap().to_vec();
        let group = (String::from_utf8(kind).unwrap(), None);
        if !p.take(l.as_bytes(), group, &mut out).unwrap() {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
    }
    p.finish(&mut out).unwrap();
    out
}

/// A pi header, and a line only pi writes: the profile is chosen before the rows come (until
/// it is, every line is read event by event).
const HEADER: &str =
    "{\"type\":\"session\",\"version\":3,\"id\":\"x\"}\n{\"type\":\"agent_start\"}";

fn joined(lines: &[String]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

fn tool_update(call: &str, text: &str) -> String {
    format!(
        r#"{{"type":"tool_execution_update","toolCallId":"{call}","partialResult":{{"text":"{text}"}}}}"#
    )
}

/// A row whose events change their pairing key is read event by event: the run of the
/// first key is left open when only the second one's end comes.
#[test]
fn a_row_whose_events_change_their_key_is_read_event_by_event() {
    let lines = vec![
        HEADER.to_string(),
        tool_update("a", "x"),
        tool_update("b", "x"),
        tool_update("b", "xy"),
        r#"{"type":"tool_execution_end","toolCallId":"b","result":{}}"#.to_string(),
    ];
    let packed = one_row(&lines);
    assert_eq!(String::from_utf8_lossy(&packed).lines().count(), 4);
    let want = filter(&joined(&lines), &[]);
    assert!(String::from_utf8_lossy(&want).contains(&tool_update("a", "x")));
    assert_eq!(filter(&packed, &[]), want);
}

/// A row whose first event is spelled otherwise than sess spells it: the key read from it
/// is not the key of the events rebuilt after it.
#[test]
fn a_row_whose_first_event_is_spelled_otherwise_is_read_event_by_event() {
    let first = tool_update(r"\u0061", "x");
    let row = format!(
        r#"{{"type":"snapshot-deltas","first":{first},"ops":[[["a",["partialResult","text"],"y"]]]}}"#
    );
    let end = r#"{"type":"tool_execution_end","toolCallId":"a","result":{}}"#;
    let header = HEADER;
    let packed = format!("{header}\n{row}\n{end}\n");
    let unpacked = stdout_ok(sess().arg("unpack").write_stdin(packed.clone()));
    let want = filter(&unpacked, &[]);
    assert!(String::from_utf8_lossy(&want).contains(&first));
    assert_eq!(filter(packed.as_bytes(), &[]), want);
}

/// A run whose snapshots stop being snapshots (their snapshot field dropped) is kept whole
/// when orphaned, so such a row is read event by event.
#[test]
fn a_row_whose_events_stop_being_snapshots_is_read_event_by_event() {
    let update = |text: &str, whole: bool| {
        let message = match whole {
            true => format!(r#","message":{{"content":[{{"type":"text","text":"{text}"}}]}}"#),
            false => String::new(),
        };
        format!(
            r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","delta":"{text}"}}{message}}}"#
        )
    };
    let lines = vec![
        HEADER.to_string(),
        r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#.to_string(),
        update("a", true),
        update("b", false),
        update("c", false),
    ];
    let packed = one_row(&lines);
    assert!(String::from_utf8_lossy(&packed).contains("snapshot-deltas"));
    let want = filter(&joined(&lines), &[]);
    assert_eq!(String::from_utf8_lossy(&want).lines().count(), 6);
    assert_eq!(filter(&packed, &[]), want);
}

/// A damaged row whose last event is needed is an error naming its line; one whose run
/// gets its successor is dropped unread, as `cat --type` passes rows by.
#[test]
fn a_damaged_row_is_named_when_its_last_event_is_needed() {
    let lines: Vec<String> = ["x", "xy", "xyz"]
        .iter()
        .map(|t| tool_update("a", t))
        .collect();
    let packed = String::from_utf8(one_row(&lines)).unwrap();
    let bad = packed.replace(r#"["a","#, r#"["a",["nowhere"],"#);
    assert_ne!(bad, packed);
    let header = HEADER;
    let end = r#"{"type":"tool_execution_end","toolCallId":"a","result":{}}"#;
    sess()
        .arg("filter")
        .write_stdin(format!("{header}\n{bad}"))
        .assert()
        .failure()
        .stderr(predicates::str::contains("<stdin>:3:"));
    let closed = format!("{header}\n{bad}{end}\n");
    assert_eq!(
        filter(closed.as_bytes(), &[]),
        format!("{header}\n{end}\n").into_bytes()
    );
}

fn update_line() -> impl Strategy<Value = String> {
    let text = proptest::sample::select(vec!["a", " b", "é", "🦀", "\\n", "\\\"q\\\""]);
    let texts = proptest::collection::vec(text, 0..4).prop_map(|v| v.concat());
    prop_oneof![
        (0u8..2, texts.clone()).prop_map(|(c, t)| tool_update(&format!("c{c}"), &t)),
        (any::<bool>(), texts).prop_map(|(whole, t)| {
            let message = match whole {
                true => format!(r#","message":{{"content":[{{"type":"text","text":"{t}"}}]}}"#),
                false => String::new(),
            };
            format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","delta":"{t}"}}{message}}}"#
            )
        }),
        (0u8..2).prop_map(|c| format!(
            r#"{{"type":"tool_execution_end","toolCallId":"c{c}","result":{{}}}}"#
        )),
        Just(r#"{"type":"message_end","message":{"role":"assistant","content":[]}}"#.to_string()),
        Just(r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#.to_string()),
        Just(r#"{"type":"agent_end","messages":[]}"#.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random pi runs packed into rows that mix keys and shapes: the filter writes what
    /// it writes on the lines themselves.
    #[test]
    fn filter_of_any_rows_equals_filter_of_their_events(
        body in proptest::collection::vec(update_line(), 1..40),
    ) {
        let mut lines = vec![HEADER.to_string()];
        lines.extend(body);
        let want = filter(&joined(&lines), &[]);
        prop_assert_eq!(filter(&one_row(&lines), &[]), want);
    }
}
