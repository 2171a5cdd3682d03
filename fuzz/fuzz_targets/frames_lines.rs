//! The frame reader never yields a wrong line. Lines made from the input are compressed
//! into zstd frames (whole lines, as sess writes them, or cut anywhere, as pzstd and files
//! joined with `cat` may), then the file is left whole, has one byte flipped, or is cut
//! short. In every recovery mode, what reads back without an error is the lines in order,
//! some perhaps lost but none changed, and then perhaps the start of a line (a tear).
//! Untouched, the file reads back exactly. The one exception is the documented salvage of
//! a torn final frame, whose lines nothing vouches for: a flip there can pass for a tear
//! (a raw block's size made larger runs on to the end of the file), so the lines the
//! reader names as unverified are not judged after a flip; after a cut, a true tear, they
//! are. Built by `cargo fuzz` (`cfg(fuzzing)`), the reader holds 2 KiB of a frame and not
//! 64 MiB, so frames over that limit, whose lines go out before the frame's checksum is
//! checked, are reached too.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use sess::frames::{FrameReader, Recovery};

/// A line of the log: `{"k":"..."}` holding the bytes as printable ASCII. No proper part
/// of such a line is one JSON value, as no part of an agent's object line is.
fn line_of(bytes: &[u8]) -> Vec<u8> {
    let mut line = b"{\"k\":\"".to_vec();
    for &b in bytes {
        match b {
            b'"' | b'\\' => line.extend_from_slice(&[b'\\', b]),
            0x20..=0x7e => line.push(b),
            _ => line.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
        }
    }
    line.extend_from_slice(b"\"}");
    line
}

fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Whether every ended line of `out` is one of `lines`, in their order, and what follows
/// the last newline is the start of a line after those.
fn lines_kept(lines: &[Vec<u8>], out: &[u8]) -> bool {
    let mut pieces: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    let last = pieces.pop().unwrap_or_default();
    let mut next = 0;
    for piece in pieces {
        match lines[next..].iter().position(|l| l[..] == *piece) {
            Some(k) => next += k + 1,
            None => return false,
        }
    }
    last.is_empty() || lines[next..].iter().any(|l| l.starts_with(last))
}

/// How many complete lines of a torn final frame the reader kept unverified, if it says.
fn unverified(notices: &[String]) -> Option<usize> {
    let n = notices.iter().find(|n| n.contains("UNVERIFIED"))?;
    let kept = &n[n.find("kept ")? + 5..];
    kept.split(' ').next()?.parse().ok()
}

/// `out` without its last `n` complete lines and what follows them.
fn before_last_lines(out: &[u8], n: usize) -> &[u8] {
    let ends: Vec<usize> = memchr::memchr_iter(b'\n', out).collect();
    match ends.len().checked_sub(n + 1) {
        Some(k) => &out[..=ends[k]],
        None => &[],
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((knobs, text)) = data.split_first_chunk::<4>() else {
        return;
    };
    // A CRLF log's lines end in `\r` before the newline.
    let crlf = knobs[0] & 8 != 0;
    let lines: Vec<Vec<u8>> = text
        .split(|&b| b == b'\n')
        .map(|t| [line_of(t), if crlf { b"\r".to_vec() } else { vec![] }].concat())
        .collect();
    let mut plain = Vec::new();
    for l in &lines {
        plain.extend_from_slice(l);
        plain.push(b'\n');
    }
    let mut rng = Rng(u64::from(u32::from_le_bytes(*knobs)) | 1);
    let cut_anywhere = knobs[0] & 1 == 1;
    // Frames of up to 3 KB of output: some over the reader's 2 KiB.
    let mut file = Vec::new();
    let mut at = 0;
    while at < plain.len() {
        let mut end = (at + 1 + rng.below(3000)).min(plain.len());
        if !cut_anywhere {
            end += memchr::memchr(b'\n', &plain[end - 1..]).unwrap_or(0);
        }
        file.extend_from_slice(&frame(&plain[at..end]));
        at = end;
    }
    let (damaged, flipped) = match knobs[0] >> 1 & 3 {
        1 | 2 => {
            let k = rng.below(file.len());
            file[k] ^= 1 << rng.below(8);
            (true, true)
        }
        3 => {
            file.truncate(rng.below(file.len()));
            (true, false)
        }
        _ => (false, false),
    };
    for mode in [
        Recovery::TolerateTail,
        Recovery::Absolute,
        Recovery::PointInTime,
        Recovery::SkipCorrupt,
    ] {
        let mut r = FrameReader::new(&file[..], "fuzz", mode).collecting();
        let mut out = Vec::new();
        if r.read_to_end(&mut out).is_err() {
            assert!(damaged, "{mode:?}: an error on a file untouched");
            continue;
        }
        if !damaged {
            assert!(
                out == plain,
                "{mode:?}: the file untouched did not read back"
            );
        }
        let judged = match unverified(&r.notices()) {
            Some(n) if flipped => before_last_lines(&out, n),
            _ => &out[..],
        };
        assert!(
            lines_kept(&lines, judged),
            "{mode:?}: a line that is not the input's: {:?}",
            String::from_utf8_lossy(&out)
        );
    }
});
