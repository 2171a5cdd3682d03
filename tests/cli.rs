//! End-to-end tests of the foundation commands: cat, stats, verify, completions.

mod common;

use std::io::{Read, Write};
use std::process::{Command as StdCommand, Stdio};

use common::{FIXTURES, conformance, files_in, sess, stdout_ok, testdata, zstd};
use predicates::prelude::*;

#[test]
fn cat_reproduces_every_fixture_byte_for_byte() {
    for f in FIXTURES {
        let input = std::fs::read(testdata(f)).unwrap();
        let out = sess().arg("cat").arg(testdata(f)).output().unwrap();
        assert!(out.status.success(), "{f}");
        assert_eq!(out.stdout, input, "{f}");
    }
}

#[test]
fn cat_reads_zstd_and_stdin() {
    let plain = std::fs::read(testdata("pi-new.jsonl")).unwrap();
    let compressed = zstd(&plain);
    sess()
        .arg("cat")
        .write_stdin(compressed.clone())
        .assert()
        .success()
        .stdout(plain.clone());
    sess()
        .args(["cat", "-"])
        .write_stdin(plain.clone())
        .assert()
        .success()
        .stdout(plain.clone());
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("run.jsonl.zst");
    std::fs::write(&z, &compressed).unwrap();
    sess().arg("cat").arg(&z).assert().success().stdout(plain);
}

#[test]
fn cat_reads_a_run_of_independent_zstd_frames() {
    // DSH writes session.jsonl.zstd as one frame per batch.
    let a = b"{\"type\":\"session\",\"version\":0}\n";
    let b = b"{\"type\":\"turn/start\",\"seq\":0}\n{\"type\":\"turn/end\",\"seq\":1}\n";
    let mut z = zstd(a);
    z.extend(zstd(b));
    let mut expect = a.to_vec();
    expect.extend_from_slice(b);
    sess()
        .arg("cat")
        .write_stdin(z)
        .assert()
        .success()
        .stdout(expect);
}

#[test]
fn cat_concatenates_several_inputs() {
    let a = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let b = std::fs::read(testdata("dsh.jsonl")).unwrap();
    let out = sess()
        .arg("cat")
        .arg(testdata("pi-old.jsonl"))
        .arg(testdata("dsh.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.stdout, [a, b].concat());
}

#[test]
fn pack_and_unpack_of_several_inputs_never_join_an_inputs_last_line_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    // Last lines without a newline: a whole record, a torn one; then a whole input.
    let whole = write("whole.jsonl", "{\"a\":1}\n{\"a\":2}");
    let torn = write("torn.jsonl", "{\"a\":1}\n{\"a\":");
    let next = write("next.jsonl", "{\"b\":1}\n");
    let cases = [
        (&whole, &next, "{\"a\":1}\n{\"a\":2}\n{\"b\":1}\n"),
        (&torn, &next, "{\"a\":1}\n{\"a\":\n{\"b\":1}\n"),
        // The last input's last line stays as it is.
        (&next, &whole, "{\"b\":1}\n{\"a\":1}\n{\"a\":2}"),
    ];
    for (first, second, want) in cases {
        for threads in ["1", "2"] {
            let run = |args: &[&str]| {
                stdout_ok(
                    sess()
                        .args(args)
                        .args(["--threads", threads])
                        .arg(first)
                        .arg(second),
                )
            };
            let what = format!("{} {} on {threads}", first.display(), second.display());
            assert_eq!(
                String::from_utf8(run(&["unpack"])).unwrap(),
                want,
                "unpack {what}"
            );
            assert_eq!(
                String::from_utf8(run(&["pack", "--plain"])).unwrap(),
                want,
                "{what}"
            );
            let packed = run(&["pack"]);
            let back = stdout_ok(sess().arg("unpack").write_stdin(packed));
            assert_eq!(String::from_utf8(back).unwrap(), want, "pack {what}");
        }
        // The first input from a pipe: packed as it arrives.
        let piped = sess()
            .args(["pack", "--plain", "-"])
            .arg(second)
            .write_stdin(std::fs::read(first).unwrap())
            .output()
            .unwrap();
        assert!(piped.status.success());
        assert_eq!(
            String::from_utf8(piped.stdout).unwrap(),
            want,
            "from a pipe"
        );
    }
    sess()
        .arg("unpack")
        .arg(&whole)
        .arg(&next)
        .assert()
        .stderr(predicate::str::contains(
            "with a newline added: another input follows",
        ));
}

#[test]
fn cat_selects_by_a_kind_as_the_profiles_read_it() {
    // Kinds as `sess stats` lists them: a top-level type refined by the field a profile
    // names for it (Codex's payload.type, Claude Code's data.type), and a type that is
    // spelled with a colon itself.
    let log = concat!(
        r#"{"type":"event_msg","payload":{"type":"token_count","n":1}}"#,
        "\n",
        r#"{"type":"event_msg","payload":{"type":"agent_message"}}"#,
        "\n",
        r#"{"type":"progress","data":{"type":"agent_progress","agentId":"a"}}"#,
        "\n",
        r#"{"type":"progress","data":{"type":"bash_progress"}}"#,
        "\n",
        r#"{"type":"odd:kind"}"#,
        "\n",
        r#"{"type":"response_item","payload":{"type":"token_count"}}"#,
        "\n",
    );
    let lines: Vec<&str> = log.lines().collect();
    for (kinds, want) in [
        (&["event_msg:token_count"][..], vec![0]),
        (
            &["progress:agent_progress", "event_msg:agent_message"],
            vec![1, 2],
        ),
        (&["odd:kind"], vec![4]),
        (&["progress"], vec![2, 3]),
        (&["progress:nothing"], vec![]),
    ] {
        let mut cmd = sess();
        cmd.arg("cat");
        for k in kinds {
            cmd.args(["--type", k]);
        }
        let got = stdout_ok(cmd.write_stdin(log));
        let want: String = want.iter().map(|&i| format!("{}\n", lines[i])).collect();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{kinds:?}");
    }
}

#[test]
fn cat_selects_by_type() {
    let out = sess()
        .args(["cat", "--type", "message_end", "-t", "tool_execution_end"])
        .arg(testdata("pi-new.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let types: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.contains("\"type\":\"message_end\"") {
                "m"
            } else {
                "t"
            }
        })
        .collect();
    assert_eq!(types, ["m", "m", "t", "m", "m"]);
    for l in text.lines() {
        assert!(
            l.starts_with("{\"type\":\"message_end\"")
                || l.starts_with("{\"type\":\"tool_execution_end\"")
        );
    }
}

#[test]
fn cat_selects_lines_and_tail() {
    let input = std::fs::read_to_string(testdata("dsh.jsonl")).unwrap();
    let lines: Vec<&str> = input.lines().collect();
    let want = |r: &[&str]| r.iter().map(|l| format!("{l}\n")).collect::<String>();
    sess()
        .args(["cat", "--lines", "2..4"])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .stdout(want(&lines[1..4]));
    sess()
        .args(["cat", "--lines", "27.."])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .stdout(want(&lines[26..]));
    sess()
        .args(["cat", "--tail", "3"])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .stdout(want(&lines[lines.len() - 3..]));
    sess()
        .args(["cat", "--tail", "0"])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .code(2);
    sess()
        .args(["cat", "--lines", "4..2"])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .code(2);
}

/// `--seq` past its range read no further: of two logs given together (or joined in one
/// file), only the first's events in the range came out, with exit 0 and no word.
#[test]
fn cat_seq_finds_its_range_in_every_log_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let log = |tag: &str| -> String {
        (0..6)
            .map(|s| format!("{{\"type\":\"x\",\"seq\":{s},\"log\":\"{tag}\"}}\n"))
            .collect()
    };
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    std::fs::write(&a, log("a")).unwrap();
    std::fs::write(&b, log("b")).unwrap();
    let joined = dir.path().join("joined.jsonl");
    std::fs::write(&joined, log("a") + &log("b")).unwrap();
    let pack = |f: &std::path::Path| {
        let z = f.with_extension("zst");
        sess()
            .arg("pack")
            .arg(f)
            .arg("-o")
            .arg(&z)
            .assert()
            .success();
        z
    };
    let want: String = ["a", "b"]
        .iter()
        .flat_map(|t| {
            (2..4).map(move |s| format!("{{\"type\":\"x\",\"seq\":{s},\"log\":\"{t}\"}}\n"))
        })
        .collect();
    let inputs: [Vec<std::path::PathBuf>; 4] = [
        vec![a.clone(), b.clone()],
        vec![pack(&a), pack(&b)],
        vec![joined.clone()],
        vec![pack(&joined)],
    ];
    for files in &inputs {
        sess()
            .args(["cat", "--seq", "2..3"])
            .args(files)
            .assert()
            .success()
            .stdout(want.clone());
    }
}
#[test]
fn cat_writes_output_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    sess()
        .arg("cat")
        .arg(testdata("pi-old.jsonl"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout("");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(testdata("pi-old.jsonl")).unwrap()
    );
    // A failing run (a damaged frame followed by a good one) leaves the old output untouched
    // and no temporary file behind.
    let mut bad = zstd(&std::fs::read(testdata("pi-new.jsonl")).unwrap());
    let n = bad.len();
    bad[n / 2] ^= 0xFF;
    bad.extend(zstd(b"{\"type\":\"after\"}\n"));
    let badf = dir.path().join("bad.zst");
    std::fs::write(&badf, bad).unwrap();
    sess()
        .arg("cat")
        .arg(&badf)
        .arg("-f")
        .arg("-o")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.zst"));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(testdata("pi-old.jsonl")).unwrap()
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn closed_stdout_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let line = format!("{{\"type\":\"x\",\"pad\":\"{}\"}}\n", "y".repeat(1000));
    std::fs::write(&big, line.repeat(20_000)).unwrap();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .arg("cat")
        .arg(&big)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = vec![0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn a_pipe_closed_before_the_last_flush_is_not_an_error_and_errors_say_it_once() {
    // The reader is gone before sess writes a byte: the small output meets the closed pipe
    // only when it is flushed at the end.
    for args in [&["cat"][..], &["stats"], &["filter"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
            .args(args)
            .arg(common::testdata("pi-old.jsonl"))
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{args:?}: {err}");
    }
    let out = sess().args(["cat", "no/such/file.jsonl"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "sess: error: no/such/file.jsonl: cannot open: No such file or directory (os error 2)\n"
    );
}

#[test]
fn a_200_mib_line_passes_through() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"{\"type\":\"small\"}\n{\"type\":\"huge\",\"text\":\"")
        .unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}\n").unwrap();
    drop(f);
    let len = std::fs::metadata(&path).unwrap().len();
    let out = sess()
        .args(["cat", "--type", "huge"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len() as u64, len - 17);
    assert!(out.stdout.starts_with(b"{\"type\":\"huge\""));
    sess().arg("verify").arg(&path).assert().success();
    sess()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "\"largest\":{}",
            len - 17
        )));
}

#[test]
fn torn_last_line_is_reported() {
    let data = b"{\"type\":\"a\"}\n{\"type\":\"b\",\"x\":[1,";
    sess()
        .arg("verify")
        .write_stdin(&data[..])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "<stdin>:2: torn last line: no final newline and not a JSON value (19 bytes at byte offset 13",
        ));
    // cat keeps the complete line and drops the torn one with a warning.
    sess()
        .arg("cat")
        .write_stdin(&data[..])
        .assert()
        .success()
        .stdout("{\"type\":\"a\"}\n")
        .stderr(predicate::str::contains(
            "<stdin>:2: the last line has no final newline (19 bytes at byte offset 13); not a JSON value (a torn write): dropped",
        ));
    // A complete JSON value without a final newline is a record: kept by cat, with the
    // newline added, and reported (as a missing newline, not as torn) by verify.
    sess()
        .arg("cat")
        .write_stdin("{\"a\":1}")
        .assert()
        .success()
        .stdout("{\"a\":1}\n")
        .stderr(predicate::str::contains(
            "kept as a record, with the newline added",
        ));
    sess()
        .arg("verify")
        .write_stdin("{\"a\":1}")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "the last line has no final newline",
        ))
        .stdout(predicate::str::contains("torn").not());
    sess()
        .arg("stats")
        .write_stdin(&data[..])
        .assert()
        .success()
        .stdout(predicate::str::contains("torn lines"));
}

#[test]
fn malformed_line_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"type\":\"a\"}\n{\"type\":\"b\",}\n{\"c\":tru}\n").unwrap();
    let name = path.display().to_string();
    sess()
        .arg("verify")
        .arg(&path)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(format!(
            "{name}:2:13: invalid JSON: expected a string key (byte offset 25)"
        )))
        .stdout(predicate::str::contains(format!(
            "{name}:3:6: invalid JSON: expected a JSON value"
        )))
        .stdout(predicate::str::contains(
            "FAILED: 3 lines in 1 input(s), 2 problem(s)",
        ))
        .stderr(predicate::str::contains("verify found 2 problem(s)"));
}

#[test]
fn invalid_utf8_is_kept_by_cat_and_flagged_by_verify() {
    let data = b"{\"type\":\"a\",\"t\":\"\xff\xfe\"}\n{\"type\":\"b\"}\n";
    sess()
        .arg("cat")
        .write_stdin(&data[..])
        .assert()
        .success()
        .stdout(&data[..]);
    sess()
        .arg("verify")
        .write_stdin(&data[..])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "<stdin>:1:18: invalid JSON: expected valid UTF-8",
        ));
    sess()
        .args(["cat", "-t", "b"])
        .write_stdin(&data[..])
        .assert()
        .stdout("{\"type\":\"b\"}\n");
}

#[test]
fn crlf_lines_are_kept() {
    let data = "{\"type\":\"a\"}\r\n{\"type\":\"b\"}\r\n";
    sess().arg("cat").write_stdin(data).assert().stdout(data);
    sess().arg("verify").write_stdin(data).assert().success();
    sess()
        .args(["cat", "-t", "b"])
        .write_stdin(data)
        .assert()
        .stdout("{\"type\":\"b\"}\r\n");
}

#[test]
fn empty_input_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    sess().arg("cat").arg(&empty).assert().success().stdout("");
    sess()
        .arg("verify")
        .arg(&empty)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok: 0 lines"));
    sess()
        .args(["stats", "--json"])
        .arg(&empty)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"events\":0"));
}

#[test]
fn missing_file_is_an_error_naming_it() {
    for cmd in ["cat", "stats"] {
        sess()
            .args([cmd, "/no/such/file.jsonl"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("/no/such/file.jsonl: cannot open"));
    }
    // verify lists it among the problems it found.
    sess()
        .args(["verify", "/no/such/file.jsonl"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("/no/such/file.jsonl: cannot open"));
}

#[test]
fn usage_errors_exit_2() {
    sess().arg("frobnicate").assert().code(2);
    sess().args(["cat", "--lines", "x"]).assert().code(2);
}

#[test]
fn stats_tells_the_dialect_of_every_fixture() {
    let expect = [
        ("pi-old.jsonl", "pi-stream-old"),
        ("pi-new.jsonl", "pi-stream-new"),
        ("pi-session.jsonl", "pi-session"),
        ("dsh.jsonl", "dsh"),
        ("oplist.jsonl", "op-list"),
    ];
    for (f, dialect) in expect {
        let out = sess()
            .args(["stats", "--json"])
            .arg(testdata(f))
            .output()
            .unwrap();
        assert!(out.status.success(), "{f}");
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let v = &all["files"][0];
        assert_eq!(v["dialect"], dialect, "{f}");
        let input = std::fs::read_to_string(testdata(f)).unwrap();
        assert_eq!(v["events"], input.lines().count(), "{f}");
        assert_eq!(v["bytes"], input.len(), "{f}");
        let sum: u64 = v["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, input.len() as u64, "{f}");
        sess()
            .arg("stats")
            .arg(testdata(f))
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("dialect: {dialect}")));
    }
}

#[test]
fn stats_counts_the_pi_old_fixture_exactly() {
    let out = sess()
        .args(["stats", "--json"])
        .arg(testdata("pi-old.jsonl"))
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = &all["files"][0];
    let row = |t: &str| {
        v["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["type"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(row("message_update")["count"], 5);
    assert_eq!(row("message_end")["count"], 2);
    assert_eq!(v["types"][0]["type"], "message_update");
}

#[test]
fn verify_passes_every_fixture() {
    for f in FIXTURES {
        sess()
            .arg("verify")
            .arg(testdata(f))
            .assert()
            .success()
            .stdout(predicate::str::contains("ok:"));
    }
}

#[test]
fn completions_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        sess()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("sess"))
            .stdout(predicate::str::contains("profiles"))
            // A hidden command (for packagers) is not offered.
            .stdout(predicate::str::contains("generate-man").not());
    }
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn conformance_pi_sessions_and_dsh_fixtures_are_read() {
    let mut files = Vec::new();
    {
        let dir = conformance("pi-sessions");
        files.extend(files_in(&dir, ".jsonl"));
    }
    {
        let dir = conformance("dsh-fixtures");
        files.extend(files_in(&dir, ".jsonl"));
    }
    for f in &files {
        let input = std::fs::read(f).unwrap();
        let out = sess().arg("cat").arg(f).output().unwrap();
        assert!(out.status.success(), "{}", f.display());
        // cat expands packed rows; a log without rows comes out as it went in.
        let has_rows = String::from_utf8_lossy(&input).contains("-chunks\",\"");
        if !has_rows {
            assert_eq!(out.stdout, input, "{}", f.display());
        }
        let out = sess().args(["stats", "--json"]).arg(f).output().unwrap();
        assert!(out.status.success(), "{}", f.display());
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let v = &all["files"][0];
        assert_eq!(v["bytes"], input.len(), "{}", f.display());
        // The producer's own kinds are known to its profile: `*` marks a newer release's.
        if v["dialect"] == "dsh" {
            assert_eq!(v["unknown_kinds"], serde_json::json!([]), "{}", f.display());
        }
        sess().arg("verify").arg(f).assert().success();
    }
    {
        let dir = conformance("pi-sessions");
        for f in files_in(&dir, ".jsonl") {
            let out = sess().args(["stats", "--json"]).arg(&f).output().unwrap();
            let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let v = &all["files"][0];
            assert_eq!(v["dialect"], "pi-session", "{}", f.display());
        }
    }
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn conformance_pi_streams_dialects() {
    let dir = conformance("pi-streams");
    for (f, dialect) in [
        ("pi-json-small.jsonl", "pi-stream-old"),
        ("pi16-json-small.jsonl", "pi-stream-new"),
        ("pi16-json-medium.jsonl", "pi-stream-new"),
    ] {
        let out = sess()
            .args(["stats", "--json"])
            .arg(dir.join(f))
            .output()
            .unwrap();
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let v = &all["files"][0];
        assert_eq!(v["dialect"], dialect, "{f}");
    }
}

#[test]
fn every_command_runs_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    for f in FIXTURES {
        let input = testdata(f);
        for args in [
            &["cat"][..],
            &["stats"],
            &["stats", "--json"],
            &["verify"],
            &["filter", "--stats"],
            &["filter", "--include-live-events"],
            &["pack", "--plain"],
            &["unpack"],
        ] {
            sess().args(args).arg(&input).assert().success();
        }
        let z = dir.path().join(format!("{f}.zst"));
        sess()
            .args(["pack", "-o"])
            .arg(&z)
            .arg(&input)
            .assert()
            .success();
        sess().args(["verify"]).arg(&z).assert().success();
        sess()
            .args(["repair", "-o"])
            .arg(dir.path().join(format!("{f}.fixed.zst")))
            .arg(&z)
            .assert()
            .success();
        // Every line of a fixture is a JSON value, so each fixture is also a stream of
        // snapshots: diff it, and recover gives its last line back.
        let list = dir.path().join(format!("{f}.ops.jsonl"));
        sess()
            .args(["diff", "-o"])
            .arg(&list)
            .arg(&input)
            .assert()
            .success();
        let last = std::fs::read_to_string(&input)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_string();
        let got = common::stdout_ok(sess().arg("recover").arg(&list));
        assert_eq!(
            common::parse_j(&got),
            common::parse_j(last.as_bytes()),
            "{f}"
        );
    }
    sess()
        .arg("recover")
        .arg(testdata("oplist.jsonl"))
        .assert()
        .success();
}

#[test]
fn sizes_and_durations_take_units() {
    let log = testdata("pi-old.jsonl");
    let exact = sess()
        .args([
            "pack",
            "--plain",
            "--intern-min",
            "256",
            "--frame-size",
            "1024",
        ])
        .arg(&log)
        .output()
        .unwrap();
    let with_unit = sess()
        .args([
            "pack",
            "--plain",
            "--intern-min",
            "0.25K",
            "--frame-size",
            "1K",
        ])
        .arg(&log)
        .output()
        .unwrap();
    // 0.25K is not a size: sizes are whole numbers.
    assert_eq!(with_unit.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&with_unit.stderr).contains("whole number"));
    let with_unit = sess()
        .args([
            "pack",
            "--plain",
            "--intern-min",
            "256B",
            "--frame-size",
            "1KiB",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert!(exact.status.success() && with_unit.stdout == exact.stdout);
    let bounded = |bytes: &str| {
        sess()
            .args([
                "filter",
                "--include-live-events",
                "--max-frame-bytes",
                bytes,
            ])
            .arg(&log)
            .output()
            .unwrap()
    };
    assert_eq!(bounded("2K").stdout, bounded("2048").stdout);
    assert_eq!(bounded("1023").status.code(), Some(2));
    sess()
        .args(["pack", "--plain", "--window", "2s"])
        .arg(&log)
        .assert()
        .success();
    sess()
        .args(["pack", "--plain", "--window", "2h"])
        .arg(&log)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown unit"));
}

#[test]
fn line_positions_start_at_one_and_a_seq_range_on_a_log_without_seq_says_so() {
    let log = testdata("pi-old.jsonl");
    for args in [["--lines", "0"], ["--lines", "0..3"], ["--tail", "0"]] {
        sess().arg("cat").args(args).arg(&log).assert().code(2);
    }
    sess()
        .args(["cat", "--lines", "..2"])
        .arg(&log)
        .assert()
        .success()
        .stdout(predicate::function(|o: &[u8]| {
            o.iter().filter(|&&b| b == b'\n').count() == 2
        }));
    sess()
        .args(["cat", "--seq", "1..5"])
        .arg(&log)
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains(
            "no event read has a top-level seq",
        ));
    // A log with seq says nothing.
    sess()
        .args(["cat", "--seq", "1..2"])
        .arg(testdata("dsh.jsonl"))
        .assert()
        .success()
        .stderr("");
}

#[test]
fn help_that_cannot_be_written_is_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .args(["pack", "--help"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to stdout"));
    // A reader that went away is not one.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .arg("--help")
        .stdout(writer)
        .output()
        .unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
}

#[test]
fn an_existing_output_is_replaced_only_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "precious\n").unwrap();
    let log = testdata("pi-old.jsonl");
    for cmd in [
        &["cat"][..],
        &["filter"],
        &["pack"],
        &["stats"],
        &["unpack"],
    ] {
        sess()
            .args(cmd)
            .arg(&log)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "already exists; -f (--force) replaces it",
            ));
        assert_eq!(std::fs::read(&out).unwrap(), b"precious\n", "{cmd:?}");
    }
    sess()
        .args(["repair", "-o"])
        .arg(&out)
        .arg(&log)
        .assert()
        .code(1);
    sess()
        .args(["cat", "--force", "-o"])
        .arg(&out)
        .arg(&log)
        .assert()
        .success();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&log).unwrap());
    // A device is written to, as before; -f means nothing without -o.
    sess()
        .arg("cat")
        .arg(&log)
        .args(["-o", "/dev/null"])
        .assert()
        .success();
    sess().args(["cat", "-f"]).arg(&log).assert().code(2);
}

#[test]
fn help_says_what_unpack_expands_and_what_diff_keeps() {
    let help = |cmd: &str| {
        String::from_utf8(sess().args([cmd, "--help"]).output().unwrap().stdout).unwrap()
    };
    let unpack = help("unpack");
    for what in ["text-chunks", "snapshot-deltas", "interned lines"] {
        assert!(unpack.contains(what), "unpack --help: {what}");
    }
    let diff = help("diff");
    assert!(diff.contains("key order") && diff.contains("1.50 comes back as 1.5"));
    // What diff says is what recover does.
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snaps.jsonl");
    std::fs::write(&snaps, "{\"a\":1,\"b\":2}\n{\"b\":3,\"a\":1,\"c\":1.50}\n").unwrap();
    let list = sess().arg("diff").arg(&snaps).output().unwrap().stdout;
    let ops = dir.path().join("ops.jsonl");
    std::fs::write(&ops, list).unwrap();
    sess()
        .arg("recover")
        .arg(&ops)
        .assert()
        .success()
        .stdout("{\"a\":1,\"b\":3,\"c\":1.5}\n");
}

#[test]
fn a_dsh_header_without_version_is_dsh_by_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::write(
        &log,
        "{\"type\":\"session\",\"id\":\"x\",\"createdAt\":1,\"cwd\":\"/tmp\"}\n\
         {\"type\":\"request/header\",\"seq\":0,\"time\":1,\"data\":{}}\n",
    )
    .unwrap();
    let stats = sess()
        .args(["stats", "--json"])
        .arg(&log)
        .output()
        .unwrap()
        .stdout;
    let v: serde_json::Value = serde_json::from_slice(&stats).unwrap();
    assert_eq!(v["files"][0]["dialect"], "dsh");
}

#[test]
fn every_command_says_cannot_write_to_stdout_and_exits_1() {
    let log = testdata("pi-old.jsonl");
    let log = log.to_str().unwrap();
    let dir = testdata("");
    let dir = dir.to_str().unwrap();
    let runs: [&[&str]; 11] = [
        &["cat", log],
        &["stats", dir],
        &["compact", dir],
        &["stats", log],
        &["stats", "--json", log],
        &["filter", "--stats", log],
        &["pack", "--plain", log],
        &["unpack", log],
        &["verify", log],
        &["profiles"],
        &["completions", "bash"],
    ];
    for args in runs {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
    }
}

#[test]
fn recovery_is_offered_only_where_it_applies() {
    // Commands that read no compressed log, or read it their own way, refuse it as a usage
    // error instead of ignoring it.
    for args in [
        &["diff", "--recovery", "skip-corrupt"][..],
        &["completions", "bash", "--recovery", "skip-corrupt"],
        &["verify", "--recovery", "skip-corrupt"],
    ] {
        sess()
            .args(args)
            .write_stdin("")
            .assert()
            .code(2)
            .stderr(predicate::str::contains("unexpected argument '--recovery'"));
    }
    // Where it is offered, it is honoured: skip-corrupt reads past a damaged frame.
    let dir = tempfile::tempdir().unwrap();
    let packed = dir.path().join("p.zst");
    sess()
        .args(["pack", "--frame-size", "1K"])
        .arg(common::testdata("pi-new.jsonl"))
        .arg("-o")
        .arg(&packed)
        .assert()
        .success();
    let mut z = std::fs::read(&packed).unwrap();
    z[1500] ^= 0xff;
    std::fs::write(&packed, &z).unwrap();
    for cmd in ["cat", "filter", "stats"] {
        sess().arg(cmd).arg(&packed).assert().code(1);
        sess()
            .args([cmd, "--recovery", "skip-corrupt"])
            .arg(&packed)
            .assert()
            .success();
    }
}

/// `stats --exact` is what `sess pack` writes, to the byte, of a small log as a file and
/// from a pipe: of a file, pack writes its one frame as the input as it came when that
/// compresses smaller (pi's snapshot rows, on these), and stats counts so too; of a stream
/// it never does, and neither does stats.
#[test]
fn stats_exact_is_what_pack_writes() {
    let bytes = |cmd: &mut assert_cmd::Command| -> Vec<u8> {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let stats = |cmd: &mut assert_cmd::Command| -> Option<u64> {
        let report: serde_json::Value = serde_json::from_slice(&bytes(cmd)).unwrap();
        report["files"][0]["pack"]["bytes"].as_u64()
    };
    for name in [
        "pi-old.jsonl",
        "pi-new.jsonl",
        "pi-session.jsonl",
        "dsh.jsonl",
        "oplist.jsonl",
    ] {
        let file = testdata(name);
        let log = std::fs::read(&file).unwrap();
        let of_file = bytes(sess().args(["pack", "-q"]).arg(&file)).len() as u64;
        let of_stream = bytes(sess().args(["pack", "-q"]).write_stdin(log.clone())).len() as u64;
        let exact = ["stats", "--exact", "--json"];
        assert_eq!(
            stats(sess().args(exact).arg(&file)),
            Some(of_file),
            "{name}"
        );
        assert_eq!(
            stats(sess().args(exact).write_stdin(log)),
            Some(of_stream),
            "{name}"
        );
    }
}

/// Every command reads stdin as `-` or with no file: `recover` with no file did not, and
/// `repair -` failed to open a file named `-`. repair seeks, so it takes a file given as
/// stdin and names a pipe as what it cannot read.
#[test]
fn recover_and_repair_read_stdin() {
    sess()
        .arg("recover")
        .write_stdin("[[\"r\",{\"n\":1}]]\n[[\"s\",[\"n\"],2]]\n")
        .assert()
        .success()
        .stdout("{\"n\":2}\n");
    let dir = tempfile::tempdir().unwrap();
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, "{\"a\":1}\n{\"b\"").unwrap();
    let fixed = dir.path().join("fixed.jsonl");
    let out = StdCommand::new(env!("CARGO_BIN_EXE_sess"))
        .args(["repair", "-", "-o"])
        .arg(&fixed)
        .stdin(std::fs::File::open(&torn).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("<stdin>: kept 1 line(s)"), "{err}");
    assert_eq!(std::fs::read(&fixed).unwrap(), b"{\"a\":1}\n");
    // From the file's first byte, wherever the shell left stdin's offset.
    let out = common::sess_in_bash(
        "{ dd bs=1 count=3 of=/dev/null 2>/dev/null; ",
        &format!(
            "repair - -f -o '{}'; }} < '{}'",
            fixed.display(),
            torn.display()
        ),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&fixed).unwrap(), b"{\"a\":1}\n");
    sess()
        .args(["repair", "-", "-f", "-o"])
        .arg(&fixed)
        .write_stdin("{\"a\":1}\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "<stdin>: not a regular file: repair reads a file it can seek in",
        ));
}
