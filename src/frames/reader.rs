//! Reads a run of zstd frames (any standard zstd stream) frame by frame, so that damage is
//! found where it is and handled as the recovery mode says.
//!
//! A frame's output is held until its content checksum has been checked, so a damaged frame
//! never yields a wrong line: complete frames are verified before their lines go out. (A
//! frame whose output exceeds [`HOLD_LIMIT`], which sess writes only for a line that long,
//! releases its complete lines early, and a long line in pieces of 8 MiB; damage found
//! later in such a frame, or while a line that went out in part goes on, is then an error
//! in every mode.)
//!
//! Lines go out whole: a line a frame ends inside (sess never cuts one; pzstd and files
//! joined with `cat` may) goes out with the frame that holds its end. So damage that cuts
//! such a line loses it, rather than joining its two ends into a wrong one.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};

use super::index::SKIPPABLE_MAGIC;
use super::walk::{ZSTD_MAGIC, is_skippable};

/// How much of one frame's output is held back until its checksum is checked.
pub const HOLD_LIMIT: usize = 64 << 20;

/// The sizes the reader works with. Under `cfg(fuzzing)` (set by `cargo fuzz`) they are
/// small, so that a fuzzer's inputs of a few KB reach what frames over the limit do.
#[cfg(not(fuzzing))]
mod sizes {
    /// [`super::HOLD_LIMIT`].
    pub const HOLD: usize = super::HOLD_LIMIT;
    /// In a frame over [`HOLD`], a line not yet ended goes out this much at a time: held
    /// until its end, a line of 116 MB was in memory twice in the reader alone (as it was
    /// decoded, and as read from it), and three to four times packing snapshot frames.
    pub const PASS_AT: usize = 8 << 20;
    /// What one step decodes at most.
    pub const SCRATCH: usize = 128 << 10;
}

#[cfg(fuzzing)]
mod sizes {
    pub const HOLD: usize = 2 << 10;
    pub const PASS_AT: usize = 256;
    pub const SCRATCH: usize = 64;
}

use sizes::{HOLD, PASS_AT, SCRATCH};

/// The output of a frame not yet verified, and whether a line ends in it: asked after each
/// step of a frame over [`HOLD`], a search of the whole was quadratic in a long line
/// (a frame of one 300 MB line took 12 s to unpack).
#[derive(Default)]
struct Held {
    bytes: Vec<u8>,
    newline: bool,
}

impl Held {
    fn push(&mut self, out: &[u8]) {
        // Once one is known, the bytes that follow need no search.
        self.newline = self.newline || memchr::memchr(b'\n', out).is_some();
        self.bytes.extend_from_slice(out);
    }

    /// Empties it, and gives what it held.
    fn take(&mut self) -> Vec<u8> {
        self.newline = false;
        std::mem::take(&mut self.bytes)
    }
}

/// What to do with damage, after RocksDB's WAL recovery modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Recovery {
    /// Keep every complete frame and the complete lines of a torn final frame (flagged as
    /// unverified); ignore undecodable bytes at the very end; damage anywhere before the
    /// end is an error.
    #[default]
    TolerateTail,
    /// Any damage, a torn final frame included, is an error.
    Absolute,
    /// Stop at the first damage and keep everything before it, with a warning.
    PointInTime,
    /// Skip damaged frames and go on with the next good one, with a warning for each.
    SkipCorrupt,
}

/// What a reader found in its input, shared with whoever opened it (`verify` reports it).
#[derive(Debug, Default)]
pub struct Health {
    /// zstd frames that decoded whole.
    pub frames: u64,
    /// Of those, frames written without a content checksum (`zstd --no-check`): their
    /// lines could not be verified.
    pub unchecked: u64,
    /// Every warning given, also printed on stderr (unless the reader collects them).
    pub notices: Vec<String>,
    /// The damaged stretches skipped (`--recovery skip-corrupt`), in order.
    pub skips: Vec<Skip>,
    /// How many times lines were handed on after lines before them were lost (a damaged
    /// stretch skipped, or an interned line whose values were lost): counted by the line
    /// reader just before the first line after each loss, so that a reader whose lines build
    /// on the ones before (an op list's batches) can tell where its chain broke.
    pub gaps: u64,
}

impl Health {
    /// What a reader found, whatever a panicking holder left.
    pub fn lock(health: &Mutex<Health>) -> std::sync::MutexGuard<'_, Health> {
        health.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where, in a reader's output, a frame begins inside a line, as the caller's rule says
/// such a place must be known ([`FrameReader::telling_glues`]): files joined with `cat`,
/// the first without a final newline, glue its last line to the next one's first, as
/// `zstd -dc` does, and a line reader may need to read the two parts apart.
#[derive(Debug, Default)]
pub struct Glues {
    /// How many are queued: read on every line, so that a line reader locks only when
    /// there is one.
    pending: AtomicUsize,
    at: Mutex<VecDeque<u64>>,
}

impl Glues {
    pub fn push(&self, offset: u64) {
        let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        at.push_back(offset);
        self.pending.store(at.len(), Ordering::Release);
    }

    /// Forgets every glue (reading begins again elsewhere).
    pub fn clear(&self) {
        let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        at.clear();
        self.pending.store(0, Ordering::Release);
    }

    /// Whether any glue is queued, the one question most lines need asked.
    #[inline]
    pub fn any(&self) -> bool {
        self.pending.load(Ordering::Acquire) != 0
    }

    /// The place of the next glue, counted from the line's first byte, when it lies
    /// inside the line of `len` bytes at `offset`. Lines are asked about in order; the
    /// glues up to the line's end are passed and forgotten.
    pub fn inside(&self, offset: u64, len: usize) -> Option<usize> {
        if !self.any() {
            return None;
        }
        let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        let end = offset + len as u64;
        let mut found = None;
        while let Some(next) = at.front().copied().filter(|&n| n < end) {
            at.pop_front();
            if next > offset && found.is_none() {
                found = Some((next - offset) as usize);
            }
        }
        self.pending.store(at.len(), Ordering::Release);
        found
    }
}

/// Whether the bytes carried into a frame (a line begun) and the frame's output are two
/// lines glued that a reader must know of ([`Glues`]).
pub type GlueRule = fn(&[u8], &[u8]) -> bool;

/// Damaged bytes a reader skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skip {
    /// The bytes of output given before the skip: a line that starts at or after this
    /// offset comes after the lost lines.
    pub output_at: u64,
    /// The lines and bytes the skipped frames held, when the file's index says.
    pub lines: Option<u64>,
    pub bytes: Option<u64>,
}

pub struct FrameReader<R: Read> {
    src: R,
    name: String,
    mode: Recovery,
    /// Compressed input: `buf[start..end]` is unread; `base` is the file offset of `buf[0]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    base: u64,
    eof: bool,
    dctx: DCtx<'static>,
    scratch: Vec<u8>,
    /// Output ready for the caller.
    ready: Vec<u8>,
    ready_pos: usize,
    /// Output of the frame being decoded, not yet verified.
    hold: Held,
    /// The first bytes of a line that earlier frames end inside, not yet given.
    carry: Vec<u8>,
    /// The next line to go out begins after skipped damage, which may have cut it (whether
    /// the damaged frame ended at a line end is unknown): it is dropped unless it is a
    /// JSON value.
    suspect: bool,
    /// Where the frame being decoded starts, while inside one.
    frame_start: Option<u64>,
    /// Complete lines of the frame being decoded already made ready, before its checksum
    /// (a frame over [`HOLD`] releases them as they come).
    released: u64,
    /// Whether the first bytes of a line not yet ended went out from the frame being
    /// decoded ([`PASS_AT`]): like a line released, damage after them is an error, and a
    /// tear ends that line where it is cut.
    passed: bool,
    /// Whether the last bytes that went out are such a line, not yet ended (it may go on
    /// in the frames after: damage in them is an error too).
    open: bool,
    done: bool,
    /// Whether the frame being decoded has a content checksum.
    checked: bool,
    health: Arc<Mutex<Health>>,
    glues: Arc<Glues>,
    /// Whether the bytes carried into a frame and the frame's output are two lines glued
    /// that a reader must know of ([`Glues`]); none by default.
    glued: Option<GlueRule>,
    /// Lines that `glued` must see whole, by their first bytes: not passed in pieces.
    whole: Option<fn(&[u8]) -> bool>,
    /// The frames the file's index lists, to count the lines a skip loses; empty when there
    /// is none.
    listed: Vec<super::index::Entry>,
    /// Bytes of output given, and lines in them (counted only when `listed` is known).
    given: u64,
    given_lines: u64,
    /// Lines lost in skips whose count is known.
    lost_lines: u64,
    /// Warnings are collected in [`Health::notices`], not printed.
    collect: bool,
    /// Warnings are put in [`Health::notices`] for the caller to print as it reaches them.
    defer: bool,
}

/// Whether `line` (without its newline), the first after lost bytes that may have cut a
/// line, is the end of that line rather than a whole one: it is not one JSON value (no end
/// of an object is).
pub fn is_cut_end(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    crate::json::validate(line).is_err()
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl<R: Read> FrameReader<R> {
    pub fn new(src: R, name: &str, mode: Recovery) -> FrameReader<R> {
        FrameReader {
            src,
            name: name.to_string(),
            mode,
            buf: vec![0; 256 * 1024],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            dctx: DCtx::create(),
            scratch: vec![0; SCRATCH],
            ready: Vec::new(),
            ready_pos: 0,
            hold: Held::default(),
            carry: Vec::new(),
            suspect: false,
            frame_start: None,
            released: 0,
            passed: false,
            open: false,
            done: false,
            checked: true,
            health: Arc::default(),
            glues: Arc::default(),
            glued: None,
            whole: None,
            listed: Vec::new(),
            given: 0,
            given_lines: 0,
            lost_lines: 0,
            collect: false,
            defer: false,
        }
    }

    /// The file's frames as its index lists them, so that a skip can say which lines of
    /// the original it lost (and readers can number later lines as the original did).
    pub fn with_index(mut self, entries: &[super::index::Entry]) -> FrameReader<R> {
        self.listed = entries.to_vec();
        self
    }

    /// The input begins at byte `offset` of the file (one frame of it, read by seeking), so
    /// that messages name places in the file.
    pub fn at_offset(mut self, offset: u64) -> FrameReader<R> {
        self.base = offset;
        self
    }

    /// Warnings go to [`Health::notices`] only, for a caller that reports them itself.
    pub fn collecting(mut self) -> FrameReader<R> {
        self.collect = true;
        self
    }

    /// Keeps its findings in `health`, shared with the other readers of one file's frames:
    /// a warning said once for the file (a frame without a checksum) is said once in all.
    pub fn sharing(mut self, health: Arc<Mutex<Health>>) -> FrameReader<R> {
        self.health = health;
        self
    }

    /// Warnings go to [`Health::notices`], for a caller reading on another thread to print
    /// when it reaches the lines they come with (each as `sess: warning: NOTICE`).
    pub fn deferring(mut self) -> FrameReader<R> {
        self.defer = true;
        self
    }

    /// The lines and bytes of the frames the index lists from `from` up to `to`: known only
    /// when both are where the index says a frame (or the index itself) starts.
    fn lost_between(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let first = self.listed.binary_search_by_key(&from, |e| e.offset).ok()?;
        let last = self.listed.last()?;
        let to_listed = to == last.offset + u64::from(last.compressed)
            || self.listed.binary_search_by_key(&to, |e| e.offset).is_ok();
        let lost = self.listed[first..].iter().take_while(|e| e.offset < to);
        to_listed.then(|| {
            lost.fold((0, 0), |(l, b), e| {
                (l + u64::from(e.lines), b + u64::from(e.uncompressed))
            })
        })
    }

    fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    fn warn(&mut self, msg: &str) {
        if !self.collect && !self.defer {
            crate::io::tell!("sess: warning: {}: {msg}", self.name);
        }
        self.health().notices.push(format!("{}: {msg}", self.name));
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        Health::lock(&self.health)
    }

    /// What the reader has found so far, shared: it keeps being updated as reading goes on.
    pub fn health_handle(&self) -> Arc<Mutex<Health>> {
        Arc::clone(&self.health)
    }

    /// Tells where a frame begins inside a line when `glued` says so of the bytes carried
    /// into it and its output ([`Glues`]). A line whose first bytes `whole` holds true of
    /// never goes out in pieces ([`PASS_AT`]): `glued` must see it whole.
    pub fn telling_glues(mut self, glued: GlueRule, whole: fn(&[u8]) -> bool) -> FrameReader<R> {
        self.glued = Some(glued);
        self.whole = Some(whole);
        self
    }

    /// The glues told ([`FrameReader::telling_glues`]), shared: each is pushed before the
    /// bytes it is in are given.
    pub fn glues_handle(&self) -> Arc<Glues> {
        Arc::clone(&self.glues)
    }

    /// The warnings given so far (damage tolerated or skipped).
    pub fn notices(&self) -> Vec<String> {
        self.health().notices.clone()
    }

    /// Reads more input after `end`, keeping everything from `keep` (an index into `buf`).
    fn refill(&mut self, keep: usize) -> io::Result<()> {
        if keep > 0 && (keep == self.end || keep > self.buf.len() / 2) {
            self.buf.copy_within(keep..self.end, 0);
            self.end -= keep;
            self.start -= keep;
            self.base += keep as u64;
        }
        if self.end == self.buf.len() {
            crate::io::grow(&mut self.buf);
        }
        match crate::io::read::read_some(&mut self.src, &mut self.buf[self.end..])? {
            0 => self.eof = true,
            n => self.end += n,
        }
        Ok(())
    }

    /// Makes at least `n` unread bytes available, unless the input ends first.
    fn want(&mut self, n: usize) -> io::Result<usize> {
        while self.end - self.start < n && !self.eof {
            self.refill(self.start)?;
        }
        Ok(self.end - self.start)
    }

    fn step(&mut self) -> io::Result<()> {
        match self.frame_start {
            Some(at) => self.decode_some(at),
            None => self.next_frame(),
        }
    }

    fn next_frame(&mut self) -> io::Result<()> {
        let at = self.offset();
        let have = self.want(8)?;
        if have == 0 {
            // A last line without a newline goes out as it is.
            self.finish();
            return Ok(());
        }
        let head = &self.buf[self.start..self.start + have.min(8)];
        if have < 4 {
            let cut_magic = ZSTD_MAGIC.to_le_bytes().starts_with(head)
                || SKIPPABLE_MAGIC.to_le_bytes().starts_with(head);
            return if cut_magic {
                self.torn(at)
            } else {
                self.damage(at, "trailing bytes that are not a frame")
            };
        }
        let magic = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
        if magic == ZSTD_MAGIC {
            // Frame header descriptor bit 2: the content checksum flag (RFC 8878 3.1.1.1.1).
            self.checked = have < 5 || head[4] & 0x04 != 0;
            self.dctx
                .reset(ResetDirective::SessionOnly)
                .map_err(|c| invalid(format!("zstd: {}", zstd::zstd_safe::get_error_name(c))))?;
            self.frame_start = Some(at);
            return Ok(());
        }
        if is_skippable(magic) {
            if have < 8 {
                return self.torn(at);
            }
            let size = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as u64;
            return self.skip(at, 8 + size);
        }
        self.damage(at, "no zstd frame magic")
    }

    /// Skips a skippable frame of `len` bytes starting at `at`.
    fn skip(&mut self, at: u64, mut len: u64) -> io::Result<()> {
        loop {
            let here = (self.end - self.start) as u64;
            if here >= len {
                self.start += len as usize;
                return Ok(());
            }
            len -= here;
            self.start = self.end;
            if self.eof {
                return self.torn(at);
            }
            self.refill(self.start)?;
        }
    }

    /// Where refills may discard input up to while decoding the frame at `at`: its start,
    /// so that after damage the search for the next good frame can begin inside it (a
    /// damaged header may have swallowed the next frame), unless the frame is very large.
    fn keep_from(&self, at: u64) -> usize {
        match at.checked_sub(self.base) {
            Some(rel) if self.start - rel as usize <= HOLD => rel as usize,
            _ => self.start,
        }
    }

    fn decode_some(&mut self, at: u64) -> io::Result<()> {
        if self.start == self.end {
            if self.eof {
                return self.torn(at);
            }
            return self.refill(self.keep_from(at));
        }
        let mut input = InBuffer::around(&self.buf[self.start..self.end]);
        let mut output = OutBuffer::around(&mut self.scratch[..]);
        let result = self.dctx.decompress_stream(&mut output, &mut input);
        let (consumed, produced) = (input.pos(), output.pos());
        self.start += consumed;
        self.hold.push(&self.scratch[..produced]);
        match result {
            Err(code) => {
                let why = format!("zstd: {}", zstd::zstd_safe::get_error_name(code));
                self.damage(at, &why)
            }
            Ok(0) => {
                // The frame is complete and its checksum, if it has one, matched.
                self.frame_done(at);
                let out = self.hold.take();
                self.release(out, self.first_release());
                self.frame_start = None;
                self.released = 0;
                self.passed = false;
                Ok(())
            }
            Ok(_) => {
                // A frame too large to hold whole releases its complete lines from here on
                // as they come. The held buffer is handed over, not copied, and never grows
                // past the limit.
                let over = self.released > 0
                    || self.passed
                    || self.hold.bytes.len() + self.scratch.len() > HOLD;
                if over && self.hold.newline {
                    let out = self.hold.take();
                    let first = self.first_release();
                    self.released += memchr::memchr_iter(b'\n', &out).count() as u64;
                    self.release(out, first);
                } else if over && self.hold.bytes.len() >= PASS_AT && self.may_pass() {
                    let out = self.hold.take();
                    self.pass_on(out);
                }
                if consumed == 0 && produced == 0 {
                    if self.eof {
                        return self.torn(at);
                    }
                    self.refill(self.keep_from(at))?;
                }
                Ok(())
            }
        }
    }

    /// Whether nothing of the frame being decoded has gone out yet: its first release is
    /// the one that may be glued to the bytes carried into it.
    fn first_release(&self) -> bool {
        self.released == 0 && !self.passed
    }

    /// Whether the bytes held, a line not yet ended, may go out before it ends: not when
    /// the line may be the cut end of one that skipped damage cut (known only once it
    /// ends), nor when it may be glued to the bytes carried into the frame (told by the
    /// frame's first release, unless they continue a line that went out in part).
    fn may_pass(&self) -> bool {
        !self.suspect
            && (self.released > 0 || self.passed || self.open || self.carry.is_empty())
            && !self.kept_whole()
    }

    /// Whether the line held (begun in `carry`, or else in `hold`) is one the glue rule
    /// must see whole ([`FrameReader::telling_glues`]).
    fn kept_whole(&self) -> bool {
        let Some(whole) = self.whole.filter(|_| !self.open) else {
            return false;
        };
        whole(&crate::io::head_of(&self.carry, &self.hold.bytes))
    }

    /// Makes the bytes carried and `out`, the first bytes of a line not yet ended, ready
    /// (the reader has taken all that was ready: it steps only then).
    fn pass_on(&mut self, out: Vec<u8>) {
        let mut bytes = std::mem::take(&mut self.carry);
        if bytes.is_empty() {
            bytes = out;
        } else {
            bytes.extend_from_slice(&out);
        }
        self.ready = bytes;
        self.ready_pos = 0;
        self.passed = true;
        self.open = true;
    }

    /// Makes the complete lines of `out` (verified output) ready, after the line the carry
    /// began; what follows its last newline is carried on to the next frame. `first`: `out`
    /// is the start of its frame.
    fn release(&mut self, mut out: Vec<u8>, first: bool) {
        // With a line that went out in part, `carry` is its tail: the rule then tells of
        // a `next` that must be read alone (a line it must see whole never goes out so).
        if first
            && !self.suspect
            && !self.carry.is_empty()
            && self.glued.is_some_and(|g| g(&self.carry, &out))
        {
            // The ready bytes were all given: the carry goes out from `given` on.
            self.glues.push(self.given + self.carry.len() as u64);
        }
        let Some(k) = memchr::memrchr(b'\n', &out) else {
            self.carry.extend_from_slice(&out);
            self.ready.clear();
            self.ready_pos = 0;
            return;
        };
        // A line that went out in part ends here, if one did.
        self.open = false;
        let rest = out.split_off(k + 1);
        if !self.carry.is_empty() {
            let mut lines = std::mem::replace(&mut self.carry, rest);
            lines.extend_from_slice(&out);
            out = lines;
        } else {
            self.carry = rest;
        }
        if std::mem::take(&mut self.suspect) {
            let end = memchr::memchr(b'\n', &out).expect("a newline");
            if is_cut_end(&out[..end]) {
                let msg = format!(
                    "dropped {end} byte(s) after the skipped damage: the end of a line it cut"
                );
                out.drain(..=end);
                self.warn(&msg);
            }
        }
        self.ready = out;
        self.ready_pos = 0;
    }

    /// Reading ends (at the end, a tear or damage): the carry goes out as a last line
    /// without a newline, for the last-line rule of the line reader (kept when it is one
    /// JSON value), unless it is the end of a line skipped damage cut.
    fn give_carry(&mut self) {
        let carry = std::mem::take(&mut self.carry);
        if std::mem::take(&mut self.suspect) && !carry.is_empty() && is_cut_end(&carry) {
            let n = carry.len();
            self.warn(&format!(
                "dropped {n} byte(s) after the skipped damage: the end of a line it cut"
            ));
            return;
        }
        if self.ready_pos == self.ready.len() {
            self.ready.clear();
            self.ready_pos = 0;
        }
        self.ready.extend_from_slice(&carry);
    }

    fn finish(&mut self) {
        self.give_carry();
        self.done = true;
    }

    /// Counts a frame that decoded whole, and warns once about frames without a checksum.
    fn frame_done(&mut self, at: u64) {
        let unchecked = {
            let mut h = self.health();
            h.frames += 1;
            h.unchecked += u64::from(!self.checked);
            h.unchecked
        };
        // A collecting caller reports the count (`Health::unchecked`) itself.
        if !self.checked && unchecked == 1 && !self.collect {
            self.warn(&format!(
                "the zstd frame at byte {at} has no content checksum (written with --no-check?): \
                 its lines are UNVERIFIED, a damaged byte in it would go unnoticed; later such \
                 frames are not reported one by one"
            ));
        }
    }

    /// The input ends inside the frame starting at `at`: torn, unless a good frame follows
    /// inside it. A damaged block header can make a frame run on to the end, through the
    /// frames after it (a raw block's size, where the frame states no content size): its
    /// decodable prefix then holds their compressed bytes, not lines.
    fn torn(&mut self, at: u64) -> io::Result<()> {
        if self.good_frame_after(at)? {
            return self.damage(at, "a damaged block runs on into the frames after it");
        }
        if self.mode == Recovery::Absolute {
            return Err(invalid(format!(
                "the input ends inside the frame at byte {at} (a torn write; \
                 --recovery tolerate-tail keeps its complete lines)"
            )));
        }
        let mut out = self.hold.take();
        if self.open && memchr::memchr(b'\n', &out).is_none() {
            // The line the tear cut went out in part: it ends where the input does, for
            // the last-line rule of the line reader (a torn line, unless it is one value).
            self.open = false;
            self.carry.extend_from_slice(&out);
            self.give_carry();
            self.warn(&format!(
                "the final frame at byte {at} is torn (the input ends inside it): kept {} \
                 complete line(s) of its decodable prefix, UNVERIFIED (no checksum), and the \
                 partial line after them, which was being read out as it came",
                self.released
            ));
            self.done = true;
            return Ok(());
        }
        let keep = memchr::memrchr(b'\n', &out).map_or(0, |k| k + 1);
        let lost = out.len() - keep;
        out.truncate(keep);
        self.release(out, self.first_release());
        // A line begun before the tear that its prefix does not end: the last line.
        self.give_carry();
        self.warn(&format!(
            "the final frame at byte {at} is torn (the input ends inside it): kept {} complete \
             line(s) of its decodable prefix, UNVERIFIED (no checksum); dropped {lost} byte(s) of \
             a partial line",
            self.released + memchr::memchr_iter(b'\n', &self.ready).count() as u64
        ));
        self.done = true;
        Ok(())
    }

    /// Whether a frame that decodes whole (or an index) begins after the first byte of the
    /// frame at `at`, whose bytes are still held (not so for one over [`HOLD`]).
    /// `start` stays where it was.
    fn good_frame_after(&mut self, at: u64) -> io::Result<bool> {
        let Some(rel) = at.checked_sub(self.base) else {
            return Ok(false);
        };
        let here = self.offset();
        self.start = (rel as usize + 1).min(self.end);
        let found = self.find_frame()?.is_some();
        self.start = (here - self.base) as usize;
        Ok(found)
    }

    /// The bytes at `at` are damaged: not a frame, or a frame that fails to decode.
    fn damage(&mut self, at: u64, why: &str) -> io::Result<()> {
        self.hold.take();
        self.frame_start = None;
        if self.released > 0 || std::mem::take(&mut self.passed) {
            // Said as it is: a reader of one long line had output nothing yet, and was
            // told that lines had gone out.
            let out = match self.released {
                0 => "after part of a line in it was passed on".to_string(),
                n => format!("after {n} of its lines were passed on"),
            };
            return Err(invalid(format!(
                "damage in the frame at byte {at} ({why}) {out}: a frame too large to hold \
                 whole goes out before its checksum is checked, so no mode can get past it"
            )));
        }
        if self.mode == Recovery::Absolute {
            return Err(invalid(format!("damaged input at byte {at}: {why}")));
        }
        if self.mode == Recovery::PointInTime {
            self.warn(&format!(
                "stopped at damaged input at byte {at} ({why}); everything from there on is dropped"
            ));
            self.finish();
            return Ok(());
        }
        // Look for a good frame from just after the damaged frame's first byte.
        self.start = match at.checked_sub(self.base) {
            Some(rel) => rel as usize + 1,
            None => self.start,
        };
        match self.find_frame()? {
            // Skipped, it would join the line that went out in part to the lines after it
            // (stopping there ends it instead, as a tear does).
            Some(_) if self.mode == Recovery::SkipCorrupt && self.open => Err(invalid(format!(
                "damage in the frame at byte {at} ({why}), inside a line that was output in part"
            ))),
            Some(next) if self.mode == Recovery::SkipCorrupt => {
                // A line begun before the damage ends in it, or after it: either way it is
                // cut, and what follows up to the next newline may be its end. So it may
                // when nothing says the damaged bytes held whole lines, as an index does
                // (sess frames hold whole lines).
                let lost = self.lost_between(at, next);
                let carried = !std::mem::take(&mut self.carry).is_empty();
                self.suspect = carried || lost.is_none();
                let lines = lost.map(|l| l.0);
                self.health().skips.push(Skip {
                    output_at: self.given,
                    lines,
                    bytes: lost.map(|l| l.1),
                });
                let lost = match lines {
                    Some(0) => "no lines".to_string(),
                    Some(k) => {
                        let first = self.given_lines + self.lost_lines + 1;
                        self.lost_lines += k;
                        format!("lines {first}..{} of the original", first + k - 1)
                    }
                    None => "an unknown number of lines (no index to count them; later line \
                             numbers count the lines read)"
                        .to_string(),
                };
                self.warn(&format!(
                    "skipped damaged bytes {at}..{next} ({why}): lost {lost}"
                ));
                Ok(())
            }
            Some(next) => Err(invalid(format!(
                "damaged input at byte {at} ({why}), before the end: a good frame follows at byte \
                 {next} (--recovery skip-corrupt skips the damage, point-in-time stops at it)"
            ))),
            None => {
                self.warn(&format!(
                    "ignored a damaged tail from byte {at} to the end ({why}); no good frame follows"
                ));
                self.finish();
                Ok(())
            }
        }
    }

    /// Moves `start` to the next frame that decodes whole (or a sess index frame), and
    /// returns its offset; `None` if there is none before the end of the input.
    fn find_frame(&mut self) -> io::Result<Option<u64>> {
        let zstd = ZSTD_MAGIC.to_le_bytes();
        let index = SKIPPABLE_MAGIC.to_le_bytes();
        loop {
            let hay = &self.buf[self.start..self.end];
            let hit = memchr::memmem::find(hay, &zstd)
                .into_iter()
                .chain(memchr::memmem::find(hay, &index))
                .min();
            match hit {
                Some(k) => {
                    self.start += k;
                    if self.frame_is_whole()? {
                        return Ok(Some(self.offset()));
                    }
                    self.start += 1;
                }
                None if self.eof => return Ok(None),
                None => {
                    // Keep three bytes: a magic may straddle the refill.
                    self.start = self.end.saturating_sub(3).max(self.start);
                    self.refill(self.start)?;
                }
            }
        }
    }

    /// Whether a whole frame that decodes (or a whole sess index frame) starts at `start`.
    /// Leaves `start` where it was.
    fn frame_is_whole(&mut self) -> io::Result<bool> {
        self.want(8)?;
        let head = &self.buf[self.start..self.end];
        if head.len() >= 8 && head[..4] == SKIPPABLE_MAGIC.to_le_bytes() {
            let size = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
            return Ok(self.want(8 + size)? >= 8 + size);
        }
        let mut dctx = DCtx::create();
        let mut pos = self.start;
        loop {
            if pos == self.end {
                if self.eof {
                    return Ok(false);
                }
                let rel = pos - self.start;
                self.refill(self.start)?;
                pos = self.start + rel;
                continue;
            }
            let mut input = InBuffer::around(&self.buf[pos..self.end]);
            let mut output = OutBuffer::around(&mut self.scratch[..]);
            let r = dctx.decompress_stream(&mut output, &mut input);
            pos += input.pos();
            match r {
                Err(_) => return Ok(false),
                Ok(0) => return Ok(true),
                Ok(_) => {}
            }
        }
    }
}

impl<R: Read> Read for FrameReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ready_pos < self.ready.len() {
                let n = out.len().min(self.ready.len() - self.ready_pos);
                let given = &self.ready[self.ready_pos..self.ready_pos + n];
                out[..n].copy_from_slice(given);
                if !self.listed.is_empty() {
                    self.given_lines += memchr::memchr_iter(b'\n', given).count() as u64;
                }
                self.given += n as u64;
                self.ready_pos += n;
                if self.ready_pos == self.ready.len() {
                    // Given whole: freed now, not when the next frame replaces it. Its
                    // reader holds a copy (a line of 200 MB was held three times).
                    self.ready = Vec::new();
                    self.ready_pos = 0;
                }
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            self.step()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Held;

    #[test]
    fn held_output_knows_whether_a_line_ends_in_it_until_taken() {
        let mut held = Held::default();
        held.push(b"{\"a\":");
        assert!(!held.newline);
        held.push(b"1}\n{\"b\"");
        held.push(b":2");
        assert!(held.newline, "a newline in an earlier step still counts");
        assert_eq!(held.take(), b"{\"a\":1}\n{\"b\":2");
        assert!(!held.newline && held.bytes.is_empty());
        held.push(b"}");
        assert!(!held.newline);
    }
}
