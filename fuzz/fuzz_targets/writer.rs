//! The frame writer on arbitrary content, frame sizes, write sizes and layouts: stock zstd
//! and sess's reader give the content back exactly, frames hold whole lines, and the index
//! describes the file.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use sess::frames::writer::{FrameOptions, FrameWriter, Layout};
use sess::frames::{FrameReader, Index, Recovery};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let frame_size = 1 + usize::from(u16::from_le_bytes([data[0], data[1]])) % 4096;
    let chunk = 1 + usize::from(data[2] >> 1);
    let layout = if data[2] & 1 == 1 { Layout::Dsh } else { Layout::Sess };
    let content = &data[3..];
    let opts = FrameOptions {
        layout,
        first_seq: sess::event::line_seq,
        ..FrameOptions::new(1, frame_size)
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    for (k, c) in content.chunks(chunk).enumerate() {
        w.write_all(c).unwrap();
        // Now and then the window expires.
        if k % 7 == 3 {
            w.flush_frame().unwrap();
        }
    }
    let (file, index) = w.finish().unwrap();
    assert_eq!(zstd::decode_all(&file[..]).unwrap(), content);
    let mut r = FrameReader::new(&file[..], "fuzz", Recovery::Absolute);
    let mut back = Vec::new();
    r.read_to_end(&mut back).unwrap();
    assert_eq!(back, content);
    let mut at = 0u64;
    let mut lines = 0u64;
    for (k, e) in index.entries.iter().enumerate() {
        assert_eq!(e.offset, at);
        let frame = &file[at as usize..(at + u64::from(e.compressed)) as usize];
        assert_eq!(crc32fast::hash(frame), e.crc32);
        let plain = zstd::decode_all(frame).unwrap();
        assert_eq!(plain.len() as u32, e.uncompressed);
        if k + 1 < index.entries.len() {
            assert_eq!(plain.last(), Some(&b'\n'), "a frame ends at a line end");
        }
        lines += u64::from(e.lines);
        at += u64::from(e.compressed);
    }
    let want = memchr::memchr_iter(b'\n', content).count() as u64
        + u64::from(content.last().is_some_and(|&b| b != b'\n'));
    assert_eq!(lines, want);
    let found = Index::read_from(&mut std::io::Cursor::new(&file)).unwrap();
    match layout {
        Layout::Sess => assert_eq!(found.unwrap().unwrap().0, index),
        Layout::Dsh => assert!(found.is_none()),
    }
});
