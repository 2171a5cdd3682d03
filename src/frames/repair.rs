//! Salvages a damaged compressed log: every frame that decodes is kept as it is (its bytes
//! copied, not recompressed), the complete lines of a torn final frame are compressed into a
//! new frame, and everything else is reported by byte range and line range. A new index is
//! written at the end.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};

use super::index::Index;
use super::walk::{self, End, Kind, ZSTD_MAGIC};
use super::writer::FrameWriter;

/// A stretch of the input that could not be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub from: u64,
    pub to: u64,
    /// Lines of the original before the loss (exact while every earlier loss has a known
    /// line count).
    pub after_line: u64,
    /// Lines lost, when the old index says (or a torn frame's partial line: 1).
    pub lines: Option<u64>,
    pub why: String,
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.after_line;
        match self.lines {
            Some(0) => write!(
                f,
                "bytes {}..{} ({}), no lines, after line {n}",
                self.from, self.to, self.why
            ),
            Some(1) => write!(
                f,
                "bytes {}..{} ({}): line {} of the original",
                self.from,
                self.to,
                self.why,
                n + 1
            ),
            Some(k) => write!(
                f,
                "bytes {}..{} ({}): lines {}..{} of the original",
                self.from,
                self.to,
                self.why,
                n + 1,
                n + k
            ),
            None => write!(
                f,
                "bytes {}..{} ({}): an unknown number of lines after line {n}",
                self.from, self.to, self.why
            ),
        }
    }
}

#[derive(Debug, Default)]
pub struct Report {
    pub frames_kept: u64,
    pub lines_kept: u64,
    /// Complete lines saved from a torn final frame (not covered by a checksum).
    pub torn_lines_kept: u64,
    pub losses: Vec<Loss>,
}

/// Copies every good frame of `f` into `out` and reports the rest.
pub fn salvage<W: Write>(f: &mut File, out: &mut FrameWriter<W>) -> io::Result<Report> {
    let len = f.metadata()?.len();
    let old = match Index::read_from(f)? {
        Some(Ok((index, _))) => Some(index),
        _ => None,
    };
    let old_lines = |offset: u64| {
        old.as_ref()
            .and_then(|i| i.entries.iter().find(|e| e.offset == offset))
            .map(|e| u64::from(e.lines))
    };
    let mut report = Report::default();
    // Lines of the original read so far: kept, plus lost where the count is known.
    let mut line = 0u64;
    let mut at = 0;
    while at < len {
        match walk::frame_at(f, at, len)? {
            Ok(span) if matches!(span.kind, Kind::Skippable { .. }) => at += span.len,
            Ok(span) => {
                let bytes = read_at(f, at, span.len)?;
                match zstd::decode_all(&bytes[..]) {
                    Ok(plain) => {
                        out.write_raw_frame(&bytes, &plain)?;
                        let n = memchr::memchr_iter(b'\n', &plain).count() as u64;
                        report.frames_kept += 1;
                        report.lines_kept += n;
                        line += n;
                    }
                    Err(e) => {
                        let lines = old_lines(at);
                        report.losses.push(Loss {
                            from: at,
                            to: at + span.len,
                            after_line: line,
                            lines,
                            why: format!("the frame does not decode: {e}"),
                        });
                        line += lines.unwrap_or(0);
                    }
                }
                at += span.len;
            }
            Err(End::Torn { offset }) => {
                let (lines, partial) = torn_prefix(f, offset, len)?;
                let kept = memchr::memchr_iter(b'\n', &lines).count() as u64;
                out.write_all(&lines)?;
                out.flush_frame()?;
                report.torn_lines_kept = kept;
                report.lines_kept += kept;
                line += kept;
                report.losses.push(Loss {
                    from: offset,
                    to: len,
                    after_line: line,
                    lines: Some(u64::from(partial > 0)),
                    why: format!("a torn final frame: kept its {kept} complete line(s), dropped {partial} byte(s)"),
                });
                at = len;
            }
            Err(End::Garbage { offset, why }) => {
                let next = next_good_frame(f, offset + 1, len)?.unwrap_or(len);
                report.losses.push(Loss {
                    from: offset,
                    to: next,
                    after_line: line,
                    lines: None,
                    why,
                });
                at = next;
            }
            Err(End::Clean) => unreachable!("frame_at never reports a clean end"),
        }
    }
    Ok(report)
}

fn read_at(f: &mut File, at: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The complete lines a torn frame's bytes decode to, and how many bytes of a partial line
/// follow them.
fn torn_prefix(f: &mut File, at: u64, len: u64) -> io::Result<(Vec<u8>, usize)> {
    let bytes = read_at(f, at, len - at)?;
    let mut dctx = DCtx::create();
    let mut plain = Vec::new();
    let mut chunk = vec![0u8; 128 * 1024];
    let mut input = InBuffer::around(&bytes[..]);
    loop {
        let mut output = OutBuffer::around(&mut chunk[..]);
        let r = dctx.decompress_stream(&mut output, &mut input);
        let produced = output.pos();
        plain.extend_from_slice(&chunk[..produced]);
        match r {
            Ok(0) | Err(_) => break,
            Ok(_) if produced == 0 && input.pos() == bytes.len() => break,
            Ok(_) => {}
        }
    }
    let keep = memchr::memrchr(b'\n', &plain).map_or(0, |k| k + 1);
    let partial = plain.len() - keep;
    plain.truncate(keep);
    Ok((plain, partial))
}

/// The offset of the next zstd frame at or after `from` that decodes whole. Scans in
/// chunks, so memory stays small whatever lies between.
fn next_good_frame(f: &mut File, from: u64, len: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 1 << 20;
    let magic = ZSTD_MAGIC.to_le_bytes();
    let mut pos = from;
    while pos < len {
        let chunk = read_at(f, pos, CHUNK.min(len - pos))?;
        let mut k = 0;
        while let Some(hit) = memchr::memmem::find(&chunk[k..], &magic) {
            let at = pos + (k + hit) as u64;
            if let Ok(span) = walk::frame_at(f, at, len)?
                && zstd::decode_all(&read_at(f, at, span.len)?[..]).is_ok()
            {
                return Ok(Some(at));
            }
            k += hit + 1;
        }
        // A magic number may straddle two chunks.
        pos += (chunk.len() as u64).saturating_sub(3).max(1);
    }
    Ok(None)
}
