//! Random access to the frames of a clean file: from its index when it has one that
//! describes the file, else by walking the frame headers. `cat --tail` and `cat --seq` use
//! it to decode only the frames they need. Frames are decoded as streams, each verified by
//! its checksum before its lines go out, so memory stays at [`super::reader::HOLD_LIMIT`]
//! plus a line, whatever a frame decompresses to.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::index::Index;
use super::reader::{FrameReader, Recovery};
use super::walk::{self, End, Kind};
use crate::io::LineReader;

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
            frames,
        }))
    }

    /// The file's name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn frames(&self) -> &[FrameRef] {
        &self.frames
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
    pub fn frame(&mut self, k: usize) -> io::Result<impl Read + '_> {
        let frame = self.frames[k];
        self.file.seek(SeekFrom::Start(frame.offset))?;
        let bytes = (&mut self.file).take(frame.len);
        Ok(FrameReader::new(bytes, &self.name, Recovery::Absolute).at_offset(frame.offset))
    }

    /// The lines of frame `k`, numbered (and their offsets counted) as in the whole file
    /// when the index says how many lines and bytes the frames before it hold; else from
    /// the frame's start.
    pub fn lines(&mut self, k: usize) -> io::Result<LineReader<impl Read + '_>> {
        let before = self.frames[..k]
            .iter()
            .try_fold((0, 0), |(l, b), f| f.size.map(|(fl, fb)| (l + fl, b + fb)));
        let (lines, offset) = before.unwrap_or_default();
        Ok(LineReader::starting_at(self.frame(k)?, lines, offset))
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
