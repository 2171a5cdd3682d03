//! Writes JSONL as independent zstd frames, each holding whole lines and the content
//! checksum, followed by the frame index. Stock `zstd -dc` reads the result as plain JSONL.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use zstd::stream::raw::CParameter;

use super::index::{Entry, Index};
use crate::json;

/// How frames are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// Frames cut by size (and by the window when streaming), then the index.
    Sess,
    /// DeepSeek Harness's layout: the header line alone in the first frame, one frame per
    /// batch, no skippable frames.
    Dsh,
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub level: i32,
    /// A frame is cut at the last line end once this many uncompressed bytes are pending.
    pub frame_size: usize,
    pub layout: Layout,
}

/// The default frame size, chosen by measurement at level 3 on 256 MiB generated logs
/// (`bench/frames.sh` prints the same table). Output size relative to one `zstd -3` stream:
///
/// | frame size | DSH log (packed) | pi 0.73 log |
/// |---|---|---|
/// | 64 KiB | 0.457 | 1.902 |
/// | 256 KiB | 0.434 | 1.213 |
/// | 1 MiB | 0.421 | 1.080 |
/// | 4 MiB | 0.417 | 1.019 |
///
/// 1 MiB is where the curve flattens for logs made of many small events; the repeated
/// snapshots of an unfiltered pi 0.73 log still gain from a longer window (`--frame-size`).
/// A larger frame would make `cat --tail` decode more, and lose more to a torn write.
pub const DEFAULT_FRAME_SIZE: usize = 1 << 20;

pub struct FrameWriter<W: Write> {
    out: W,
    opts: Options,
    compressor: zstd::bulk::Compressor<'static>,
    /// Uncompressed bytes not yet in a frame; may end inside a line.
    pending: Vec<u8>,
    zbuf: Vec<u8>,
    ledger: Ledger,
    /// When the oldest pending line arrived: the window opens then and does not reset.
    opened: Option<Instant>,
    /// Frames written since the caller last asked (for `--fsync`).
    unsynced: bool,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(out: W, opts: Options) -> io::Result<FrameWriter<W>> {
        let mut compressor = zstd::bulk::Compressor::new(opts.level)?;
        compressor.set_parameter(CParameter::ChecksumFlag(true))?;
        compressor.set_parameter(CParameter::ContentSizeFlag(true))?;
        Ok(FrameWriter {
            out,
            opts,
            compressor,
            pending: Vec::new(),
            zbuf: Vec::new(),
            ledger: Ledger::default(),
            opened: None,
            unsynced: false,
        })
    }

    /// When the pending frame must be flushed, given the window length.
    pub fn deadline(&self, window: Duration) -> Option<Instant> {
        self.opened.map(|t| t + window)
    }

    /// Whether a frame was written since the last call (and forgets it).
    pub fn take_written(&mut self) -> bool {
        std::mem::take(&mut self.unsynced)
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Writes every complete pending line as one frame.
    pub fn flush_frame(&mut self) -> io::Result<()> {
        if let Some(k) = memchr::memrchr(b'\n', &self.pending) {
            self.emit(k + 1)?;
        }
        Ok(())
    }

    /// Appends a frame compressed elsewhere (by an earlier writer) as it is, after writing
    /// every pending line as its own frame. `plain` is its content.
    pub fn write_raw_frame(&mut self, compressed: &[u8], plain: &[u8]) -> io::Result<()> {
        if !self.pending.is_empty() {
            let n = self.pending.len();
            self.emit(n)?;
        }
        self.out.write_all(compressed)?;
        self.unsynced = true;
        self.ledger.record(compressed, plain)
    }

    /// Writes what is pending (a last line without newline included) and the index.
    pub fn finish(mut self) -> io::Result<(W, Index)> {
        if !self.pending.is_empty() {
            let n = self.pending.len();
            self.emit(n)?;
        }
        if self.opts.layout == Layout::Sess {
            self.out.write_all(&self.ledger.index.encode())?;
        }
        self.out.flush()?;
        Ok((self.out, self.ledger.index))
    }

    /// Compresses the first `n` pending bytes into one frame.
    fn emit(&mut self, n: usize) -> io::Result<()> {
        let data = &self.pending[..n];
        self.zbuf.clear();
        self.zbuf.reserve(zstd::zstd_safe::compress_bound(n));
        self.compressor.compress_to_buffer(data, &mut self.zbuf)?;
        self.out.write_all(&self.zbuf)?;
        self.ledger.record(&self.zbuf, &self.pending[..n])?;
        self.unsynced = true;
        self.pending.drain(..n);
        self.opened = (!self.pending.is_empty()).then(Instant::now);
        Ok(())
    }
}

/// The frames written so far and where the next one starts.
#[derive(Default)]
struct Ledger {
    index: Index,
    offset: u64,
}

impl Ledger {
    /// Adds the index entry of a frame just written.
    fn record(&mut self, compressed: &[u8], plain: &[u8]) -> io::Result<()> {
        let lines = memchr::memchr_iter(b'\n', plain).count()
            + usize::from(plain.last().is_some_and(|&b| b != b'\n'));
        let first_line = plain.split(|&b| b == b'\n').next().unwrap_or_default();
        let first_seq = json::field(first_line, "seq")
            .or_else(|| json::field(first_line, "seq0"))
            .and_then(json::safe_integer);
        self.index.entries.push(Entry {
            offset: self.offset,
            compressed: to_u32(compressed.len())?,
            uncompressed: to_u32(plain.len())?,
            lines: to_u32(lines)?,
            crc32: crc32fast::hash(compressed),
            first_seq,
        });
        self.offset += compressed.len() as u64;
        Ok(())
    }
}

fn to_u32(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::other("a frame larger than 4 GiB"))
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.opened.is_none() && !buf.is_empty() {
            self.opened = Some(Instant::now());
        }
        self.pending.extend_from_slice(buf);
        // DSH's layout keeps the header line alone in the first frame.
        if self.opts.layout == Layout::Dsh
            && self.ledger.index.entries.is_empty()
            && let Some(k) = memchr::memchr(b'\n', &self.pending)
        {
            self.emit(k + 1)?;
        }
        // Cut frames of about frame_size bytes, each ending at a line end: at the last one
        // within the size, or after a line longer than the size.
        while self.pending.len() >= self.opts.frame_size {
            let size = self.opts.frame_size;
            let cut = memchr::memrchr(b'\n', &self.pending[..size])
                .or_else(|| memchr::memchr(b'\n', &self.pending[size..]).map(|k| k + size));
            match cut {
                Some(k) => self.emit(k + 1)?,
                None => break,
            }
        }
        Ok(buf.len())
    }

    /// Flushing a frame writer does not cut a frame: frames end where lines end, by size or
    /// window. It flushes the bytes already framed.
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_all(data: &[u8], opts: Options, chunk: usize) -> (Vec<u8>, Index) {
        let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
        for c in data.chunks(chunk) {
            w.write_all(c).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn frames_hold_whole_lines_and_decode_with_stock_zstd() {
        let data: Vec<u8> = (0..5000)
            .flat_map(|i| {
                format!("{{\"seq\":{i},\"x\":\"{}\"}}\n", "y".repeat(i % 50)).into_bytes()
            })
            .collect();
        let opts = Options {
            level: 3,
            frame_size: 4096,
            layout: Layout::Sess,
        };
        let (file, index) = write_all(&data, opts, 777);
        assert!(index.entries.len() > 10);
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), data);
        let mut at = 0;
        let mut lines = 0;
        for e in &index.entries {
            assert_eq!(e.offset, at);
            let frame = &file[at as usize..(at + u64::from(e.compressed)) as usize];
            assert_eq!(crc32fast::hash(frame), e.crc32);
            let plain = zstd::decode_all(frame).unwrap();
            assert_eq!(plain.len() as u32, e.uncompressed);
            assert!(plain.ends_with(b"\n"));
            let first: serde_json::Value =
                serde_json::from_slice(plain.split(|&b| b == b'\n').next().unwrap()).unwrap();
            assert_eq!(Some(first["seq"].as_i64().unwrap()), e.first_seq);
            lines += e.lines;
            at += u64::from(e.compressed);
        }
        assert_eq!(lines, 5000);
    }

    #[test]
    fn dsh_layout_puts_the_header_alone_and_writes_no_index() {
        let data = b"{\"type\":\"session\",\"version\":0}\n{\"seq\":0}\n{\"seq\":1}\n";
        let opts = Options {
            level: 3,
            frame_size: 1 << 20,
            layout: Layout::Dsh,
        };
        let (file, index) = write_all(data, opts, 5);
        assert_eq!(index.entries.len(), 2);
        assert_eq!(index.entries[0].lines, 1);
        assert_eq!(
            file.len() as u64,
            index.entries[1].offset + u64::from(index.entries[1].compressed)
        );
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), data);
    }
}
