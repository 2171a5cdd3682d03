//! Producers are data: a new producer is one profile file. Here a toy producer, unknown to
//! sess's code, is recognised, filtered, projected and packed from its profile alone,
//! placed where `SESS_PROFILES` points (or given with `--profile FILE`).

mod common;

use common::{sess, stdout_ok};
use predicates::prelude::*;

const TOY: &str = r#"{
  "name": "toy",
  "describe": "a toy producer's job log",
  "checked": ["toy 1.0"],
  "recognise": {
    "header": [{"kind": "toy_header", "has": ["toyVersion"]}],
    "kinds": ["toy_tick", "toy_done", "toy_summary", "toy_echo"]
  },
  "dialect": "toy-log",
  "variants": [
    {"name": "toy-log-2", "describe": "toy 2 job log", "when": {"first": "toy_header", "equals": {"toyVersion": 2}}}
  ],
  "kind": {"sub": {"toy_event": "event.kind"}},
  "frames": {
    "toy_tick": {"successor": "toy_done", "key": "job", "snapshot": "always"},
    "toy_event:progress": {"successor": "toy_event:finished", "key": "event.job"}
  },
  "mirrors": ["toy_echo"],
  "boundaries": {
    "toy_summary": {"replace": [{"field": "jobs", "count": "jobCount"}, {"field": "detail.log", "drop": true}]}
  }
}"#;

fn toy_log() -> String {
    let mut log = String::from("{\"type\":\"toy_header\",\"toyVersion\":2}\n");
    for i in 0..5 {
        log += &format!(
            "{{\"type\":\"toy_tick\",\"job\":\"a\",\"out\":\"{}\"}}\n",
            "x".repeat(i)
        );
    }
    log += "{\"type\":\"toy_echo\",\"of\":\"tick\"}\n";
    log += "{\"type\":\"toy_done\",\"job\":\"a\",\"out\":\"xxxx\"}\n";
    log += "{\"type\":\"toy_event\",\"event\":{\"kind\":\"progress\",\"job\":\"b\"}}\n";
    log += "{\"type\":\"toy_event\",\"event\":{\"kind\":\"finished\",\"job\":\"b\"}}\n";
    log += "{\"type\":\"toy_summary\",\"jobs\":[1,2],\"detail\":{\"log\":\"long\",\"ok\":true}}\n";
    log
}

/// A profile file that names no dialect, and extends no profile, is named in `stats` by
/// its own name: the first release said `unknown`, the dialect of profile `none` it
/// starts from.
#[test]
fn a_profile_without_a_dialect_is_named_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job.jsonl");
    std::fs::write(&log, toy_log()).unwrap();
    // The toy profile without its dialect and its variants (which name dialects too).
    let mut toy: serde_json::Value = serde_json::from_str(TOY).unwrap();
    let members = toy.as_object_mut().unwrap();
    members.remove("dialect").unwrap();
    members.remove("variants").unwrap();
    std::fs::write(dir.path().join("toy.json"), toy.to_string()).unwrap();
    let stats = stdout_ok(
        sess()
            .env("SESS_PROFILES", dir.path())
            .args(["stats", "--json"])
            .arg(&log),
    );
    let v: serde_json::Value = serde_json::from_slice(&stats).unwrap();
    assert_eq!(v["files"][0]["filter_profile"], "toy");
    assert_eq!(v["files"][0]["dialect"], "toy");
}

#[test]
fn a_producer_is_one_profile_file() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    std::fs::write(profiles.join("toy.json"), TOY).unwrap();
    let log = dir.path().join("job.jsonl");
    std::fs::write(&log, toy_log()).unwrap();
    let with_toy = |args: &[&str]| {
        let mut c = sess();
        c.env("SESS_PROFILES", &profiles).args(args).arg(&log);
        c
    };
    // Listed, and recognised automatically (its header decides), with its variant.
    sess()
        .env("SESS_PROFILES", &profiles)
        .arg("profiles")
        .assert()
        .success()
        .stdout(predicate::str::contains("toy").and(predicate::str::contains("toy 1.0")));
    let stats = stdout_ok(&mut with_toy(&["stats", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&stats).unwrap();
    assert_eq!(v["files"][0]["dialect"], "toy-log-2");
    assert_eq!(v["files"][0]["filter_profile"], "toy");
    let class = |kind: &str| {
        v["files"][0]["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == kind)
            .map(|t| t["class"].as_str().unwrap().to_string())
    };
    assert_eq!(class("toy_tick").as_deref(), Some("frame"));
    assert_eq!(class("toy_event:progress").as_deref(), Some("frame"));
    assert_eq!(class("toy_echo").as_deref(), Some("mirror"));
    assert_eq!(class("toy_summary").as_deref(), Some("boundary"));
    // Filtered by its rules: ticks and the progress event go (their successors carry them),
    // echoes go, the summary is projected.
    let want = concat!(
        "{\"type\":\"toy_header\",\"toyVersion\":2}\n",
        "{\"type\":\"toy_done\",\"job\":\"a\",\"out\":\"xxxx\"}\n",
        "{\"type\":\"toy_event\",\"event\":{\"kind\":\"finished\",\"job\":\"b\"}}\n",
        "{\"type\":\"toy_summary\",\"jobCount\":2,\"detail\":{\"ok\":true}}\n",
    );
    with_toy(&["filter"]).assert().success().stdout(want);
    // The same profile given as a file, without SESS_PROFILES.
    sess()
        .arg("filter")
        .arg("--profile")
        .arg(profiles.join("toy.json"))
        .arg(&log)
        .assert()
        .success()
        .stdout(want);
    // Its snapshot frames become snapshot-delta rows, and come back byte for byte.
    let packed = stdout_ok(&mut with_toy(&["pack", "--plain"]));
    assert!(String::from_utf8_lossy(&packed).contains("{\"type\":\"snapshot-deltas\""));
    sess()
        .arg("unpack")
        .write_stdin(packed)
        .assert()
        .success()
        .stdout(toy_log());
    // Without the profile, the log is unknown and every line a fact.
    sess()
        .arg("filter")
        .arg(&log)
        .assert()
        .success()
        .stdout(toy_log());
}

#[test]
fn a_broken_profile_in_the_path_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), "{\"frames\": 7}").unwrap();
    sess()
        .env("SESS_PROFILES", dir.path())
        .arg("profiles")
        .assert()
        .success()
        .stdout(predicate::str::contains("pi"))
        .stderr(predicate::str::contains(
            "bad.json: not a valid profile file",
        ));
    // Two files of one name: the second is not used, and says so (the first, in file
    // name order, is the one `--profile toy` names).
    let dup = tempfile::tempdir().unwrap();
    std::fs::write(dup.path().join("a.json"), TOY).unwrap();
    std::fs::write(
        dup.path().join("b.json"),
        TOY.replace("a toy", "another toy"),
    )
    .unwrap();
    let listed = sess()
        .env("SESS_PROFILES", dup.path())
        .arg("profiles")
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "{}: not used: profile 'toy' is {} already",
            dup.path().join("b.json").display(),
            dup.path().join("a.json").display()
        )));
    let listed = String::from_utf8(listed.get_output().stdout.clone()).unwrap();
    assert!(listed.contains("a toy producer") && !listed.contains("another toy"));
    // A profile of a built-in one's name takes its place: listed once, from its file.
    let over = tempfile::tempdir().unwrap();
    let dsh = TOY.replace("\"name\": \"toy\"", "\"name\": \"dsh\"");
    assert_ne!(dsh, TOY);
    std::fs::write(over.path().join("dsh.json"), dsh).unwrap();
    let listed = sess()
        .env("SESS_PROFILES", over.path())
        .arg("profiles")
        .assert()
        .success();
    let listed = String::from_utf8(listed.get_output().stdout.clone()).unwrap();
    let names: Vec<&str> = listed.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        names.iter().filter(|l| l.starts_with("dsh ")).count(),
        1,
        "{listed}"
    );
    assert!(listed.contains(&over.path().join("dsh.json").display().to_string()));
    // An unknown name is a usage error.
    sess()
        .args(["filter", "--profile", "nonesuch"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown profile 'nonesuch'"));
    // And for the profile to print (it was exit 1, an input's fault).
    sess()
        .args(["profiles", "nonesuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown profile 'nonesuch'"));
}

#[test]
fn each_input_is_detected_on_its_own() {
    let (dsh, pi) = (
        common::testdata("dsh.jsonl"),
        common::testdata("pi-old.jsonl"),
    );
    // Filtering two logs at once writes what filtering each alone writes.
    let both = stdout_ok(sess().arg("filter").arg(&dsh).arg(&pi));
    let apart = [
        stdout_ok(sess().arg("filter").arg(&dsh)),
        stdout_ok(sess().arg("filter").arg(&pi)),
    ]
    .concat();
    assert_eq!(both, apart);
    sess()
        .args(["filter", "--stats"])
        .arg(&dsh)
        .arg(&pi)
        .assert()
        .success()
        .stderr(predicate::str::contains("profile dsh (").and(predicate::str::contains("pi (")));
    // Packing too: pi's snapshot frames are packed after a DSH log.
    let packed = stdout_ok(sess().args(["pack", "--plain"]).arg(&dsh).arg(&pi));
    assert!(String::from_utf8_lossy(&packed).contains("{\"type\":\"snapshot-deltas\""));
    // stats names each input's dialect, in a section of its own, then the totals.
    let all: Vec<std::path::PathBuf> = common::FIXTURES
        .iter()
        .map(|f| common::testdata(f))
        .collect();
    let out = stdout_ok(sess().args(["stats", "--json"]).args(&all));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let dialects: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["dialect"].as_str().unwrap())
        .collect();
    assert_eq!(
        dialects,
        [
            "pi-stream-old",
            "pi-stream-new",
            "pi-session",
            "dsh",
            "op-list"
        ]
    );
    assert_eq!(v["total"]["files"], 5);
    let text = String::from_utf8(stdout_ok(sess().arg("stats").args(&all))).unwrap();
    assert!(text.contains(&format!("== {}", all[3].display())), "{text}");
    assert!(text.contains("== total: 5 inputs"), "{text}");
}

#[test]
fn the_example_profile_in_format_md_is_read_as_documented() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/FORMAT.md"),
    )
    .unwrap();
    let start = doc
        .find("```json\n{\n  \"name\": \"toy\"")
        .expect("the example")
        + 8;
    let end = start + doc[start..].find("```").unwrap();
    let p = sess::profile::Profile::from_json(&doc.as_bytes()[start..end], "FORMAT.md")
        .unwrap_or_else(|e| panic!("the FORMAT.md example: {e}"));
    assert_eq!(p.name, "toy");
    assert!(p.frames["toy_row"].exclusive && p.frames["toy_row"].successor.is_none());
    // pi's `agent_end`, which it extends, and its own two.
    assert_eq!(p.closers.len(), 3);
    assert_eq!(p.version, ["toyVersion", "meta.version"]);
}
