//! The packed-row decoders (chunk rows and snapshot-delta rows) and the chunk packer on
//! arbitrary bytes: no panic; every row that
//! decodes expands to valid JSON events that the packer recognises; and pack followed by
//! unpack gives back any input that holds no rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::json;
use sess::rows::{self, ChunkPacker, Parsed};

fn unpack(packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in packed.split_inclusive(|&b| b == b'\n') {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (line, false),
        };
        match rows::parse(body) {
            Parsed::Row(row) => {
                for k in 0..row.len() {
                    row.write_member(k, &mut out);
                    out.push(b'\n');
                }
            }
            Parsed::Event => {
                out.extend_from_slice(body);
                if nl {
                    out.push(b'\n');
                }
            }
            other => panic!("the packer wrote a bad row: {other:?}"),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut has_rows = false;
    for line in data.split(|&b| b == b'\n') {
        if sess::snapshots::is_row(line) {
            // Snapshot-delta rows: any bytes after the prefix must fail cleanly or rebuild
            // valid JSON.
            has_rows = true;
            let _ = sess::snapshots::expand::<()>(line, &mut |_, _, ev| {
                assert!(json::validate(ev).is_ok());
                Ok(true)
            });
            continue;
        }
        if let Parsed::Row(row) = rows::parse(line) {
            has_rows = true;
            let mut ev = Vec::new();
            for k in 0..row.len() {
                ev.clear();
                row.write_member(k, &mut ev);
                assert!(json::validate(&ev).is_ok(), "{}", String::from_utf8_lossy(&ev));
            }
        } else if !matches!(rows::parse(line), Parsed::Event) {
            has_rows = true;
        }
    }
    if has_rows {
        return;
    }
    let mut packer = ChunkPacker::default();
    let mut packed = Vec::new();
    let mut lines = data.split_inclusive(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (line, false),
        };
        packer.event(body, nl, None, &mut packed).unwrap();
    }
    packer.finish(&mut packed).unwrap();
    assert_eq!(unpack(&packed), data);
});
