//! Checks a compressed file against its index without decompressing it: the frames found by
//! walking their headers must be the ones the index lists, each with the crc32 it records.

use std::io::{self, Read, Seek, SeekFrom};

use super::index::Index;
use super::walk::{self, End, Kind};

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audit {
    /// The file has no index (DSH's layout, a stock zstd file, a write that stopped early).
    NoIndex,
    /// The index was read; each string is one problem, empty when the file matches it.
    Checked {
        frames: usize,
        problems: Vec<String>,
    },
}

/// Checks the frames of `f` against its index. The crc32 of each frame is computed as a
/// stream, so memory stays small whatever the frames hold.
pub fn audit<F: Read + Seek>(f: &mut F) -> io::Result<Audit> {
    let (index, index_at) = match Index::read_from(f)? {
        None => return Ok(Audit::NoIndex),
        Some(Err(e)) => {
            return Ok(Audit::Checked {
                frames: 0,
                problems: vec![format!("frame index: {e}")],
            });
        }
        Some(Ok(found)) => found,
    };
    let mut problems = Vec::new();
    let (spans, end) = walk::walk(f, 0, index_at)?;
    if end != End::Clean {
        problems.push(format!(
            "the frames before the index do not end cleanly: {end}"
        ));
    }
    let data: Vec<_> = spans
        .iter()
        .filter(|s| matches!(s.kind, Kind::Zstd { .. }))
        .collect();
    if data.len() != index.entries.len() {
        problems.push(format!(
            "the index lists {} frames, the file holds {}",
            index.entries.len(),
            data.len()
        ));
    }
    for (k, (e, s)) in index.entries.iter().zip(&data).enumerate() {
        let end = e.offset + u64::from(e.compressed);
        if (e.offset, u64::from(e.compressed)) != (s.offset, s.len) {
            problems.push(format!(
                "frame {k}: the index says bytes {}..{end}, the frame is at {}..{}",
                e.offset,
                s.offset,
                s.offset + s.len
            ));
            continue;
        }
        let crc = crc32_of(f, e.offset, s.len)?;
        if crc != e.crc32 {
            problems.push(format!(
                "frame {k} at byte {}: crc32 {crc:08x} does not match the index ({:08x})",
                e.offset, e.crc32
            ));
        }
    }
    Ok(Audit::Checked {
        frames: index.entries.len(),
        problems,
    })
}

/// The crc32 of the `len` bytes of `f` at `at`.
pub fn crc32_of<F: Read + Seek>(f: &mut F, at: u64, len: u64) -> io::Result<u32> {
    f.seek(SeekFrom::Start(at))?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        f.read_exact(&mut buf[..want])?;
        crc.update(&buf[..want]);
        left -= want as u64;
    }
    Ok(crc.finalize())
}
