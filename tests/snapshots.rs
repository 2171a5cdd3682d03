//! Snapshot-delta rows: runs of pi snapshot frames packed as a first event plus op batches,
//! unpacked byte for byte.

mod common;

use common::{conformance, files_in, sess, stdout_ok, testdata};
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
fn conformance_pi_streams_round_trip() {
    let Some(dir) = conformance("pi-streams") else {
        return;
    };
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random streams of snapshot updates (text growing, sometimes rewritten, tool output
    /// rolling) come back byte for byte.
    #[test]
    fn random_snapshot_streams_round_trip(steps in proptest::collection::vec((0u8..4, "[a-z \u{4e00}-\u{4e10}\u{1F980}\"\\\\\n]{0,12}"), 1..40)) {
        let mut log = String::from("{\"type\":\"session\",\"version\":3}\n");
        let mut text = String::new();
        let mut out = String::new();
        for (kind, piece) in steps {
            let js = |s: &str| serde_json::to_string(s).unwrap();
            match kind {
                0 | 1 => {
                    text.push_str(&piece);
                    let msg = format!("{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}", js(&text));
                    log += &format!("{{\"type\":\"message_update\",\"assistantMessageEvent\":{{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":{},\"partial\":{msg}}},\"message\":{msg}}}\n", js(&piece));
                }
                2 => {
                    out = out.chars().skip(3).collect::<String>() + &piece;
                    log += &format!("{{\"type\":\"tool_execution_update\",\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"partialResult\":{{\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}}}\n", js(&out));
                }
                _ => {
                    text = piece.clone();
                    log += "{\"type\":\"message_start\",\"message\":{}}\n";
                }
            }
        }
        let packed = pack_plain(log.as_bytes());
        prop_assert!(unpack(&packed) == log.as_bytes());
    }
}
