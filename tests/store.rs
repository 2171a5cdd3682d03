//! `sess stats DIR`: a whole store by producer, session, kind and age, with what filter,
//! pack and compact would write; and its output, and compact's, loaded into DuckDB.

mod common;

use std::fs;
use std::path::Path;

use common::store::{big_log, store};
use common::{sess, stdout_ok};
use serde_json::Value;

fn report(dir: &Path, args: &[&str]) -> (Value, Option<i32>) {
    let out = sess()
        .args(["stats", "--json"])
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (v, out.status.code())
}

fn producer<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["producer"] == name)
        .unwrap_or_else(|| panic!("no {name} in {r}"))
}

#[test]
fn a_store_is_told_apart_by_producer_session_and_age() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    // A log written today, and two that are not logs at all.
    fs::write(dir.path().join("today.jsonl"), big_log(30)).unwrap();
    fs::write(dir.path().join("nul.jsonl"), b"\x01\x00garbage\n").unwrap();
    fs::write(
        dir.path().join("bad.jsonl"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    )
    .unwrap();
    // A log where pi keeps its sessions, whose lines (an op list) name no producer: only
    // its folder tells it.
    let pi = dir
        .path()
        .join("pi/agent/sessions/--w--/2026-11-01_abc.jsonl");
    fs::create_dir_all(pi.parent().unwrap()).unwrap();
    fs::copy(common::testdata("oplist.jsonl"), &pi).unwrap();
    let (r, code) = report(dir.path(), &[]);
    assert_eq!(code, Some(1), "an unreadable log fails the command: {r}");
    // pi-session.jsonl at the top (and today.jsonl, whose "message" lines are pi's) are
    // told by their lines, the one in pi's folder by its path; dsh.jsonl (DeepSeek Harness
    // keeps no fixed folder) by its lines.
    assert_eq!(producer(&r, "pi-session")["logs"], 3, "{r}");
    assert_eq!(producer(&r, "dsh")["logs"], 1, "{r}");
    let named = |name: &str| {
        r["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session"] == name)
    };
    assert!(named("2026-11-01_abc"), "{r}");
    assert_eq!(r["schema"], "sess-store/1");
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{r}");
    assert!(errors[0]["file"].as_str().unwrap().ends_with("bad.jsonl"));
    // The file is named once: in its field, not again in the message.
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("PNG") && !message.contains("bad.jsonl"),
        "{r}"
    );
    assert!(
        errors[1]["message"]
            .as_str()
            .unwrap()
            .contains("binary data"),
        "{r}"
    );
    // The two that could not be read are listed, and left out of every figure.
    assert_eq!(r["logs"], logs.len() as u64 + 2);
    assert_eq!(r["other_files"], 1, "notes.txt is counted, not read");
    // The subagent's log belongs to its parent's session.
    let claude = producer(&r, "claude-code");
    assert_eq!(
        (claude["logs"].as_u64(), claude["sessions"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(producer(&r, "codex")["logs"], 1);
    let session = r["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["producer"] == "codex")
        .unwrap();
    assert_eq!(session["session"], "x");
    // Ages: the store's logs are 20 days old; today's two readable ones are under a day.
    let ages = r["ages"].as_array().unwrap();
    let bucket = |label: &str| ages.iter().find(|a| a["label"] == label).unwrap()["logs"].clone();
    assert_eq!(bucket("7-30 days"), logs.len() as u64);
    assert_eq!(bucket("< 1 day"), 2);
    // compact would take the cold logs only; pack would shrink them all.
    let s = &r["savings"];
    assert_eq!(s["compact"]["logs"], logs.len() as u64);
    assert!(s["compact"]["bytes_after"].as_u64() < s["compact"]["bytes"].as_u64());
    assert!(s["pack"]["bytes_after"].as_u64() < s["pack"]["bytes"].as_u64());
    let (r30, _) = report(dir.path(), &["--older-than", "30"]);
    assert_eq!(r30["savings"]["compact"]["logs"], 0);
}

#[test]
fn the_report_is_the_same_on_one_thread_or_two() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let strip = |mut v: Value| {
        // The only thing that moves between two runs: how old a session is, in days.
        for s in v["sessions"].as_array_mut().unwrap() {
            s["age_days"] = Value::Null;
        }
        v
    };
    let (one, _) = report(dir.path(), &["--threads", "1"]);
    let (two, _) = report(dir.path(), &["--threads", "2"]);
    assert_eq!(strip(one), strip(two));
}

#[test]
fn the_table_draws_ages_as_bars_and_lists_the_largest_sessions() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let text = String::from_utf8(stdout_ok(
        sess().args(["stats", "--top", "2"]).arg(dir.path()),
    ))
    .unwrap();
    assert!(text.contains("largest sessions (2 of "), "{text}");
    let row = text.lines().find(|l| l.contains("7-30 days")).unwrap();
    assert!(row.contains(&"█".repeat(30)), "{row}");
    assert!(text.contains("sess compact --compat"), "{text}");
}

#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
#[test]
fn the_captured_stores_of_real_producers_are_told_apart() {
    let captures = common::conformance("captures");
    let (r, code) = report(&captures, &[]);
    assert_eq!(code, Some(0), "{r}");
    // Claude Code: two projects, one session with a subagent.
    let claude = producer(&r, "claude-code");
    assert_eq!(
        (claude["logs"].as_u64(), claude["sessions"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(producer(&r, "codex")["logs"], 2);
    assert_eq!(producer(&r, "gemini-cli")["logs"], 3);
    // stdout captures are told by their lines.
    assert_eq!(producer(&r, "claude-code-stream")["logs"], 5);
    assert_eq!(producer(&r, "codex-exec")["logs"], 3);
}

/// Runs a Python program with DuckDB and returns what it prints.
fn duckdb(program: &str) -> String {
    let mut python = assert_cmd::Command::new("python3");
    String::from_utf8(stdout_ok(python.args(["-c", program]))).unwrap()
}

#[cfg_attr(sess_no_duckdb, ignore = "DuckDB's Python package is not installed")]
#[test]
fn stats_json_and_compat_files_load_in_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let json = dir.path().join("report.json");
    fs::write(
        &json,
        stdout_ok(sess().args(["stats", "--json"]).arg(dir.path())),
    )
    .unwrap();
    let got = duckdb(&format!(
        "import duckdb\n\
         r = duckdb.sql(\"select logs, savings.pack.bytes_after, len(producers) \
         from read_json('{}')\").fetchall()[0]\n\
         print(*r)",
        json.display()
    ));
    let r: Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    let want = format!(
        "{} {} {}\n",
        r["logs"],
        r["savings"]["pack"]["bytes_after"],
        r["producers"].as_array().unwrap().len()
    );
    assert_eq!(got, want);
    fs::remove_file(&json).unwrap();
    // The logs in --compat form: every line a row, as in the logs themselves.
    stdout_ok(
        sess()
            .args(["compact", "--apply", "--compat"])
            .arg(dir.path()),
    );
    let codex = logs
        .iter()
        .find(|l| l.to_string_lossy().contains("rollout"))
        .unwrap();
    assert!(!codex.exists(), "the log was replaced");
    let got = duckdb(&format!(
        "import duckdb\n\
         print(duckdb.sql(\"select count(*) from read_json_auto('{}.zst')\").fetchall()[0][0])",
        codex.display()
    ));
    assert_eq!(got, "12000\n");
}

#[test]
fn a_store_says_how_its_pack_bytes_were_found() {
    let dir = tempfile::tempdir().unwrap();
    // A reply streamed in 300 deltas: its snapshot rows are what stats estimates rather
    // than builds (the pi-old fixture is too small: pack writes it as it came, and both
    // ways count that).
    fs::write(dir.path().join("a.jsonl"), common::pi_old_reply(300)).unwrap();
    let (estimated, code) = report(dir.path(), &[]);
    assert_eq!(code, Some(0), "{estimated}");
    let (exact, _) = report(dir.path(), &["--exact"]);
    assert_eq!(estimated["pack_accuracy"], "estimate");
    assert_eq!(exact["pack_accuracy"], "exact");
    // Each as the log alone gives it: the two differ on this small log.
    let alone = |exact: bool| {
        let mut cmd = sess();
        cmd.args(["stats", "--json"])
            .arg(dir.path().join("a.jsonl"));
        if exact {
            cmd.arg("--exact");
        }
        let v: Value = serde_json::from_slice(&stdout_ok(&mut cmd)).unwrap();
        v["files"][0]["pack"]["bytes"].clone()
    };
    let pack = |r: &Value| r["savings"]["pack"]["bytes_after"].clone();
    assert_eq!(pack(&estimated), alone(false));
    assert_eq!(pack(&exact), alone(true));
    assert_ne!(pack(&estimated), pack(&exact));
}
