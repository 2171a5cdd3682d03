//! The snapshot-delta encoder on arbitrary pi-like logs: whatever the lines, packing and
//! unpacking gives them back byte for byte, and every row written decodes. The estimating
//! packer (`sess stats`) takes the same lines without panicking, and writes no more rows
//! than lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::pack::Packer;
use sess::rows::{self, Parsed};
use sess::snapshots;

/// Expands every row of `packed` (the way `sess unpack` does).
fn unpack(packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in packed.split_inclusive(|&b| b == b'\n') {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (line, false),
        };
        if nl && snapshots::is_row(body) {
            snapshots::expand::<()>(body, &mut |_, _, ev| {
                out.extend_from_slice(ev);
                out.push(b'\n');
                Ok(true)
            })
            .expect("a row the encoder wrote decodes");
            continue;
        }
        match rows::parse(body) {
            Parsed::Row(row) => {
                for k in 0..row.len() {
                    row.write_member(k, &mut out);
                    out.push(b'\n');
                }
            }
            _ => {
                out.extend_from_slice(body);
                if nl {
                    out.push(b'\n');
                }
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    // A pi header makes the encoder treat message_update and tool_execution_update as
    // snapshot frames.
    let mut input = b"{\"type\":\"session\",\"version\":3}\n".to_vec();
    input.extend_from_slice(data);
    // Input that already holds rows is read as the events they hold, so its round trip is
    // the unpacked form: leave it to the rows target.
    if input.split(|&b| b == b'\n').any(|l| {
        snapshots::is_row(l) || !matches!(rows::parse(l), Parsed::Event)
    }) {
        return;
    }
    let pack = |mut packer: Packer| {
        let mut packed = Vec::new();
        for line in input.split_inclusive(|&b| b == b'\n') {
            let (body, nl) = match line.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (line, false),
            };
            packer.event(body, nl, &mut packed).unwrap();
        }
        packer.finish(&mut packed).unwrap();
        packed
    };
    let packed = pack(Packer::default());
    assert!(unpack(&packed) == input, "the round trip changed the log");
    let estimated = pack(Packer::default().estimating());
    let lines = |b: &[u8]| b.split(|&c| c == b'\n').count();
    assert!(lines(&estimated) <= lines(&input));
});
