//! End-to-end tests of `sess filter`.

mod common;

use common::{conformance, files_in, sess, stdout_ok, testdata};
use predicates::prelude::*;

fn lines(text: &[u8]) -> Vec<String> {
    String::from_utf8(text.to_vec())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn kind(line: &str) -> String {
    sess::event::kind(line.as_bytes())
        .unwrap_or_default()
        .into_owned()
}

fn filter(args: &[&str], input: &[u8]) -> Vec<String> {
    lines(&stdout_ok(
        sess().arg("filter").args(args).write_stdin(input.to_vec()),
    ))
}

const FRAMES: [&str; 2] = ["message_update", "tool_execution_update"];
const BOUNDARIES: [&str; 2] = ["turn_end", "agent_end"];

/// The facts of a pi log: every line but frames and boundaries.
fn facts(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| !FRAMES.contains(&kind(l).as_str()) && !BOUNDARIES.contains(&kind(l).as_str()))
        .cloned()
        .collect()
}

#[test]
fn old_generation_keeps_facts_and_projects_boundaries() {
    let input = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let out = filter(&[], &input);
    assert_eq!(
        facts(&out),
        facts(&lines(&input)),
        "facts byte for byte, in order"
    );
    assert!(out.iter().all(|l| !FRAMES.contains(&kind(l).as_str())));
    assert_eq!(
        out[out.len() - 2],
        r#"{"type":"turn_end","messageRole":"assistant","toolResultCount":0}"#
    );
    assert_eq!(
        out[out.len() - 1],
        r#"{"type":"agent_end","messageCount":2}"#
    );
}

#[test]
fn new_generation_keeps_facts_and_projects_boundaries() {
    let input = std::fs::read(testdata("pi-new.jsonl")).unwrap();
    let out = filter(&[], &input);
    assert_eq!(facts(&out), facts(&lines(&input)));
    let b: Vec<&String> = out
        .iter()
        .filter(|l| BOUNDARIES.contains(&kind(l).as_str()))
        .collect();
    assert_eq!(
        b,
        [
            r#"{"type":"turn_end","messageRole":"assistant","toolResultCount":1}"#,
            r#"{"type":"turn_end","messageRole":"assistant","toolResultCount":0}"#,
            r#"{"type":"agent_end","messageCount":4,"willRetry":false}"#,
        ]
    );
}

#[test]
fn unknown_types_are_facts() {
    let input = b"{\"type\":\"session\",\"version\":3}\n{\"type\":\"brand_new_event\",\"x\":[1]}\n{\"nottype\":1}\nnot json at all\n";
    assert_eq!(filter(&[], input), lines(input));
}

#[test]
fn a_log_cut_mid_message_keeps_the_last_snapshot() {
    let input = lines(&std::fs::read(testdata("pi-old.jsonl")).unwrap());
    // Cut after the third message_update (line 9 of 14).
    let cut: String = input[..9].iter().map(|l| format!("{l}\n")).collect();
    let out = filter(&[], cut.as_bytes());
    let mut want: Vec<String> = input[..6].to_vec();
    want.push(input[8].clone());
    assert_eq!(out, want);
}

#[test]
fn a_log_cut_mid_message_keeps_every_delta() {
    let input = lines(&std::fs::read(testdata("pi-new.jsonl")).unwrap());
    // Cut inside the first assistant message, after four deltas (lines 7..10).
    let cut: String = input[..10].iter().map(|l| format!("{l}\n")).collect();
    let out = filter(&[], cut.as_bytes());
    assert_eq!(out, input[..10].to_vec());
}

#[test]
fn an_orphan_run_is_written_before_the_event_that_proves_it() {
    let input = lines(&std::fs::read(testdata("pi-new.jsonl")).unwrap());
    // Drop the first assistant message_end (line 14): the next message_start never comes
    // before tool events, so the deltas are written at agent_end... here at the second
    // message_start, which proves no message_end will come for the first message.
    let mut log = input.clone();
    log.remove(13);
    let text: String = log.iter().map(|l| format!("{l}\n")).collect();
    let out = filter(&[], text.as_bytes());
    let deltas: Vec<&String> = log[6..13].iter().collect();
    let at = out
        .iter()
        .position(|l| *l == *deltas[0])
        .expect("the orphaned deltas are kept");
    assert_eq!(out[at..at + 7].iter().collect::<Vec<_>>(), deltas);
    assert!(
        out[at + 7].starts_with(r#"{"type":"message_start","message":{"role":"toolResult""#),
        "{}",
        out[at + 7]
    );
}

#[test]
fn message_update_after_the_last_message_end_is_kept() {
    let mut input = std::fs::read(testdata("pi-new.jsonl")).unwrap();
    let late = br#"{"type":"message_update","usage":{},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"late"}}"#;
    input.extend_from_slice(late);
    input.push(b'\n');
    let out = filter(&[], &input);
    assert_eq!(out.last().unwrap().as_bytes(), late);
}

#[test]
fn an_unfinished_tool_keeps_its_last_snapshot() {
    let input = lines(&std::fs::read(testdata("pi-new.jsonl")).unwrap());
    // Cut after the second tool_execution_update (line 17).
    let cut: String = input[..17].iter().map(|l| format!("{l}\n")).collect();
    let out = filter(&[], cut.as_bytes());
    assert_eq!(out.last().unwrap(), &input[16]);
    assert!(
        !out.contains(&input[15]),
        "the earlier snapshot is superseded"
    );
}

#[test]
fn include_live_events_keeps_bounded_frames() {
    let input = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let out = filter(&["--include-live-events"], &input);
    let mut want = lines(&input);
    for l in &mut want {
        if BOUNDARIES.contains(&kind(l).as_str()) {
            *l = String::new();
        }
    }
    assert_eq!(out.len(), want.len());
    for (o, w) in out.iter().zip(&want) {
        if !w.is_empty() {
            assert_eq!(o, w, "frames within the cap are kept as they are");
        }
    }
    // A big frame is bounded; facts and successors are not.
    let big_text = "x\u{1}文🦀\"".repeat(20_000);
    let big = serde_json::json!({"type":"tool_execution_update","toolCallId":"c1","toolName":"bash","args":{"a":1},"partialResult":{"content":[{"type":"text","text":big_text}]}});
    let end = serde_json::json!({"type":"tool_execution_end","toolCallId":"c1","result":{"content":[{"type":"text","text":big_text}]}});
    let log = format!("{{\"type\":\"session\",\"version\":3}}\n{big}\n{end}\n");
    let out = filter(
        &["--include-live-events", "--max-frame-bytes", "2048"],
        log.as_bytes(),
    );
    assert_eq!(out.len(), 3);
    assert!(out[1].len() <= 2048, "{}", out[1].len());
    assert!(out[1].contains("[live output truncated]"));
    assert_eq!(out[2], end.to_string(), "successors are never bounded");
}

/// The last snapshot of a run that never got its successor is the only copy of its output:
/// with --include-live-events it was bounded like any frame, and so lost (a Gemini CLI
/// message's final version, 730 KB with its tool calls, became 843 bytes).
#[test]
fn include_live_events_keeps_an_orphaned_run_whole_as_well() {
    let text = |n: usize| "word ".repeat(n);
    let update = |n: usize| {
        serde_json::json!({"type":"tool_execution_update","toolCallId":"c1","toolName":"bash","partialResult":{"content":[{"type":"text","text":text(n)}]}})
        .to_string()
    };
    let (first, last) = (update(100), update(2000));
    let log = format!("{{\"type\":\"session\",\"version\":3}}\n{first}\n{last}\n");
    let plain = filter(&[], log.as_bytes());
    assert_eq!(
        plain.last(),
        Some(&last),
        "without a successor, the last frame is kept"
    );
    let args = ["--include-live-events", "--max-frame-bytes", "2048"];
    let live = filter(&args, log.as_bytes());
    // Each frame in its place (the last bounded), then the orphan's frame whole.
    assert_eq!(live.len(), 4, "{live:?}");
    assert_eq!(live[1], first, "within the bound: as it is, and not again");
    assert!(live[2].contains("[live output truncated]"), "{}", live[2]);
    assert_eq!(live[3], last);
    // Delta frames: every frame of an orphaned run is kept; those over the bound twice.
    let delta = |n: usize| {
        format!(
            "{{\"type\":\"progress\",\"id\":\"b\",\"text\":\"{}\"}}",
            text(n)
        )
    };
    let log = format!("{}\n{}\n", delta(10), delta(1000));
    let args = ["--profile", "none", "--frame", "progress=done"];
    let plain = filter(&args, log.as_bytes());
    assert_eq!(plain, [delta(10), delta(1000)]);
    let mut live_args = args.to_vec();
    live_args.extend(["--include-live-events", "--max-frame-bytes", "1024"]);
    let live = filter(&live_args, log.as_bytes());
    assert_eq!(live.len(), 3, "{live:?}");
    assert_eq!((&live[0], &live[2]), (&delta(10), &delta(1000)));
}

#[test]
fn max_frame_bytes_has_a_floor() {
    sess()
        .args(["filter", "--max-frame-bytes", "100"])
        .write_stdin("")
        .assert()
        .code(2);
}

#[test]
fn keep_boundaries_and_only() {
    let input = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let all = lines(&input);
    let out = filter(&["--keep-boundaries"], &input);
    assert_eq!(
        out,
        all.iter()
            .filter(|l| kind(l) != "message_update")
            .cloned()
            .collect::<Vec<_>>()
    );
    let frames = filter(&["--only", "frame"], &input);
    assert_eq!(
        frames,
        all.iter()
            .filter(|l| kind(l) == "message_update")
            .cloned()
            .collect::<Vec<_>>()
    );
    let boundaries = filter(&["--only", "boundary"], &input);
    assert_eq!(boundaries.len(), 2);
    assert_eq!(
        boundaries,
        all[all.len() - 2..].to_vec(),
        "--only writes events untouched"
    );
}

#[test]
fn stats_go_to_stderr() {
    sess()
        .args(["filter", "--stats"])
        .arg(testdata("pi-old.jsonl"))
        .assert()
        .success()
        .stderr(predicate::str::contains("profile pi"))
        .stderr(predicate::str::is_match(r"frame\s+5\s+3856\s+0\s+0").unwrap());
}

#[test]
fn dsh_mirrors_are_dropped() {
    let mut log = std::fs::read(testdata("dsh.jsonl")).unwrap();
    log.extend_from_slice(b"{\"type\":\"agent/stream-chunk\",\"data\":{\"text\":\"x\"}}\n");
    let out = filter(&[], &log);
    assert_eq!(out, lines(&std::fs::read(testdata("dsh.jsonl")).unwrap()));
    let live = filter(&["--include-live-events"], &log);
    assert_eq!(live.len(), out.len() + 1);
}

#[test]
fn custom_profiles_from_flags_and_files() {
    let log = b"{\"type\":\"progress\",\"id\":\"a\",\"n\":1}\n{\"type\":\"progress\",\"id\":\"a\",\"n\":2}\n{\"type\":\"done\",\"id\":\"a\"}\n{\"type\":\"progress\",\"id\":\"b\",\"n\":1}\n{\"type\":\"summary\",\"items\":[1,2],\"n\":3}\n";
    // Keyless delta frames: the orphaned run (id b) is kept whole at the end.
    let out = filter(
        &[
            "--profile",
            "none",
            "--frame",
            "progress=done",
            "--boundary",
            "summary",
        ],
        log,
    );
    assert_eq!(
        out,
        [
            r#"{"type":"done","id":"a"}"#,
            r#"{"type":"summary","n":3}"#,
            r#"{"type":"progress","id":"b","n":1}"#,
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    std::fs::write(
        &profile,
        r#"{"extends":"none","frames":{"progress":{"successor":"done","key":"id","snapshot":"always"}},"facts":["summary"]}"#,
    )
    .unwrap();
    let out = filter(&["--profile", profile.to_str().unwrap()], log);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2], r#"{"type":"progress","id":"b","n":1}"#);
    assert_eq!(out[1], r#"{"type":"summary","items":[1,2],"n":3}"#);
    // A misspelt key is an error, not a silent default.
    std::fs::write(&profile, r#"{"frames":{"x":{"succesor":"y"}}}"#).unwrap();
    sess()
        .args(["filter", "--profile"])
        .arg(&profile)
        .write_stdin("")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a valid profile file"));
    // A profile file given as a pipe is read once, as any input is.
    let root = env!("CARGO_MANIFEST_DIR");
    let piped = common::sess_in_bash(
        "",
        &format!(
            "filter --profile <(cat '{root}/profiles/pi.json') '{root}/testdata/pi-new.jsonl'"
        ),
    )
    .output()
    .unwrap();
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    let direct = sess()
        .args(["filter", "--profile", "pi"])
        .arg(common::testdata("pi-new.jsonl"))
        .output()
        .unwrap();
    assert_eq!(piped.stdout, direct.stdout);
    // A malformed flag value is a usage error, as the README says (exit 2); so is a
    // profile name sess does not know.
    sess()
        .args(["filter", "--profile", "nosuch"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown profile 'nosuch'"));
    for bad in ["nosuccessor", "=done", "progress="] {
        sess()
            .args(["filter", "--frame", bad])
            .write_stdin("")
            .assert()
            .code(2)
            .stderr(predicate::str::contains("TYPE=SUCCESSOR"));
    }
}

/// A `--frame` whose successor is a frame or a mirror was refused or not by the order the
/// flags were applied in (a `--mirror` came after the check), by a check against profile
/// `none` alone (a profile given was never checked), and with an error naming `none`.
#[test]
fn flags_that_contradict_are_refused_naming_the_flags_and_the_profile() {
    let log = testdata("pi-new.jsonl");
    let refused = |args: &[&str], profile: &str| {
        sess()
            .arg("filter")
            .args(args)
            .arg(&log)
            .assert()
            .code(1)
            .stdout("")
            .stderr(predicate::str::contains(format!(
                "--frame, --mirror, --boundary and --fact as given, with profile {profile}: \
                 the successor of frame"
            )));
    };
    refused(&["--frame", "message_update=message_update"], "none");
    refused(
        &[
            "--mirror",
            "message_end",
            "--frame",
            "message_update=message_end",
        ],
        "none",
    );
    refused(
        &["--profile", "pi", "--frame", "message_end=message_update"],
        "pi",
    );
    // The profile `auto` chooses may not fit them: told of, once for all the inputs.
    let out = sess()
        .args(["filter", "--frame", "message_end=message_update"])
        .args([&log, &log])
        .output()
        .unwrap();
    assert!(out.status.success());
    let told = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        told.matches("with profile pi: the successor of frame")
            .count(),
        1,
        "{told}"
    );
}

#[test]
fn a_crlf_log_filters_to_crlf_lines_projected_boundaries_included() {
    let lf = std::fs::read(testdata("pi-new.jsonl")).unwrap();
    let crlf: Vec<u8> = lf
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|l| [&l[..l.len() - 1], b"\r\n"].concat())
        .collect();
    let want = stdout_ok(sess().arg("filter").write_stdin(lf));
    let got = stdout_ok(sess().arg("filter").write_stdin(crlf));
    assert!(
        got.split_inclusive(|&b| b == b'\n')
            .all(|l| l.ends_with(b"\r\n"))
    );
    let stripped: Vec<u8> = got.into_iter().filter(|&b| b != b'\r').collect();
    assert_eq!(
        String::from_utf8(stripped).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

#[test]
fn classes_given_on_the_command_line_apply_to_a_log_no_profile_knows() {
    // No profile recognises this log: auto stays undecided, and the user's classes
    // apply to `none`, as `--profile none` would have them.
    let log = "{\"type\":\"p\",\"v\":1}\n{\"type\":\"p\",\"v\":2}\n{\"type\":\"done\",\"v\":2}\n";
    for flags in [&["--frame", "p=done"][..], &["--mirror", "p"]] {
        let auto = stdout_ok(sess().arg("filter").args(flags).write_stdin(log));
        let none = stdout_ok(
            sess()
                .args(["filter", "--profile", "none"])
                .args(flags)
                .write_stdin(log),
        );
        assert_eq!(auto, none, "{flags:?}");
        assert_eq!(
            String::from_utf8(auto).unwrap(),
            "{\"type\":\"done\",\"v\":2}\n"
        );
    }
    // Without any, every line of such a log is a fact.
    assert_eq!(
        stdout_ok(sess().arg("filter").write_stdin(log)),
        log.as_bytes()
    );
}

#[test]
fn a_run_opened_before_the_profile_is_known_goes_on_under_it() {
    // Two ticks under the classes given while auto is undecided, then pi's lines decide
    // it, and a third tick joins the run the first two opened (--frame still applies).
    let pi = [
        r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#,
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"a"}}"#,
        r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"a"}]}}"#,
    ];
    let tick = |n: u32| format!(r#"{{"type":"tick","n":{n}}}"#);
    let fact = r#"{"type":"fact","x":1}"#;
    let lines = |v: &[&str]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let head = [tick(1), tick(2)];
    let log = lines(&[&head[0], &head[1], pi[0], pi[1], pi[2], &tick(3), fact]);
    let filter = |log: String| {
        let out = sess()
            .args(["filter", "--frame", "tick=done", "--stats"])
            .write_stdin(log)
            .output()
            .unwrap();
        assert!(out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("profile pi"), "{err}");
        String::from_utf8(out.stdout).unwrap()
    };
    // No successor: the run is kept whole at the end, every tick in order; pi's delta
    // frame goes, as its message_end came.
    assert_eq!(
        filter(log.clone()),
        lines(&[pi[0], pi[2], fact, &tick(1), &tick(2), &tick(3)])
    );
    // Its successor ends it, the ticks from before the profile was known with it.
    let done = r#"{"type":"done","n":3}"#;
    assert_eq!(
        filter(log + done + "\n"),
        lines(&[pi[0], pi[2], fact, done])
    );
}

#[test]
fn stats_shows_classes_and_what_filter_saves() {
    let out = sess()
        .args(["stats", "--json"])
        .arg(testdata("pi-new.jsonl"))
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = &all["files"][0];
    let class = |t: &str| {
        v["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["type"] == t)
            .unwrap()["class"]
            .clone()
    };
    assert_eq!(class("message_update"), "frame");
    assert_eq!(class("turn_end"), "boundary");
    assert_eq!(class("message_end"), "fact");
    let filtered = sess()
        .arg("filter")
        .arg(testdata("pi-new.jsonl"))
        .output()
        .unwrap()
        .stdout;
    assert_eq!(v["filtered_bytes"], filtered.len());
    assert_eq!(v["filter_profile"], "pi");
    // A last line without its newline: filter adds it to a record and drops a torn one.
    for log in [
        "{\"type\":\"a\"}\n{\"type\":\"b\"}",
        "{\"type\":\"a\"}\n{\"type\":\"b\",",
    ] {
        let out = stdout_ok(sess().args(["stats", "--json"]).write_stdin(log));
        let all: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let filtered = stdout_ok(sess().arg("filter").write_stdin(log));
        assert_eq!(all["files"][0]["filtered_bytes"], filtered.len(), "{log}");
    }
}

/// The table's "filter keeps" column adds up to what filter writes, packed or not. A
/// packed row's events were counted under their own kind, which the table (one line per
/// kind of line) has no line for: rows showed 0 B, and a packed DSH log's column summed to
/// 873 bytes of 5.2 MB.
#[test]
fn stats_filter_keeps_per_kind_adds_up_for_packed_logs_too() {
    // Besides the fixtures, a DSH log whose deltas are all in one run, packed into a row.
    let deltas: String = (0..5)
        .map(|i| {
            format!(
                "{{\"type\":\"assistant/chunk\",\"seq\":{i},\"time\":{i},\"data\":{{\"turn\":1,\"step\":1,\"chunk\":{{\"type\":\"text-delta\",\"index\":0,\"text\":\"w{i} \"}}}}}}\n"
            )
        })
        .collect();
    let run = format!("{deltas}{{\"type\":\"turn/end\",\"seq\":5}}\n");
    let mut logs: Vec<(String, Vec<u8>)> = vec![("one run".into(), run.into_bytes())];
    for name in common::FIXTURES {
        logs.push((name.to_string(), std::fs::read(testdata(name)).unwrap()));
    }
    for (name, plain) in logs {
        let packed = stdout_ok(sess().args(["pack", "--plain"]).write_stdin(plain.clone()));
        for (what, log) in [("plain", plain.clone()), ("packed", packed)] {
            let out = stdout_ok(sess().args(["stats", "--json"]).write_stdin(log.clone()));
            let all: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let v = &all["files"][0];
            let filtered = stdout_ok(sess().arg("filter").write_stdin(log));
            assert_eq!(v["filtered_bytes"], filtered.len(), "{name} {what}");
            let rows = v["types"].as_array().unwrap();
            let sum: u64 = rows
                .iter()
                .map(|r| r["filtered_bytes"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, filtered.len() as u64, "{name} {what}: {rows:?}");
            // Rows are sess's own: no profile calls them a newer release's kind.
            let unknown = v["unknown_kinds"].as_array().unwrap();
            assert!(
                !unknown.iter().any(|k| k == "snapshot-deltas"),
                "{name} {what}"
            );
        }
    }
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn conformance_pi_streams_filter_keeps_every_fact() {
    let dir = conformance("pi-streams");
    for f in files_in(&dir, ".jsonl") {
        let input = std::fs::read(&f).unwrap();
        let all = lines(&input);
        let out = filter(&[], &input);
        assert_eq!(facts(&out), facts(&all), "{}", f.display());
        let live = [
            "filter",
            "--include-live-events",
            "--max-frame-bytes",
            "1024",
        ];
        let live = common::stdout_ok(sess().args(live).write_stdin(input.clone()));
        let plain = common::stdout_ok(sess().arg("filter").write_stdin(input.clone()));
        common::assert_live_keeps_all_plain_keeps(&plain, &live, &f.display().to_string());
        for t in ["message_end", "tool_execution_end"] {
            assert_eq!(
                out.iter().filter(|l| kind(l) == t).count(),
                all.iter().filter(|l| kind(l) == t).count(),
                "{t} in {}",
                f.display()
            );
        }
        // Real boundary shapes: counts match what they closed over.
        for (o, i) in out
            .iter()
            .filter(|l| BOUNDARIES.contains(&kind(l).as_str()))
            .zip(
                all.iter()
                    .filter(|l| BOUNDARIES.contains(&kind(l).as_str())),
            )
        {
            let o: serde_json::Value = serde_json::from_str(o).unwrap();
            let i: serde_json::Value = serde_json::from_str(i).unwrap();
            if o["type"] == "turn_end" {
                assert_eq!(
                    o["toolResultCount"],
                    i["toolResults"].as_array().unwrap().len()
                );
                assert_eq!(o["messageRole"], i["message"]["role"]);
            } else {
                assert_eq!(o["messageCount"], i["messages"].as_array().unwrap().len());
                assert_eq!(o["willRetry"], i["willRetry"]);
            }
        }
        // Measured: the old generation keeps under 3% of its bytes, the new under 40%.
        let kept = out.iter().map(|l| l.len() + 1).sum::<usize>();
        assert!(
            kept * 2 < input.len(),
            "{}: kept {kept} of {}",
            f.display(),
            input.len()
        );
    }
}

#[test]
fn a_last_line_without_newline_stays_a_line_of_its_own() {
    use sess::filter::{Filter, FilterOptions};
    use sess::profile::{Choice, Overrides, registry};
    // An orphaned run is written at the end, after a fact that had no newline: the fact
    // gets its newline rather than being glued to the run.
    let mut f = Filter::new(
        Choice::fixed(registry::builtin("pi").unwrap()),
        Overrides::default(),
        FilterOptions::default(),
    )
    .unwrap();
    let mut out = Vec::new();
    f.event(b"{\"type\":\"message_start\"}", true, &mut out)
        .unwrap();
    f.event(
        b"{\"type\":\"message_update\",\"message\":{}}",
        true,
        &mut out,
    )
    .unwrap();
    f.event(b"{\"type\":\"last\"}", false, &mut out).unwrap();
    f.end_input(&mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\"type\":\"message_start\"}\n{\"type\":\"last\"}\n{\"type\":\"message_update\",\"message\":{}}\n"
    );
    // The CLI drops a torn last line, so `sess filter crashed.jsonl | jq` works.
    sess()
        .arg("filter")
        .write_stdin("{\"type\":\"message_start\"}\n{\"type\":\"message_end\",\"x\":[1,")
        .assert()
        .success()
        .stdout("{\"type\":\"message_start\"}\n")
        .stderr(predicates::str::contains("a torn write): dropped"));
}
