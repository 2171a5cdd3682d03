//! Interned lines: the reader on arbitrary lines never panics (a bad line is an error),
//! and whatever lines the writer is given, reading its output gives them back byte for byte.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use sess::intern::{self, InternWriter, Reader, Writer};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    // The reader, on whatever comes.
    let mut reader = Reader::default();
    let mut out = Vec::new();
    for line in rest.split(|&b| b == b'\n') {
        let _ = reader.read(line, &mut out);
    }
    // The writer, then the reader, on the same lines.
    let min = 2 + usize::from(knob & 0x3f);
    let window = if knob & 0x40 == 0 { 1 << 30 } else { 512 };
    // Quiet stretches (lines looked into a frame in eight) after two frames (here, two
    // lines), or never.
    let quiet = if knob & 0x80 == 0 { u64::MAX } else { 2 };
    let writer = || InternWriter::new(Vec::new(), Writer::new(min, window).quiet_after(quiet));
    let mut w = writer();
    w.write_all(rest).unwrap();
    let packed = w.finish().unwrap();
    // The same lines each written whole with its end, `\r\n` apart from the line as a
    // snapshot row's event alone is (the writer reads them where they lie): the same bytes.
    let mut whole = writer();
    for line in rest.split_inclusive(|&b| b == b'\n') {
        match line.strip_suffix(b"\n") {
            Some(l) => match l.strip_suffix(b"\r") {
                Some(l) => sess::io::write_ended(&mut whole, l, b"\r\n").unwrap(),
                None => sess::io::write_ended(&mut whole, l, b"\n").unwrap(),
            },
            None => whole.write_all(line).unwrap(),
        }
    }
    assert_eq!(
        whole.finish().unwrap(),
        packed,
        "written whole, the lines intern alike"
    );
    let mut reader = Reader::default();
    let mut back = Vec::new();
    let mut lines = packed.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        // As readers do: a last line without newline is rebuilt when it is whole JSON.
        let whole = !last || sess::json::validate(line).is_ok();
        if intern::is_interned(line) && whole {
            reader
                .read(line, &mut out)
                .expect("a line the writer wrote reads back");
            back.extend_from_slice(&out);
        } else {
            back.extend_from_slice(line);
        }
        if !last {
            back.push(b'\n');
        }
    }
    assert_eq!(back, rest);
});
