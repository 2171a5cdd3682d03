//! `sess pack` from a pipe: what reaches the file while the producer is still writing, and
//! what a crash, a bad line or a second writer leaves. Each test failed before its fix.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command as StdCommand, Stdio};
use std::time::Duration;

use common::sess;
use predicates::prelude::*;
use sess::frames::{FrameReader, Recovery};

fn spawn(args: &[&str], dir: &Path) -> (Child, ChildStdin) {
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// A DSH text delta that the packer holds in an open chunk row.
fn chunk(seq: u64) -> String {
    format!(
        "{{\"type\":\"assistant/chunk\",\"seq\":{seq},\"time\":{},\"data\":{{\"turn\":1,\"step\":1,\"chunk\":{{\"type\":\"text-delta\",\"index\":0,\"text\":\"w{seq} \"}}}}}}\n",
        1_700_000_000_000u64 + seq * 100
    )
}

/// The complete lines that the file holds now, read as after a crash.
fn lines_on_disk(file: &Path) -> Vec<String> {
    let bytes = std::fs::read(file).unwrap_or_default();
    let mut r = FrameReader::new(&bytes[..], "file", Recovery::TolerateTail);
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut r, &mut plain).unwrap();
    // Rows are expanded by `sess unpack`; count logical events.
    let out = sess().arg("unpack").write_stdin(plain).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_kill_loses_at_most_one_window_even_inside_a_chunk_row() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut stdin) = spawn(&["pack", "--window", "100", "-o", "x.zst"], dir.path());
    let sent = 31;
    for seq in 0..sent {
        stdin.write_all(chunk(seq).as_bytes()).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(50));
    child.kill().unwrap();
    child.wait().unwrap();
    let got = lines_on_disk(&dir.path().join("x.zst"));
    // The lines sent within the last window (100 ms: one or two) may be lost, no more.
    assert!(
        got.len() as u64 >= sent - 2,
        "{} of {sent} lines survived the kill",
        got.len()
    );
    let want: Vec<String> = (0..got.len() as u64)
        .map(|s| chunk(s).trim_end().to_string())
        .collect();
    assert_eq!(
        got, want,
        "what survived is exactly what was sent, in order"
    );
}

#[test]
fn a_frame_cut_by_size_reaches_the_file_while_the_producer_is_quiet() {
    for fsync in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["pack", "--window", "600000", "--frame-size", "200"];
        if fsync {
            args.push("--fsync");
        }
        args.extend(["-o", "x.zst"]);
        let (mut child, mut stdin) = spawn(&args, dir.path());
        let lines: String = (0..20)
            .map(|i| {
                format!(
                    "{{\"type\":\"line\",\"i\":{i},\"pad\":\"{}\"}}\n",
                    "x".repeat(40)
                )
            })
            .collect();
        stdin.write_all(lines.as_bytes()).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(700));
        // The window (10 minutes) has not expired: only the size cut wrote frames.
        let got = lines_on_disk(&dir.path().join("x.zst"));
        assert!(
            got.len() >= 15,
            "fsync {fsync}: {} of 20 lines on disk while the producer is quiet",
            got.len()
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn a_bad_row_in_a_stream_keeps_every_line_read_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (child, mut stdin) = spawn(&["pack", "-o", "x.zst"], dir.path());
    let good: String = (0..17).map(chunk).collect();
    stdin.write_all(good.as_bytes()).unwrap();
    stdin
        .write_all(b"{\"type\":\"text-chunks\",\"seq0\":-1,\"time0\":0,\"data\":{}}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:18: malformed text-chunks"));
    let file = dir.path().join("x.zst");
    sess().arg("verify").arg(&file).assert().success();
    sess().arg("cat").arg(&file).assert().success().stdout(good);
}

#[test]
fn a_stream_that_fails_at_once_leaves_an_existing_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.zst");
    std::fs::write(&file, b"precious").unwrap();
    let (child, mut stdin) = spawn(&["pack", "-f", "-o", "x.zst"], dir.path());
    stdin
        .write_all(b"{\"type\":\"text-chunks\",\"seq0\":-1,\"time0\":0,\"data\":{}}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
}

#[test]
fn two_streaming_packs_into_one_file_cannot_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, mut stdin) = spawn(&["pack", "--window", "50", "-o", "x.zst"], dir.path());
    stdin.write_all(chunk(0).as_bytes()).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // The second writer is told, and fails before it writes a byte (-f: replacing is not
    // what stops it).
    sess()
        .args(["pack", "-f", "-o"])
        .arg(dir.path().join("x.zst"))
        .write_stdin(chunk(100))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "another process is writing this file",
        ));
    stdin.write_all(chunk(1).as_bytes()).unwrap();
    drop(stdin);
    assert!(first.wait().unwrap().success());
    sess()
        .arg("cat")
        .arg(dir.path().join("x.zst"))
        .assert()
        .success()
        .stdout(chunk(0) + &chunk(1));
}
