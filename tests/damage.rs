//! Compressed files that are not what they seem: concatenated, written without checksums,
//! torn in their last line, bombs, or missing their index. Each test failed before its fix.

mod common;

use std::path::Path;
use std::process::Command as StdCommand;

use common::{sess, stdout_ok};
use predicates::prelude::*;

fn seq_log(from: u64, to: u64) -> String {
    (from..to)
        .map(|s| {
            format!(
                "{{\"type\":\"e\",\"seq\":{s},\"pad\":\"{}\"}}\n",
                "z".repeat(60)
            )
        })
        .collect()
}

fn pack_to(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let plain = dir.join(format!("{name}.jsonl"));
    std::fs::write(&plain, text).unwrap();
    let z = dir.join(format!("{name}.zst"));
    sess()
        .args(["pack", "--frame-size", "2000", "-o"])
        .arg(&z)
        .arg(&plain)
        .assert()
        .success();
    z
}

#[test]
fn a_concatenated_file_is_read_through_not_by_the_last_index() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (seq_log(0, 100), seq_log(100, 200));
    let za = pack_to(dir.path(), "a", &a);
    let zb = pack_to(dir.path(), "b", &b);
    let joined = dir.path().join("j.zst");
    let mut bytes = std::fs::read(&za).unwrap();
    bytes.extend(std::fs::read(&zb).unwrap());
    std::fs::write(&joined, bytes).unwrap();
    let last = b.lines().last().unwrap().to_string() + "\n";
    sess()
        .args(["cat", "--tail", "1"])
        .arg(&joined)
        .assert()
        .success()
        .stdout(last);
    let want: String = seq_log(150, 153);
    sess()
        .args(["cat", "--seq", "150..152"])
        .arg(&joined)
        .assert()
        .success()
        .stdout(want);
    sess()
        .arg("cat")
        .arg(&joined)
        .assert()
        .success()
        .stdout(a + &b);
    // verify says the index does not belong to the file.
    sess()
        .arg("verify")
        .arg(&joined)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "does not describe the bytes before it",
        ));
}

/// One zstd frame of `data` without the content checksum, as `zstd --no-check` writes.
fn unchecked_frame(data: &[u8]) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(false))
        .unwrap();
    c.compress(data).unwrap()
}

#[test]
fn frames_without_a_checksum_are_reported_as_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("nocheck.zst");
    let text = seq_log(0, 50);
    std::fs::write(&f, unchecked_frame(text.as_bytes())).unwrap();
    sess()
        .arg("cat")
        .arg(&f)
        .assert()
        .success()
        .stdout(text.clone())
        .stderr(
            predicate::str::contains("has no content checksum")
                .and(predicate::str::contains("UNVERIFIED")),
        );
    sess()
        .arg("verify")
        .arg(&f)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "1 zstd frame(s) have no content checksum",
        ));
    sess()
        .arg("verify")
        .write_stdin(unchecked_frame(text.as_bytes()))
        .assert()
        .code(1);
}

#[test]
fn repair_of_a_compressed_file_applies_the_torn_line_rule_to_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    // Torn (not JSON): dropped, and reported as lost; the result verifies.
    let torn = pack_to(
        dir.path(),
        "torn",
        &(seq_log(0, 40) + "{\"type\":\"e\",\"seq\":40,"),
    );
    let fixed = dir.path().join("fixed.zst");
    sess()
        .arg("repair")
        .arg(&torn)
        .arg("-o")
        .arg(&fixed)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("lost bytes")
                .and(predicate::str::contains("a torn last line")),
        )
        .stderr(predicate::str::contains("nothing was lost").not());
    sess().arg("verify").arg(&fixed).assert().success();
    sess()
        .arg("cat")
        .arg(&fixed)
        .assert()
        .success()
        .stdout(seq_log(0, 40));
    // A whole JSON value without its newline: kept, with the newline added.
    let whole = seq_log(0, 40) + "{\"type\":\"e\",\"seq\":40}";
    let unterminated = pack_to(dir.path(), "unterminated", &whole);
    sess()
        .arg("repair")
        .arg(&unterminated)
        .arg("-f")
        .arg("-o")
        .arg(&fixed)
        .assert()
        .success()
        .stderr(predicate::str::contains("the newline added"))
        .stderr(predicate::str::contains("nothing was lost"));
    sess().arg("verify").arg(&fixed).assert().success();
    sess()
        .arg("cat")
        .arg(&fixed)
        .assert()
        .success()
        .stdout(whole + "\n");
    // A plain log's complete last record that only lacks its newline is kept too.
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, "{\"a\":1}\n{\"b\":2}").unwrap();
    sess()
        .args(["repair", "--in-place"])
        .arg(&plain)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&plain).unwrap(),
        "{\"a\":1}\n{\"b\":2}\n"
    );
}

#[test]
fn messages_are_sentences_not_debug_values() {
    let dir = tempfile::tempdir().unwrap();
    let packed = stdout_ok(
        sess()
            .args(["pack", "--plain"])
            .arg(common::testdata("pi-old.jsonl")),
    );
    let bad = String::from_utf8(packed)
        .unwrap()
        .replacen("[\"a\",", "[0,", 1);
    let out = sess().arg("unpack").write_stdin(bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains(", op ") && !err.contains("Some("), "{err}");
    let garbage = dir.path().join("g.zst");
    let mut bytes = std::fs::read(pack_to(dir.path(), "x", &seq_log(0, 30))).unwrap();
    bytes.splice(10..10, *b"JUNKJUNKJUNK");
    std::fs::write(&garbage, bytes).unwrap();
    let out = sess().arg("verify").arg(&garbage).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("Garbage {") && !text.contains("Torn {"),
        "{text}"
    );
}

#[test]
fn verify_index_only_fails_where_there_is_no_index() {
    let dir = tempfile::tempdir().unwrap();
    let z = pack_to(dir.path(), "x", &seq_log(0, 100));
    let bytes = std::fs::read(&z).unwrap();
    sess()
        .args(["verify", "--index-only"])
        .arg(&z)
        .assert()
        .success();
    // The index cut off.
    let cut = dir.path().join("cut.zst");
    std::fs::write(&cut, &bytes[..bytes.len() - 20]).unwrap();
    // A stock zstd file, a plain file, a binary file.
    let stock = dir.path().join("stock.zst");
    std::fs::write(&stock, common::zstd(seq_log(0, 10).as_bytes())).unwrap();
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, seq_log(0, 10)).unwrap();
    let binary = dir.path().join("binary");
    std::fs::write(&binary, (0..=255u8).collect::<Vec<u8>>()).unwrap();
    for f in [&cut, &stock, &plain, &binary] {
        sess()
            .args(["verify", "--index-only"])
            .arg(f)
            .assert()
            .code(1)
            .stdout(predicate::str::contains("no frame index to check"));
    }
}

/// A zstd frame (no checksum) of `lines` lines of `len - 1` bytes of `x` plus a newline,
/// built from RLE and raw blocks: 8 bytes per line, so a few hundred KiB decompress to
/// gigabytes, as a zstd bomb does.
fn bomb(lines: usize, len: u32) -> Vec<u8> {
    // Frame header: magic, descriptor (no checksum, no content size), window 2^(10+7).
    let mut out = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38];
    let block = |kind: u32, size: u32, last: bool| {
        let h = (size << 3) | (kind << 1) | u32::from(last);
        h.to_le_bytes()[..3].to_vec()
    };
    for k in 0..lines {
        out.extend(block(1, len - 1, false));
        out.push(b'x');
        out.extend(block(0, 1, k + 1 == lines));
        out.push(b'\n');
    }
    out
}

/// Runs sess and returns its exit status and peak resident memory in MiB.
fn peak_mib(args: &[&std::ffi::OsStr]) -> (i32, f64) {
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"));
    let (status, bytes) = common::peak_memory(cmd.args(args));
    (status, bytes as f64 / (1 << 20) as f64)
}

#[test]
fn a_zstd_bomb_is_decoded_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bomb.zst");
    // 4096 lines of 128 KiB: 512 MiB from 32 KiB.
    let b = bomb(4096, 128 * 1024);
    assert!(b.len() < 40_000);
    std::fs::write(&f, &b).unwrap();
    let out = dir.path().join("out.zst");
    for args in [
        vec![
            "cat".as_ref(),
            "--tail".as_ref(),
            "1".as_ref(),
            f.as_os_str(),
        ],
        vec![
            "repair".as_ref(),
            f.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
        vec!["verify".as_ref(), f.as_os_str()],
    ] {
        let (status, peak) = peak_mib(&args);
        // The bound is 64 MiB of a frame's output held for its checksum, plus lines and
        // buffers; decoding the frame whole would take 512 MiB.
        assert!(peak < 200.0, "{args:?}: exit {status}, peak {peak:.0} MiB");
    }
    let last = stdout_ok(sess().args(["cat", "--tail", "1"]).arg(&f));
    assert_eq!(last.len(), 128 * 1024);
}

#[test]
fn a_run_cut_off_in_mid_response_is_held_on_disk_not_in_memory() {
    use std::io::Write;
    // A crash in mid-response: 100 MiB of delta frames whose successor never comes. They
    // are written at the end, so filter holds them all until then. (Written as a stream:
    // a child's peak memory counts what it shares with this process before it starts.)
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("crashed.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&f).unwrap());
    w.write_all(
        br#"{"type":"session","version":3,"id":"x"}
{"type":"message_start","message":{"role":"assistant","content":[]}}
"#,
    )
    .unwrap();
    let delta = br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"a word or two of the answer, then more words, and the next ones"}}
"#;
    for _ in 0..(100 << 20) / delta.len() {
        w.write_all(delta).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let (status, peak) = peak_mib(&["filter".as_ref(), f.as_os_str()]);
    assert_eq!(status, 0);
    // 16 MiB of frames in memory, the rest in a temporary file; holding them all took
    // about 180 MiB.
    assert!(peak < 64.0, "peak {peak:.0} MiB");
    // Every frame is written: they are the only copy of the answer.
    let out = dir.path().join("out.jsonl");
    sess()
        .arg("filter")
        .arg(&f)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert!(same_bytes(&f, &out));
}

/// Whether two files hold the same bytes, read a piece at a time: this process holding
/// them would count in the peak memory of a child another test starts meanwhile.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    fn fill(r: &mut impl Read, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match r.read(&mut buf[n..]).unwrap() {
                0 => break,
                k => n += k,
            }
        }
        n
    }
    let (mut a, mut b) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut x, mut y) = (vec![0; 1 << 20], vec![0; 1 << 20]);
    loop {
        let (n, m) = (fill(&mut a, &mut x), fill(&mut b, &mut y));
        if x[..n] != y[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}
