//! A log store as producers lay one out, for the tests of `stats DIR` and `compact`.

use std::collections::BTreeMap;
use std::fs::{self, File, FileTimes};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{FIXTURES, testdata};

/// Every file under `dir`: its bytes and modification time, by path relative to `dir`.
pub fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                let m = fs::metadata(&p).unwrap().modified().unwrap();
                out.insert(rel, (fs::read(&p).unwrap(), m));
            }
        }
    }
    out
}

pub fn age(path: &Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 86_400);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(t))
        .unwrap();
}

/// A log of `n` lines that repeat a long value, so that packing pays (several frames when
/// `n` is large).
pub fn big_log(n: usize) -> Vec<u8> {
    let blob = "x".repeat(700);
    let mut out = Vec::new();
    for i in 0..n {
        let line = format!(
            "{{\"type\":\"message\",\"i\":{i},\"text\":\"step {} of the work\",\"ctx\":\"{blob}\"}}\n",
            i * 7919 % 1000
        );
        out.extend_from_slice(line.as_bytes());
    }
    out
}

/// A store as producers lay one out, every log 20 days old: the fixtures at the top, a
/// Claude Code project with a subagent, a Codex day folder with a log of several frames.
pub fn store(dir: &Path) -> Vec<PathBuf> {
    let mut logs = Vec::new();
    let mut put = |rel: &str, bytes: &[u8]| {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, bytes).unwrap();
        age(&p, 20);
        logs.push(p);
    };
    for f in FIXTURES {
        put(f, &fs::read(testdata(f)).unwrap());
    }
    let pi = fs::read(testdata("pi-new.jsonl")).unwrap();
    put(".claude/projects/-w/s1.jsonl", &pi);
    put(
        ".claude/projects/-w/s1/subagents/agent-a.jsonl",
        &big_log(300),
    );
    put(
        ".codex/sessions/2026/11/01/rollout-x.jsonl",
        &big_log(12_000),
    );
    // Not logs: left as they are.
    fs::write(dir.join("notes.txt"), b"not a log\n").unwrap();
    age(&dir.join("notes.txt"), 20);
    logs
}
