//! The frames open runs hold, in memory up to a budget and past it in an unlinked
//! temporary file: a run that never gets its successor (a crash in mid-response) is held
//! to its end, and a log cut there would otherwise cost as much memory as the run is long.
//!
//! Once a run has frames in the file, its later frames go there too, each record linked to
//! the next of its run: a run costs one entry in memory however its frames interleave with
//! other runs'. Snapshots (and packed rows, which hold snapshots) stay in memory: each
//! supersedes what its run held, so a run holds one, and in the file each would leave the
//! one before as dead bytes.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::error::Place;

/// The bytes of held frames kept in memory by default, for all open runs together.
pub const DEFAULT_BUDGET: usize = 16 << 20;

/// Writes to the file are gathered up to this many bytes, and records read back this many
/// at a time: frames are often a line of a hundred bytes, and a system call each would cost
/// more than the rest of the filter.
const BUFFER: usize = 1 << 20;

/// What a frame in memory costs beyond its bytes, as the budget counts it: its entry and
/// its allocation. (A million frames of ten bytes are not 10 MB.)
const ENTRY: usize = 64;

/// A record's head: its length (8 bytes), 1 if its frame ended with a newline (else 0),
/// and where the next record of its run begins (8 bytes; [`NONE`] for the last); then its
/// bytes. Little-endian.
const HEAD: usize = 17;
const NONE: u64 = u64::MAX;

/// A frame a run holds.
pub struct Frame {
    /// The raw line, or the snapshot-delta row whose last event is the frame.
    pub bytes: Vec<u8>,
    /// Whether it ended with a newline.
    pub terminated: bool,
    /// For a row: where it was read, to name it if its last event cannot be rebuilt.
    pub row: Option<Box<Place>>,
}

/// Frames a run holds, in their order.
pub enum Held {
    /// One frame in memory, counted in the budget.
    Memory(Frame),
    /// A snapshot (or a packed row) in memory, not counted: a run holds one at most.
    Snapshot(Frame),
    /// The run's frames in the file: the record of the first and of the last, each linked
    /// to the next. The last of a run's entries (unless no file could be made).
    File { first: u64, last: u64 },
}

/// Holds frames: keeps their bytes in memory while those of all the frames held fit in
/// the budget, else writes them to its file.
pub struct Holder {
    budget: usize,
    in_memory: usize,
    file: Option<File>,
    /// How the file is made (a test makes it fail).
    make: fn() -> io::Result<File>,
    /// No file could be made: everything is held in memory (the warning said so).
    no_file: bool,
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
            make: tempfile::tempfile,
            no_file: false,
            len: 0,
            pending: Vec::new(),
        }
    }

    /// Holds a frame after the `frames` of its run (a packed row always in memory, as a
    /// snapshot).
    pub fn hold(
        &mut self,
        frames: &mut Vec<Held>,
        bytes: &[u8],
        terminated: bool,
        row: Option<Place>,
    ) -> io::Result<()> {
        if let Some(row) = row {
            let frame = Frame {
                bytes: bytes.to_vec(),
                terminated,
                row: Some(Box::new(row)),
            };
            frames.push(Held::Snapshot(frame));
            return Ok(());
        }
        let on_file = matches!(frames.last(), Some(Held::File { .. }));
        if !self.no_file && (on_file || !self.fits(bytes.len())) {
            let at = self.append(bytes, terminated)?;
            match frames.last_mut() {
                Some(Held::File { last, .. }) => {
                    self.link(*last, at)?;
                    *last = at;
                }
                _ => frames.push(Held::File {
                    first: at,
                    last: at,
                }),
            }
            return Ok(());
        }
        self.in_memory += bytes.len() + ENTRY;
        frames.push(Held::Memory(Frame {
            bytes: bytes.to_vec(),
            terminated,
            row: None,
        }));
        Ok(())
    }

    /// Holds a snapshot in place of the frames a run held, in memory (in the buffer of the
    /// frame it replaces when there is one: runs of snapshots are the hot path).
    pub fn replace(
        &mut self,
        frames: &mut Vec<Held>,
        bytes: &[u8],
        terminated: bool,
        row: Option<Place>,
    ) {
        let mut buf = Vec::new();
        for held in frames.drain(..) {
            self.release(&held);
            if let Held::Memory(f) | Held::Snapshot(f) = held
                && buf.capacity() == 0
            {
                buf = f.bytes;
            }
        }
        buf.clear();
        buf.extend_from_slice(bytes);
        frames.push(Held::Snapshot(Frame {
            bytes: buf,
            terminated,
            row: row.map(Box::new),
        }));
    }

    fn fits(&self, bytes: usize) -> bool {
        self.in_memory + bytes + ENTRY <= self.budget
    }

    /// Appends a record (linked to none yet) and returns where it begins. When no file can
    /// be made, says so once and holds everything in memory from then on.
    fn append(&mut self, bytes: &[u8], terminated: bool) -> io::Result<u64> {
        if self.pending.len() + HEAD + bytes.len() > BUFFER {
            self.flush()?;
        }
        let at = self.len;
        self.pending
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.pending.push(u8::from(terminated));
        self.pending.extend_from_slice(&NONE.to_le_bytes());
        self.pending.extend_from_slice(bytes);
        self.len += (HEAD + bytes.len()) as u64;
        Ok(at)
    }

    /// Links the record at `from` to the one at `to`.
    fn link(&mut self, from: u64, to: u64) -> io::Result<()> {
        let field = from + 9;
        let bytes = to.to_le_bytes();
        match field.checked_sub(self.flushed()) {
            Some(k) => {
                let k = k as usize;
                self.pending[k..k + 8].copy_from_slice(&bytes);
                Ok(())
            }
            None => {
                let file = self.file.as_ref().expect("flushed bytes are in the file");
                file.write_all_at(&bytes, field)
                    .map_err(|e| scratch(e, "write"))
            }
        }
    }

    /// The bytes in the file itself.
    fn flushed(&self) -> u64 {
        self.len - self.pending.len() as u64
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let at = self.flushed();
        if self.file.is_none() {
            match (self.make)() {
                Ok(f) => self.file = Some(f),
                // The frames held so far are in `pending`: they stay there, and the rest
                // is held in memory.
                Err(e) if at == 0 => {
                    let e = scratch(e, "create");
                    crate::io::tell!("sess: warning: {e}; they stay in memory");
                    self.no_file = true;
                    return Ok(());
                }
                Err(e) => return Err(scratch(e, "create")),
            }
        }
        let file = self.file.as_ref().expect("just made");
        file.write_all_at(&self.pending, at)
            .map_err(|e| scratch(e, "write"))?;
        self.pending.clear();
        Ok(())
    }

    /// Frames are let go (their run ended, or is to be written).
    pub fn release(&mut self, held: &Held) {
        if let Held::Memory(frame) = held {
            self.in_memory -= frame.bytes.len() + ENTRY;
        }
    }

    /// No frame is held any more: the file starts again empty. (Until then the bytes of
    /// frames let go stay in it: the file is at most what the input held since no run was
    /// open.)
    pub fn idle(&mut self) {
        if self.flushed() > 0
            && let Some(f) = &self.file
            && f.set_len(0).is_err()
        {
            self.file = None;
        }
        self.pending.clear();
        self.len = 0;
    }

    /// Reads `buf.len()` bytes from `at`, in the file or still pending.
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        let split = self.flushed().saturating_sub(at).min(buf.len() as u64) as usize;
        let (in_file, pending) = buf.split_at_mut(split);
        if !in_file.is_empty() {
            let file = self.file.as_ref().expect("flushed bytes are in the file");
            file.read_exact_at(in_file, at)
                .map_err(|e| scratch(e, "read"))?;
        }
        if !pending.is_empty() {
            let from = (at + split as u64 - self.flushed()) as usize;
            pending.copy_from_slice(&self.pending[from..from + pending.len()]);
        }
        Ok(())
    }

    /// The frames let go ([`Holder::release`]) as `held`, to be read with
    /// [`Frames::next`].
    pub fn frames(held: Held) -> Frames {
        match held {
            Held::Memory(frame) | Held::Snapshot(frame) => Frames::One(Some(frame)),
            Held::File { first, .. } => Frames::Records {
                next: first,
                window: Vec::new(),
                window_at: 0,
            },
        }
    }

    /// The bytes of held frames in memory now, as the budget counts them (snapshots
    /// aside).
    pub fn in_memory(&self) -> usize {
        self.in_memory
    }
}

/// Frames read back, in order.
pub enum Frames {
    One(Option<Frame>),
    /// The records of a run, from `next` on; `window` holds the file's bytes from
    /// `window_at`, read ahead.
    Records {
        next: u64,
        window: Vec<u8>,
        window_at: u64,
    },
}

impl Frames {
    pub fn next(&mut self, holder: &Holder) -> io::Result<Option<Frame>> {
        let (next, window, window_at) = match self {
            Frames::One(one) => return Ok(one.take()),
            Frames::Records {
                next,
                window,
                window_at,
            } => (next, window, window_at),
        };
        if *next == NONE {
            return Ok(None);
        }
        let at = *next;
        let mut head = [0u8; HEAD];
        read(holder, window, window_at, at, &mut head)?;
        let len = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        read(holder, window, window_at, at + HEAD as u64, &mut bytes)?;
        *next = u64::from_le_bytes(head[9..].try_into().expect("8 bytes"));
        Ok(Some(Frame {
            bytes,
            terminated: head[8] == 1,
            row: None,
        }))
    }
}

/// Reads `out.len()` bytes at `at` through the read-ahead `window` (refilled from `at`
/// when it does not hold them; a read longer than it goes straight to the file).
fn read(
    holder: &Holder,
    window: &mut Vec<u8>,
    window_at: &mut u64,
    at: u64,
    out: &mut [u8],
) -> io::Result<()> {
    let end = at + out.len() as u64;
    if at < *window_at || end > *window_at + window.len() as u64 {
        if out.len() > BUFFER {
            return holder.read_at(out, at);
        }
        let n = (holder.len - at).min(BUFFER as u64) as usize;
        window.resize(n, 0);
        holder.read_at(window, at)?;
        *window_at = at;
    }
    let from = (at - *window_at) as usize;
    out.copy_from_slice(&window[from..from + out.len()]);
    Ok(())
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
            let mut frames = Holder::frames(held);
            while let Some(frame) = frames.next(h).unwrap() {
                out.push((frame.bytes, frame.terminated));
            }
        }
        out
    }

    #[test]
    fn frames_past_the_budget_read_back_in_order() {
        let frame = |k: usize| {
            let len = if k.is_multiple_of(500) {
                3 * BUFFER
            } else {
                k % 4000
            };
            (
                format!("{k} {}", "x".repeat(len)).into_bytes(),
                !k.is_multiple_of(7),
            )
        };
        let mut h = Holder::new(1000);
        // Two runs, their frames interleaved, over several write buffers, with frames
        // longer than a buffer.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for k in 0..3000 {
            let run = if k % 3 == 0 { &mut a } else { &mut b };
            let (bytes, terminated) = frame(k);
            h.hold(run, &bytes, terminated, None).unwrap();
            assert!(h.in_memory() <= 1000);
            assert!(h.pending.len() <= BUFFER + HEAD + 3 * BUFFER + 16, "{k}");
            // A run's frames in the file cost one entry, however they interleave.
            let file = run.iter().position(|h| matches!(h, Held::File { .. }));
            assert!(file.is_none_or(|p| p + 1 == run.len()), "{k}");
        }
        assert!(h.len > 3 * BUFFER as u64);
        let want = |r: usize| {
            (0..3000)
                .filter(move |k| (k % 3 == 0) == (r == 0))
                .map(frame)
        };
        assert!(read(&mut h, b) == want(1).collect::<Vec<_>>());
        // The other run's frames are still in the file.
        assert!(read(&mut h, a) == want(0).collect::<Vec<_>>());
        assert_eq!(h.in_memory(), 0);
        // Nothing held: the file starts again.
        h.idle();
        let mut c = Vec::new();
        h.hold(&mut c, &[b'y'; 1500], true, None).unwrap();
        assert_eq!(h.len, 1500 + HEAD as u64);
        h.hold(&mut c, b"small", false, None).unwrap();
        assert_eq!(h.in_memory(), 0, "a run in the file stays there");
        assert!(read(&mut h, c) == vec![(vec![b'y'; 1500], true), (b"small".to_vec(), false)]);
        // A snapshot replaces what the run held, in memory.
        let mut d = Vec::new();
        h.hold(&mut d, &[b'z'; 2000], true, None).unwrap();
        h.replace(&mut d, b"snap", false, None);
        assert_eq!(h.in_memory(), 0, "snapshots are not counted");
        assert!(read(&mut h, d) == vec![(b"snap".to_vec(), false)]);
        assert_eq!(h.in_memory(), 0);
    }

    #[test]
    fn without_a_temporary_file_frames_are_held_in_memory() {
        // As when TMPDIR names no folder.
        let mut h = Holder::new(100);
        h.make = || Err(io::Error::from(io::ErrorKind::NotFound));
        let mut run = Vec::new();
        for k in 0..400usize {
            let bytes = vec![b'a' + (k % 26) as u8; 5000 + k];
            h.hold(&mut run, &bytes, true, None).unwrap();
        }
        assert!(h.no_file);
        let got = read(&mut h, run);
        assert_eq!(got.len(), 400);
        for (k, (bytes, _)) in got.iter().enumerate() {
            assert_eq!(bytes, &vec![b'a' + (k % 26) as u8; 5000 + k]);
        }
    }
}
