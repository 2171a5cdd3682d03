//! The frame reader and the index parser on arbitrary bytes: no panic in any recovery mode,
//! every failure an error, and an index that parses lies inside the file and names no frame
//! before the first as one a frame needs.
#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use sess::frames::{FrameReader, Index, Recovery};

fuzz_target!(|data: &[u8]| {
    for mode in [Recovery::TolerateTail, Recovery::Absolute, Recovery::PointInTime, Recovery::SkipCorrupt] {
        let mut r = FrameReader::new(data, "fuzz", mode);
        let mut out = Vec::new();
        let _ = r.read_to_end(&mut out);
    }
    if let Ok(Some(Ok((index, at)))) = Index::read_from(&mut std::io::Cursor::new(data)) {
        assert!(at <= data.len() as u64);
        for (k, e) in index.entries.iter().enumerate() {
            assert!(e.offset + u64::from(e.compressed) <= at);
            assert!(e.needs.is_none_or(|n| n as usize <= k));
        }
    }
    if data.len() > 8 {
        let _ = Index::decode(&data[8..], data.len() as u64);
    }
});
