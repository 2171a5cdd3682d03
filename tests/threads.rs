//! Reading a zstd input ahead on a thread of its own (`--threads 2`, the default on two
//! cores) changes nothing a reader says: the same bytes out, the same warnings in the same
//! order, the same exit status as `--threads 1`, on whole, torn, damaged and unchecked
//! inputs, and whatever the command.

mod common;

use common::{sess, stdout_ok, testdata};

/// A pi log with a line that is not JSON in its middle (a warning the reading thread does
/// not give) and many lines after it.
fn log() -> Vec<u8> {
    let mut log = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    log.extend_from_slice(b"{\"type\":\"x\", not json\n");
    for _ in 0..40 {
        log.extend(std::fs::read(testdata("pi-new.jsonl")).unwrap());
    }
    log
}

/// One zstd frame of `data` without the content checksum, as `zstd --no-check` writes.
fn unchecked_frame(data: &[u8]) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(false))
        .unwrap();
    c.compress(data).unwrap()
}

/// `sess ARGS --threads N PATHS`, run to its end.
fn on_threads<P: AsRef<std::ffi::OsStr>>(
    args: &[&str],
    threads: &str,
    paths: &[P],
) -> std::process::Output {
    sess()
        .args(args)
        .args(["--threads", threads])
        .args(paths)
        .output()
        .unwrap()
}

/// Asserts that two runs said the same: exit status, stdout and stderr.
fn assert_alike(one: &std::process::Output, other: &std::process::Output, what: &str) {
    assert_eq!(one.status.code(), other.status.code(), "{what}");
    assert!(one.stdout == other.stdout, "{what}: stdout differs");
    assert_eq!(
        String::from_utf8_lossy(&one.stderr),
        String::from_utf8_lossy(&other.stderr),
        "{what}"
    );
}

/// The inputs: packed in small frames; the same cut inside its last frame (torn); with a
/// byte of a middle frame flipped; and frames without a checksum.
fn inputs(dir: &std::path::Path) -> Vec<(&'static str, std::path::PathBuf)> {
    let packed = stdout_ok(
        sess()
            .args(["pack", "--quiet", "--frame-size", "2K"])
            .write_stdin(log()),
    );
    let (index, at) = common::index_of(&packed);
    let last = index.entries.last().unwrap();
    let torn = packed[..(last.offset + u64::from(last.compressed) / 2) as usize].to_vec();
    let mut flipped = packed.clone();
    let middle = &index.entries[index.entries.len() / 2];
    flipped[(middle.offset + u64::from(middle.compressed) / 2) as usize] ^= 0x55;
    assert!(at > 0);
    let log = log();
    let a = &log[..log.len() / 2];
    let cut = a.len() - a.iter().rev().position(|&c| c == b'\n').unwrap();
    let (a, b) = (&log[..cut], &log[cut..]);
    let mut unchecked = unchecked_frame(a);
    unchecked.extend(unchecked_frame(b));
    let files = [
        ("packed", packed),
        ("torn", torn),
        ("flipped", flipped),
        ("unchecked", unchecked),
    ];
    files
        .into_iter()
        .map(|(name, bytes)| {
            let path = dir.join(format!("{name}.jsonl.zst"));
            std::fs::write(&path, bytes).unwrap();
            (name, path)
        })
        .collect()
}

#[test]
fn one_thread_or_two_read_alike() {
    let dir = tempfile::tempdir().unwrap();
    let commands: &[&[&str]] = &[
        &["cat"],
        &["cat", "--recovery", "absolute"],
        &["cat", "--recovery", "point-in-time"],
        &["cat", "--recovery", "skip-corrupt"],
        &["cat", "--type", "message_end"],
        // Stops at the bad line: the reading thread has read past it, and what it met there
        // must not be said.
        &["cat", "--strict"],
        &["filter"],
        &["unpack"],
        &["stats"],
        &["pack", "--plain"],
    ];
    let mut warned = 0;
    for (name, path) in inputs(dir.path()) {
        for args in commands {
            let run = |threads| on_threads(args, threads, &[&path]);
            let (one, two) = (run("1"), run("2"));
            assert_alike(&one, &two, &format!("{name}: sess {}", args.join(" ")));
            warned += usize::from(!one.stderr.is_empty());
        }
    }
    // The inputs do make the readers warn, in several ways.
    assert!(warned > 20, "{warned}");
}

#[test]
fn files_packed_on_two_threads_are_the_files_packed_on_one() {
    // Several inputs, each packed with its own profile and its runs ended where it ends;
    // the last without its final newline; and a copy of the logs 40 times over, so that
    // batches are handed over in the middle of runs.
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["pi-old.jsonl", "dsh.jsonl", "pi-new.jsonl"] {
        files.push(testdata(name));
    }
    let mut big = Vec::new();
    for _ in 0..40 {
        big.extend(std::fs::read(testdata("dsh.jsonl")).unwrap());
        big.extend(std::fs::read(testdata("pi-new.jsonl")).unwrap());
    }
    let big_path = dir.path().join("big.jsonl");
    std::fs::write(&big_path, &big).unwrap();
    files.push(big_path);
    // A run of chunk deltas cut across two inputs: rows never span inputs.
    let dsh = std::fs::read(testdata("dsh.jsonl")).unwrap();
    let lines: Vec<&[u8]> = dsh.split_inclusive(|&b| b == b'\n').collect();
    for (name, part) in [("a", &lines[..8]), ("b", &lines[8..])] {
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, part.concat()).unwrap();
        files.push(path);
    }
    let mut torn = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    torn.pop();
    let torn_path = dir.path().join("torn.jsonl");
    std::fs::write(&torn_path, &torn).unwrap();
    files.push(torn_path);
    for args in [&["pack", "--plain"][..], &["pack", "--frame-size", "4K"]] {
        let run = |threads| on_threads(args, threads, &files);
        let (one, two) = (run("1"), run("2"));
        assert!(
            one.status.success(),
            "{}",
            String::from_utf8_lossy(&one.stderr)
        );
        assert!(one.stdout == two.stdout, "{args:?}: stdout differs");
        assert_eq!(one.stderr, two.stderr, "{args:?}");
        // And it is the inputs, packed.
        let back = stdout_ok(sess().arg("unpack").write_stdin(two.stdout));
        let whole: Vec<u8> = files
            .iter()
            .flat_map(|f| std::fs::read(f).unwrap())
            .collect();
        assert!(back == whole, "{args:?}: does not unpack to the inputs");
    }
}

#[test]
fn a_write_that_fails_is_the_error_though_reading_ran_ahead_into_a_bad_row() {
    // Reading runs a few batches ahead of packing, and writing a few blocks behind
    // reading: a bad row met after a write failed must not take the write's place as the
    // error, and a reader that went away (`| head`) still ends the command quietly.
    let dir = tempfile::tempdir().unwrap();
    let note = |n: usize, pad: usize| {
        format!(
            "{{\"type\":\"note\",\"n\":{},\"pad\":\"{}\"}}\n",
            100_000 + n,
            "x".repeat(pad)
        )
    };
    let bad = br#"{"type":"text-chunks","seq0":1,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[x],"texts":["a","b"]}}
"#;
    // A bad row after a few blocks of output; and after exactly one block (256 KiB of
    // 128-byte lines), which one thread holds unwritten when it meets the row.
    let mut logs = Vec::new();
    for (name, lines, pad) in [("late", 5_000, 90), ("block", 2_048, 92)] {
        let mut log: Vec<u8> = (0..lines).flat_map(|n| note(n, pad).into_bytes()).collect();
        if name == "block" {
            assert_eq!(log.len(), 256 * 1024);
        }
        log.extend_from_slice(bad);
        let path = dir.path().join(format!("{name}-bad-row.jsonl"));
        std::fs::write(&path, &log).unwrap();
        logs.push(path);
    }
    let commands: [&[&str]; 4] = [&["pack", "--plain"], &["cat"], &["unpack"], &["filter"]];
    for (args, path) in commands
        .iter()
        .flat_map(|a| logs.iter().map(move |p| (a, p)))
    {
        let run = |threads: &str, out: std::process::Stdio| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("sess"))
                .args(*args)
                .args(["--threads", threads])
                .arg(path)
                .stdout(out)
                .output()
                .unwrap()
        };
        let full = || {
            let f = std::fs::OpenOptions::new().write(true).open("/dev/full");
            std::process::Stdio::from(f.unwrap())
        };
        let closed = || {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            std::process::Stdio::from(writer)
        };
        let late = path.ends_with("late-bad-row.jsonl");
        for (out, what) in [
            (&full as &dyn Fn() -> std::process::Stdio, "/dev/full"),
            (&closed, "a closed pipe"),
        ] {
            let (one, two) = (run("1", out()), run("2", out()));
            let err = String::from_utf8_lossy(&one.stderr);
            let case = format!("{args:?} {} into {what}", path.display());
            assert_eq!(one.status.code(), two.status.code(), "{case}");
            assert_eq!(err, String::from_utf8_lossy(&two.stderr), "{case}");
            // After a few blocks, the write fails first: a full disk is the error, a
            // reader gone is none.
            if late && what == "/dev/full" {
                assert!(err.contains("No space left on device"), "{case}: {err}");
            } else if late {
                assert!(one.status.success() && err.is_empty(), "{case}: {err}");
            }
        }
    }
}

#[test]
fn rows_expanded_on_helpers_read_as_on_one_thread() {
    // `cat` and `unpack` hand rows to helper threads in batches, and write what comes
    // back in order. Many batches of chunk and snapshot rows; a bad row among them, after
    // many batches and a little before the end (reading is then ahead of writing); a last
    // line without its newline, whole or torn, after a bad row or not.
    let dsh = stdout_ok(sess().args(["pack", "--plain"]).arg(testdata("dsh.jsonl")));
    let pi = stdout_ok(
        sess()
            .args(["pack", "--plain"])
            .arg(testdata("pi-old.jsonl")),
    );
    let rows =
        |n: usize| -> Vec<u8> { (0..n).flat_map(|_| [&dsh[..], &pi[..]].concat()).collect() };
    let bad = br#"{"type":"text-chunks","seq0":1,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[x],"texts":["a","b"]}}
"#;
    // More than the lines read ahead (1 MiB) follow the bad row.
    let bad_row = [rows(1000), bad.to_vec(), rows(300)].concat();
    let bad_line = rows(1000).iter().filter(|&&c| c == b'\n').count() + 1;
    // Lines longer than a batch that are not rows (one that names chunks too) are written
    // as read, between batches.
    let long = |n: usize| format!("{{\"type\":\"note\",\"s\":\"{}\"}}", "y".repeat(n)).into_bytes();
    let long_lines = [
        rows(300),
        long(200_000),
        b"\n".to_vec(),
        format!("{{\"text-chunks\":\"{}\"}}\n", "z".repeat(300_000)).into_bytes(),
        long(300_000),
        b"\n".to_vec(),
        rows(300),
        long(500_000),
    ]
    .concat();
    // Under --strict, a line that is not JSON stops reading: after a bad row, the row is
    // still the error.
    // And a few rows after it, then a last line without newline: reading reaches that
    // line before the bad row is written, and its warning must not be said.
    let near_end = [
        rows(1000),
        bad.to_vec(),
        rows(3),
        b"{\"type\":\"x\"}".to_vec(),
    ]
    .concat();
    let logs: [(&str, Vec<u8>); 8] = [
        ("bad-row-near-unterminated", near_end.clone()),
        ("long-lines", long_lines),
        (
            "bad-row-then-not-json",
            [&near_end[..near_end.len() - 12], b"not json\n"].concat(),
        ),
        ("whole", rows(1200)),
        ("bad-row", bad_row.clone()),
        (
            "bad-row-then-unterminated",
            [&bad_row[..], b"{\"type\":\"x\"}"].concat(),
        ),
        (
            "unterminated",
            [rows(1200), b"{\"type\":\"x\"}".to_vec()].concat(),
        ),
        ("torn", [rows(1200), b"{\"type\":\"x\",".to_vec()].concat()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let before_bad = stdout_ok(
        sess()
            .args(["unpack", "--threads", "1"])
            .write_stdin(rows(1000)),
    );
    assert!(before_bad.len() > 8 << 20, "{}", before_bad.len());
    for (name, log) in logs {
        for (form, bytes) in [("jsonl", log.clone()), ("jsonl.zst", common::zstd(&log))] {
            let path = dir.path().join(format!("{name}.{form}"));
            std::fs::write(&path, bytes).unwrap();
            for command in [
                &["cat"][..],
                &["unpack"],
                &["cat", "--strict"],
                &["unpack", "--strict"],
            ] {
                let run = |threads| on_threads(command, threads, &[&path]);
                let one = run("1");
                let case = format!("sess {} {name}.{form}", command.join(" "));
                for threads in ["2", "3"] {
                    let many = run(threads);
                    assert_eq!(one.status.code(), many.status.code(), "{case} {threads}");
                    assert!(
                        one.stdout == many.stdout,
                        "{case} {threads}: stdout differs"
                    );
                    let (e1, e2) = (
                        String::from_utf8_lossy(&one.stderr),
                        String::from_utf8_lossy(&many.stderr),
                    );
                    // The one difference, documented: the warning that counts the lines
                    // that are not JSON may count those read ahead past the bad row too.
                    if name == "bad-row-then-not-json" && command.len() == 1 {
                        assert!(!e1.contains("not JSON"), "{case}: {e1}");
                        assert_eq!(e1.lines().last(), e2.lines().last(), "{case} {threads}");
                        continue;
                    }
                    assert_eq!(e1, e2, "{case} {threads}");
                }
                // Every event before the bad row came out, and nothing after it.
                if name.starts_with("bad-row") {
                    assert!(one.stdout == before_bad, "{case}");
                    let err = String::from_utf8_lossy(&one.stderr);
                    assert!(err.contains(&format!(":{bad_line}:")), "{case}: {err}");
                    assert!(!err.contains("last line"), "{case}: {err}");
                } else {
                    assert!(one.status.success(), "{case}");
                }
            }
        }
    }
}

#[test]
fn a_bad_row_ends_the_run_before_the_next_input_is_read() {
    // Rows are expanded behind reading; the next input is opened only once the one before
    // is written, so a bad row near the end of the first says nothing of the second.
    let dsh = stdout_ok(sess().args(["pack", "--plain"]).arg(testdata("dsh.jsonl")));
    let dir = tempfile::tempdir().unwrap();
    let bad = br#"{"type":"text-chunks","seq0":1,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[x],"texts":["a","b"]}}
"#;
    let first = dir.path().join("first.jsonl");
    let log: Vec<u8> = [
        (0..200).flat_map(|_| dsh.clone()).collect(),
        bad.to_vec(),
        dsh.clone(),
    ]
    .concat();
    std::fs::write(&first, log).unwrap();
    let second = dir.path().join("second.jsonl");
    std::fs::write(&second, "not json\n{\"type\":\"x\"").unwrap();
    for command in ["cat", "unpack"] {
        let (one, two) = (
            on_threads(&[command], "1", &[&first, &second]),
            on_threads(&[command], "2", &[&first, &second]),
        );
        assert_alike(&one, &two, command);
        let err = String::from_utf8_lossy(&two.stderr);
        assert!(
            err.contains("first.jsonl:") && !err.contains("second"),
            "{command}: {err}"
        );
    }
}

#[test]
fn pack_tells_every_line_that_is_not_json_whichever_thread_reads_the_chunk_deltas() {
    // `pack` reads a chunk delta on its reading thread when the packing side is behind (a
    // delta read in full needs no other check), else leaves it to the packing side and only
    // checks it. Megabytes of deltas make it do both; bad lines, some that begin as deltas
    // do, lie among them. Every reader must tell the same bad lines, on any thread count.
    let mut log = Vec::new();
    for k in 0..40_000u64 {
        let line = match k {
            7 | 25_000 => format!("{{\"type\":\"assistant/chunk\",\"seq\":{k},\"time\":"),
            13_000 => "not json".to_string(),
            // JSON, but not as JSON.stringify writes a delta: kept, and not a bad line.
            20_000 => format!("{{\"type\":\"assistant/chunk\",\"seq\": {k}}}"),
            33_333 => format!("{{\"type\":\"assistant/chunk\",\"seq\":{k},\"x\":[}}"),
            _ => format!(
                "{{\"type\":\"assistant/chunk\",\"seq\":{k},\"time\":{},\"data\":{{\"turn\":1,\
                 \"step\":1,\"chunk\":{{\"type\":\"text-delta\",\"index\":0,\"text\":\" w{}\"}}}}}}",
                1_783_352_170_000 + k * 7,
                k % 97
            ),
        };
        log.extend_from_slice(line.as_bytes());
        log.push(b'\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dsh.jsonl");
    std::fs::write(&file, &log).unwrap();
    let name = file.display();
    let want =
        format!("sess: warning: {name}: 4 lines are not JSON (kept as read); the first: {name}:8:");
    let cat = on_threads(&["cat"], "1", &[&file]);
    assert!(
        String::from_utf8_lossy(&cat.stderr).starts_with(&want),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    let packed = |threads: &str| {
        let out = dir.path().join(format!("t{threads}.zst"));
        let run = sess()
            .args(["pack", "--threads", threads, "-o"])
            .arg(&out)
            .arg(&file)
            .output()
            .unwrap();
        (run, std::fs::read(&out).unwrap())
    };
    let ((one, one_bytes), (two, two_bytes)) = (packed("1"), packed("2"));
    let said = |run: &std::process::Output| String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(
        said(&one),
        said(&cat),
        "pack --threads 1 tells what cat tells"
    );
    assert_eq!(
        said(&two),
        said(&cat),
        "pack --threads 2 tells what cat tells"
    );
    assert!(one_bytes == two_bytes, "the same packed bytes on both");
    let back = stdout_ok(sess().arg("unpack").arg(dir.path().join("t2.zst")));
    assert!(back == log, "the log comes back whole");
}
