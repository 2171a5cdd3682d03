//! What readers make of input that is not plain JSONL: gzip is read through, a file in
//! another format is refused saying what it is, and malformed lines are passed through as
//! read but never without a word (`--strict` makes them an error).

mod common;

use std::io::Write;

use common::{sess, stdout_ok, testdata};
use predicates::prelude::*;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// The readers a log goes through, each with the arguments that make it write its output
/// to stdout.
const READERS: [&[&str]; 4] = [&["cat"], &["stats"], &["filter"], &["pack", "--plain"]];

#[test]
fn gzip_input_is_read_as_the_log_it_holds_from_a_file_and_a_pipe() {
    let log = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Two members, as `cat a.gz b.gz` makes: one stream.
    let gz = dir.path().join("run.jsonl.gz");
    std::fs::write(&gz, [gzip(&log[..1000]), gzip(&log[1000..])].concat()).unwrap();
    let plain = testdata("pi-old.jsonl");
    for args in READERS {
        let want = stdout_ok(sess().args(args).arg(&plain));
        let from_file = stdout_ok(sess().args(args).arg(&gz));
        let from_pipe = stdout_ok(sess().args(args).write_stdin(std::fs::read(&gz).unwrap()));
        // stats names its input; the rest must match byte for byte.
        let unname = |b: Vec<u8>| {
            String::from_utf8(b)
                .unwrap()
                .replace(&gz.display().to_string(), "X")
                .replace(&plain.display().to_string(), "X")
        };
        assert_eq!(
            unname(from_file),
            unname(want.clone()),
            "{args:?} of a file"
        );
        if args[0] != "stats" {
            assert_eq!(from_pipe, want, "{args:?} of a pipe");
        }
    }
    // Zeros padded after the last member (as some tools write) are ignored, as gzip -dc
    // ignores them.
    let padded = [gzip(&log), vec![0; 512]].concat();
    sess()
        .arg("cat")
        .write_stdin(padded)
        .assert()
        .success()
        .stdout(log.clone())
        .stderr("");
    // Many members, so that one ends with a single byte of the next left in the read
    // buffer: every one is read, from a file and from a pipe.
    let lines = || log.split_inclusive(|&b| b == b'\n').cycle().take(4000);
    let members: Vec<u8> = lines().flat_map(gzip).collect();
    let whole: Vec<u8> = lines().flatten().copied().collect();
    let many = dir.path().join("members.jsonl.gz");
    std::fs::write(&many, &members).unwrap();
    assert!(stdout_ok(sess().arg("cat").arg(&many)) == whole);
    assert!(stdout_ok(sess().arg("cat").write_stdin(members)) == whole);
    // A byte of a member's magic at the very end is a cut member: an error.
    sess()
        .arg("cat")
        .write_stdin([gzip(&log), vec![0x1f]].concat())
        .assert()
        .code(1);
    // Anything else there could be a member whose header was damaged: an error, after the
    // lines before it.
    let mut damaged = [gzip(&log[..1000]), gzip(&log[1000..])].concat();
    let second = gzip(&log[..1000]).len();
    damaged[second] ^= 0xff;
    sess()
        .arg("cat")
        .write_stdin(damaged)
        .assert()
        .code(1)
        .stdout(log[..=log[..1000].iter().rposition(|&b| b == b'\n').unwrap()].to_vec())
        .stderr(predicate::str::contains(
            "neither a member nor zero padding",
        ));
    // A flipped bit in a member's data is an error (its crc32), not a silent wrong line;
    // checked only at the member's end, the error says the lines before it may be wrong.
    let mut flipped = gzip(&log);
    let at = flipped.len() / 2;
    flipped[at] ^= 0x10;
    sess()
        .arg("cat")
        .write_stdin(flipped)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "a damaged gzip member (corrupt gzip stream does not have a matching checksum); \
             gzip checks a member only at its end, so lines read from it before this error \
             may be wrong",
        ));
    // pack of a gzip log unpacks to the log it holds.
    let packed = dir.path().join("run.jsonl.zst");
    sess()
        .args(["pack", "-q"])
        .arg(&gz)
        .arg("-o")
        .arg(&packed)
        .assert()
        .success();
    assert_eq!(stdout_ok(sess().arg("unpack").arg(&packed)), log);
    sess().arg("verify").arg(&gz).assert().success();
}

#[test]
fn a_cut_gzip_file_is_an_error_naming_the_file_after_the_lines_before_the_cut() {
    let log = std::fs::read(testdata("pi-old.jsonl")).unwrap();
    let gz = gzip(&log);
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    sess()
        .arg("cat")
        .arg(&cut)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "{}: cannot read",
            cut.display()
        )));
    // repair has no frames to salvage in gzip: it says so and writes nothing.
    let out = dir.path().join("fixed.jsonl");
    sess()
        .arg("repair")
        .arg(&cut)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("a gzip file"));
    assert!(!out.exists());
}

#[test]
fn a_file_in_another_format_is_refused_saying_what_it_is_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "a.out",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0",
            "an ELF executable, not a JSONL log",
        ),
        (
            "a.png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
            "a PNG image, not a JSONL log",
        ),
        (
            "a.xz",
            b"\xfd7zXZ\0\0\x04\xe6\xd6\xb4F",
            "xz-compressed data",
        ),
        // No magic, but a NUL byte in the first line: JSON text never holds one.
        (
            "a.bin",
            b"\x01\x02\x03\x04\0\x05\n{}\n",
            "binary data, not a JSONL log",
        ),
    ];
    for (name, bytes, what) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        for args in READERS {
            let out = dir.path().join("out");
            sess()
                .args(args)
                .arg(&file)
                .arg("-o")
                .arg(&out)
                .assert()
                .code(1)
                .stdout("")
                .stderr(predicate::str::contains(format!(
                    "{}: {what}",
                    file.display()
                )));
            assert!(!out.exists(), "{args:?} {name} left an output");
        }
        sess().arg("verify").arg(&file).assert().code(1);
    }
}

#[test]
fn malformed_lines_pass_through_with_one_warning_per_input_and_strict_stops_at_the_first() {
    let log = "{\"type\":\"a\",\"n\":1}\n{\"type\":\"b\",\"x\":[1,\n{\"type\":\"c\"}{\"type\":\"d\"}\nnot json\n{\"type\":\"e\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.jsonl");
    std::fs::write(&file, log).unwrap();
    let name = file.display().to_string();
    for args in READERS {
        let out = sess().args(args).arg(&file).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        let want = format!(
            "sess: warning: {name}: 3 lines are not JSON (kept as read); the first: \
             {name}:2:20: invalid JSON: expected a JSON value (byte offset 38) \
             (--strict makes this an error)\n"
        );
        assert_eq!(err, want, "{args:?}");
        let strict = dir.path().join("strict.out");
        sess()
            .args(args)
            .arg("--strict")
            .arg(&file)
            .arg("-o")
            .arg(&strict)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "{name}:2:20: invalid JSON: expected a JSON value (--strict)"
            )));
        assert!(!strict.exists(), "{args:?} --strict left an output");
    }
    // Passed through as read: cat and filter write every line, pack round-trips it.
    assert_eq!(stdout_ok(sess().arg("cat").arg(&file)), log.as_bytes());
    let packed = stdout_ok(sess().args(["pack", "--plain"]).arg(&file));
    assert_eq!(
        stdout_ok(sess().arg("unpack").write_stdin(packed)),
        log.as_bytes()
    );
    // --strict sees what the cheap check does not (a missing value, a bad escape).
    std::fs::write(&file, "{\"type\":\"a\",\"x\":}\n{\"s\":\"\\q\"}\n").unwrap();
    sess().arg("cat").arg(&file).assert().success().stderr("");
    sess()
        .args(["cat", "--strict"])
        .arg(&file)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "{name}:1:17: invalid JSON"
        )));
}

/// Runs `sess ARGS` by bash with `<(cat FILE)` in place of `{}`: the input is a pipe named
/// as a path.
fn through_a_pipe(args: &str, file: &std::path::Path) -> std::process::Output {
    let pipe = format!("<(cat '{}')", file.display());
    common::sess_in_bash("", &args.replace("{}", &pipe))
        .output()
        .unwrap()
}

#[test]
fn a_pipe_named_as_a_path_is_read_once_from_its_first_byte() {
    let dsh = testdata("dsh.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let packed = dir.path().join("dsh.jsonl.zst");
    sess()
        .arg("pack")
        .arg(&dsh)
        .arg("-o")
        .arg(&packed)
        .assert()
        .success();
    // Each as it reads the file itself.
    let cases: [(&str, &std::path::Path); 6] = [
        ("verify {}", &dsh),
        ("cat --tail 3 {}", &dsh),
        ("cat --tail 3 {}", &packed),
        ("cat --seq 20..22 {}", &packed),
        ("recover {}", &testdata("oplist.jsonl")),
        ("stats {}", &dsh),
    ];
    for (args, file) in cases {
        let piped = through_a_pipe(args, file);
        let direct = std::process::Command::new(env!("CARGO_BIN_EXE_sess"))
            .args(args.replace("{}", &file.display().to_string()).split(' '))
            .output()
            .unwrap();
        assert!(
            piped.status.success(),
            "{args}: {}",
            String::from_utf8_lossy(&piped.stderr)
        );
        let name = |o: &[u8]| String::from_utf8_lossy(o).replace(&file.display().to_string(), "F");
        let unname = |o: &[u8]| fd_as_f(&String::from_utf8_lossy(o));
        assert_eq!(unname(&piped.stdout), name(&direct.stdout), "{args}");
        assert_eq!(String::from_utf8_lossy(&piped.stderr), "", "{args}");
    }
    // repair seeks in its input: it refuses a pipe, and writes nothing.
    let out = dir.path().join("fixed.jsonl");
    let piped = through_a_pipe(&format!("repair {{}} -o '{}'", out.display()), &dsh);
    assert_eq!(piped.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&piped.stderr).contains("not a regular file"));
    assert!(!out.exists());
}

/// `/dev/fd/63` (bash's name for a process substitution) as `F`.
fn fd_as_f(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/dev/fd/") {
        out += &rest[..at];
        rest = rest[at + 8..].trim_start_matches(|c: char| c.is_ascii_digit());
        out += "F";
    }
    out + rest
}

#[test]
fn bad_lines_are_told_even_when_the_input_then_fails_and_only_by_readers_that_pass_them() {
    // Garbage lines, then the gzip stream is cut: the count comes before the error.
    let mut log = Vec::new();
    for i in 0..2000 {
        log.extend_from_slice(format!("{{\"type\":\"a\",\"n\":{i}}}\nnot json {i}\n").as_bytes());
    }
    let gz = gzip(&log);
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &gz[..gz.len() - 100]).unwrap();
    let out = sess().arg("cat").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let name = cut.display().to_string();
    let told = err.find(&format!("{name}: ")).unwrap();
    assert!(
        err[told..].contains("lines are not JSON (kept as read); the first: "),
        "{err}"
    );
    assert!(err.contains(&format!("{name}:2:1: invalid JSON")), "{err}");
    assert!(err.contains("cannot read"), "{err}");
    // recover parses every batch it replays and fails on a bad one itself; a bad line
    // before the last base is none of its business, from a file or a pipe alike.
    let ops = std::fs::read_to_string(testdata("oplist.jsonl")).unwrap();
    let mut lines: Vec<&str> = ops.lines().collect();
    lines.insert(3, "garbage");
    let bad = lines.join("\n") + "\n";
    let file = dir.path().join("ops.jsonl");
    std::fs::write(&file, &bad).unwrap();
    sess()
        .arg("recover")
        .arg(&file)
        .assert()
        .success()
        .stderr("");
    sess()
        .args(["recover", "-"])
        .write_stdin(bad)
        .assert()
        .success()
        .stderr("");
}

/// An input of NUL bytes with no newline (`/dev/zero`, a file of zeros) is refused by its
/// first bytes: read whole first, its one line would take memory without end.
#[cfg(unix)]
#[test]
fn a_first_line_of_nul_bytes_is_refused_before_it_is_read_whole() {
    let mut commands: Vec<&[&str]> = READERS.to_vec();
    commands.extend([&["pack"][..], &["verify"], &["recover"], &["diff"]]);
    // A sparse file of 2 GiB of zeros, read under a limit of 1 GB: a file takes other
    // paths than a device (pack's survey, recover's backward search).
    let dir = tempfile::tempdir().unwrap();
    let zeros = dir.path().join("zeros.jsonl");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    for input in [std::path::Path::new("/dev/zero"), &zeros] {
        for args in &commands {
            let out = common::sess_in_bash(
                "ulimit -v 1000000 && ",
                &format!("{} '{}'", args.join(" "), input.display()),
            )
            .output()
            .unwrap();
            // verify reports on stdout, the others on stderr.
            let said = [out.stdout, out.stderr].concat();
            let said = String::from_utf8_lossy(&said);
            assert_eq!(out.status.code(), Some(1), "{args:?} {input:?}: {said}");
            assert!(
                said.contains(&format!(
                    "{}: binary data, not a JSONL log (a NUL byte; JSON text never holds \
                     one) (byte offset 0)",
                    input.display()
                )),
                "{args:?} {input:?}: {said}"
            );
        }
    }
}

/// One JSON document over many lines is refused with one error, not also with a warning
/// that its first line is not JSON (which it gave just before, as a second message).
#[test]
fn a_document_over_many_lines_gets_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n").unwrap();
    for cmd in ["cat", "filter", "stats", "pack"] {
        for stdin in [false, true] {
            let mut c = sess();
            c.arg(cmd);
            if cmd == "pack" {
                c.args(["-o", "-"]);
            }
            let c = match stdin {
                true => c.pipe_stdin(&doc).unwrap(),
                false => c.arg(&doc),
            };
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
            assert!(err.contains("written over many lines"), "{cmd}: {err}");
            assert_eq!(err.lines().count(), 1, "{cmd} (stdin: {stdin}): {err}");
        }
    }
}

/// A byte-order mark before the first record (an editor's) is no damage: `repair` dropped
/// the whole first record for it (a session's header), reporting it lost, and `verify`
/// failed on it. It is kept, byte for byte; a mark before a later line is still not JSON
/// there.
#[test]
fn repair_keeps_a_first_record_behind_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bom.jsonl");
    let text =
        b"\xef\xbb\xbf{\"type\":\"session\"}\n{\"type\":\"b\"}\n\xef\xbb\xbf{\"type\":\"c\"}\n";
    std::fs::write(&log, text).unwrap();
    let out = dir.path().join("out.jsonl");
    sess()
        .arg("repair")
        .arg(&log)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("kept 2 line(s)"))
        .stderr(predicate::str::contains("line 3 of the original"));
    assert_eq!(std::fs::read(&out).unwrap(), &text[..text.len() - 16]);
    // Every check of a line as JSON passes over it: verify, and the torn-line rule (a log
    // of one record without its newline was dropped as torn).
    std::fs::write(&log, &text[..text.len() - 16]).unwrap();
    sess().arg("verify").arg(&log).assert().success();
    sess().arg("cat").arg(&log).assert().success().stderr("");
    std::fs::write(&log, b"\xef\xbb\xbf{\"type\":\"session\"}").unwrap();
    sess()
        .arg("repair")
        .arg(&log)
        .arg("-o")
        .arg(&out)
        .arg("-f")
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        b"\xef\xbb\xbf{\"type\":\"session\"}\n"
    );
}
