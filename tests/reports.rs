//! `--json` reports for scripts: each is one JSON object on one line with a `schema`, and
//! says what the text report says (`docs/FORMAT.md`, "Reports for scripts").

mod common;

use common::{sess, stdout_ok, testdata};
use serde_json::{Value, json};

/// The one JSON object `text` must be: one line, nothing around it.
fn one_object(text: &[u8]) -> Value {
    let text = std::str::from_utf8(text).unwrap();
    assert!(
        text.ends_with('\n') && text.lines().count() == 1,
        "{text:?}"
    );
    let v: Value = serde_json::from_str(text).unwrap();
    assert!(v.is_object());
    v
}

/// stderr of a failed command with --json: its error lines, then its report, the last
/// line, as one JSON object.
fn error_then_report(stderr: &[u8]) -> (String, Value) {
    let err = std::str::from_utf8(stderr).unwrap();
    let (error, last) = err.trim_end().rsplit_once('\n').unwrap_or(("", err));
    let v: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {err}"));
    (error.to_string(), v)
}

#[test]
fn verify_json_lists_each_problem_with_its_place_and_exits_as_verify_does() {
    let out = sess()
        .args(["verify", "--json"])
        .write_stdin("{\"type\":\"a\",\"seq\":1}\n{\"type\":\"b\",}\n{\"seq\":5}\n{\"x\":")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = one_object(&out.stdout);
    assert_eq!(v["schema"], "sess-verify/1");
    assert_eq!(v["ok"], false);
    assert_eq!(v["lines"], 4);
    assert_eq!(v["problems"], 3);
    let problems = &v["files"][0]["problems"];
    assert_eq!(
        problems[0],
        json!({"line": 2, "column": 13, "offset": 33,
               "message": "invalid JSON: expected a string key"})
    );
    assert_eq!(problems[1]["line"], 3);
    assert!(
        problems[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("seq 5 where 2")
    );
    assert_eq!(problems[2]["line"], 4);
    assert!(
        problems[2]["message"]
            .as_str()
            .unwrap()
            .contains("torn last line")
    );
    let ok = sess()
        .args(["verify", "--json"])
        .arg(testdata("dsh.jsonl"))
        .output()
        .unwrap();
    assert!(ok.status.success());
    let v = one_object(&ok.stdout);
    assert_eq!(v["ok"], true);
    assert_eq!(v["files"][0]["lines"], 28);
    assert_eq!(v["files"][0]["problems"], json!([]));
}

#[test]
fn filter_stats_json_gives_the_table_per_class_and_the_profile_per_input() {
    let out = sess()
        .args(["filter", "--stats", "--json"])
        .arg(testdata("pi-new.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = one_object(&out.stderr);
    assert_eq!(v["schema"], "sess-filter-stats/1");
    assert_eq!(v["inputs"][0]["profile"], "pi");
    assert_eq!(
        v["classes"]["frame"],
        json!({"events_in": 13, "bytes_in": 2999, "events_out": 0, "bytes_out": 0})
    );
    assert_eq!(v["total"]["events_out"], 18);
    assert_eq!(v["total"]["bytes_out"], out.stdout.len());
    // --json is a form of --stats.
    sess()
        .args(["filter", "--json"])
        .arg(testdata("pi-new.jsonl"))
        .assert()
        .code(2);
    // An input that fails: the error, then the report of what was read before it, last.
    let out = sess()
        .args(["filter", "--stats", "--json"])
        .arg(testdata("pi-new.jsonl"))
        .arg("/nonexistent/log.jsonl")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (error, v) = error_then_report(&out.stderr);
    assert!(
        error.ends_with("cannot open: No such file or directory (os error 2)"),
        "{error}"
    );
    assert_eq!(v["total"]["events_in"], 31, "{v}");
    assert_eq!(v["inputs"][0]["profile"], "pi");
}

#[test]
fn pack_stats_json_counts_what_went_in_and_what_came_out() {
    let dir = tempfile::tempdir().unwrap();
    let packed = dir.path().join("dsh.jsonl.zst");
    let log = testdata("dsh.jsonl");
    let out = sess()
        .args(["pack", "--stats", "--json"])
        .arg(&log)
        .arg("-o")
        .arg(&packed)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = one_object(&out.stderr);
    assert_eq!(v["schema"], "sess-pack-stats/1");
    assert_eq!(v["events"], 28);
    assert_eq!(v["packed_events"], 9);
    assert_eq!(v["rows"], 2);
    assert_eq!(v["bytes_in"], std::fs::metadata(&log).unwrap().len());
    assert_eq!(v["bytes_out"], std::fs::metadata(&packed).unwrap().len());
    // From a pipe (the streaming path) the same counts, and what reached stdout.
    let piped = sess()
        .args(["pack", "--plain", "--stats", "--json"])
        .write_stdin(std::fs::read(&log).unwrap())
        .output()
        .unwrap();
    let p = one_object(&piped.stderr);
    assert_eq!(p["events"], 28);
    assert_eq!(p["bytes_out"], piped.stdout.len());
}

#[test]
fn pack_stats_json_says_how_large_the_window_index_grew() {
    let dir = tempfile::tempdir().unwrap();
    // Lines of `values` distinct values of 300 bytes, each seen twice.
    let index_bytes = |values: usize, min: &str| {
        let log = dir.path().join(format!("v{values}.jsonl"));
        let text: String = (0..2 * values)
            .map(|i| format!("{{\"seq\":{i},\"v\":\"{:0300}\"}}\n", i % values))
            .collect();
        std::fs::write(&log, text).unwrap();
        let out = sess()
            .args(["pack", "--stats", "--json", "--intern-min", min, "-o"])
            .arg(dir.path().join("out.zst"))
            .arg("--force")
            .arg(&log)
            .output()
            .unwrap();
        assert!(out.status.success());
        one_object(&out.stderr)["index_bytes"].as_u64().unwrap()
    };
    let (few, many) = (index_bytes(20, "256"), index_bytes(20_000, "256"));
    assert!(few > 0 && many > 20_000 * 8, "{few} {many}");
    assert!(many > 100 * few, "{few} {many}");
    assert_eq!(index_bytes(20_000, "0"), 0);
}

#[test]
fn repair_json_names_each_loss_by_bytes_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, "{\"a\":1}\n{\"a\":\n{\"b\":2}").unwrap();
    let fixed = dir.path().join("fixed.jsonl");
    let out = sess()
        .args(["repair", "--json"])
        .arg(&torn)
        .arg("-o")
        .arg(&fixed)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = one_object(&out.stderr);
    assert_eq!(v["schema"], "sess-repair/1");
    assert_eq!(v["lines_kept"], 2);
    assert_eq!(v["newline_added"], 3);
    assert_eq!(v["lost"].as_array().unwrap().len(), 1);
    assert_eq!(v["lost"][0]["bytes"], json!([8, 14]));
    assert_eq!(v["lost"][0]["after_line"], 1);
    assert_eq!(v["lost"][0]["lines"], 1);
    assert_eq!(std::fs::read(&fixed).unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    // When nothing survives, the error comes first and the report is still the last line.
    std::fs::write(&torn, "garbage\n").unwrap();
    let failed = dir.path().join("none.jsonl");
    let out = sess()
        .args(["repair", "--json"])
        .arg(&torn)
        .arg("-o")
        .arg(&failed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (error, v) = error_then_report(&out.stderr);
    assert!(
        error.ends_with("no complete record survived; nothing was written"),
        "{error}"
    );
    assert_eq!(error.matches("sess: error:").count(), 1, "{error}");
    assert_eq!(
        (&v["schema"], &v["lines_kept"]),
        (&json!("sess-repair/1"), &json!(0))
    );
    assert!(!failed.exists());
    // A reader gone from stdout ends repair quietly (exit 0), as it ends every command.
    let big: String = (0..20_000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    std::fs::write(&torn, big).unwrap();
    let args = format!(
        "repair --json {} 2>/dev/null | true; exit ${{PIPESTATUS[0]}}",
        torn.display()
    );
    let status = common::sess_in_bash("", &args).status().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn recover_json_holds_the_value_and_what_was_replayed() {
    let out = sess()
        .args(["recover", "--json"])
        .arg(testdata("oplist.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = one_object(&out.stdout);
    assert_eq!(v["schema"], "sess-recover/1");
    assert_eq!(
        v["value"],
        json!({"x": "again!!", "y": [0], "z": {"w": 10}})
    );
    assert_eq!(
        (v["first_seq"].clone(), v["last_seq"].clone()),
        (json!(8), json!(10))
    );
    assert_eq!(v["batches"], 3);
    assert_eq!(v["torn_last_line"], false);
    // The value is spelled as plain recover spells it, and a torn last line is reported.
    let list = "{\"seq\":0,\"tag\":\"base\",\"ops\":[[\"r\",{\"n\":1.50,\"s\":\"\\u00e9\"}]]}\n{\"seq\":1,";
    let plain = sess()
        .arg("recover")
        .arg("-")
        .write_stdin(list)
        .output()
        .unwrap();
    let json_out = sess()
        .args(["recover", "--json", "-"])
        .write_stdin(list)
        .output()
        .unwrap();
    let text = String::from_utf8(json_out.stdout.clone()).unwrap();
    let value = String::from_utf8(plain.stdout).unwrap();
    assert!(
        text.ends_with(&format!(",\"value\":{}}}\n", value.trim_end())),
        "{text}"
    );
    let v = one_object(&json_out.stdout);
    assert_eq!(v["torn_last_line"], true);
    assert_eq!(v["batches"], 1);
}

#[test]
fn verify_reports_an_input_it_cannot_open_as_a_problem_and_checks_the_others() {
    let out = sess()
        .args(["verify", "--json"])
        .arg(testdata("dsh.jsonl"))
        .arg("/nonexistent/x.jsonl")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = one_object(&out.stdout);
    assert_eq!(v["inputs"], 2);
    assert_eq!(v["files"][0]["lines"], 28);
    assert_eq!(v["files"][0]["problems"], json!([]));
    let p = &v["files"][1]["problems"][0];
    assert_eq!(p["line"], Value::Null);
    assert!(
        p["message"].as_str().unwrap().starts_with("cannot open"),
        "{p}"
    );
    sess()
        .arg("verify")
        .arg("/nonexistent/x.jsonl")
        .arg(testdata("dsh.jsonl"))
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "FAILED: 28 lines in 2 input(s), 1 problem(s)",
        ));
}

/// A log whose `type` holds an id has a kind per line. The tables of kinds kept each one
/// apart, so stats took memory in proportion to the log (890 MB for 2 million lines):
/// past 10,000 kinds, new ones share one row, in a file's report and in a folder's.
#[test]
fn stats_keeps_at_most_ten_thousand_kinds_apart() {
    let dir = tempfile::tempdir().unwrap();
    let log = |prefix: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("{{\"type\":\"{prefix}{i}\"}}\n"))
            .collect()
    };
    std::fs::write(dir.path().join("a.jsonl"), log("t", 10_050)).unwrap();
    let out = stdout_ok(
        sess()
            .args(["stats", "--json"])
            .arg(dir.path().join("a.jsonl")),
    );
    let types = one_object(&out)["files"][0]["types"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(types.len(), 10_001);
    let other = types.iter().find(|t| t["type"] == "(other kinds)").unwrap();
    assert_eq!(other["count"], 50);
    // A folder: 21 logs of 500 kinds each, and one of 600, whose summary keeps its
    // largest 500 apart; of the 11,000 kinds kept apart, the folder's table keeps 10,000.
    std::fs::remove_file(dir.path().join("a.jsonl")).unwrap();
    for k in 0..21 {
        std::fs::write(
            dir.path().join(format!("l{k}.jsonl")),
            log(&format!("l{k}-"), 500),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("0m.jsonl"), log("m", 600)).unwrap();
    let out = stdout_ok(sess().args(["stats", "--json"]).arg(dir.path()));
    let kinds = one_object(&out)["kinds"].as_array().unwrap().clone();
    assert_eq!(kinds.len(), 10_001);
    let other = kinds.iter().find(|k| k["type"] == "(other kinds)").unwrap();
    assert_eq!(other["count"], 1_100);
    let counted: u64 = kinds.iter().map(|k| k["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 21 * 500 + 600);
    let named = |p: &str| {
        let starts = |k: &&Value| k["type"].as_str().is_some_and(|t| t.starts_with(p));
        kinds.iter().filter(starts).count()
    };
    assert_eq!(named("m"), 500);
}

/// A closed stderr (`sess repair log 2>&1 | head -2`) cost the repaired file: printing the
/// report panicked (exit 101, "failed printing to stderr") before the output was finished.
#[test]
fn a_closed_stderr_does_not_cost_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bad.jsonl");
    let lines: String = (0..50)
        .map(|i| match i % 2 {
            0 => format!("{{\"i\":{i}}}\n"),
            _ => format!("not json {i}\n"),
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let fixed = dir.path().join("fixed.jsonl");
    // A pipe whose reading end is gone: every write to it fails (EPIPE).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_sess"))
        .args(["repair", "-o"])
        .arg(&fixed)
        .arg(&log)
        .stderr(writer)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let kept = std::fs::read_to_string(&fixed).unwrap();
    assert_eq!(kept.lines().count(), 25);
}
