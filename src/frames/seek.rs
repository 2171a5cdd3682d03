//! Random access to the frames of a clean file: from its index when it has one that
//! describes the file, else by walking the frame headers. `cat --tail` and `cat --seq` use
//! it to decode only the frames they need. Frames are decoded as streams, each verified by
//! its checksum before its lines go out, so memory stays at [`super::reader::HOLD_LIMIT`]
//! plus a line, whatever a frame decompresses to.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::index::Index;
use super::reader::{FrameReader, Glues, Health, Recovery};
use super::walk::{self, End, Kind};
use crate::io::LineReader;
use crate::io::read::read_some;

/// A data frame: where it is, and what the index knows of it (the seq of its first event;
/// its lines and decompressed bytes; how many frames before it its interned lines need).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    pub offset: u64,
    pub len: u64,
    pub first_seq: Option<i64>,
    pub size: Option<(u64, u64)>,
    pub needs: Option<u32>,
}

/// A compressed file whose frames are known without reading it through.
pub struct Seekable {
    file: File,
    name: String,
    frames: Vec<FrameRef>,
    /// What the readers of its frames found, shared: a frame may be decoded more than
    /// once, and what is said once for a file is said once.
    health: Arc<Mutex<Health>>,
    /// The last byte of each frame read whole so far (`Some(None)`: it has none), for
    /// where the lines of the frame after it begin.
    last_bytes: RefCell<Vec<Option<Option<u8>>>>,
    /// The lines and bytes of the frames before each, when the index says for all of them:
    /// summed once, not at each frame read in order.
    before: Vec<Option<(u64, u64)>>,
    /// Where the lines being read run on from one frame into the next (a file joined with
    /// `cat`, or cut by pzstd), for a reader to tell whether the two parts are lines glued
    /// ([`super::reader::Glues`]); each [`Seekable::lines`] begins them again.
    crossings: Arc<Glues>,
}

impl Seekable {
    /// `None` when `path` is not a compressed regular file, or not a clean one (torn,
    /// damaged): such a file is read from the start, where recovery applies.
    pub fn open(path: &Path) -> io::Result<Option<Seekable>> {
        let mut file = File::open(path)?;
        // A pipe or a device cannot seek, and reading its magic here would take those
        // bytes from the reader that reads it from the start.
        if !file.metadata()?.is_file() {
            return Ok(None);
        }
        let mut head = [0u8; 4];
        let n = crate::io::read::read_full(&mut file, &mut head)?;
        if !walk::is_zstd(&head[..n]) {
            return Ok(None);
        }
        Ok(data_frames(&mut file)?.map(|frames| Seekable {
            file,
            name: path.display().to_string(),
            last_bytes: RefCell::new(vec![None; frames.len()]),
            before: sizes_before(&frames),
            frames,
            health: Arc::default(),
            crossings: Arc::default(),
        }))
    }

    /// Where the lines of the last [`Seekable::lines`] run on into a later frame, by their
    /// offsets as that reader numbers them.
    pub fn crossings(&self) -> Arc<Glues> {
        Arc::clone(&self.crossings)
    }

    /// The file's name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn frames(&self) -> &[FrameRef] {
        &self.frames
    }

    /// Whether the frames' first seqs, where the index gives them, rise: a seek by seq
    /// holds only then (a log that starts again, two logs joined, is read through).
    pub fn seq_rises(&self) -> bool {
        let firsts: Vec<i64> = self.frames.iter().filter_map(|f| f.first_seq).collect();
        firsts.windows(2).all(|w| w[0] < w[1])
    }

    /// The first frame that can hold an event with seq `from`: the last one whose first seq
    /// is at or before it (seq only rises), or the first frame when the index does not say.
    pub fn first_frame_for_seq(&self, from: i64) -> usize {
        self.frames
            .iter()
            .rposition(|f| f.first_seq.is_some_and(|s| s <= from))
            .unwrap_or(0)
    }

    /// The first frame to read from, afresh, for every line of frame `k` to be rebuilt (the
    /// frames holding the definitions its interned lines refer to), when the index says.
    pub fn first_needed(&self, k: usize) -> Option<usize> {
        Some(k - (self.frames[k].needs? as usize).min(k))
    }

    /// The decompressed bytes of frame `k`, released only once its checksum has passed. Any
    /// damage is an error.
    pub fn frame(&self, k: usize) -> FrameReader<Span<'_>> {
        let frame = self.frames[k];
        // Read at its place, not from the file's: a line running on into the next frames
        // opens them while the first is still open.
        let span = Span {
            file: &self.file,
            at: frame.offset,
            end: frame.offset + frame.len,
        };
        FrameReader::new(span, &self.name, Recovery::Absolute)
            .at_offset(frame.offset)
            .sharing(Arc::clone(&self.health))
    }

    /// The lines that begin in frame `k`, whole: one that runs on past its end is read on
    /// into the frames after it, and the end of one begun in an earlier frame is not a line
    /// of this one. A file sess wrote with an index is cut at line ends (only its last frame
    /// may end without a newline); other frames (a file with no index, files put together
    /// with `cat`, `pzstd`'s output) may be cut anywhere, and whether the frame before ends
    /// a line is read from it. Lines are numbered (and their offsets counted) as in the
    /// whole file when the index says how many lines and bytes the frames before it hold;
    /// else from the frame's start.
    pub fn lines(&mut self, k: usize) -> io::Result<LineReader<impl Read + '_>> {
        let (lines, offset) = self.before[k].unwrap_or_default();
        let begun = self.frames[k].size.is_none() && !self.line_ends_before(k)?;
        self.crossings.clear();
        let mut bytes = Spanning {
            current: self.frame(k),
            file: self,
            frame: k,
            next: k + 1,
            last: None,
            frame_last: None,
            tail: false,
            held: Vec::new(),
            held_at: 0,
            given: 0,
        };
        let skipped = if begun { bytes.skip_past_newline()? } else { 0 };
        bytes.given = offset + skipped;
        Ok(LineReader::starting_at(bytes, lines, offset + skipped))
    }

    /// Whether the bytes before frame `k` end with a newline (or there are none): the last
    /// byte of the last frame before it that has any.
    fn line_ends_before(&self, k: usize) -> io::Result<bool> {
        for j in (0..k).rev() {
            if let Some(b) = self.last_byte(j)? {
                return Ok(b == b'\n');
            }
        }
        Ok(true)
    }

    /// The last byte of frame `j` (`None`: it is empty), decoded unless already known.
    fn last_byte(&self, j: usize) -> io::Result<Option<u8>> {
        if let Some(known) = self.last_bytes.borrow()[j] {
            return Ok(known);
        }
        let mut frame = self.frame(j);
        let mut buf = vec![0u8; 64 << 10];
        let mut last = None;
        loop {
            match read_some(&mut frame, &mut buf)? {
                0 => break,
                n => last = Some(buf[n - 1]),
            }
        }
        self.last_bytes.borrow_mut()[j] = Some(last);
        Ok(last)
    }
}

/// The lines and bytes of the frames before each frame, `None` from the first frame whose
/// size the index does not say.
fn sizes_before(frames: &[FrameRef]) -> Vec<Option<(u64, u64)>> {
    let mut sum = Some((0, 0));
    frames
        .iter()
        .map(|f| {
            let before = sum;
            sum = sum.zip(f.size).map(|((l, b), (fl, fb))| (l + fl, b + fb));
            before
        })
        .collect()
}

/// The bytes of a frame and, when its last line runs on past its end, of the frames after
/// it up to that line's newline.
struct Spanning<'a> {
    file: &'a Seekable,
    /// The frame whose lines these are, and the next one to read on into.
    frame: usize,
    next: usize,
    current: FrameReader<Span<'a>>,
    /// The last byte handed out, of this frame or an earlier one.
    last: Option<u8>,
    /// The last byte read of this frame, kept for the frame after it once the frame ends.
    frame_last: Option<u8>,
    /// Reading a later frame, for the end of the line: up to its first newline only.
    tail: bool,
    /// Bytes read past the end of a line begun in an earlier frame, to go out first.
    held: Vec<u8>,
    held_at: usize,
    /// The offset of the next byte to go out, as the line reader numbers it.
    given: u64,
}

impl Spanning<'_> {
    /// Drops the frame's bytes up to its first newline (the end of a line begun in an
    /// earlier frame), or all of them; how many.
    fn skip_past_newline(&mut self) -> io::Result<u64> {
        let mut buf = vec![0u8; 64 << 10];
        let mut skipped = 0;
        loop {
            let n = read_some(&mut self.current, &mut buf)?;
            if n == 0 {
                return Ok(skipped);
            }
            self.frame_last = Some(buf[n - 1]);
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                buf.truncate(n);
                buf.drain(..=i);
                self.held = buf;
                return Ok(skipped + i as u64 + 1);
            }
            skipped += n as u64;
        }
    }
}

impl Read for Spanning<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.held_at < self.held.len() {
            let n = out.len().min(self.held.len() - self.held_at);
            out[..n].copy_from_slice(&self.held[self.held_at..self.held_at + n]);
            self.held_at += n;
            self.last = out[..n].last().copied().or(self.last);
            self.given += n as u64;
            return Ok(n);
        }
        loop {
            if out.is_empty() || (self.tail && self.last == Some(b'\n')) {
                return Ok(0);
            }
            let mut n = self.current.read(out)?;
            if n > 0 {
                // The rest of a later frame is not this frame's.
                if self.tail
                    && let Some(i) = memchr::memchr(b'\n', &out[..n])
                {
                    n = i + 1;
                }
                self.last = Some(out[n - 1]);
                if !self.tail {
                    self.frame_last = self.last;
                }
                self.given += n as u64;
                return Ok(n);
            }
            if !self.tail {
                // Read whole (and verified): the frame after it need not decode it again.
                self.file.last_bytes.borrow_mut()[self.frame] = Some(self.frame_last);
            }
            if matches!(self.last, None | Some(b'\n')) || self.next >= self.file.frames.len() {
                return Ok(0);
            }
            self.current = self.file.frame(self.next);
            self.next += 1;
            self.tail = true;
            self.file.crossings.push(self.given);
        }
    }
}

/// The bytes `at..end` of a file, read at their place (one frame's).
pub struct Span<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl Read for Span<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let n = out.len().min(left);
        let n = self.file.read_at(&mut out[..n], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The data frames of `f`, or `None` when the file is not clean.
fn data_frames(f: &mut File) -> io::Result<Option<Vec<FrameRef>>> {
    if let Some(Ok((index, _))) = Index::read_from(f)? {
        return Ok(Some(
            index
                .entries
                .iter()
                .map(|e| FrameRef {
                    offset: e.offset,
                    len: u64::from(e.compressed),
                    first_seq: e.first_seq,
                    size: Some((u64::from(e.lines), u64::from(e.uncompressed))),
                    needs: e.needs,
                })
                .collect(),
        ));
    }
    // No index, or one that does not describe this file: the frame headers tell.
    let len = f.metadata()?.len();
    let (spans, end) = walk::walk(f, 0, len)?;
    if end != End::Clean {
        return Ok(None);
    }
    Ok(Some(
        spans
            .iter()
            .filter(|s| matches!(s.kind, Kind::Zstd { .. }))
            .map(|s| FrameRef {
                offset: s.offset,
                len: s.len,
                first_seq: None,
                size: None,
                needs: None,
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `text` as zstd frames (no checksums), cut at `cuts` (in order).
    fn cut_into_frames(text: &[u8], cuts: impl IntoIterator<Item = usize>) -> Vec<u8> {
        let mut file = Vec::new();
        let mut from = 0;
        for to in cuts.into_iter().chain([text.len()]) {
            file.extend(zstd::encode_all(&text[from..to], 1).unwrap());
            from = to;
        }
        file
    }

    /// A temporary file of `bytes`, opened to seek.
    fn seekable(bytes: &[u8]) -> (tempfile::TempDir, Seekable) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl.zst");
        std::fs::write(&path, bytes).unwrap();
        let file = Seekable::open(&path).unwrap().expect("a clean zstd file");
        (dir, file)
    }

    /// The lines of every frame of `file`, in order, each with its newline when it had one.
    fn lines_by_frame(file: &mut Seekable) -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for k in 0..file.frames().len() {
            let mut lines = file.lines(k).unwrap();
            while let Some(line) = lines.next_line().unwrap() {
                let mut bytes = line.bytes.to_vec();
                if line.terminated() {
                    bytes.push(b'\n');
                }
                all.push(bytes);
            }
        }
        all
    }

    /// The lines of `text` as a whole read splits them.
    fn lines_of(text: &[u8]) -> Vec<Vec<u8>> {
        text.split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// Read in order, frames cut mid-line are each decoded at most twice: for their own
    /// lines, and for the end of the line begun in the frame before. Where a frame's lines
    /// begin is known from the frame before, read whole just before, not decoded again.
    #[test]
    fn frames_read_in_order_are_decoded_at_most_twice() {
        let text: Vec<u8> = (0..2000)
            .flat_map(|k| format!("line {k} of a log\n").into_bytes())
            .collect();
        let (_dir, mut file) = seekable(&cut_into_frames(&text, (1000..text.len()).step_by(1000)));
        let n = file.frames().len();
        lines_by_frame(&mut file);
        let decoded = Health::lock(&file.health).frames;
        assert!(decoded <= 2 * n as u64, "{decoded} decodes of {n} frames");
    }

    proptest! {
        /// However a log is cut into frames (anywhere, empty frames too, as `cat` of
        /// compressed files or `pzstd` cut it), each line is read once and whole, from
        /// the frame it begins in.
        #[test]
        fn frames_cut_anywhere_give_each_line_once_and_whole(
            lines in proptest::collection::vec("[a-z0-9\\[\\]{}\":,]{0,40}", 1..30),
            final_newline in any::<bool>(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut text = lines.join("\n").into_bytes();
            if final_newline {
                text.push(b'\n');
            }
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(text.len() + 1)).collect();
            at.sort_unstable();
            let (_dir, mut file) = seekable(&cut_into_frames(&text, at));
            prop_assert_eq!(lines_by_frame(&mut file), lines_of(&text));
        }
    }
}
