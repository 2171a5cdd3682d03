//! Interned lines through the commands: readers that seek get the definitions they need,
//! and damage to a frame holding definitions loses the lines that need them, reported,
//! never a wrong line.

mod common;

use common::{sess, stdout_ok};

/// A log whose `hist` grows by one message a line (Claude Code's `normalizedMessages`),
/// with a repeated blob: in small frames, most of it is interned.
fn growing_log() -> Vec<u8> {
    let blob = "b".repeat(3000);
    let mut out = String::new();
    for k in 1..150 {
        let hist: Vec<String> = (0..k)
            .map(|i| format!(r#"{{"i":{i},"text":"{}"}}"#, "m".repeat(150 + i % 7)))
            .collect();
        out.push_str(&format!(
            "{{\"seq\":{k},\"type\":\"step\",\"blob\":\"{blob}\",\"hist\":[{}]}}\n",
            hist.join(",")
        ));
    }
    out.into_bytes()
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split_inclusive(|&c| c == b'\n').collect()
}

/// `log` packed into frames of `frame_size` bytes, in `dir`.
fn pack_small_frames(dir: &std::path::Path, log: &[u8], frame_size: usize) -> std::path::PathBuf {
    let input = dir.join("log.jsonl");
    std::fs::write(&input, log).unwrap();
    let packed = dir.join("log.jsonl.zst");
    sess()
        .args(["pack", "--frame-size", &frame_size.to_string(), "-o"])
        .arg(&packed)
        .arg(&input)
        .assert()
        .success();
    packed
}

#[test]
fn interned_logs_read_back_whole_and_by_seeking() {
    let dir = tempfile::tempdir().unwrap();
    let log = growing_log();
    let packed = pack_small_frames(dir.path(), &log, 16384);
    let z = std::fs::read(&packed).unwrap();
    let inner = zstd::decode_all(&z[..]).unwrap();
    assert!(
        lines(&inner)
            .iter()
            .filter(|l| sess::intern::is_interned(l))
            .count()
            > 40,
        "interned lines"
    );
    assert!(z.len() * 20 < log.len(), "{} of {}", z.len(), log.len());
    // Every line has a seq, interned or not: the index knows where each frame starts.
    let index = common::index_of(&z).0;
    assert!(index.entries.len() > 3);
    assert!(
        index.entries.iter().all(|e| e.first_seq.is_some()),
        "{index:?}"
    );
    assert_eq!(stdout_ok(sess().arg("unpack").arg(&packed)), log);
    // Seeking reads the frames it needs and the definitions they refer to: the same
    // answer as reading the plain log through.
    let plain = dir.path().join("log.jsonl");
    let wide = &["cat", "--tail", "50", "--type", "step"];
    for args in [
        &["cat", "--tail", "3"][..],
        &["cat", "--seq", "40..45"],
        wide,
    ] {
        let seek = stdout_ok(sess().args(args).arg(&packed));
        let through = stdout_ok(sess().args(args).arg(&plain));
        assert!(seek == through && !seek.is_empty(), "{args:?}");
    }
    let all = lines(&log);
    let tail = stdout_ok(sess().args(["cat", "--tail", "3"]).arg(&packed));
    assert!(tail == all[all.len() - 3..].concat());
    sess().arg("verify").arg(&packed).assert().success();
}

/// A log of 600 lines that all repeat one blob (a subagent's prompt), each with text of
/// its own.
fn blob_log() -> Vec<u8> {
    let blob = "p".repeat(1500);
    (0..600)
        .map(|k| {
            format!(
                "{{\"seq\":{k},\"prompt\":\"{blob}\",\"text\":\"{}\"}}\n",
                k * 7919
            )
        })
        .collect::<String>()
        .into_bytes()
}

/// `log` packed into frames of `frame_size` in `dir`, as `bad.zst` with a bit flipped in
/// the middle of the frame `pick` chooses from the index: its path, the index, and the
/// frame.
fn frame_damaged(
    dir: &std::path::Path,
    log: &[u8],
    frame_size: usize,
    pick: impl FnOnce(&sess::frames::index::Index) -> usize,
) -> (std::path::PathBuf, sess::frames::index::Index, usize) {
    let packed = pack_small_frames(dir, log, frame_size);
    let mut z = std::fs::read(&packed).unwrap();
    let index = common::index_of(&z).0;
    let k = pick(&index);
    let e = index.entries[k];
    z[(e.offset + u64::from(e.compressed) / 2) as usize] ^= 0x08;
    let bad = dir.join("bad.zst");
    std::fs::write(&bad, &z).unwrap();
    (bad, index, k)
}

/// `log` packed in 2 KiB frames (more than 40), with a bit flipped in the first: its path,
/// and its index.
fn first_frame_damaged(
    dir: &std::path::Path,
    log: &[u8],
) -> (std::path::PathBuf, sess::frames::index::Index) {
    let (bad, index, _) = frame_damaged(dir, log, 2048, |_| 0);
    assert!(index.entries.len() > 40, "{} frames", index.entries.len());
    (bad, index)
}

/// `cat --tail N` of `packed` gives the last N lines of `log`, and `cat --seq A..B` the
/// lines whose seq is A to B (each line of `log` begins with its seq).
fn reads_as_the_log(packed: &std::path::Path, log: &[u8], tails: &[usize], (a, b): (usize, usize)) {
    let all = lines(log);
    for n in tails {
        let tail = stdout_ok(sess().args(["cat", "--tail", &n.to_string()]).arg(packed));
        assert!(tail == all[all.len() - n..].concat(), "--tail {n}");
    }
    let seq = stdout_ok(
        sess()
            .args(["cat", "--seq", &format!("{a}..{b}")])
            .arg(packed),
    );
    let first = all
        .iter()
        .position(|l| l.starts_with(format!("{{\"seq\":{a},").as_bytes()))
        .unwrap();
    assert!(
        seq == all[first..=first + (b - a)].concat(),
        "--seq {a}..{b}"
    );
}

#[test]
fn a_tail_reads_the_frames_its_definitions_are_in_and_not_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let log = blob_log();
    // The first frame defines the blob; the last lines refer to a definition of it a few
    // frames before them (a ref reaches at most 8 frames back), so the tail and a range
    // near the end read without the first frame, which is damaged.
    let (bad, _) = first_frame_damaged(dir.path(), &log);
    sess().arg("unpack").arg(&bad).assert().code(1);
    reads_as_the_log(&bad, &log, &[1, 3, 20], (580, 590));
    // What needs the damaged frame is an error, as before.
    for args in [&["cat", "--tail", "600"][..], &["cat", "--seq", "1..3"]] {
        sess().args(args).arg(&bad).assert().code(1);
    }
}

#[test]
fn a_tail_whose_definitions_chain_far_back_reads_back_as_far_as_it_needs() {
    // Each history refers to the one before (`[0` refs), and the blob's definitions ride
    // in the same lines: the last lines need frames far before the ones first read.
    let dir = tempfile::tempdir().unwrap();
    let log = growing_log();
    let packed = pack_small_frames(dir.path(), &log, 2048);
    assert!(
        common::index_of(&std::fs::read(&packed).unwrap())
            .0
            .entries
            .len()
            > 40
    );
    reads_as_the_log(&packed, &log, &[1, 3, 12], (140, 145));
}

#[test]
fn damage_to_definitions_loses_the_lines_that_need_them_and_no_line_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let log = growing_log();
    let packed = pack_small_frames(dir.path(), &log, 16384);
    let mut z = std::fs::read(&packed).unwrap();
    // A flipped bit in the first frame, which defines what the later lines refer to.
    z[40] ^= 0x10;
    let bad = dir.path().join("bad.zst");
    std::fs::write(&bad, &z).unwrap();
    let out = sess().arg("unpack").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = sess()
        .args(["cat", "--recovery", "skip-corrupt"])
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let kept = lines(&out.stdout);
    let original = lines(&log);
    // Lost: the first frame's lines, and the later lines that refer to what it defined,
    // each named on stderr.
    assert!(kept.len() < original.len() && !kept.is_empty());
    assert!(err.contains("not defined before it"), "{err}");
    let named = err.matches("the line is skipped").count();
    assert!(named > 0);
    // Every line written is a line of the log, in order.
    let mut at = 0;
    for l in &kept {
        let k = original[at..]
            .iter()
            .position(|o| o == l)
            .unwrap_or_else(|| panic!("a line not in the log: {}", String::from_utf8_lossy(l)));
        at += k + 1;
    }
}

/// `sess repair` of `bad` into `fixed` (replaced if it is there), which must succeed.
fn repair(bad: &std::path::Path, fixed: &std::path::Path) {
    sess()
        .args(["repair", "-f", "-o"])
        .arg(fixed)
        .arg(bad)
        .assert()
        .success();
}

/// What `sess cat --recovery skip-corrupt` gives of `bad`.
fn skip_corrupt(bad: &std::path::Path) -> Vec<u8> {
    stdout_ok(sess().args(["cat", "--recovery", "skip-corrupt"]).arg(bad))
}

/// The lines of `log` (numbers, 1-based) that `cat --recovery skip-corrupt` of its damaged
/// packed copy `bad` does not give back; what it gives is checked to be lines of `log`.
fn lost_reading_on(bad: &std::path::Path, log: &[u8]) -> Vec<u64> {
    let out = sess()
        .args(["cat", "--recovery", "skip-corrupt"])
        .arg(bad)
        .output()
        .unwrap();
    assert!(out.status.success());
    missing(&lines(log), &lines(&out.stdout))
}

/// The line numbers (1-based) of `original` that `kept` lacks; `kept` must be a
/// subsequence of `original`.
fn missing(original: &[&[u8]], kept: &[&[u8]]) -> Vec<u64> {
    let mut kept = kept.iter().peekable();
    let mut gone = Vec::new();
    for (k, line) in original.iter().enumerate() {
        match kept.next_if(|l| *l == line) {
            Some(_) => {}
            None => gone.push(k as u64 + 1),
        }
    }
    assert!(
        kept.next().is_none(),
        "a line kept that is not in the log, in order"
    );
    gone
}

/// The lines a report names: each `lines A..B of the original`, and each `FILE:N:` or
/// `line N of the original`.
fn named_lines(report: &str, file: &str) -> Vec<u64> {
    let mut named = Vec::new();
    for l in report.lines() {
        if let Some((_, r)) = l.split_once("lost lines ") {
            let (a, b) = r
                .split_once(" of the original")
                .unwrap()
                .0
                .split_once("..")
                .unwrap();
            named.extend(a.parse::<u64>().unwrap()..=b.parse().unwrap());
        } else if let Some((_, r)) = l.split_once("): lines ") {
            let (a, b) = r
                .split_once(" of the original")
                .unwrap()
                .0
                .split_once("..")
                .unwrap();
            named.extend(a.parse::<u64>().unwrap()..=b.parse().unwrap());
        } else if let Some((_, r)) = l.split_once(": line ") {
            named.push(r.split_once(' ').unwrap().0.parse().unwrap());
        } else if let Some(r) = l.strip_prefix(&format!("{file}:"))
            && let Some((n, _)) = r.split_once(':')
            && let Ok(n) = n.parse()
        {
            named.push(n);
        }
    }
    named.sort_unstable();
    named.dedup();
    named
}

/// `log` packed in frames of `frame_size` bytes, with a bit flipped in the middle of the
/// frame holding line `line`: its path, and the frame's index entry.
fn frame_of_line_damaged(
    dir: &std::path::Path,
    log: &[u8],
    frame_size: usize,
    line: u64,
) -> (std::path::PathBuf, sess::frames::index::Entry) {
    let holding = |index: &sess::frames::index::Index| {
        let mut before = 0;
        let holds = |e: &sess::frames::index::Entry| {
            before += u64::from(e.lines);
            before >= line
        };
        index.entries.iter().position(holds).unwrap()
    };
    let (bad, index, k) = frame_damaged(dir, log, frame_size, holding);
    (bad, index.entries[k])
}

#[test]
fn verify_and_repair_name_every_line_a_damaged_frame_costs_by_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let log = growing_log();
    // A flip in the frame holding line 30: its histories are past 4 KiB, so each is
    // defined for the next, and later lines need what it defines.
    let (bad, e) = frame_of_line_damaged(dir.path(), &log, 16384, 30);
    let name = bad.display().to_string();
    let original = lines(&log);

    let out = sess()
        .args(["cat", "--recovery", "skip-corrupt"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(out.status.success());
    let gone = missing(&original, &lines(&out.stdout));
    let frame_lines = u64::from(e.lines);
    assert!(
        gone.len() as u64 > frame_lines,
        "later lines needed the frame's values: {gone:?}"
    );
    let warned = String::from_utf8_lossy(&out.stderr).replace("sess: warning: ", "");
    assert_eq!(named_lines(&warned, &name), gone, "{warned}");

    let out = sess().arg("verify").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(named_lines(&report, &name), gone, "{report}");

    let fixed = dir.path().join("fixed.zst");
    let out = sess()
        .arg("repair")
        .arg(&bad)
        .arg("-o")
        .arg(&fixed)
        .output()
        .unwrap();
    assert!(out.status.success());
    let report = String::from_utf8_lossy(&out.stderr);
    assert_eq!(named_lines(&report, &name), gone, "{report}");
    // What is left reads back whole; its only flaw is the gap in seq the loss left.
    let out = sess().arg("verify").arg(&fixed).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    // (In this log a line's seq is its number.) The chain of refs ends, and lines follow.
    let next = (gone[0]..).find(|n| !gone.contains(n)).unwrap();
    assert!(next <= original.len() as u64, "{gone:?}");
    let gap = format!("seq {next} where {} was expected", gone[0]);
    assert!(
        report.ends_with("1 problem(s)\n") && report.contains(&gap),
        "{report}"
    );
    let read = stdout_ok(sess().arg("cat").arg(&fixed));
    assert_eq!(missing(&original, &lines(&read)), gone);
}

#[test]
fn a_path_that_reads_once_is_packed_whole() {
    // /dev/stdin on a pipe: the first pass that finds repeats must not eat the input.
    let log = growing_log();
    let packed = sess()
        .args(["pack", "/dev/stdin"])
        .write_stdin(log.clone())
        .output()
        .unwrap();
    assert!(packed.status.success());
    assert!(stdout_ok(sess().arg("unpack").write_stdin(packed.stdout)) == log);
}

#[test]
fn input_lines_that_read_as_interned_stay_what_they_read_as() {
    // Such a line stands for the line it rebuilds (itself an interned-looking line here);
    // packing must keep what a reader of the input sees, one frame or not.
    let p = r#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":"#;
    let log = format!("{p}{p}{{\"k\":1}}}}}}\n{p}{p}{{\"k\":2}}}}}}\n");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("w.jsonl");
    std::fs::write(&f, &log).unwrap();
    let seen = stdout_ok(sess().arg("cat").arg(&f));
    let packed = dir.path().join("w.zst");
    sess()
        .args(["pack", "-o"])
        .arg(&packed)
        .arg(&f)
        .assert()
        .success();
    assert_eq!(stdout_ok(sess().arg("cat").arg(&packed)), seen);
}

#[test]
fn a_value_every_line_repeats_is_defined_again_so_damage_stays_near() {
    // Every line repeats one blob, as a Claude Code subagent repeats its prompt; each has
    // text of its own. A lost frame must not cost every later line.
    let log = blob_log();
    let dir = tempfile::tempdir().unwrap();
    // The first frame defines the blob.
    let (bad, index) = first_frame_damaged(dir.path(), &log);
    let e = index.entries[0];
    let gone = lost_reading_on(&bad, &log);
    // Lost: the frame, and the lines of the frames after it until the blob is defined
    // again (8 frames); never the rest.
    let reach: u64 = index.entries[..10].iter().map(|e| u64::from(e.lines)).sum();
    assert!(
        !gone.is_empty() && gone.iter().all(|&n| n <= reach),
        "{gone:?}"
    );
    assert!(
        gone.len() > e.lines as usize,
        "later lines did need the blob: {gone:?}"
    );
}

#[test]
fn a_definition_outside_an_unresolved_ref_survives_it() {
    // The growing history with a repeated blob: each line's history is a `[0` ref to the
    // last one, and the blob, whose definition lies more than 8 frames back, is defined
    // again in lines that hold such a ref. A lost frame breaks the chain of `[0` refs
    // until a history is written whole (every 64th); the blob defined again in the
    // lines of the broken chain is still read, so the loss ends there. (Before, the blob
    // was lost with those lines, and so was every later line.)
    let log = growing_log();
    let dir = tempfile::tempdir().unwrap();
    let (bad, _) = frame_of_line_damaged(dir.path(), &log, 2048, 30);
    let gone = lost_reading_on(&bad, &log);
    let last = *gone.last().unwrap();
    // The chain ends at most 64 histories on, and nothing after it is lost.
    assert!(last - gone[0] <= 64, "lost through line {last}: {gone:?}");
    assert_eq!(gone, (gone[0]..=last).collect::<Vec<_>>(), "{gone:?}");
}

#[test]
fn the_first_pass_reads_plain_files_as_the_line_reader_reads_any_file() {
    // Plain files are surveyed straight from the file; a zstd file the general way. The
    // same lines must make the same choices: lines across reads, CRLF, a last line
    // without newline, several inputs, and interned lines (which send plain files the
    // general way too).
    let big = "q".repeat(300_000);
    let long: String = (0..12)
        .map(|k| format!("{{\"seq\":{k},\"blob\":\"{big}\",\"n\":\"{}\"}}\n", k * 31))
        .collect();
    let crlf = String::from_utf8(blob_log()).unwrap().replace('\n', "\r\n");
    let mut unterminated = blob_log();
    unterminated.pop();
    let interned = stdout_ok(
        sess()
            .args([
                "pack",
                "--plain",
                "--intern-min",
                "256",
                "--frame-size",
                "4K",
            ])
            .write_stdin(blob_log()),
    );
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let (plain, zst) = (
            dir.path().join(name),
            dir.path().join(format!("{name}.zst")),
        );
        std::fs::write(&plain, bytes).unwrap();
        std::fs::write(&zst, common::zstd(bytes)).unwrap();
        (plain, zst)
    };
    // A value whose line straddles the first 1 MiB, and that occurs once more, further on:
    // defined where it first occurs only if that line was read whole.
    let mut straddle = Vec::new();
    let mut k = 0;
    while straddle.len() < (1 << 20) - 1000 {
        straddle.extend_from_slice(format!("{{\"n\":{k}}}\n").as_bytes());
        k += 1;
    }
    let v = "v".repeat(2000);
    let x = "x".repeat(3000);
    straddle.extend_from_slice(format!("{{\"a\":\"{x}\",\"v\":\"{v}\"}}\n").as_bytes());
    for k in 0..3000 {
        straddle.extend_from_slice(format!("{{\"m\":{k}}}\n").as_bytes());
    }
    straddle.extend_from_slice(format!("{{\"b\":1,\"v\":\"{v}\"}}\n").as_bytes());
    let logs = [
        ("straddle", straddle),
        ("long", long.into_bytes()),
        ("crlf", crlf.into_bytes()),
        ("unterminated", unterminated),
        ("interned", interned),
        ("growing", growing_log()),
    ];
    let files: Vec<_> = logs.iter().map(|(name, log)| write(name, log)).collect();
    // Two threads: plain files are then read on one and surveyed on the other.
    let pack_on = |threads: &str, paths: &[&std::path::Path]| {
        let args = ["pack", "--frame-size", "16K", "--threads", threads];
        stdout_ok(sess().args(args).args(paths))
    };
    let pack = |paths: &[&std::path::Path]| pack_on("2", paths);
    let mut surveyed = 0;
    for ((name, log), (plain, zst)) in logs.iter().zip(&files) {
        let by_hand = pack(&[plain]);
        assert!(
            by_hand == pack(&[zst]),
            "{name}: the two first passes differ"
        );
        assert!(by_hand == pack_on("1", &[plain]), "{name}: one thread");
        // A packed input packs its events again: it reads back as they do.
        let events = stdout_ok(sess().arg("unpack").write_stdin(log.clone()));
        let back = stdout_ok(sess().arg("unpack").write_stdin(by_hand.clone()));
        assert!(back == events, "{name}");
        // From a pipe there is no first pass: where that packs otherwise, it mattered.
        let piped = stdout_ok(
            sess()
                .args(["pack", "--frame-size", "16K"])
                .write_stdin(log.clone()),
        );
        surveyed += usize::from(piped != by_hand);
    }
    assert!(surveyed >= 4, "{surveyed}");
    let plains: Vec<&std::path::Path> = files.iter().map(|(p, _)| p.as_path()).collect();
    let zsts: Vec<&std::path::Path> = files.iter().map(|(_, z)| z.as_path()).collect();
    assert!(pack(&plains[..4]) == pack(&zsts[..4]), "several inputs");
    // A plain file read straight, then one with interned lines: the pass starts again.
    let (growing, interned) = (plains[5], plains[4]);
    assert!(
        pack(&[growing, interned]) == pack(&[zsts[5], zsts[4]]),
        "started again"
    );
}

/// The stored lines of each frame of a packed file, from its index.
fn frames_of(z: &[u8]) -> (sess::frames::index::Index, Vec<Vec<Vec<u8>>>) {
    let index = common::index_of(z).0;
    let frames = index
        .entries
        .iter()
        .map(|e| {
            let at = e.offset as usize;
            let plain = zstd::decode_all(&z[at..at + e.compressed as usize]).unwrap();
            lines(&plain)
                .iter()
                .map(|l| l.strip_suffix(b"\n").unwrap_or(l).to_vec())
                .collect()
        })
        .collect();
    (index, frames)
}

/// Reads `frames[from..=k]` afresh: whether every line of frame `k` rebuilds, and as the
/// lines of `log` after the `before` lines of the frames before `k`.
fn frame_reads_from(frames: &[Vec<Vec<u8>>], from: usize, k: usize, log: &[&[u8]]) -> bool {
    let mut reader = sess::intern::Reader::default();
    let mut out = Vec::new();
    for lines in &frames[from..k] {
        for l in lines {
            if sess::intern::is_interned(l) {
                let _ = reader.read(l, &mut out);
            }
        }
    }
    let before: usize = frames[..k].iter().map(Vec::len).sum();
    frames[k].iter().enumerate().all(|(n, l)| {
        let rebuilt = match sess::intern::is_interned(l) {
            true => reader.read(l, &mut out).is_ok().then(|| out.clone()),
            false => Some(l.clone()),
        };
        let want = log[before + n];
        rebuilt.is_some_and(|r| want.strip_suffix(b"\n").unwrap_or(want) == &r[..])
    })
}

#[test]
fn the_index_says_where_the_definitions_each_frame_needs_begin() {
    for (log, frame_size, farthest) in [
        (growing_log(), 2048, 9..usize::MAX),
        (growing_log(), 16384, 1..usize::MAX),
        // A ref reaches at most 8 frames back, and the blob's definitions hold no refs.
        (blob_log(), 2048, 1..9),
        (nested_log(), 2048, 2..10),
        // A last line without a newline, in a frame of its own.
        (
            [
                &nested_log()[..],
                format!("{{\"t\":\"{}\"}}", unique(99, 3000)).as_bytes(),
            ]
            .concat(),
            2048,
            2..10,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let packed = pack_small_frames(dir.path(), &log, frame_size);
        let (index, frames) = frames_of(&std::fs::read(&packed).unwrap());
        let all = lines(&log);
        let mut most = 0;
        for (k, e) in index.entries.iter().enumerate() {
            let needs = e.needs.expect("sess pack says what each frame needs") as usize;
            most = most.max(needs);
            assert!(
                frame_reads_from(&frames, k - needs, k, &all),
                "frame {k} of {} does not read from {} frames back",
                index.entries.len(),
                needs
            );
            // A frame that needs frames before it cannot do without the first of them.
            if needs > 0 {
                assert!(
                    !frame_reads_from(&frames, k - needs + 1, k, &all),
                    "frame {k} reads from {} frames back",
                    needs - 1
                );
            }
        }
        assert!(farthest.contains(&most), "{most} frames back at most");
    }
}

/// A log of a line a frame, where a value defined in the third frame holds a ref to a
/// value defined in the second: the lines that refer to the first need both frames.
fn nested_log() -> Vec<u8> {
    let (blob, note) = ("b".repeat(1500), "n".repeat(500));
    let mut out = format!("{{\"seq\":0,\"pad\":\"{}\"}}\n", unique(0, 3000));
    out.push_str(&format!(
        "{{\"seq\":1,\"blob\":\"{blob}\",\"t\":\"{}\"}}\n",
        unique(1, 1500)
    ));
    for k in 2..20 {
        out.push_str(&format!(
            "{{\"seq\":{k},\"o\":{{\"blob\":\"{blob}\",\"note\":\"{note}\"}},\"t\":\"{}\"}}\n",
            unique(k, 1500)
        ));
    }
    out.into_bytes()
}

/// `n` letters that repeat nowhere else in a log (`seed` tells texts apart).
fn unique(seed: u64, n: usize) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            char::from(b'a' + (state >> 59) as u8 % 26)
        })
        .collect()
}

/// A log whose lines carry a history that grows by one message a line, in frames of about
/// one line each, after a first line alone in its frame: the history of the last line is
/// a chain of `[0` refs back to the second frame, and none needs the first. With `paths`
/// of 2, line `k` carries history `k % 2`, and lines 1 and 2 begin the two chains.
fn chained_log(paths: usize) -> Vec<u8> {
    // Text that does not repeat, so that nothing but the history is interned.
    let mut seed = 0;
    let mut text = |n: usize| -> String {
        seed += 1;
        unique(seed, n)
    };
    let mut out = format!(
        "{{\"seq\":0,\"type\":\"start\",\"pad\":\"{}\"}}\n",
        text(3000)
    );
    let mut hists: Vec<Vec<String>> = vec![Vec::new(); paths];
    for k in 1..17 {
        let hist = &mut hists[k % paths];
        while hist.len() < 13 + k {
            hist.push(format!("{{\"m\":\"{}\"}}", text(300)));
        }
        out.push_str(&format!(
            "{{\"seq\":{k},\"type\":\"step\",\"hist{}\":[{}],\"text\":\"{}\"}}\n",
            k % paths,
            hist.join(","),
            text(1500)
        ));
    }
    out.into_bytes()
}

#[test]
fn a_tail_begins_reading_where_the_index_says_its_definitions_are() {
    let dir = tempfile::tempdir().unwrap();
    let log = chained_log(1);
    let bad = first_line_s_frame_damaged(dir.path(), &log);
    let index = common::index_of(&std::fs::read(&bad).unwrap()).0;
    let last = index.entries.len() - 1;
    // The last frame needs every frame but the first: more than the 9 a guess begins with,
    // so a reader that guessed would double back to the first.
    assert_eq!(
        index.entries[last].needs,
        Some(last as u32 - 1),
        "{index:?}"
    );
    reads_as_the_log(&bad, &log, &[1, 2], (15, 16));
    // What needs the damaged frame is an error.
    sess()
        .args(["cat", "--seq", "0..1"])
        .arg(&bad)
        .assert()
        .code(1);
}

/// `log` (a [`chained_log`]) packed in frames of a line each, with a bit flipped in the
/// first frame.
fn first_line_s_frame_damaged(dir: &std::path::Path, log: &[u8]) -> std::path::PathBuf {
    let (bad, index, _) = frame_damaged(dir, log, 2048, |_| 0);
    assert_eq!(index.entries.len(), lines(log).len(), "a line a frame");
    bad
}

#[test]
fn a_range_read_on_into_a_frame_that_needs_more_than_the_one_before_reads_right() {
    // Line 14's frame needs frames 2 on, line 15's frames 1 on: reading on from 14 to 15
    // primes again, further back, and passes by the damaged first frame. (Priming again
    // where the index says, rather than guessing, changes only which frames are read,
    // which no output shows.)
    let dir = tempfile::tempdir().unwrap();
    let log = chained_log(2);
    let bad = first_line_s_frame_damaged(dir.path(), &log);
    let index = common::index_of(&std::fs::read(&bad).unwrap()).0;
    assert_eq!(
        (index.entries[14].needs, index.entries[15].needs),
        (Some(12), Some(14))
    );
    reads_as_the_log(&bad, &log, &[1], (14, 15));
}

#[test]
fn a_tail_of_a_file_whose_index_does_not_say_what_frames_need_still_reads() {
    // `repair` of a file with a damaged frame copies the frames before it as they were,
    // and what the old index says they need still holds; after the loss it does not
    // know, and a reader guesses, doubling back.
    let dir = tempfile::tempdir().unwrap();
    for log in [growing_log(), chained_log(1), chained_log(2)] {
        let half = |index: &sess::frames::index::Index| index.entries.len() / 2;
        let (bad, old, lost) = frame_damaged(dir.path(), &log, 2048, half);
        let packed = dir.path().join("log.jsonl.zst");
        let repaired = dir.path().join("repaired.zst");
        repair(&bad, &repaired);
        let index = common::index_of(&std::fs::read(&repaired).unwrap()).0;
        let needs: Vec<Option<u32>> = index.entries.iter().map(|e| e.needs).collect();
        let kept: Vec<Option<u32>> = old.entries[..lost].iter().map(|e| e.needs).collect();
        assert_eq!(needs[..lost], kept[..], "{index:?}");
        assert!(needs[lost..].iter().all(Option::is_none), "{index:?}");
        let all = stdout_ok(sess().arg("cat").arg(&repaired));
        let all = lines(&all);
        for n in [1, 3, 12] {
            let tail = stdout_ok(
                sess()
                    .args(["cat", "--tail", &n.to_string()])
                    .arg(&repaired),
            );
            let n = n.min(all.len());
            assert!(tail == all[all.len() - n..].concat(), "--tail {n}");
        }
        for f in [&packed, &bad, &repaired] {
            std::fs::remove_file(f).unwrap();
        }
    }
}

#[test]
fn a_range_read_is_not_stopped_by_damage_only_a_line_past_it_needs() {
    // Frame 3 holds X, then Z, then Y, which refers to a blob the first frame defines: the
    // frame needs the first, so a reader of X reads from there, past a damaged frame 2 that
    // no line of it needs.
    let blob = "p".repeat(1500);
    let mut log = format!("{{\"seq\":0,\"p\":\"{blob}\"}}\n");
    for k in 1..4 {
        log.push_str(&format!("{{\"seq\":{k},\"t\":\"{}\"}}\n", unique(k, 1500)));
    }
    log.push_str("{\"seq\":4,\"x\":1}\n{\"seq\":5,\"z\":1}\n");
    log.push_str(&format!("{{\"seq\":6,\"p\":\"{blob}\"}}\n"));
    log.push_str(&format!("{{\"seq\":7,\"t\":\"{}\"}}\n", unique(7, 1500)));
    let dir = tempfile::tempdir().unwrap();
    let (bad, index, _) = frame_damaged(dir.path(), log.as_bytes(), 2048, |_| 2);
    let lines_in = |k: usize| index.entries[k].lines;
    assert_eq!((1..5).map(lines_in).collect::<Vec<_>>(), [1, 1, 4, 1]);
    assert_eq!(index.entries[3].needs, Some(3), "{index:?}");
    let all = lines(log.as_bytes());
    for (a, b) in [(4, 4), (4, 6), (6, 7)] {
        let got = stdout_ok(
            sess()
                .args(["cat", "--seq", &format!("{a}..{b}")])
                .arg(&bad),
        );
        assert!(got == all[a..=b].concat(), "--seq {a}..{b}");
    }
    // A line that needs the damaged frame is an error.
    sess()
        .args(["cat", "--seq", "2..2"])
        .arg(&bad)
        .assert()
        .code(1);
}

#[test]
fn repair_rebuilds_a_line_that_needs_what_only_a_dropped_line_defined() {
    // Line 2 refers to a blob the damaged first frame defines, so it is lost; it also
    // defines a value of its own that the lines after it refer to. A reader that skips it
    // keeps that value, and so must the repaired file: the lines that need it are written
    // to stand alone.
    let (blob, own) = ("p".repeat(1500), "q".repeat(1200));
    let mut log = format!("{{\"seq\":0,\"p\":\"{blob}\"}}\n");
    log.push_str(&format!("{{\"seq\":1,\"t\":\"{}\"}}\n", unique(1, 1500)));
    log.push_str(&format!("{{\"seq\":2,\"p\":\"{blob}\",\"q\":\"{own}\"}}\n"));
    for k in 3..12 {
        log.push_str(&format!(
            "{{\"seq\":{k},\"q\":\"{own}\",\"t\":\"{}\"}}\n",
            unique(k, 900)
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let (bad, index, _) = frame_damaged(dir.path(), log.as_bytes(), 2048, |_| 0);
    assert_eq!(index.entries[0].lines, 1);
    let skipped = skip_corrupt(&bad);
    let all = lines(log.as_bytes());
    let want: Vec<u8> = [&all[1..2], &all[3..]].concat().concat();
    assert!(skipped == want, "{}", String::from_utf8_lossy(&skipped));
    let fixed = dir.path().join("fixed.zst");
    repair(&bad, &fixed);
    assert!(stdout_ok(sess().arg("cat").arg(&fixed)) == want);
    // Only the gap in seq that line 2 left (the file now begins at seq 1).
    let out = sess().arg("verify").arg(&fixed).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.ends_with("1 problem(s)\n") && report.contains("seq 3 where 2 was expected"),
        "{report}"
    );
}

#[test]
fn a_range_that_ends_before_a_damaged_frame_reads_without_it() {
    // The index says the damaged frame begins past the range: it is not read.
    let dir = tempfile::tempdir().unwrap();
    let log = blob_log();
    let (bad, e) = frame_of_line_damaged(dir.path(), &log, 2048, 300);
    let first = e.first_seq.unwrap() as usize;
    reads_as_the_log(&bad, &log, &[], (first - 20, first - 1));
    let through = format!("{}..{}", first - 1, first);
    sess()
        .args(["cat", "--seq", &through])
        .arg(&bad)
        .assert()
        .code(1);
}

#[test]
fn repair_finds_the_frame_after_damaged_block_headers_as_readers_do() {
    // A flip in a frame's header or first block header can make the walk of its blocks
    // run too long or past the end: the next good frame is searched for instead.
    let dir = tempfile::tempdir().unwrap();
    let log = blob_log();
    let packed = pack_small_frames(dir.path(), &log, 2048);
    let z = std::fs::read(&packed).unwrap();
    let e = common::index_of(&z).0.entries[5];
    let (bad, fixed) = (dir.path().join("bad.zst"), dir.path().join("fixed.zst"));
    for byte in 5..13 {
        for bit in [0, 1, 4] {
            let mut b = z.clone();
            b[e.offset as usize + byte] ^= 1 << bit;
            std::fs::write(&bad, &b).unwrap();
            let skipped = sess()
                .args(["cat", "--recovery", "skip-corrupt"])
                .arg(&bad)
                .output()
                .unwrap();
            repair(&bad, &fixed);
            let got = stdout_ok(sess().arg("cat").arg(&fixed));
            assert!(got == skipped.stdout, "byte {byte} bit {bit}");
        }
    }
}

#[test]
fn repair_keeps_nothing_of_a_torn_final_frame_that_is_damaged_before_the_tear() {
    // Readers drop a torn frame whose bytes do not decode before the tear: what was
    // decoded before the damage cannot be trusted (no checksum comes to vouch for it).
    let dir = tempfile::tempdir().unwrap();
    // Several blocks of 128 KiB, in one frame.
    let log: String = (0..5000)
        .map(|k| format!("{{\"seq\":{k},\"t\":\"{}\"}}\n", unique(k, 200)))
        .collect();
    let plain = dir.path().join("log.jsonl");
    std::fs::write(&plain, &log).unwrap();
    let z = stdout_ok(sess().arg("pack").arg(&plain));
    let (bad, fixed) = (dir.path().join("bad.zst"), dir.path().join("fixed.zst"));
    let mut detected = 0;
    for at in (z.len() / 2..z.len() - 2000).step_by(z.len() / 17) {
        let mut b = z[..z.len() - 1000].to_vec();
        b[at..at + 64].fill(0);
        std::fs::write(&bad, &b).unwrap();
        let skipped = sess()
            .args(["cat", "--recovery", "skip-corrupt"])
            .arg(&bad)
            .output()
            .unwrap();
        if !String::from_utf8_lossy(&skipped.stderr).contains("damaged tail") {
            continue;
        }
        detected += 1;
        assert!(skipped.stdout.is_empty());
        let _ = std::fs::remove_file(&fixed);
        let out = sess()
            .args(["repair", "-o"])
            .arg(&fixed)
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!fixed.exists());
    }
    assert!(detected > 0, "no damage was detected before the tear");
}

#[test]
fn repair_of_a_file_cut_inside_its_index_applies_the_last_line_rule() {
    // The last frame is whole and the cut is in the index after it: the frame is still
    // the last one, so its last line, without a newline, gets one (whole JSON) or is
    // dropped (torn), as the rule says.
    let dir = tempfile::tempdir().unwrap();
    let whole = blob_log();
    let whole = &whole[..whole.len() - 1];
    for (log, lines_left) in [
        (whole.to_vec(), 600),
        ([whole, b"\n{\"part\":"].concat(), 600),
    ] {
        let packed = pack_small_frames(dir.path(), &log, 2048);
        let z = std::fs::read(&packed).unwrap();
        let bad = dir.path().join("bad.zst");
        std::fs::write(&bad, &z[..z.len() - 20]).unwrap();
        let fixed = dir.path().join("fixed.zst");
        repair(&bad, &fixed);
        sess().arg("verify").arg(&fixed).assert().success();
        let back = zstd::decode_all(&std::fs::read(&fixed).unwrap()[..]).unwrap();
        assert!(back.ends_with(b"\n") && lines(&back).len() == lines_left);
        std::fs::remove_file(&packed).unwrap();
    }
}

#[test]
fn repair_of_plain_packed_lines_keeps_what_reads_back() {
    // `pack --plain --intern-min` writes interned lines uncompressed. A damaged line that
    // defined values is dropped (not JSON); the lines after it that readers of the damaged
    // file still rebuild are written to stand alone, so the output reads back whole.
    let dir = tempfile::tempdir().unwrap();
    let log = chained_log(1);
    let input = dir.path().join("log.jsonl");
    std::fs::write(&input, &log).unwrap();
    let plain = stdout_ok(
        sess()
            .args([
                "pack",
                "--plain",
                "--intern-min",
                "256",
                "--frame-size",
                "2048",
            ])
            .arg(&input),
    );
    let mut stored: Vec<Vec<u8>> = lines(&plain).iter().map(|l| l.to_vec()).collect();
    // The second line defines the messages every later history refers to. Its last
    // quote cut, it is no JSON, and its definitions, before it, are whole.
    assert!(sess::intern::is_interned(&stored[1]) && stored[1].ends_with(b"\"}}\n"));
    let quote = stored[1].len() - 4;
    stored[1].remove(quote);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, stored.concat()).unwrap();
    let fixed = dir.path().join("fixed.jsonl");
    repair(&bad, &fixed);
    let skipped = skip_corrupt(&bad);
    let back = stdout_ok(sess().arg("cat").arg(&fixed));
    // skip-corrupt keeps the damaged line as it rebuilds it (a plain log keeps what is
    // not JSON); repair drops it.
    let json = |l: &&[u8]| sess::json::validate(l.strip_suffix(b"\n").unwrap_or(l)).is_ok();
    let skipped: Vec<&[u8]> = lines(&skipped).into_iter().filter(json).collect();
    assert!(lines(&back) == skipped);
    assert!(lines(&back).len() > 2);
}

#[test]
fn a_long_tail_reads_back_from_where_its_definitions_begin_not_from_the_first_frame() {
    // A tail reaching more than two frames back (but not so far that priming each frame
    // would read more than reading from the first) primes each frame from where the index
    // says its definitions begin: past the damaged first frame.
    let dir = tempfile::tempdir().unwrap();
    let log = blob_log();
    let (bad, index) = first_frame_damaged(dir.path(), &log);
    let last: u32 = index.entries.iter().rev().take(3).map(|e| e.lines).sum();
    reads_as_the_log(&bad, &log, &[last as usize + 20], (580, 590));
}

/// The stored lines of `packed` (interned as sess wrote them) cut every `every` bytes into
/// zstd frames of their own, as pzstd or `cat a.zst b.zst` may: lines run across frames.
fn recut(packed: &std::path::Path, every: usize) -> Vec<u8> {
    let (_, frames) = frames_of(&std::fs::read(packed).unwrap());
    let stored: Vec<u8> = frames
        .concat()
        .iter()
        .flat_map(|l| [&l[..], b"\n"].concat())
        .collect();
    common::zstd_frames(&stored, every)
}

#[test]
fn repair_of_frames_that_cut_lines_keeps_every_line_whole() {
    // A line a frame ends inside is read whole, its first bytes with its last: its
    // definitions are then there for the lines after it.
    let dir = tempfile::tempdir().unwrap();
    let log = growing_log();
    let packed = pack_small_frames(dir.path(), &log, 2048);
    let cut = recut(&packed, 997);
    let (bad, fixed) = (dir.path().join("cut.zst"), dir.path().join("fixed.zst"));
    std::fs::write(&bad, &cut).unwrap();
    assert!(stdout_ok(sess().arg("cat").arg(&bad)) == log);
    repair(&bad, &fixed);
    assert!(stdout_ok(sess().arg("cat").arg(&fixed)) == log);
    sess().arg("verify").arg(&fixed).assert().success();
    // And with a frame in the middle damaged, the repaired file holds what readers keep.
    let frames: Vec<usize> = {
        let mut at = 0;
        let mut starts = Vec::new();
        while at < cut.len() {
            starts.push(at);
            at += zstd::zstd_safe::find_frame_compressed_size(&cut[at..]).unwrap();
        }
        starts
    };
    for k in [frames.len() / 3, frames.len() / 2] {
        let mut b = cut.clone();
        b[frames[k] + (frames[k + 1] - frames[k]) / 2] ^= 0x10;
        std::fs::write(&bad, &b).unwrap();
        // Readers keep no line the damage cut: each line kept is a line of the log.
        let skipped = skip_corrupt(&bad);
        assert!(!missing(&lines(&log), &lines(&skipped)).is_empty());
        repair(&bad, &fixed);
        let got = stdout_ok(sess().arg("cat").arg(&fixed));
        assert!(
            got == skipped,
            "frame {k}: {} against {} bytes",
            got.len(),
            skipped.len()
        );
    }
}

/// `cat a.zst b.zst`, where a's log has no final newline and b's begins with an interned
/// line: `zstd -dc` glues b's first line to a's last, and readers must still rebuild it
/// (before, its definitions were never read, and the lines that needed them were lost).
#[test]
fn files_joined_with_cat_read_as_their_logs_joined_when_the_first_has_no_final_newline() {
    let (dir, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The first line carries 300 KB of text that does not compress well, so that the
    // first block of b's first frame is larger than a decoder's input buffer: a first
    // call gave repair no bytes, and it missed the glue.
    let image = format!("{{\"seq\":1,\"img\":\"{}\",", unique(1, 300_000));
    let log = String::from_utf8(growing_log())
        .unwrap()
        .replacen("{\"seq\":1,", &image, 1)
        .into_bytes();
    let unended = &log[..log.len() - 1];
    let a = std::fs::read(pack_small_frames(dir.path(), unended, 20_000)).unwrap();
    let b = std::fs::read(pack_small_frames(other.path(), &log, 20_000)).unwrap();
    assert!(sess::intern::is_interned(
        &zstd::decode_all(&b[..]).unwrap()
    ));
    let joined = dir.path().join("joined.zst");
    std::fs::write(&joined, [a, b].concat()).unwrap();
    let want = [unended, &log[..]].concat();
    assert!(stdout_ok(sess().arg("unpack").arg(&joined)) == want);
    // Read from the end, frame by frame, the glued line too (the 150th from the end).
    let all = lines(&want);
    for n in [1, 149, 150, 160] {
        let tail = stdout_ok(sess().args(["cat", "--tail", &n.to_string()]).arg(&joined));
        assert!(tail == all[all.len() - n..].concat(), "--tail {n}");
    }
    // Repair writes the glued line to stand alone, and the lines after it as they were
    // or standing alone: the repaired file reads back the same.
    let fixed = dir.path().join("fixed.zst");
    repair(&joined, &fixed);
    assert!(stdout_ok(sess().arg("unpack").arg(&fixed)) == want);
}

/// Lines handed on after a loss are counted once per loss ([`sess::frames::Health::gaps`]),
/// for readers whose lines build on the ones before (recover's batches). A line skipped
/// because a value it refers to was lost is such a loss, even far from the damaged frame.
#[test]
fn each_stretch_of_lost_lines_is_one_gap_even_a_line_whose_values_were_lost() {
    use sess::input::{Flow, Input, OpenOptions, each_line_of, open};
    let value = format!("\"{}\"", "v".repeat(400));
    let log: Vec<u8> = (0..200)
        .map(|k| match k {
            50 | 150 => format!("{{\"seq\":{k},\"big\":{value}}}\n"),
            _ => format!("{{\"seq\":{k},\"text\":\"{}\"}}\n", "t".repeat(80 + k % 9)),
        })
        .collect::<String>()
        .into_bytes();
    let dir = tempfile::tempdir().unwrap();
    // The frame holding line 51 (seq 50), which defines the value line 151 refers to.
    let (bad, _, _) = frame_damaged(dir.path(), &log, 2048, |index| {
        let at = lines(&log)[..50].concat().len() as u64;
        let ends: Vec<u64> = index
            .entries
            .iter()
            .scan(0, |end, e| {
                *end += u64::from(e.uncompressed);
                Some(*end)
            })
            .collect();
        ends.iter().position(|&end| end > at).unwrap()
    });
    let opts = OpenOptions {
        recovery: sess::frames::Recovery::SkipCorrupt,
        collect_warnings: true,
        ..OpenOptions::default()
    };
    let src = open(&Input::Path(bad), opts).unwrap();
    let health = std::sync::Arc::clone(&src.health);
    let mut kept = Vec::new();
    each_line_of::<sess::error::Error>(src, &mut |_, line| {
        kept.extend_from_slice(line.bytes);
        kept.push(b'\n');
        Ok(Flow::More)
    })
    .unwrap();
    let lost = missing(&lines(&log), &lines(&kept));
    assert!(lost.contains(&51) && lost.contains(&151), "{lost:?}");
    let stretches = lost.windows(2).filter(|w| w[1] != w[0] + 1).count() + 1;
    assert_eq!(stretches, 2, "{lost:?}");
    assert_eq!(sess::frames::reader::Health::lock(&health).gaps, 2);
}
