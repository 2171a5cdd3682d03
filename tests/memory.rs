//! What sess holds in memory at its peak, measured. Each test is alone in its file: a
//! child process's peak counts the memory of the process that starts it. Linux only: it
//! resets this process's peak through /proc, and reads the child's in KiB.
#![cfg(target_os = "linux")]

mod common;

use common::sess;

/// Runs `cmd` to its end; its exit code and its peak resident memory in bytes, as wait4(2)
/// reports them for this one child. A child's peak starts from this process's, as it was
/// when the child began (it shares its memory until it execs), so this process's peak is
/// set back to what it holds now first (clear_refs), and it holds little: this test is
/// alone in its file, so no other test runs beside it.
// The child is reaped by wait4, which std's `wait` would not report the memory of.
#[allow(clippy::zombie_processes)]
fn peak_memory(cmd: &mut std::process::Command) -> (i32, u64) {
    std::fs::write("/proc/self/clear_refs", "5").expect("cannot reset this process's peak");
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value, filled in by wait4 for a child of ours
    // that nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, child.id() as i32);
    assert!(libc::WIFEXITED(status), "the child was killed: {status}");
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

#[test]
fn pack_of_a_huge_line_stays_within_twice_its_length() {
    // Issue 12's bound: 64 MiB, plus the window's index (nothing here), plus twice the
    // longest line. A line was held about three times over (read into a buffer that
    // doubled, held for its frame, compressed whole): a 300 MB line took 935 MB with one
    // thread, 824 MB with two.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.jsonl");
    // Base64 of random bytes, as an image is: zstd cannot shrink it much, so a copy of
    // it compressed whole takes room too.
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let words: String = (0..150_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            B64[(x >> 58) as usize] as char
        })
        .collect();
    // Lines before it and after it, as in a log: the line's frame follows theirs, and its
    // read buffer stays in use after it.
    let short: String = (0..100)
        .map(|i| format!("{{\"type\":\"y\",\"seq\":{i}}}\n"))
        .collect();
    let line = format!("{short}{{\"type\":\"x\",\"image\":\"{words}\"}}\n{short}");
    std::fs::write(&input, &line).unwrap();
    let len = line.len();
    // A child made by fork counts the pages it shares with this process until it execs.
    drop((words, line));
    let packed = dir.path().join("long.zst");
    let bound = 2 * len as u64 + (64 << 20);
    for threads in ["1", "2"] {
        let (code, peak) = peak_memory(
            std::process::Command::new(env!("CARGO_BIN_EXE_sess"))
                .args(["pack", "-f", "--threads", threads, "-o"])
                .arg(&packed)
                .arg(&input),
        );
        assert_eq!(code, 0);
        assert!(
            peak <= bound,
            "--threads {threads}: {peak} bytes at peak for a line of {len}"
        );
        let out = dir.path().join("long.out");
        sess()
            .arg("unpack")
            .arg(&packed)
            .arg("-o")
            .arg(&out)
            .arg("-f")
            .assert()
            .success();
        assert!(std::fs::read(&out).unwrap() == std::fs::read(&input).unwrap());
    }
}
