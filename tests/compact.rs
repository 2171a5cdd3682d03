//! `sess compact`: a store's cold logs replaced by their packed form and put back, byte for
//! byte, whatever happens in between (a kill -9, a log held open, a stale temporary file).

mod common;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::store::{age, big_log, store, tree};
use common::{sess, stdout_ok};

fn compact(dir: &Path, args: &[&str]) -> String {
    let out = stdout_ok(sess().arg("compact").args(args).arg(dir));
    String::from_utf8(out).unwrap()
}

/// What `sess compact --apply` says on stderr, once it has succeeded.
fn apply_warnings(dir: &Path) -> String {
    let out = sess()
        .args(["compact", "--apply"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What `sess unpack` makes of a packed form.
fn unpacked(p: &Path) -> Vec<u8> {
    stdout_ok(sess().arg("unpack").arg(p))
}

#[test]
fn a_dry_run_writes_nothing_and_says_what_it_would_save() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let before = tree(dir.path());
    let said = compact(dir.path(), &[]);
    assert_eq!(tree(dir.path()), before, "a dry run wrote: {said}");
    assert_eq!(said.matches("would compact").count(), logs.len(), "{said}");
    assert!(said.contains("a dry run: nothing was written"), "{said}");
}

#[test]
fn apply_then_undo_gives_back_every_byte_and_modification_time() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let before = tree(dir.path());
    let said = compact(dir.path(), &["--apply"]);
    assert_eq!(said.matches("compacted ").count(), logs.len(), "{said}");
    for log in &logs {
        assert!(!log.exists(), "{} is still there", log.display());
        let packed = PathBuf::from(format!("{}.sess.zst", log.display()));
        let rel = log.strip_prefix(dir.path()).unwrap().to_string_lossy();
        assert_eq!(unpacked(&packed), before[rel.as_ref()].0, "{rel}");
        // The packed form keeps the log's age, so a store's age report stays true.
        let m = fs::metadata(&packed).unwrap().modified().unwrap();
        assert_eq!(m, before[rel.as_ref()].1, "{rel}");
    }
    assert!(dir.path().join(".sess-compact.jsonl").is_file());
    let undone = compact(dir.path(), &["--undo"]);
    assert_eq!(undone.matches("restored ").count(), logs.len(), "{undone}");
    assert_eq!(tree(dir.path()), before, "undo gave back another tree");
}

#[test]
fn compat_files_are_the_log_to_any_zstd_reader() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let before = tree(dir.path());
    compact(dir.path(), &["--apply", "--compat"]);
    for log in &logs {
        let packed = PathBuf::from(format!("{}.zst", log.display()));
        let plain = zstd::decode_all(File::open(&packed).unwrap()).unwrap();
        let rel = log.strip_prefix(dir.path()).unwrap().to_string_lossy();
        assert_eq!(plain, before[rel.as_ref()].0, "{rel}");
    }
    // A second run in the other form sees the first's work and leaves it.
    let again = compact(dir.path(), &["--apply"]);
    assert!(
        again.contains(&format!("0 of {} logs compacted", logs.len())),
        "{again}"
    );
    compact(dir.path(), &["--undo"]);
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn recent_logs_and_logs_open_for_writing_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let recent = dir.path().join("recent.jsonl");
    fs::write(&recent, big_log(50)).unwrap();
    let held = dir.path().join("held.jsonl");
    fs::write(&held, big_log(50)).unwrap();
    age(&held, 30);
    // A producer with its log open for appending, as a running agent holds it.
    let mut writer = Command::new("sh")
        .arg("-c")
        .arg("exec 3>>\"$1\"; echo ready; exec sleep 60")
        .arg("sh")
        .arg(&held)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    std::io::Read::read_exact(writer.stdout.as_mut().unwrap(), &mut ready).unwrap();
    let before = tree(dir.path());
    let said = compact(dir.path(), &["--apply"]);
    writer.kill().unwrap();
    writer.wait().unwrap();
    assert!(
        said.contains(&format!("open for writing by process {}", writer.id())),
        "{said}"
    );
    let mut after = tree(dir.path());
    after.remove(".sess-compact.jsonl");
    assert_eq!(after, before, "{said}");
    // Without the writer, and with a shorter age, both go.
    let said = compact(dir.path(), &["--apply", "--older-than", "0"]);
    assert!(said.contains("2 of 2 logs compacted"), "{said}");
}

#[test]
fn an_interrupted_run_is_finished_by_the_next_and_undone_whole() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let before = tree(dir.path());
    // What a crash leaves: a temporary file half written, and a log beside its packed form
    // (linked into place, not yet journalled, the log not yet removed).
    let stale = dir.path().join(".codex/.sess-compact-abc123.tmp");
    fs::write(&stale, b"half a frame").unwrap();
    let log = &logs[0];
    let packed = format!("{}.sess.zst", log.display());
    stdout_ok(sess().arg("pack").arg(log).arg("-o").arg(&packed));
    let said = compact(dir.path(), &["--apply"]);
    assert!(!stale.exists(), "the stale temporary file is still there");
    assert!(said.contains("(an interrupted run's)"), "{said}");
    assert!(!log.exists());
    compact(dir.path(), &["--undo"]);
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn a_log_an_interrupted_run_set_aside_goes_only_when_it_is_the_one_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let log = &logs[0];
    let original = fs::read(log).unwrap();
    compact(dir.path(), &["--apply"]);
    // What a kill between setting the log aside and removing it leaves, from a run whose
    // process is gone: once as compacted, once with a line a writer appended meanwhile.
    let folder = log.parent().unwrap();
    let same = folder.join(".sess-compact-4194304-aside-0.tmp");
    let grown = folder.join(".sess-compact-4194304-aside-1.tmp");
    fs::write(&same, &original).unwrap();
    fs::write(&grown, [&original[..], b"{\"type\":\"late\"}\n"].concat()).unwrap();
    let said = apply_warnings(dir.path());
    assert!(!same.exists(), "the log as compacted is in its packed form");
    assert!(!folder.join("sess-compact-4194304-aside-0.jsonl").exists());
    assert!(!grown.exists());
    let kept = folder.join("sess-compact-4194304-aside-1.jsonl");
    assert!(fs::read(&kept).unwrap().ends_with(b"{\"type\":\"late\"}\n"));
    assert!(said.contains("kept as"), "{said}");
}

#[test]
fn a_packed_form_of_something_else_is_never_taken_for_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.jsonl");
    fs::write(&log, big_log(40)).unwrap();
    age(&log, 20);
    let other = dir.path().join("b.jsonl");
    fs::write(&other, big_log(41)).unwrap();
    let packed = dir.path().join("a.jsonl.sess.zst");
    stdout_ok(sess().arg("pack").arg(&other).arg("-o").arg(&packed));
    fs::remove_file(&other).unwrap();
    let before = tree(dir.path());
    let said = compact(dir.path(), &["--apply"]);
    assert!(said.contains("is not this log's packed form"), "{said}");
    let mut after = tree(dir.path());
    after.remove(".sess-compact.jsonl");
    assert_eq!(after, before);
}

#[test]
fn a_folder_is_required_and_two_runs_on_one_folder_cannot_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.jsonl");
    fs::write(&f, b"{}\n").unwrap();
    let out = sess().arg("compact").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a folder"));
    // The journal's lock, held as a running compact holds it.
    let journal = File::create(dir.path().join(".sess-compact.jsonl")).unwrap();
    journal.lock().unwrap();
    let out = sess()
        .args(["compact", "--apply"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another sess compact is at work"), "{err}");
}

#[test]
fn runs_on_nested_folders_never_work_on_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let (outer, inner) = (dir.path().join("s"), dir.path().join("s/p"));
    fs::create_dir_all(&inner).unwrap();
    for f in [outer.join("a.jsonl"), inner.join("b.jsonl")] {
        fs::write(&f, big_log(200)).unwrap();
        age(&f, 20);
    }
    // A run at work on the inner folder holds its journal's lock.
    let held = File::create(inner.join(".sess-compact.jsonl")).unwrap();
    held.lock().unwrap();
    let said = compact(&outer, &["--apply"]);
    assert!(outer.join("a.jsonl.sess.zst").exists(), "{said}");
    assert!(inner.join("b.jsonl").exists() && !inner.join("b.jsonl.sess.zst").exists());
    let busy = format!("another sess compact is at work on {}", inner.display());
    assert!(said.contains(&busy), "{said}");
    // Undo of the outer folder passes by it too, and restores the rest.
    fs::rename(inner.join("b.jsonl"), outer.join("b.jsonl")).unwrap();
    drop(held);
    compact(&outer, &["--apply"]);
    assert!(outer.join("b.jsonl.sess.zst").exists());
    fs::create_dir_all(outer.join("q")).unwrap();
    fs::rename(
        outer.join("b.jsonl.sess.zst"),
        outer.join("q/b.jsonl.sess.zst"),
    )
    .unwrap();
    let journal = outer.join(".sess-compact.jsonl");
    let text = fs::read_to_string(&journal)
        .unwrap()
        .replace("\"b.jsonl", "\"q/b.jsonl");
    fs::write(&journal, text).unwrap();
    let held = File::create(outer.join("q/.sess-compact.jsonl")).unwrap();
    held.lock().unwrap();
    let said = compact(&outer, &["--undo"]);
    assert!(outer.join("a.jsonl").exists() && outer.join("q/b.jsonl.sess.zst").exists());
    assert!(
        said.contains("stays packed until --undo runs again"),
        "{said}"
    );
    drop(held);
    compact(&outer, &["--undo"]);
    assert_eq!(fs::read(outer.join("q/b.jsonl")).unwrap(), big_log(200));
    // A run does not start inside a folder another run is at work on.
    let held = File::create(&journal).unwrap();
    held.lock().unwrap();
    // (Undo first: the empty journal left in it above is the one it would undo.)
    for args in [&["compact", "--undo"][..], &["compact", "--apply"]] {
        let out = sess().args(args).arg(&inner).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!(
            "another sess compact is at work on {}, which holds",
            outer.display()
        );
        assert!(err.contains(&want), "{err}");
    }
    // The journal the refused run made is not left behind.
    assert!(!inner.join(".sess-compact.jsonl").exists());
}

/// kill -9 at moments spread over a run: every log is always either as it was, or in its
/// packed form that unpacks to it; a rerun finishes; undo gives back the tree.
#[test]
fn kill_9_at_any_moment_leaves_every_log_whole() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    for i in 0..12 {
        let p = dir.path().join(format!("more/log-{i}.jsonl"));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, big_log(500 + i * 150)).unwrap();
        age(&p, 20);
    }
    let before = tree(dir.path());
    // How long a whole run takes, to spread the kills over it.
    let start = std::time::Instant::now();
    compact(dir.path(), &["--apply"]);
    let whole = start.elapsed();
    compact(dir.path(), &["--undo"]);
    assert_eq!(tree(dir.path()), before);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for trial in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = whole.mul_f64((x % 1000) as f64 / 1000.0);
        let mut child = Command::new(env!("CARGO_BIN_EXE_sess"))
            .args(["compact", "--apply", "-q"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        child.wait().unwrap();
        for (rel, (bytes, _)) in &before {
            if !rel.ends_with(".jsonl") {
                continue;
            }
            let log = dir.path().join(rel);
            let packed = PathBuf::from(format!("{}.sess.zst", log.display()));
            if log.exists() {
                assert_eq!(
                    &fs::read(&log).unwrap(),
                    bytes,
                    "trial {trial}: {rel} changed"
                );
            } else {
                assert!(packed.exists(), "trial {trial} at {at:?}: {rel} is gone");
                assert_eq!(
                    &unpacked(&packed),
                    bytes,
                    "trial {trial}: {rel} packed wrong"
                );
            }
        }
        let failed = |s: &str| s.lines().any(|l| l.starts_with("failed"));
        let said = compact(dir.path(), &["--apply"]);
        assert!(!failed(&said), "trial {trial}: {said}");
        let said = compact(dir.path(), &["--undo"]);
        assert!(!failed(&said), "trial {trial}: {said}");
        assert_eq!(tree(dir.path()), before, "trial {trial} at {at:?}");
    }
    let _ = logs;
}

/// A producer that opens its log by name, appends and closes it (as Claude Code does) at
/// random moments while compact works on it: no line is ever lost. Each is in the log,
/// in its packed form, or, when the producer made a new log while the old one was being
/// removed, in the old one kept beside it.
#[test]
fn lines_appended_while_a_log_is_compacted_are_never_lost() {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for trial in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        fs::write(&log, big_log(200)).unwrap();
        age(&log, 30);
        let stop = AtomicBool::new(false);
        let written = AtomicU64::new(0);
        let delay = rand(30);
        let gaps: Vec<u64> = (0..200).map(|_| 1 + rand(8)).collect();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(delay));
                for gap in &gaps {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let n = written.fetch_add(1, Ordering::Relaxed);
                    let mut f = File::options()
                        .append(true)
                        .create(true)
                        .open(&log)
                        .unwrap();
                    writeln!(f, "{{\"type\":\"late\",\"n\":{n}}}").unwrap();
                    drop(f);
                    std::thread::sleep(std::time::Duration::from_millis(*gap));
                }
            });
            let _ = sess()
                .args(["compact", "--apply"])
                .arg(dir.path())
                .output()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
        });
        let mut all = Vec::new();
        if log.exists() {
            all.extend(fs::read(&log).unwrap());
        }
        let packed = dir.path().join("a.jsonl.sess.zst");
        if packed.exists() {
            all.extend(unpacked(&packed));
        }
        let kept = dir.path().join("a.jsonl.before-compact");
        if kept.exists() {
            all.extend(fs::read(&kept).unwrap());
        }
        let text = String::from_utf8_lossy(&all);
        for n in 0..written.load(Ordering::Relaxed) {
            let line = format!("{{\"type\":\"late\",\"n\":{n}}}\n");
            assert!(text.contains(&line), "trial {trial}: line {n} is lost");
        }
    }
}

#[test]
fn a_link_or_a_copy_in_the_packed_forms_place_is_never_taken_for_it() {
    for kind in ["symlink", "copy", "hard link"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        fs::write(&log, big_log(40)).unwrap();
        let there = dir.path().join("a.jsonl.sess.zst");
        match kind {
            "symlink" => std::os::unix::fs::symlink("a.jsonl", &there).unwrap(),
            "copy" => {
                fs::copy(&log, &there).unwrap();
            }
            _ => fs::hard_link(&log, &there).unwrap(),
        }
        age(&log, 30);
        let said = compact(dir.path(), &["--apply"]);
        assert!(log.is_file(), "{kind}: the log is gone: {said}");
        assert_eq!(fs::read(&log).unwrap(), big_log(40), "{kind}");
    }
}

#[test]
fn odd_logs_are_left_alone_with_a_reason() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let bad = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"bad\xff.jsonl"));
    fs::write(&bad, big_log(40)).unwrap();
    let linked = dir.path().join("linked.jsonl");
    fs::write(&linked, big_log(40)).unwrap();
    fs::hard_link(&linked, dir.path().join("other-name.txt")).unwrap();
    for f in [&bad, &linked] {
        age(f, 30);
    }
    let out = stdout_ok(
        sess()
            .args(["compact", "--apply", "--json"])
            .arg(dir.path()),
    );
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let why: Vec<&str> = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["why"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(why, ["name", "hard_linked"], "{v}");
    assert!(bad.is_file() && linked.is_file());
    assert!(
        !dir.path().join(".sess-compact.jsonl").exists(),
        "an empty journal is left"
    );
}

#[test]
fn a_damaged_journal_line_fails_undo_and_keeps_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    compact(dir.path(), &["--apply"]);
    let journal = dir.path().join(".sess-compact.jsonl");
    let text = fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let damaged = lines[2].replace("\"op\"", "\"xx\"");
    lines[2] = &damaged;
    fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let out = sess()
        .args(["compact", "--undo"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("line 3 cannot be read"), "{said}");
    assert!(
        journal.exists(),
        "the journal is the only record of the log line 3 named"
    );
}

#[test]
fn temporary_files_of_a_live_run_are_left_and_a_dead_runs_removed() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    // This test's own process runs; pid 0x7fffffff does not.
    let live = dir
        .path()
        .join(format!(".sess-compact-{}-abc.tmp", std::process::id()));
    let dead = dir.path().join(".sess-compact-2147483647-abc.tmp");
    fs::write(&live, b"x").unwrap();
    fs::write(&dead, b"x").unwrap();
    compact(dir.path(), &["--apply"]);
    assert!(live.exists(), "a live run's temporary file was removed");
    assert!(!dead.exists(), "a dead run's temporary file was left");
}

#[test]
fn the_packed_form_and_the_restored_log_keep_the_owner() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.jsonl");
    fs::write(&log, big_log(40)).unwrap();
    // As root, the log is given away first (to nobody); a user keeps their own.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::os::unix::fs::chown(&log, Some(65534), Some(65534)).unwrap();
    }
    age(&log, 30);
    let before = fs::metadata(&log).unwrap();
    compact(dir.path(), &["--apply"]);
    let packed = fs::metadata(dir.path().join("a.jsonl.sess.zst")).unwrap();
    assert_eq!((packed.uid(), packed.gid()), (before.uid(), before.gid()));
    compact(dir.path(), &["--undo"]);
    let after = fs::metadata(&log).unwrap();
    assert_eq!(
        (after.uid(), after.gid(), after.mode()),
        (before.uid(), before.gid(), before.mode())
    );
}

/// A log whose last line has no newline is told of once, by its own name: not again by the
/// check of its packed form, under the temporary file's name (`/proc/self/fd/N`).
#[test]
fn a_last_line_without_a_newline_is_told_of_once_naming_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    // Long enough for its packed form to be smaller.
    let mut text: String = (0..500)
        .map(|i| {
            format!(
                "{{\"type\":\"x\",\"seq\":{i},\"text\":\"{}\"}}\n",
                "hi ".repeat(40)
            )
        })
        .collect();
    text.push_str("{\"type\":\"x\",\"seq\":500}");
    fs::write(&log, &text).unwrap();
    age(&log, 30);
    let err = apply_warnings(dir.path());
    assert_eq!(err.matches("no final newline").count(), 1, "{err}");
    assert!(err.contains("s.jsonl:501:"), "{err}");
    let packed = dir.path().join("s.jsonl.sess.zst");
    assert_eq!(unpacked(&packed), text.as_bytes());
}

/// A log compressed already under a `.jsonl` name, or one that holds packed rows itself:
/// the dry run and the store report said they would be compacted, and `--apply` then left
/// every one alone (compressed content was taken for a log by its name; a log of rows
/// unpacks to more than it is).
#[test]
fn a_dry_run_and_the_store_report_promise_only_what_apply_does() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        fs::write(&p, bytes).unwrap();
        age(&p, 30);
        p
    };
    let log = big_log(300);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&log).unwrap();
    put("gz.jsonl", &gz.finish().unwrap());
    let plain = put("plain.jsonl", &log);
    let packed = stdout_ok(sess().arg("pack").arg(&plain));
    put("packed.jsonl", &packed);
    let rows = stdout_ok(
        sess()
            .args(["pack", "--plain"])
            .arg(common::testdata("dsh.jsonl")),
    );
    put("rows.jsonl", &rows);
    // Plain text under a compressed name is left alone, and said to be plain.
    put("named.jsonl.zst", &log);
    let why = |args: &[&str]| -> Vec<(String, String)> {
        let out = stdout_ok(sess().arg("compact").args(args).arg(dir.path()));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        v["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let name = l["path"].as_str().unwrap().rsplit('/').next().unwrap();
                let mut why = l["why"].as_str().unwrap_or("").to_string();
                if l["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("plain text"))
                {
                    why += " (plain text)";
                }
                (name.to_string(), why)
            })
            .collect()
    };
    let want = [
        ("gz.jsonl", "compressed"),
        ("named.jsonl.zst", "compressed (plain text)"),
        ("packed.jsonl", "compressed"),
        ("plain.jsonl", ""),
        ("rows.jsonl", "not_exact"),
    ]
    .map(|(n, w)| (n.to_string(), w.to_string()));
    assert_eq!(why(&["--json"]), want);
    // The store report counts for compact the one log it compacts (and for --compat the
    // log of rows too: its bytes compressed are exact). Then --apply does what was said.
    let out = stdout_ok(sess().args(["stats", "--json"]).arg(dir.path()));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let savings = &v["savings"];
    assert_eq!(savings["compact"]["logs"], 1, "{savings}");
    assert_eq!(savings["compact"]["bytes"], log.len(), "{savings}");
    assert_eq!(savings["compact_compat"]["logs"], 2, "{savings}");
    assert_eq!(why(&["--json", "--apply"]), want);
}

/// A folder given twice was worked on twice: the second pass found the first's packed
/// forms and counted them again, as left alone.
#[test]
fn a_folder_given_twice_is_worked_on_once() {
    let dir = tempfile::tempdir().unwrap();
    let logs = store(dir.path());
    let again = dir.path().join(".");
    let out = stdout_ok(
        sess()
            .args(["compact", "--apply", "--json"])
            .arg(dir.path())
            .arg(&again),
    );
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["logs"].as_array().unwrap().len(), logs.len(), "{v}");
}
