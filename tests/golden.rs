//! Output stays byte-identical: every command that writes events, on every file in
//! `testdata/` and on the pi, DSH and Chord files of the conformance corpus, checked against
//! a table of lengths and crc32s written before a change (`tests/golden.tsv`). A change that
//! alters an output on purpose regenerates the table with `SESS_UPDATE_GOLDEN=1 cargo test
//! --test golden -- --test-threads=1` (the two tests rewrite the one table; run together,
//! one's rows are lost) and says why in its commit.
//!
//! Claude Code, Codex and Gemini CLI logs are not in the table: sess learns their formats,
//! so their outputs are meant to change.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::sess;

const COMMANDS: &[&[&str]] = &[
    &["cat"],
    &["filter"],
    &[
        "filter",
        "--include-live-events",
        "--max-frame-bytes",
        "1024",
    ],
    &["filter", "--keep-boundaries"],
    &["pack", "--plain"],
    &["pack", "--frame-size", "65536"],
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of a group, by the name the table uses for them.
fn files(group: &str) -> Vec<(String, PathBuf)> {
    let (base, dirs): (PathBuf, &[&str]) = match group {
        "testdata" => (root(), &["testdata"]),
        _ => (
            root().join("../shared/conformance"),
            &[
                "pi-streams",
                "pi-sessions",
                "dsh-fixtures",
                "dsh-codec/cases",
                "chord/valid",
            ],
        ),
    };
    let mut out = Vec::new();
    for d in dirs {
        for f in common::files_in(&base.join(d), ".jsonl") {
            let rel = f
                .strip_prefix(&base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, f));
        }
    }
    out
}

/// `exit length crc32` of one command's stdout.
fn run(cmd: &[&str], file: &Path) -> String {
    let out = sess().args(cmd).arg(file).output().unwrap();
    format!(
        "{} {} {:08x}",
        out.status.code().unwrap_or(-1),
        out.stdout.len(),
        crc32fast::hash(&out.stdout)
    )
}

fn check(group: &str) {
    let table = root().join("tests/golden.tsv");
    let text = std::fs::read_to_string(&table).unwrap_or_default();
    let mut rows: BTreeMap<(String, String), String> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            Some((
                (f.next()?.to_string(), f.next()?.to_string()),
                f.next()?.to_string(),
            ))
        })
        .collect();
    let update = std::env::var_os("SESS_UPDATE_GOLDEN").is_some();
    let mut changed = Vec::new();
    let list = files(group);
    assert!(!list.is_empty());
    for (name, path) in &list {
        for cmd in COMMANDS {
            let key = (format!("{group}/{name}"), cmd.join(" "));
            let got = run(cmd, path);
            match rows.get(&key) {
                Some(want) if *want == got => {}
                _ if update => {
                    rows.insert(key, got);
                }
                want => changed.push(format!("{key:?}: {want:?} -> {got}")),
            }
        }
    }
    if update {
        let mut out = String::new();
        for ((f, c), v) in &rows {
            out += &format!("{f}\t{c}\t{v}\n");
        }
        std::fs::write(&table, out).unwrap();
    }
    assert!(
        changed.is_empty(),
        "{} output(s) changed:\n{}",
        changed.len(),
        changed.join("\n")
    );
}

#[test]
fn outputs_on_testdata_are_unchanged() {
    check("testdata");
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn outputs_on_the_conformance_corpus_are_unchanged() {
    check("conformance");
}
