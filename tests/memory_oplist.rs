//! What `sess diff` and `sess recover` hold at their peak for a long snapshot, measured,
//! alone in this file (see `common::peak_memory_alone`). Linux only.
#![cfg(target_os = "linux")]

mod common;

use common::peak_memory_alone;

/// A snapshot is held as JavaScript holds it (UTF-16 strings: twice its text), and once
/// as text: 6 times a 100 MB line, at most. Before, the op that carries it was cloned
/// once more on its way to the wire (diff), and the value into its record (recover
/// --states): 8 times, 1.59 GB for a 200 MB line.
#[test]
fn diff_and_recover_hold_a_long_snapshot_a_bounded_number_of_times() {
    let dir = tempfile::tempdir().unwrap();
    let snapshots = dir.path().join("snapshots.jsonl");
    let len = 100_000_000;
    let text = format!(
        "{{\"type\":\"a\"}}\n{{\"type\":\"big\",\"s\":\"{}\"}}\n{{\"type\":\"c\"}}\n",
        "x".repeat(len)
    );
    std::fs::write(&snapshots, text).unwrap();
    let ops = dir.path().join("ops.jsonl");
    let sess = env!("CARGO_BIN_EXE_sess");
    let bound = 7 * len as u64 + (64 << 20);
    let mut diff = std::process::Command::new(sess);
    diff.arg("diff").arg(&snapshots).arg("-o").arg(&ops);
    let (code, peak) = peak_memory_alone(&mut diff);
    assert_eq!(code, 0);
    assert!(peak <= bound, "diff: {peak} bytes at peak, over {bound}");
    let mut recover = std::process::Command::new(sess);
    recover
        .args(["recover", "--states", "--from-start"])
        .arg(&ops);
    let (code, peak) = peak_memory_alone(&mut recover);
    assert_eq!(code, 0);
    assert!(
        peak <= bound,
        "recover --states: {peak} bytes at peak, over {bound}"
    );
}
