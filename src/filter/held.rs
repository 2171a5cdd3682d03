//! The frames open runs hold, in memory up to a budget and past it in an unlinked
//! temporary file: a run that never gets its successor (a crash in mid-response) is held
//! to its end, and a log cut there would otherwise cost as much memory as the run is long.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;

use crate::error::Place;

/// The bytes of held frames kept in memory by default, for all open runs together.
pub const DEFAULT_BUDGET: usize = 16 << 20;

/// Writes to the file are gathered up to this many bytes: frames are often a line of a
/// hundred bytes, and a system call each would cost more than the rest of the filter.
const WRITE_BUFFER: usize = 1 << 20;

/// A frame a run holds.
pub struct Frame {
    /// The raw line, or the snapshot-delta row whose last event is the frame.
    pub bytes: Vec<u8>,
    /// Whether it ended with a newline.
    pub terminated: bool,
    /// For a row: where it was read, to name it if its last event cannot be rebuilt.
    pub row: Option<Place>,
}

/// Frames a run holds, in their order.
pub enum Held {
    /// One frame in memory.
    Memory(Frame),
    /// Frames one after another in the file, from byte `at`, `len` bytes in all, each a
    /// record: its length (8 bytes, little-endian), 1 if it ended with a newline (else 0),
    /// its bytes. A run holds one such span while no other run writes between its frames,
    /// so that a run of millions of frames costs memory for one.
    File { at: u64, len: u64 },
}

/// Holds frames: keeps their bytes in memory while those of all the frames held fit in
/// the budget, else writes them to its file. A row is always kept in memory: it is a
/// snapshot, one per run at most.
pub struct Holder {
    budget: usize,
    in_memory: usize,
    file: Option<File>,
    /// The file's length, `pending` included.
    len: u64,
    /// Bytes written but not yet in the file (they end at `len`).
    pending: Vec<u8>,
}

impl Holder {
    pub fn new(budget: usize) -> Holder {
        Holder {
            budget,
            in_memory: 0,
            file: None,
            len: 0,
            pending: Vec::new(),
        }
    }

    /// Holds a frame after the `frames` of its run.
    pub fn hold(
        &mut self,
        frames: &mut Vec<Held>,
        bytes: &[u8],
        terminated: bool,
        row: Option<Place>,
    ) -> io::Result<()> {
        if row.is_some() || self.fits(bytes.len()) {
            self.in_memory += bytes.len();
            frames.push(Held::Memory(Frame {
                bytes: bytes.to_vec(),
                terminated,
                row,
            }));
            return Ok(());
        }
        let at = self.len;
        self.append(bytes, terminated)?;
        let len = self.len - at;
        match frames.last_mut() {
            Some(Held::File { at: a, len: l }) if *a + *l == at => *l += len,
            _ => frames.push(Held::File { at, len }),
        }
        Ok(())
    }

    /// Holds `bytes` in place of the frames a run held (a snapshot supersedes the frames
    /// before it), in the buffer of the first when it stays in memory: runs of snapshots
    /// are the hot path.
    pub fn replace(
        &mut self,
        frames: &mut Vec<Held>,
        bytes: &[u8],
        terminated: bool,
        row: Option<Place>,
    ) -> io::Result<()> {
        for held in frames.drain(1.min(frames.len())..) {
            self.release(&held);
        }
        match frames.first_mut() {
            Some(Held::Memory(held))
                if row.is_some() || self.fits(bytes.len().saturating_sub(held.bytes.len())) =>
            {
                self.in_memory = self.in_memory - held.bytes.len() + bytes.len();
                held.bytes.clear();
                held.bytes.extend_from_slice(bytes);
                held.terminated = terminated;
                held.row = row;
                Ok(())
            }
            _ => {
                for held in frames.drain(..) {
                    self.release(&held);
                }
                self.hold(frames, bytes, terminated, row)
            }
        }
    }

    fn fits(&self, more: usize) -> bool {
        self.in_memory + more <= self.budget
    }

    /// Appends a record to the file.
    fn append(&mut self, bytes: &[u8], terminated: bool) -> io::Result<()> {
        if self.pending.len() + bytes.len() > WRITE_BUFFER {
            self.flush()?;
        }
        self.pending
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.pending.push(u8::from(terminated));
        self.pending.extend_from_slice(bytes);
        self.len += 9 + bytes.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self
                .file
                .insert(tempfile::tempfile().map_err(|e| scratch(e, "create"))?),
        };
        let at = self.len - self.pending.len() as u64;
        file.write_all_at(&self.pending, at)
            .map_err(|e| scratch(e, "write"))?;
        self.pending.clear();
        Ok(())
    }

    /// Frames are let go (their run ended, or is to be written).
    pub fn release(&mut self, held: &Held) {
        if let Held::Memory(frame) = held {
            self.in_memory -= frame.bytes.len();
        }
    }

    /// No frame is held any more: the file starts again empty. (Until then the bytes of
    /// frames let go stay in it: the file is at most what the input held since no run was
    /// open.)
    pub fn idle(&mut self) {
        if self.len > self.pending.len() as u64
            && let Some(f) = &self.file
            && f.set_len(0).is_err()
        {
            self.file = None;
        }
        self.pending.clear();
        self.len = 0;
    }

    /// The frames let go ([`Holder::release`]) as `held`, to be written.
    pub fn frames(&mut self, held: Held) -> io::Result<Frames> {
        match held {
            Held::Memory(frame) => Ok(Frames::One(Some(frame))),
            Held::File { at, len } => {
                self.flush()?;
                let file = self.file.as_ref().expect("frames on file have the file");
                let file = file.try_clone().map_err(|e| scratch(e, "read"))?;
                let span = Span {
                    file,
                    at,
                    end: at + len,
                };
                Ok(Frames::Records(BufReader::with_capacity(
                    WRITE_BUFFER,
                    span,
                )))
            }
        }
    }

    /// The bytes of held frames in memory now.
    pub fn in_memory(&self) -> usize {
        self.in_memory
    }
}

/// Frames read back, in order.
pub enum Frames {
    One(Option<Frame>),
    Records(BufReader<Span>),
}

impl Frames {
    pub fn next(&mut self) -> io::Result<Option<Frame>> {
        let records = match self {
            Frames::One(one) => return Ok(one.take()),
            Frames::Records(r) => r,
        };
        if records.buffer().is_empty() && records.get_ref().at == records.get_ref().end {
            return Ok(None);
        }
        let mut head = [0u8; 9];
        records
            .read_exact(&mut head)
            .map_err(|e| scratch(e, "read"))?;
        let len = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        records
            .read_exact(&mut bytes)
            .map_err(|e| scratch(e, "read"))?;
        Ok(Some(Frame {
            bytes,
            terminated: head[8] == 1,
            row: None,
        }))
    }
}

/// Part of the file, read from its start to its end.
pub struct Span {
    file: File,
    at: u64,
    end: u64,
}

impl Read for Span {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let most = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let n = buf.len().min(most);
        let n = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

fn scratch(e: io::Error, doing: &str) -> io::Error {
    crate::io::scratch_error(e, doing, "frames held until their run ends")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(h: &mut Holder, run: Vec<Held>) -> Vec<(Vec<u8>, bool)> {
        for held in &run {
            h.release(held);
        }
        let mut out = Vec::new();
        for held in run {
            let mut frames = h.frames(held).unwrap();
            while let Some(frame) = frames.next().unwrap() {
                out.push((frame.bytes, frame.terminated));
            }
        }
        out
    }

    #[test]
    fn frames_past_the_budget_read_back_in_order() {
        let frame = |k: usize| {
            (
                format!("{k} {}", "x".repeat(k % 4000)).into_bytes(),
                !k.is_multiple_of(7),
            )
        };
        let mut h = Holder::new(1000);
        // Two runs, their frames interleaved, over several write buffers.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for k in 0..3000 {
            let run = if k % 3 == 0 { &mut a } else { &mut b };
            let (bytes, terminated) = frame(k);
            h.hold(run, &bytes, terminated, None).unwrap();
            assert!(h.in_memory() <= 1000);
            assert!(h.pending.len() <= WRITE_BUFFER + 9 + bytes.len());
        }
        assert!(h.len > 3 * WRITE_BUFFER as u64);
        let want = |r: usize| {
            (0..3000)
                .filter(move |k| (k % 3 == 0) == (r == 0))
                .map(frame)
        };
        let got_b = read(&mut h, b);
        assert!(got_b == want(1).collect::<Vec<_>>());
        // The other run's frames are still in the file.
        assert!(read(&mut h, a) == want(0).collect::<Vec<_>>());
        assert_eq!(h.in_memory(), 0);
        // Nothing held: the file starts again.
        h.idle();
        let mut c = Vec::new();
        h.hold(&mut c, &[b'y'; 1500], true, None).unwrap();
        assert_eq!(h.len, 1509);
        // A snapshot replaces what the run held, in memory or in the file.
        h.replace(&mut c, b"small", false, None).unwrap();
        assert_eq!(h.in_memory(), 5);
        h.replace(&mut c, &[b'z'; 2000], true, None).unwrap();
        assert_eq!(h.in_memory(), 0);
        assert!(read(&mut h, c) == vec![(vec![b'z'; 2000], true)]);
    }
}
