//! The frame index: one record per zstd frame, kept in a zstd skippable frame at the end of
//! the file, so stock zstd skips it and sess can check and seek a file without
//! decompressing it. Encoder and decoder side by side.
//!
//! ```text
//! skippable frame: magic 0x184D2A5E (LE u32) | payload length (LE u32) | payload
//! payload:         "SESSIDX1" | version u32 = 2 | count u32 | count x entry | trailer
//! entry (36 B):    offset u64 | compressed u32 | uncompressed u32 | lines u32 | crc32 u32 | first_seq i64 | needs u32
//! trailer (16 B):  crc32 of the payload before it u32 | payload length u32 | "SESSIDX1"
//! ```
//!
//! All integers are little-endian. `first_seq` is `i64::MIN` when unknown, `needs`
//! `u32::MAX`. The trailer repeats the magic at the very end of the file so a reader finds
//! the index from there. Version 1 (sess before `needs`) has 32-byte entries without it,
//! and is still read.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};

/// The skippable-frame magic sess uses for its index (zstd reserves 0x184D2A50..=5F).
pub const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
pub const INDEX_MAGIC: &[u8; 8] = b"SESSIDX1";
const VERSION: u32 = 2;
const ENTRY_LEN: usize = 36;
/// Version 1 entries lack `needs`.
const V1_ENTRY_LEN: usize = 32;
const UNKNOWN_NEEDS: u32 = u32::MAX;
const HEAD_LEN: usize = 16;
const TRAILER_LEN: usize = 16;

/// What the index knows of one zstd frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the frame in the file.
    pub offset: u64,
    pub compressed: u32,
    pub uncompressed: u32,
    /// Lines (physical: a packed row is one line).
    pub lines: u32,
    /// crc32 of the frame's compressed bytes.
    pub crc32: u32,
    /// The seq of the frame's first event, when it has one.
    pub first_seq: Option<i64>,
    /// How many frames before this one a reader must begin at for every interned line of
    /// it to be rebuilt (the frames holding the definitions its lines refer to, and those
    /// their own definitions need in turn); 0 when it needs none. `None` when the writer
    /// did not say (an index of version 1, or frames `repair` wrote after a loss).
    pub needs: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub entries: Vec<Entry>,
}

/// Why an index could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexError(pub String);

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for IndexError {}

impl Index {
    /// The bytes of the skippable frame that indexes `frames` frames.
    pub fn encoded_len(frames: usize) -> u64 {
        (8 + HEAD_LEN + frames * ENTRY_LEN + TRAILER_LEN) as u64
    }

    /// The whole skippable frame holding this index.
    pub fn encode(&self) -> Vec<u8> {
        let payload_len = HEAD_LEN + self.entries.len() * ENTRY_LEN + TRAILER_LEN;
        let mut out = Vec::with_capacity(8 + payload_len);
        out.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
        out.extend_from_slice(&(payload_len as u32).to_le_bytes());
        let payload_start = out.len();
        out.extend_from_slice(INDEX_MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&e.offset.to_le_bytes());
            out.extend_from_slice(&e.compressed.to_le_bytes());
            out.extend_from_slice(&e.uncompressed.to_le_bytes());
            out.extend_from_slice(&e.lines.to_le_bytes());
            out.extend_from_slice(&e.crc32.to_le_bytes());
            out.extend_from_slice(&e.first_seq.unwrap_or(i64::MIN).to_le_bytes());
            out.extend_from_slice(&e.needs.unwrap_or(UNKNOWN_NEEDS).to_le_bytes());
        }
        let crc = crc32fast::hash(&out[payload_start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(payload_len as u32).to_le_bytes());
        out.extend_from_slice(INDEX_MAGIC);
        out
    }

    /// Decodes the payload of an index frame (after its 8-byte skippable header), checking
    /// its crc and that it describes the bytes before it: its entries tile the file from
    /// byte 0 to `index_offset`, one frame after the other, as sess writes them. An index
    /// that does not (a file made by concatenating sess files keeps only the last one's
    /// index, whose offsets start at that file's start) is not this file's.
    pub fn decode(payload: &[u8], index_offset: u64) -> Result<Index, IndexError> {
        let bad = |why: &str| Err(IndexError(why.to_string()));
        if payload.len() < HEAD_LEN + TRAILER_LEN || &payload[..8] != INDEX_MAGIC {
            return bad("not a sess index");
        }
        let body = payload.len() - TRAILER_LEN;
        let crc = u32_at(payload, body);
        if crc32fast::hash(&payload[..body]) != crc {
            return bad("index checksum mismatch");
        }
        let entry_len = match u32_at(payload, 8) {
            VERSION => ENTRY_LEN,
            1 => V1_ENTRY_LEN,
            _ => return bad("unknown index version"),
        };
        let count = u32_at(payload, 12) as usize;
        if HEAD_LEN + count.saturating_mul(entry_len) != body {
            return bad("index length does not match its entry count");
        }
        let mut entries = Vec::with_capacity(count);
        let mut next = 0u64;
        for k in 0..count {
            let at = HEAD_LEN + k * entry_len;
            let seq = i64::from_le_bytes(payload[at + 24..at + 32].try_into().expect("8 bytes"));
            let needs = match entry_len {
                ENTRY_LEN => Some(u32_at(payload, at + 32)).filter(|&n| n != UNKNOWN_NEEDS),
                _ => None,
            };
            if needs.is_some_and(|n| n as usize > k) {
                return bad("index entry needs frames before the first");
            }
            let e = Entry {
                offset: u64::from_le_bytes(payload[at..at + 8].try_into().expect("8 bytes")),
                compressed: u32_at(payload, at + 8),
                uncompressed: u32_at(payload, at + 12),
                lines: u32_at(payload, at + 16),
                crc32: u32_at(payload, at + 20),
                first_seq: (seq != i64::MIN).then_some(seq),
                needs,
            };
            if e.offset != next {
                return bad("index entries do not follow one another from the start of the file");
            }
            next = match e.offset.checked_add(u64::from(e.compressed)) {
                Some(end) if end <= index_offset => end,
                _ => return bad("index entry points outside the frames before it"),
            };
            entries.push(e);
        }
        if next != index_offset {
            return bad("the index does not describe the bytes before it (a concatenated file?)");
        }
        Ok(Index { entries })
    }

    /// Reads the index at the end of a file. `Ok(None)`: the file has no index (DSH's
    /// layout, a plain zstd file, or a write that stopped before the index).
    pub fn read_from<F: Read + Seek>(
        f: &mut F,
    ) -> io::Result<Option<Result<(Index, u64), IndexError>>> {
        let len = f.seek(SeekFrom::End(0))?;
        if len < (8 + HEAD_LEN + TRAILER_LEN) as u64 {
            return Ok(None);
        }
        let mut tail = [0u8; TRAILER_LEN];
        f.seek(SeekFrom::End(-(TRAILER_LEN as i64)))?;
        f.read_exact(&mut tail)?;
        if &tail[8..] != INDEX_MAGIC {
            return Ok(None);
        }
        let payload_len = u64::from(u32_at(&tail, 4));
        let Some(start) = len.checked_sub(8 + payload_len) else {
            return Ok(Some(Err(IndexError(
                "index length points past the start of the file".into(),
            ))));
        };
        if payload_len > 1 << 31 {
            return Ok(Some(Err(IndexError("index length is implausible".into()))));
        }
        f.seek(SeekFrom::Start(start))?;
        let mut frame = vec![0u8; 8 + payload_len as usize];
        f.read_exact(&mut frame)?;
        if u32_at(&frame, 0) != SKIPPABLE_MAGIC || u64::from(u32_at(&frame, 4)) != payload_len {
            return Ok(Some(Err(IndexError(
                "index frame header does not match its trailer".into(),
            ))));
        }
        Ok(Some(Index::decode(&frame[8..], start).map(|i| (i, start))))
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Index {
        Index {
            entries: vec![
                Entry {
                    offset: 0,
                    compressed: 100,
                    uncompressed: 300,
                    lines: 1,
                    crc32: 7,
                    first_seq: None,
                    needs: Some(0),
                },
                Entry {
                    offset: 100,
                    compressed: 50,
                    uncompressed: 200,
                    lines: 4,
                    crc32: 9,
                    first_seq: Some(0),
                    needs: Some(1),
                },
            ],
        }
    }

    #[test]
    fn round_trips_from_the_end_of_a_file() {
        let mut file = vec![0u8; 150];
        file.extend(sample().encode());
        let got = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(got, (sample(), 150));
    }

    /// `index` as sess wrote it before `needs` (version 1, 32-byte entries).
    fn version_1(index: &Index) -> Vec<u8> {
        let mut payload = Vec::new();
        payload.extend_from_slice(INDEX_MAGIC);
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.extend_from_slice(&(index.entries.len() as u32).to_le_bytes());
        for e in &index.entries {
            payload.extend_from_slice(&e.offset.to_le_bytes());
            for n in [e.compressed, e.uncompressed, e.lines, e.crc32] {
                payload.extend_from_slice(&n.to_le_bytes());
            }
            payload.extend_from_slice(&e.first_seq.unwrap_or(i64::MIN).to_le_bytes());
        }
        let len = (payload.len() + TRAILER_LEN) as u32;
        let crc = crc32fast::hash(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        payload.extend_from_slice(&len.to_le_bytes());
        payload.extend_from_slice(INDEX_MAGIC);
        let mut out = SKIPPABLE_MAGIC.to_le_bytes().to_vec();
        out.extend_from_slice(&len.to_le_bytes());
        out.extend(payload);
        out
    }

    #[test]
    fn an_index_of_version_1_reads_without_what_frames_need() {
        let mut file = vec![0u8; 150];
        file.extend(version_1(&sample()));
        let (got, at) = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap()
            .unwrap();
        let mut want = sample();
        for e in &mut want.entries {
            e.needs = None;
        }
        assert_eq!((got, at), (want, 150));
    }

    #[test]
    fn what_a_frame_needs_is_unknown_or_within_the_frames_before_it() {
        let mut unknown = sample();
        unknown.entries[1].needs = None;
        let mut file = vec![0u8; 150];
        file.extend(unknown.encode());
        let got = Index::read_from(&mut std::io::Cursor::new(&file)).unwrap();
        assert_eq!(got.unwrap().unwrap().0, unknown);
        // The second frame can need the first, not two frames before it.
        let mut past = sample();
        past.entries[1].needs = Some(2);
        let mut file = vec![0u8; 150];
        file.extend(past.encode());
        let got = Index::read_from(&mut std::io::Cursor::new(&file)).unwrap();
        assert!(got.unwrap().unwrap_err().0.contains("before the first"));
    }

    #[test]
    fn every_bit_flip_in_the_index_is_detected() {
        let mut file = vec![0u8; 150];
        let idx = sample().encode();
        file.extend(&idx);
        for byte in 150..file.len() {
            for bit in 0..8 {
                let mut f = file.clone();
                f[byte] ^= 1 << bit;
                let r = Index::read_from(&mut std::io::Cursor::new(&f)).unwrap();
                assert!(
                    !matches!(r, Some(Ok((ref i, _))) if *i != sample()),
                    "flip at {byte}:{bit} gave a wrong index"
                );
            }
        }
    }

    #[test]
    fn rejects_an_index_that_does_not_tile_the_file() {
        // Two files concatenated: the trailing index is the second one's.
        let mut file = vec![0u8; 150];
        file.extend(vec![0u8; 150]);
        file.extend(sample().encode());
        let r = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap();
        assert!(r.unwrap_err().0.contains("concatenated"));
        // A gap between entries.
        let mut gappy = sample();
        gappy.entries[1].offset = 101;
        let mut file = vec![0u8; 151];
        file.extend(gappy.encode());
        let r = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap();
        assert!(r.is_err());
        // An entry whose end overflows u64.
        let mut huge = sample();
        huge.entries[1].offset = u64::MAX - 10;
        let mut file = vec![0u8; 150];
        file.extend(huge.encode());
        let r = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap();
        assert!(r.is_err());
    }

    #[test]
    fn rejects_entries_past_the_index() {
        let mut file = vec![0u8; 120];
        file.extend(sample().encode());
        let r = Index::read_from(&mut std::io::Cursor::new(&file))
            .unwrap()
            .unwrap();
        assert!(r.is_err());
    }
}
