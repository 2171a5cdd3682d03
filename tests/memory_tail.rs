//! What `sess cat --tail` holds at its peak for a long last line of a packed log,
//! measured, alone in this file (see `common::peak_memory_alone`). Linux only.
#![cfg(target_os = "linux")]

mod common;

use common::{peak_memory_alone, sess};

/// A line of 100 MB: the frame reader kept the bytes it had given until the next frame
/// replaced them, beside the line reader's copy and the copy kept as the tail: three
/// times the line (615 MB for a 200 MB line). Now twice, and a little.
#[test]
fn cat_tail_of_a_long_last_line_holds_it_about_twice() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("long.jsonl");
    let len = 100_000_000;
    let mut text: String = (0..100)
        .map(|i| format!("{{\"seq\":{i},\"t\":\"x\"}}\n"))
        .collect();
    text.push_str(&format!(
        "{{\"seq\":100,\"big\":\"{}\"}}\n",
        "ab".repeat(len / 2)
    ));
    std::fs::write(&log, &text).unwrap();
    let packed = dir.path().join("long.zst");
    sess()
        .arg("pack")
        .arg(&log)
        .arg("-o")
        .arg(&packed)
        .assert()
        .success();
    drop(text);
    let mut cat = std::process::Command::new(env!("CARGO_BIN_EXE_sess"));
    cat.args(["cat", "--tail", "1"]).arg(&packed);
    let (code, peak) = peak_memory_alone(&mut cat);
    assert_eq!(code, 0);
    let bound = 5 * len as u64 / 2 + (32 << 20);
    assert!(peak <= bound, "{peak} bytes at peak, over {bound}");
}
