//! Random access to the frames of a clean file: from its index when it has a good one, else
//! by walking the frame headers. `cat --tail` and `cat --seq` use it to decode only the
//! frames they need.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use super::index::Index;
use super::walk::{self, End, Kind};

/// A data frame: where it is, and the seq of its first event when the index knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    pub offset: u64,
    pub len: u64,
    pub first_seq: Option<i64>,
}

/// The data frames of `f`, or `None` when the file is not clean (torn, damaged, or with a
/// damaged index): such a file is read from the start, where recovery applies.
pub fn data_frames(f: &mut File) -> io::Result<Option<Vec<FrameRef>>> {
    let len = f.metadata()?.len();
    match Index::read_from(f)? {
        Some(Ok((index, _))) => Ok(Some(
            index
                .entries
                .iter()
                .map(|e| FrameRef {
                    offset: e.offset,
                    len: u64::from(e.compressed),
                    first_seq: e.first_seq,
                })
                .collect(),
        )),
        Some(Err(_)) => Ok(None),
        None => {
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
                    })
                    .collect(),
            ))
        }
    }
}

/// Decodes one frame, checking its content checksum.
pub fn decode(f: &mut File, frame: &FrameRef) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; usize::try_from(frame.len).map_err(io::Error::other)?];
    f.seek(SeekFrom::Start(frame.offset))?;
    f.read_exact(&mut bytes)?;
    zstd::decode_all(&bytes[..]).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the frame at byte {} does not decode: {e}", frame.offset),
        )
    })
}
