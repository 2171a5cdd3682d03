//! The logs people actually have: Claude Code, Codex and Gemini CLI, as published by other
//! projects (`../shared/conformance/{claude-code,codex,gemini-cli}`), as captured from the
//! current releases (`../shared/conformance/captures`), and as captured by our own harness
//! (`testdata/captures`). On every file: the dialect is named right, `pack` round-trips byte
//! for byte, and `filter` keeps what the producer needs to read the log back.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use common::{sess, stdout_ok};
use sess::profile::detect::Detector;
use sess::profile::registry;
use sess::value::Value;

/// Every `.jsonl` file below `dir`, sorted.
fn jsonl_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The dialect a file's path says it has, by the folder it is in.
fn expected_dialect(p: &Path) -> &'static str {
    let s = p.to_string_lossy();
    if s.contains("claude-code-stream") {
        "claude-code-stream"
    } else if s.contains("claude-code") {
        "claude-code"
    } else if s.contains("codex-stream") {
        "codex-exec"
    } else if s.contains("codex") {
        "codex-rollout"
    } else if s.contains("gemini-cli-stream") {
        "gemini-cli-stream"
    } else if s.contains("gemini-cli") {
        "gemini-cli"
    } else {
        panic!("no dialect expected for {s}")
    }
}

fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

fn parse(line: &[u8]) -> Value {
    Value::parse(line).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(line)))
}

/// A string member at a dotted path.
fn text_at(v: &Value, path: &str) -> Option<String> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

/// `needles` occur in `hay` in order (a subsequence), each byte for byte.
fn in_order(needles: &[&[u8]], hay: &[&[u8]]) -> Result<(), String> {
    let mut at = 0;
    for n in needles {
        match hay[at..].iter().position(|h| h == n) {
            Some(k) => at += k + 1,
            None => return Err(String::from_utf8_lossy(&n[..n.len().min(200)]).into_owned()),
        }
    }
    Ok(())
}

/// What the producer needs of a filtered log, checked against the original.
fn check_filter(path: &Path, dialect: &str, input: &[u8], output: &[u8]) {
    let name = path.display();
    let (inp, out) = (lines(input), lines(output));
    let kinds: Vec<(Value, &[u8])> = inp.iter().map(|l| (parse(l), *l)).collect();
    let outset: HashSet<&[u8]> = out.iter().copied().collect();
    match dialect {
        "claude-code" => {
            // Every parentUuid that resolved within the input still resolves.
            let uuids_in: HashSet<String> = kinds
                .iter()
                .filter_map(|(v, _)| text_at(v, "uuid"))
                .collect();
            let uuids_out: HashSet<String> = out
                .iter()
                .filter_map(|l| text_at(&parse(l), "uuid"))
                .collect();
            for l in &out {
                if let Some(parent) = text_at(&parse(l), "parentUuid") {
                    assert!(
                        !uuids_in.contains(&parent) || uuids_out.contains(&parent),
                        "{name}: parentUuid {parent} no longer resolves"
                    );
                }
            }
            assert_eq!(
                uuids_in, uuids_out,
                "{name}: every record in the tree is kept"
            );
            // The last file-history-snapshot per message survives, byte for byte.
            let mut last: HashMap<String, &[u8]> = HashMap::new();
            for (v, l) in &kinds {
                if text_at(v, "type").as_deref() == Some("file-history-snapshot") {
                    last.insert(text_at(v, "snapshot.messageId").unwrap_or_default(), l);
                }
            }
            for (id, l) in last {
                assert!(
                    outset.contains(l),
                    "{name}: the last snapshot of {id} was lost"
                );
            }
        }
        "codex-rollout" => {
            let items: Vec<&[u8]> = kinds
                .iter()
                .filter(|(v, _)| {
                    matches!(
                        text_at(v, "type").as_deref(),
                        Some("response_item" | "compacted" | "session_meta" | "turn_context")
                    )
                })
                .map(|(_, l)| *l)
                .collect();
            in_order(&items, &out).unwrap_or_else(|l| panic!("{name}: lost or moved {l}"));
        }
        "gemini-cli" => {
            let mut last: HashMap<String, &[u8]> = HashMap::new();
            for (v, l) in &kinds {
                if let Some(id) = text_at(v, "id") {
                    last.insert(id, l);
                }
            }
            for (id, l) in last {
                assert!(
                    outset.contains(l),
                    "{name}: the last record of {id} was lost"
                );
            }
        }
        _ => {}
    }
    // Facts, as the profile classes them, come out byte for byte and in order.
    let stats: serde_json::Value =
        serde_json::from_slice(&stdout_ok(sess().args(["stats", "--json"]).arg(path))).unwrap();
    let fact_kinds: HashSet<String> = stats["files"][0]["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["class"] == "fact")
        .map(|t| t["type"].as_str().unwrap().to_string())
        .collect();
    let profile = registry::builtin(dialect_profile(dialect)).unwrap();
    // A stream is decided by its first telling line; the lines before it are facts.
    let mut detector = Detector::new(registry::all(), Some(path));
    let facts: Vec<&[u8]> = inp
        .iter()
        .filter(|l| {
            if detector.early().is_none() {
                detector.observe(l);
                if detector.early().is_none() {
                    return true;
                }
            }
            let k = profile.kind_of(l).map(|k| k.into_owned());
            let fact = profile.classify(k.as_deref()) == sess::profile::Class::Fact;
            assert_eq!(
                fact,
                fact_kinds.contains(k.as_deref().unwrap_or("(no type)")),
                "{name}: stats and the profile disagree on {k:?}"
            );
            fact
        })
        .copied()
        .collect();
    in_order(&facts, &out).unwrap_or_else(|l| panic!("{name}: a fact was lost or moved: {l}"));
}

fn dialect_profile(dialect: &str) -> &str {
    match dialect {
        "codex-rollout" | "codex-rollout-old" => "codex",
        d => d,
    }
}

/// The references `pack --stats` says it wrote.
fn interned_refs(stats: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(stats);
    let (before, _) = text
        .split_once(" repeated values")
        .unwrap_or_else(|| panic!("no interning in: {text}"));
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Checks every log below `dir`; returns how many, and the values interned in them.
fn check_dir(dir: &Path) -> (usize, u64) {
    let mut refs = 0;
    let refs = &mut refs;
    let files = jsonl_below(dir);
    for f in &files {
        let input = std::fs::read(f).unwrap();
        let want = expected_dialect(f);
        let stats: serde_json::Value =
            serde_json::from_slice(&stdout_ok(sess().args(["stats", "--json"]).arg(f))).unwrap();
        let got = stats["files"][0]["dialect"].as_str().unwrap().to_string();
        assert!(
            got == want || (want == "codex-rollout" && got == "codex-rollout-old"),
            "{}: dialect {got}, not {want}",
            f.display()
        );
        // Lossless: unpack(pack(x)) == x, plain and in frames.
        let packed = stdout_ok(sess().args(["pack", "--plain"]).arg(f));
        let back = stdout_ok(sess().arg("unpack").write_stdin(packed));
        assert!(back == input, "{}: pack --plain round trip", f.display());
        let z = stdout_ok(sess().arg("pack").arg(f));
        // What stats finds pack writes (as from a pipe) is near what it writes: built as
        // pack builds it with --exact, nearly so with snapshot rows estimated.
        let exact: serde_json::Value = serde_json::from_slice(&stdout_ok(
            sess().args(["stats", "--json", "--exact"]).arg(f),
        ))
        .unwrap();
        let real = z.len() as f64;
        for (s, low, high) in [(&exact, 0.97, 1.05), (&stats, 0.9, 1.1)] {
            let estimate = s["files"][0]["pack"]["bytes"].as_u64().unwrap() as f64;
            assert!(
                estimate >= low * real && estimate <= high * real + 128.0,
                "{}: stats ({}) finds {estimate} bytes, pack writes {real}",
                f.display(),
                s["files"][0]["pack"]["accuracy"]
            );
        }
        let back = stdout_ok(sess().arg("unpack").write_stdin(z));
        assert!(back == input, "{}: pack round trip", f.display());
        // In small frames, repeats lie in other frames: values are interned.
        let small = sess()
            .args(["pack", "--stats", "--frame-size", "65536"])
            .arg(f)
            .output()
            .unwrap();
        assert!(small.status.success(), "{}", f.display());
        let back = stdout_ok(sess().arg("unpack").write_stdin(small.stdout));
        assert!(back == input, "{}: pack round trip, interned", f.display());
        *refs += interned_refs(&small.stderr);
        let filtered = stdout_ok(sess().arg("filter").arg(f));
        check_filter(f, want, &input, &filtered);
        let live = [
            "filter",
            "--include-live-events",
            "--max-frame-bytes",
            "1024",
        ];
        let live = stdout_ok(sess().args(live).arg(f));
        let what = f.display().to_string();
        common::assert_live_keeps_all_plain_keeps(&filtered, &live, &what);
    }
    (files.len(), *refs)
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn published_logs_of_claude_code_codex_and_gemini_cli() {
    let (mut n, mut refs) = (0, 0);
    for sub in ["claude-code", "codex", "gemini-cli"] {
        let (files, r) = check_dir(&common::conformance(sub));
        n += files;
        refs += r;
    }
    assert!(n >= 17, "{n} files");
    assert!(refs > 50, "{refs} values interned");
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn captures_of_the_current_releases() {
    let (files, refs) = check_dir(&common::conformance("captures"));
    assert!(
        files >= 15 && refs > 40,
        "{files} files, {refs} values interned"
    );
}

#[test]
fn our_own_captures() {
    // bench/capture/run.sh wrote these: 4 Claude Code transcripts, 7 Claude Code streams,
    // 2 Codex rollouts, 3 `codex exec --json` streams.
    let (files, refs) = check_dir(&common::testdata("captures"));
    assert_eq!(files, 16);
    assert!(refs > 25, "{refs} values interned");
}

#[test]
#[cfg_attr(sess_no_conformance, ignore = "../shared/conformance is absent")]
fn a_legacy_gemini_session_file_is_named_not_read_as_lines() {
    let f = common::conformance("gemini-cli/agtrace").join("gemini_session.json");
    for cmd in ["cat", "filter", "stats", "pack"] {
        sess()
            .arg(cmd)
            .arg(&f)
            .assert()
            .code(1)
            .stderr(predicates::str::contains(
                "gemini_session.json:1: this is one JSON document written over many lines (such \
                 as a Gemini CLI session-*.json",
            ));
    }
    // verify says it once, not once per line.
    let out = sess().arg("verify").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("gemini_session.json").count(), 1, "{text}");
}
