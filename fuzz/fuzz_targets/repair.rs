//! `repair` of a damaged packed log: lines of the input are interned and packed into small
//! frames (or, for a log of JSON objects, frames that cut lines, as pzstd may), the file is
//! damaged as the input's first bytes say (a flipped bit, a cut, zeroed bytes), and what
//! `repair` writes must read back whole (every frame checked, every interned line rebuilt),
//! holding lines of the log in their order, and never panic.
#![no_main]

use std::io::{Read, Seek, SeekFrom, Write};

use libfuzzer_sys::fuzz_target;
use sess::frames::writer::FrameOptions;
use sess::frames::{FrameReader, FrameWriter, Recovery};
use sess::intern::{self, InternWriter, Reader, Writer};

fuzz_target!(|data: &[u8]| {
    let Some((ctl, log)) = data.split_first_chunk::<4>() else {
        return;
    };
    let [knob, at_hi, at_lo, how] = *ctl;
    // Small values and small frames, so that refs cross frames.
    let frame_size = 64 + 64 * usize::from(knob & 0x0f);
    let min = 2 + usize::from(knob >> 4);
    let frames = FrameWriter::new(Vec::new(), FrameOptions::new(1, frame_size)).unwrap();
    let mut w = InternWriter::new(frames, Writer::new(min, 1 << 30).near(frame_size as u64));
    w.write_all(log).unwrap();
    let (mut packed, _) = w.finish().unwrap().finish().unwrap();
    if packed.is_empty() {
        return;
    }
    if how & 0x04 != 0 {
        // A line cut by damage is dropped, both ends: the end of an object line is never
        // one JSON value, nor is its start unless it is the whole line.
        let objects = log.split(|&b| b == b'\n').filter(|l| !l.is_empty()).all(|l| {
            l.starts_with(b"{") && l.ends_with(b"}") && sess::json::validate(l).is_ok()
        });
        if !objects {
            return;
        }
        packed = recut(&packed, frame_size / 2 + 7);
    }
    let at = (usize::from(at_hi) << 8 | usize::from(at_lo)) % packed.len();
    match how % 4 {
        0 => packed[at] ^= 1 << (how >> 5),
        1 => packed.truncate(at.max(1)),
        2 => packed[at..].iter_mut().take(16).for_each(|b| *b = 0),
        _ => {}
    }
    let mut damaged = tempfile::tempfile().unwrap();
    damaged.write_all(&packed).unwrap();
    damaged.seek(SeekFrom::Start(0)).unwrap();
    let mut out = FrameWriter::new(Vec::new(), FrameOptions::new(1, frame_size)).unwrap();
    if sess::repair::salvage_zstd(&mut damaged, &mut out).is_err() {
        return;
    }
    let (repaired, _) = out.finish().unwrap();
    let mut plain = Vec::new();
    FrameReader::new(&repaired[..], "repaired", Recovery::Absolute)
        .read_to_end(&mut plain)
        .expect("what repair writes decodes whole");
    // Every line rebuilds, and is a line of the log, in order.
    let original: Vec<&[u8]> = log.split(|&b| b == b'\n').collect();
    let mut reader = Reader::default();
    let (mut rebuilt, mut next) = (Vec::new(), 0);
    let mut lines = plain.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        // As readers do: a last line without a newline is rebuilt when it is whole JSON.
        let whole = lines.peek().is_some() || sess::json::validate(line).is_ok();
        let line = match intern::is_interned(line) && whole {
            true => {
                reader.read(line, &mut rebuilt).expect("what repair writes reads back");
                &rebuilt[..]
            }
            false => line,
        };
        if line.is_empty() {
            continue;
        }
        let found = original[next..].iter().position(|o| *o == line);
        next += found.expect("a line repair writes is a line of the log") + 1;
    }
});

/// The lines stored in `packed`, cut every `every` bytes into zstd frames of their own.
fn recut(packed: &[u8], every: usize) -> Vec<u8> {
    let mut stored = Vec::new();
    FrameReader::new(packed, "packed", Recovery::Absolute)
        .read_to_end(&mut stored)
        .unwrap();
    let mut z = zstd::bulk::Compressor::new(1).unwrap();
    z.include_checksum(true).unwrap();
    stored.chunks(every).flat_map(|c| z.compress(c).unwrap()).collect()
}
