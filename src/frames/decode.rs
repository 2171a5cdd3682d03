//! Decodes one zstd frame as a stream, handing its output on in pieces, so that checking a
//! frame costs a few hundred KiB whatever it decompresses to (a 64 KiB zstd bomb included).

use std::io::{self, Read};

use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};

/// How decoding one frame ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The frame decoded whole, and its checksum (if it has one) matched.
    Complete,
    /// The frame does not decode: why, in zstd's words.
    Damaged(String),
    /// The input ended inside the frame.
    Cut,
}

/// Decodes the one frame at the start of `src`, calling `out` with its output in order.
/// Reads no further than the frame's end (give it a `Take` to bound it).
pub fn frame<R: Read + ?Sized>(
    src: &mut R,
    mut out: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Outcome> {
    let mut dctx = DCtx::create();
    let mut input = vec![0u8; 64 * 1024];
    let mut scratch = vec![0u8; 128 * 1024];
    let (mut pos, mut end) = (0, 0);
    loop {
        if pos == end {
            end = crate::io::read::read_some(src, &mut input)?;
            pos = 0;
            if end == 0 {
                return Ok(Outcome::Cut);
            }
        }
        let mut inb = InBuffer::around(&input[pos..end]);
        let mut outb = OutBuffer::around(&mut scratch[..]);
        let r = dctx.decompress_stream(&mut outb, &mut inb);
        pos += inb.pos();
        let produced = outb.pos();
        out(&scratch[..produced])?;
        match r {
            Err(code) => {
                return Ok(Outcome::Damaged(format!(
                    "zstd: {}",
                    zstd::zstd_safe::get_error_name(code)
                )));
            }
            Ok(0) => return Ok(Outcome::Complete),
            Ok(_) => {}
        }
    }
}

/// What the lines of a frame's output look like, counted as it goes by.
#[derive(Debug, Clone, Default)]
pub struct LineStats {
    pub bytes: u64,
    pub newlines: u64,
    /// Offset just past the last newline (0 when there is none).
    pub complete: u64,
    /// The first line (at most [`FIRST_LINE_PREFIX`] bytes of it), for the index's seq.
    pub first_line: Vec<u8>,
    first_line_done: bool,
}

/// How much of a frame's first line is kept to read its `seq` from.
pub const FIRST_LINE_PREFIX: usize = 64 * 1024;

impl LineStats {
    pub fn add(&mut self, chunk: &[u8]) {
        if !self.first_line_done {
            let end = memchr::memchr(b'\n', chunk);
            let take = end.unwrap_or(chunk.len());
            let room = FIRST_LINE_PREFIX - self.first_line.len();
            self.first_line.extend_from_slice(&chunk[..take.min(room)]);
            self.first_line_done = end.is_some() || self.first_line.len() == FIRST_LINE_PREFIX;
        }
        if let Some(k) = memchr::memrchr(b'\n', chunk) {
            self.complete = self.bytes + k as u64 + 1;
        }
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.bytes += chunk.len() as u64;
    }

    /// Whether the output ends in the middle of a line.
    pub fn has_partial_line(&self) -> bool {
        self.complete < self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_in_pieces_and_tells_damage_from_a_cut() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| format!("{{\"seq\":{i}}}\n").into_bytes())
            .collect();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))
            .unwrap();
        let z = c.compress(&data).unwrap();
        let mut got = Vec::new();
        let mut stats = LineStats::default();
        let r = frame(&mut &z[..], |b| {
            got.extend_from_slice(b);
            stats.add(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(r, Outcome::Complete);
        assert_eq!(got, data);
        assert_eq!(stats.newlines, 300_000);
        assert_eq!(stats.first_line, b"{\"seq\":0}");
        assert!(!stats.has_partial_line());
        let cut = frame(&mut &z[..z.len() - 3], |_| Ok(())).unwrap();
        assert_eq!(cut, Outcome::Cut);
        let mut bad = z.clone();
        let n = bad.len();
        bad[n - 2] ^= 1;
        assert!(matches!(
            frame(&mut &bad[..], |_| Ok(())).unwrap(),
            Outcome::Damaged(_)
        ));
    }
}
