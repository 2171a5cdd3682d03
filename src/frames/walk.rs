//! Finds frame boundaries in a zstd file without decompressing it, from the frame and block
//! headers alone (RFC 8878 §3.1). `verify`, `repair` and seeking use it.

use std::io::{self, Read, Seek, SeekFrom};

use super::index::SKIPPABLE_MAGIC;

pub const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const MAX_BLOCK: u64 = 128 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Zstd { checksum: bool },
    Skippable { magic: u32 },
}

/// One frame: where it is and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
    pub kind: Kind,
}

/// How a walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Every byte belongs to a frame.
    Clean,
    /// The file ends inside the frame starting here: a skippable frame (sess's index), or a
    /// data frame.
    Torn { offset: u64, skippable: bool },
    /// The bytes from here on are not a frame.
    Garbage { offset: u64, why: String },
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Clean => f.write_str("every byte belongs to a frame"),
            End::Torn { offset, .. } => {
                write!(f, "the file ends inside the frame at byte {offset}")
            }
            End::Garbage { offset, why } => {
                write!(f, "the bytes at {offset} are not a frame ({why})")
            }
        }
    }
}

/// Whether a zstd frame (or a zstd skippable frame) starts these bytes.
pub fn is_zstd(head: &[u8]) -> bool {
    head.len() >= 4 && {
        let magic = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        magic == ZSTD_MAGIC || is_skippable(magic)
    }
}

pub fn is_skippable(magic: u32) -> bool {
    magic & 0xFFFF_FFF0 == SKIPPABLE_MAGIC & 0xFFFF_FFF0
}

/// Walks every frame of `f` (of `len` bytes) from `start`, stopping at the first problem.
pub fn walk<F: Read + Seek>(f: &mut F, start: u64, len: u64) -> io::Result<(Vec<Span>, End)> {
    let mut spans = Vec::new();
    let mut at = start;
    while at < len {
        match frame_at(f, at, len)? {
            Ok(span) => {
                at += span.len;
                spans.push(span);
            }
            Err(end) => return Ok((spans, end)),
        }
    }
    Ok((spans, End::Clean))
}

/// The frame starting at `at`, or why there is none.
pub fn frame_at<F: Read + Seek>(f: &mut F, at: u64, len: u64) -> io::Result<Result<Span, End>> {
    let torn = |skippable| {
        Err(End::Torn {
            offset: at,
            skippable,
        })
    };
    let garbage = |why: &str| {
        Err(End::Garbage {
            offset: at,
            why: why.to_string(),
        })
    };
    f.seek(SeekFrom::Start(at))?;
    let mut head = [0u8; 8];
    let have = crate::io::read::read_full(f, &mut head)?;
    if have < 4 {
        // The start of a magic number is a frame cut short; anything else is not a frame.
        let prefix = &head[..have];
        let skippable = SKIPPABLE_MAGIC.to_le_bytes().starts_with(prefix);
        if skippable || ZSTD_MAGIC.to_le_bytes().starts_with(prefix) {
            return Ok(torn(skippable));
        }
        return Ok(garbage("too few bytes for a frame"));
    }
    let magic = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    if is_skippable(magic) {
        if have < 8 {
            return Ok(torn(true));
        }
        let size = u64::from(u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")));
        if at + 8 + size > len {
            return Ok(torn(true));
        }
        return Ok(Ok(Span {
            offset: at,
            len: 8 + size,
            kind: Kind::Skippable { magic },
        }));
    }
    if magic != ZSTD_MAGIC {
        return Ok(garbage("no zstd frame magic"));
    }
    if have < 5 {
        return Ok(torn(false));
    }
    let fhd = head[4];
    if fhd & 0x08 != 0 {
        return Ok(garbage("reserved bit set in the frame header"));
    }
    let single_segment = fhd & 0x20 != 0;
    let checksum = fhd & 0x04 != 0;
    let dict_len = [0u64, 1, 2, 4][usize::from(fhd & 0x03)];
    let fcs_len = match fhd >> 6 {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let header_len = 5 + u64::from(!single_segment) + dict_len + fcs_len;
    let mut pos = at + header_len;
    loop {
        let mut bh = [0u8; 3];
        f.seek(SeekFrom::Start(pos))?;
        if pos + 3 > len || crate::io::read::read_full(f, &mut bh)? < 3 {
            return Ok(torn(false));
        }
        let h = u32::from(bh[0]) | u32::from(bh[1]) << 8 | u32::from(bh[2]) << 16;
        let last = h & 1 == 1;
        let size = u64::from(h >> 3);
        let body = match (h >> 1) & 3 {
            0 => size,
            1 => 1,
            2 => size,
            _ => return Ok(garbage("reserved block type")),
        };
        if size > MAX_BLOCK {
            return Ok(garbage("block larger than 128 KiB"));
        }
        pos += 3 + body;
        if last {
            break;
        }
    }
    if checksum {
        pos += 4;
    }
    if pos > len {
        return Ok(torn(false));
    }
    Ok(Ok(Span {
        offset: at,
        len: pos - at,
        kind: Kind::Zstd { checksum },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn frames(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            let mut c = zstd::bulk::Compressor::new(3).unwrap();
            c.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))
                .unwrap();
            out.extend(c.compress(p).unwrap());
        }
        out
    }

    #[test]
    fn finds_frame_boundaries() {
        let big: Vec<u8> = (0..400_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let file = frames(&[b"hello\n", &big, b"x\n"]);
        let (spans, end) = walk(&mut Cursor::new(&file), 0, file.len() as u64).unwrap();
        assert_eq!(end, End::Clean);
        assert_eq!(spans.len(), 3);
        assert_eq!(spans.iter().map(|s| s.len).sum::<u64>(), file.len() as u64);
        for s in &spans {
            let one = &file[s.offset as usize..(s.offset + s.len) as usize];
            assert_eq!(
                zstd::zstd_safe::find_frame_compressed_size(one),
                Ok(s.len as usize)
            );
        }
    }

    #[test]
    fn reports_torn_and_garbage_tails() {
        let file = frames(&[b"a\n", b"b\n"]);
        let first = walk(&mut Cursor::new(&file), 0, file.len() as u64)
            .unwrap()
            .0[0]
            .len;
        for cut in first + 1..file.len() as u64 {
            let (spans, end) = walk(&mut Cursor::new(&file[..cut as usize]), 0, cut).unwrap();
            assert_eq!(spans.len(), 1, "cut {cut}");
            let torn = End::Torn {
                offset: first,
                skippable: false,
            };
            assert_eq!(end, torn, "cut {cut}");
        }
        // Cut inside a skippable frame (an index) after them, anywhere from its magic on.
        let mut indexed = file.clone();
        indexed.extend(SKIPPABLE_MAGIC.to_le_bytes());
        indexed.extend(16u32.to_le_bytes());
        indexed.extend([7u8; 16]);
        for cut in file.len() + 1..indexed.len() {
            let (spans, end) = walk(&mut Cursor::new(&indexed[..cut]), 0, cut as u64).unwrap();
            assert_eq!(spans.len(), 2, "cut {cut}");
            let torn = End::Torn {
                offset: file.len() as u64,
                skippable: true,
            };
            assert_eq!(end, torn, "cut {cut}");
        }
        let mut zeros = file.clone();
        zeros.extend([0u8; 64]);
        let (spans, end) = walk(&mut Cursor::new(&zeros), 0, zeros.len() as u64).unwrap();
        assert_eq!(spans.len(), 2);
        assert!(matches!(end, End::Garbage { offset, .. } if offset == file.len() as u64));
    }
}
