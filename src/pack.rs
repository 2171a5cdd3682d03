//! What `sess pack` writes, event by event: runs of DSH chunk deltas become chunk rows
//! ([`crate::rows`]), runs of snapshot frames become snapshot-delta rows
//! ([`crate::snapshots`]), everything else is copied verbatim. A row only ever holds
//! consecutive events, so each packer flushes before the other takes an event.
//!
//! [`stream`] packs input that arrives over time (a pipe from a running agent): whatever
//! is pending (an open row, lines not yet in a frame) is written out when the window opened
//! by the oldest pending event expires, so a crash loses at most one window.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use std::path::Path;

use crate::error::{Error, IoContext, Place};
use crate::event::{self, LastLine};
use crate::frames::FrameWriter;
use crate::frames::index::Index;
use crate::frames::writer::{Cutter, FrameCount, ONLY_FRAME_LEVEL};
use crate::input::{Flow, Input, OpenOptions};
use crate::intern::{self, InternWriter};
use crate::io::Ending;
use crate::io::lend::{Lent, lend};
use crate::profile::{Choice, Chooser, Overrides};
use crate::rows;
use crate::snapshots::{self, Group};

pub struct Packer {
    /// Which lines are snapshot frames: the profile says.
    profile: Chooser,
    chunks: rows::ChunkPacker,
    snapshots: snapshots::SnapshotPacker,
    /// Events taken, and their bytes with their newlines.
    events: u64,
    bytes: u64,
}

/// What a [`Packer`] took and made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackCounts {
    pub events: u64,
    pub bytes: u64,
    /// Rows written, and the events they hold.
    pub rows: u64,
    pub packed_events: u64,
}

impl Default for Packer {
    fn default() -> Packer {
        Packer::new(Choice::Auto)
    }
}

impl Packer {
    pub fn new(choice: Choice) -> Packer {
        Packer {
            profile: Chooser::new(choice, Overrides::default()).expect("no overrides to fail"),
            chunks: rows::ChunkPacker::default(),
            snapshots: snapshots::SnapshotPacker::default(),
            events: 0,
            bytes: 0,
        }
    }

    /// A packer whose snapshot rows are estimated, not built: see
    /// [`snapshots::SnapshotPacker::estimating`]. What it writes is only to be counted.
    pub fn estimating(mut self) -> Packer {
        self.snapshots = snapshots::SnapshotPacker::estimating();
        self
    }

    /// A new input begins: its profile is chosen again (`path` when it is a file).
    pub fn start_input(&mut self, path: Option<&Path>) {
        self.profile.start_input(path);
    }

    /// One logical event (a line without its newline); `newline` is false only for a last
    /// line without one, which is written back so and never packed.
    pub fn event<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        newline: bool,
        out: &mut W,
    ) -> io::Result<()> {
        self.event_read(line, newline, None, out)
    }

    /// [`Packer::event`] of a line its reader already read as a chunk delta (`known`).
    pub fn event_read<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        newline: bool,
        known: Option<&rows::MemberAt>,
        out: &mut W,
    ) -> io::Result<()> {
        self.events += 1;
        self.bytes += line.len() as u64 + u64::from(newline);
        match self.snapshot(line).filter(|_| newline) {
            Some(group) => {
                self.chunks.finish(out)?;
                match self.snapshots.take(line, group, out)? {
                    true => Ok(()),
                    false => self.chunks.event(line, newline, known, out),
                }
            }
            None => {
                self.snapshots.finish(out)?;
                self.chunks.event(line, newline, known, out)
            }
        }
    }

    /// Whether the survey of a file (the first pass of interning) looks into a line: not
    /// into a snapshot frame, which is mostly written as the ops to it from the frame
    /// before. On the 1 GiB Claude Code synth, looking into its agent_progress frames cost
    /// a tenth of the pack's CPU time and made the output larger (2,894,988 bytes against
    /// 2,870,382 without). Each input's profile is chosen as it will be when packing:
    /// call [`Packer::start_input`] again before that.
    pub fn surveys(&mut self, line: &[u8]) -> bool {
        self.snapshot(line).is_none()
    }

    /// The run of a snapshot frame, or of a line the profile packs as snapshot rows.
    fn snapshot(&mut self, line: &[u8]) -> Option<Group> {
        let p = self.profile.see(line).filter(|p| p.packs_snapshots())?;
        // The kind and the key may lie after the same long member: walked once.
        let look = &mut crate::json::Lookup::new(line);
        let kind = p.kind_in(look)?;
        let key = match (
            p.frames.get(kind.as_ref()),
            p.snapshot_rows.get(kind.as_ref()),
        ) {
            (Some(rule), _) if rule.snapshot.holds_in(look) => rule.key_in(look),
            (_, Some(rule)) => rule.key_in(look),
            _ => return None,
        };
        Some((kind.into_owned(), key))
    }

    /// Writes whatever run is open. Call at the end of a window.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.snapshots.finish(out)?;
        self.chunks.finish(out)
    }

    /// The input ended: writes whatever run is open (rows never span inputs).
    pub fn end_input<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.finish(out)
    }

    pub fn counts(&self) -> PackCounts {
        PackCounts {
            events: self.events,
            bytes: self.bytes,
            rows: self.chunks.rows + self.snapshots.rows,
            packed_events: self.chunks.packed_events + self.snapshots.packed_events,
        }
    }
}

/// Packs files (never a pipe: a file with interning is read twice, a first pass finding the
/// values that repeat so that each is defined where it first occurs) into `out`, which is
/// left to finish. `frame_size` bounds the input that may be kept to offer the frames the
/// log as it was ([`Out::offer_same`]). With `threads` above 1, the inputs are read (lines
/// split, checked, rows expanded) on a thread of their own, beside the packing, with
/// batches between: on a DSH log, reading was a third of the time.
pub fn pack_files<W: Write, E: From<Error> + From<io::Error> + Send>(
    inputs: &[Input],
    open: OpenOptions,
    frame_size: usize,
    threads: usize,
    packer: &mut Packer,
    out: &mut Out<W>,
) -> Result<(), E> {
    // Regular files only: a FIFO or /dev/stdin named as a path reads once.
    let rereadable = inputs
        .iter()
        .all(|i| i.path().is_some_and(crate::input::is_regular_file));
    if out.interner().min() > 0 && rereadable {
        survey(inputs, open, threads, packer, out.interner())?;
    }
    let mut same = Same::new(frame_size, inputs.len());
    if threads <= 1 {
        // One thread: deltas are always read where the lines are.
        let here = &std::cell::Cell::new(true);
        read_files::<E>(inputs, open, &mut same, here, &mut |step| {
            match step {
                Step::Input(path) => packer.start_input(path),
                Step::Event(bytes, newline, known) | Step::Long(bytes, newline, known, _) => {
                    packer.event_read(bytes, newline, known, out.writer())?
                }
                Step::EndInput => packer.end_input(out.writer())?,
            }
            Ok(true)
        })?;
    } else {
        std::thread::scope(|scope| {
            // At most sixteen batches in the channel, and fewer bytes out ([`BatchesOut`]).
            let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(16);
            // Batches packed come back (the packing side never waits to send one).
            let (back, returned) = std::sync::mpsc::channel::<Events>();
            let same = &mut same;
            // The output may be stdout, which stays on this thread: the reading side moves.
            let reading = scope.spawn(move || {
                let mut batch = Events::default();
                let mut out = BatchesOut::default();
                let here = std::cell::Cell::new(true);
                let read = read_files::<E>(inputs, open, same, &here, &mut |step| {
                    let msg = match step {
                        Step::Long(bytes, newline, known, place) => {
                            // The events before it go first, then it is lent.
                            if !batch.is_empty() {
                                let before = out.hand_over(&mut batch, &returned);
                                if before.is_none_or(|b| tx.send(Msg::Events(b)).is_err()) {
                                    return Ok(false);
                                }
                            }
                            let known = known.copied();
                            return Ok(lend(bytes, |line| {
                                let long = Long::new(line, newline, known, place);
                                tx.send(Msg::Long(long)).is_ok()
                            }));
                        }
                        Step::Event(bytes, newline, known) => {
                            batch.push_read(bytes, newline, known)?;
                            if !batch.is_full() {
                                return Ok(true);
                            }
                            let batch = out.hand_over(&mut batch, &returned);
                            here.set(out.batches >= BEHIND);
                            batch.map(Msg::Events)
                        }
                        Step::Input(path) => Some(Msg::Input(path.map(Path::to_path_buf))),
                        // The packing side ends an input where the next begins, or at
                        // `Done`.
                        Step::EndInput if batch.is_empty() => return Ok(true),
                        Step::EndInput => out.hand_over(&mut batch, &returned).map(Msg::Events),
                    };
                    // A packing side gone has failed, and says why.
                    Ok(msg.is_some_and(|msg| tx.send(msg).is_ok()))
                });
                // Every event read is packed, as on one thread, even when reading then
                // failed; but only inputs read whole are ended.
                if !batch.is_empty() {
                    let _ = tx.send(Msg::Events(batch));
                }
                if read.is_ok() {
                    let _ = tx.send(Msg::Done);
                }
                read
            });
            let packed = pack_batches(&rx, back, packer, out);
            // The reading side stops at its next hand-over once this end is gone.
            drop(rx);
            let read = reading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            // Packing failed on events read before anything reading then met (as on one
            // thread, where each event is packed before the next is read).
            packed.map_err(E::from)?;
            read
        })?;
    }
    if let Some(s) = same.kept {
        out.offer_same(s);
    }
    Ok(())
}

/// What reading files gives the packer, in order.
enum Step<'a> {
    /// An input begins (its path).
    Input(Option<&'a Path>),
    /// A logical event, whether it had a newline, and where its parts are when it is a
    /// chunk delta.
    Event(&'a [u8], bool, Option<&'a rows::MemberAt>),
    /// An event of [`LONG_EVENT`] bytes or more, as `Event`, and where it is.
    Long(&'a [u8], bool, Option<&'a rows::MemberAt>, Place),
    /// The input ended whole.
    EndInput,
}

/// Reads `inputs` event by event into `take`, which returns false to stop (the packing side
/// failed). Each line is read as a chunk delta here, once: one that is needs no other check
/// that it is JSON (on a DSH log, that check was a tenth of the whole pack), and the packer
/// is handed its parts.
fn read_files<E: From<Error> + From<io::Error>>(
    inputs: &[Input],
    open: OpenOptions,
    same: &mut Same,
    deltas_here: &std::cell::Cell<bool>,
    take: &mut dyn FnMut(Step<'_>) -> io::Result<bool>,
) -> Result<(), E> {
    let unchecked = OpenOptions {
        check: crate::syntax::LineCheck::Off,
        ..open
    };
    for (k, input) in inputs.iter().enumerate() {
        if !take(Step::Input(input.path()))? {
            return Ok(());
        }
        let mut stopped = false;
        let mut tally = crate::syntax::Tally::new(open.check);
        let read = event::each_event(
            std::slice::from_ref(input),
            unchecked,
            LastLine::Verbatim.for_input(k, inputs.len()),
            |name, ev| {
                let known = match deltas_here.get() {
                    true => rows::parse_member(ev.bytes).and_then(|m| m.at(ev.bytes)),
                    false => None,
                };
                match ev.member {
                    None if known.is_some() => tally.proven(),
                    // A row is checked as the line it is, once.
                    None | Some((0, _)) => tally.line(name, ev.line)?,
                    Some(_) => {}
                }
                same.event(ev);
                let step = match ev.bytes.len() >= LONG_EVENT {
                    true => {
                        Step::Long(ev.bytes, ev.newline, known.as_ref(), line_at(name, ev.line))
                    }
                    false => Step::Event(ev.bytes, ev.newline, known.as_ref()),
                };
                let taken = take(step);
                stopped = !taken.map_err(|e| match e.kind() {
                    io::ErrorKind::OutOfMemory => E::from(held(name, ev.line, e)),
                    _ => E::from(e),
                })?;
                Ok::<_, E>(if stopped { Flow::Stop } else { Flow::More })
            },
        );
        // The bad lines read are told even when the input then fails.
        tally.warn(&input.name());
        read?;
        if stopped || !take(Step::EndInput)? {
            return Ok(());
        }
    }
    Ok(())
}

/// The packing side of [`pack_files`] on two threads: it stays on the calling thread,
/// where the output is (stdout cannot move), and takes what the reading thread sends.
fn pack_batches<W: Write>(
    rx: &Receiver<Msg>,
    back: std::sync::mpsc::Sender<Events>,
    packer: &mut Packer,
    out: &mut Out<W>,
) -> io::Result<()> {
    for msg in rx {
        match msg {
            Msg::Input(path) => {
                packer.end_input(out.writer())?;
                packer.start_input(path.as_deref());
            }
            Msg::Events(batch) => {
                for (line, newline, known) in batch.iter_read() {
                    packer.event_read(line, newline, known, out.writer())?;
                }
                let _ = back.send(batch);
            }
            Msg::Long(long) => {
                let line = long.line.bytes();
                let packed =
                    packer.event_read(line, long.newline, long.known.as_ref(), out.writer());
                packed.map_err(|e| long.failed(e))?;
            }
            // Sent only when every input was read whole.
            Msg::Done => packer.end_input(out.writer())?,
            Msg::Interrupt(_) => break,
        }
    }
    Ok(())
}

/// Batches out at which the packing side is behind, and the reading side reads chunk
/// deltas for it.
const BEHIND: usize = 2;

/// The bytes of batches handed to the packing side and not yet back, at most: sixteen
/// batches of small lines. Batches that hold long lines pass it, two at most, so that one
/// is read while the other is packed (one at a time was 0.2 to 0.5 s slower on the Codex
/// log). With three threads on two cores, each side runs in bursts as the compressing
/// thread takes a core and gives it back; four batches (1 MiB) left the reading side
/// waiting, and sixteen took the 1 GiB DSH pack from 1.49-1.57 s to 1.40-1.47 s (six runs
/// each, alternating), for 6.5 MB more at peak (53 MB); 64 gained about 0.07 s more for
/// 33 MB more.
const BATCHES_OUT: usize = 16 * Events::BATCH;

/// An event at least this long is lent to the packing side, not copied into a batch, and
/// the reading side waits until it is packed ([`Msg::Long`]): copied, it was held three
/// times over (the reader's buffer, the batch, the packer's previous event) where the bound
/// (issue 12) is 64 MiB and twice the longest line. Under it, lines go two at a time as
/// above (Codex's longest are about 3 MB): four copies of a line under 8 MiB stay within
/// the bound, where with 32 MiB here a run of 24 MB snapshots passed it.
pub const LONG_EVENT: usize = 8 << 20;

/// What the reading side of [`pack_files`] has handed over. Bounded by bytes, not by
/// batches: a batch that holds a line of 4 MB is full at once, and four of them queued
/// (with each kept to be filled again) were most of what the 1 GiB Codex pack held.
#[derive(Default)]
struct BatchesOut {
    bytes: usize,
    batches: usize,
    /// Batches back, to be filled again: a fresh one costs its growth (copies, and page
    /// faults as the heap grows and shrinks). Every batch of small lines is kept: on the
    /// 1 GiB DSH log, where every batch out comes back, growing all but one afresh cost
    /// about 0.05 s of 1.27 s (five runs each, alternating), for no less memory at peak.
    /// They are no more than the batches that can be out at once (the channel's sixteen,
    /// and those on their way back), so their room is bounded as theirs is.
    spares: Vec<Events>,
    /// One batch back that held a long line (its room kept, under [`LONG_EVENT`]): with
    /// large blocks given back to the system when freed ([`crate::io::memory`]), a fresh
    /// batch for each long line was most of the page faults of the 1 GiB Codex pack, and
    /// keeping one (6 MB more at peak on that log) took 0.1 to 0.2 s off it. It is filled
    /// first, as the next line is likely long too.
    long_spare: Option<Events>,
}

impl BatchesOut {
    /// Takes `batch` to hand over, once the batches still out leave room for it, and leaves
    /// an empty one in its place to fill next; `None` when the packing side is gone.
    fn hand_over(&mut self, batch: &mut Events, returned: &Receiver<Events>) -> Option<Events> {
        loop {
            let full = self.batches > 1 && self.bytes + batch.bytes.len() > BATCHES_OUT;
            let back = if full {
                returned.recv().ok()?
            } else {
                match returned.try_recv() {
                    Ok(b) => b,
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
                }
            };
            self.take_back(back);
        }
        self.bytes += batch.bytes.len();
        self.batches += 1;
        let mut next = (self.long_spare.take())
            .or_else(|| self.spares.pop())
            .unwrap_or_default();
        next.clear();
        Some(std::mem::replace(batch, next))
    }

    fn take_back(&mut self, back: Events) {
        self.bytes -= back.bytes.len();
        self.batches -= 1;
        // A batch is full at BATCH bytes or EVENTS ends: one of small lines has grown to
        // twice those at most.
        let small = back.bytes.capacity() <= 2 * Events::BATCH;
        if small && back.ends.capacity() <= 2 * Events::EVENTS {
            self.spares.push(back);
        } else if back.bytes.capacity() < LONG_EVENT {
            self.long_spare.get_or_insert(back);
        }
    }
}

/// The input as it came, while it fits in one frame: unpacked, it is the same log.
pub struct Same {
    kept: Option<Vec<u8>>,
    frame_size: usize,
    inputs: usize,
}

impl Same {
    pub fn new(frame_size: usize, inputs: usize) -> Same {
        Same {
            kept: Some(Vec::new()),
            frame_size,
            inputs,
        }
    }

    pub fn event(&mut self, ev: &event::Event<'_>) {
        let Some(s) = &mut self.kept else { return };
        if !ev.starts_line() {
            return;
        }
        let newline = ev.line.ending == Ending::Newline;
        // Not the same log once read again: a line that reads as interned (the packed
        // lines wrap it), or an input's last line without a newline, which the next
        // input's first line would join. Nor one past a frame, found before the line is
        // copied (a line of 300 MB was copied whole, to be dropped).
        if s.len() + ev.line.bytes.len() + usize::from(newline) > self.frame_size
            || intern::is_interned(ev.line.bytes)
            || !newline && self.inputs > 1
        {
            self.kept = None;
            return;
        }
        s.extend_from_slice(ev.line.bytes);
        if newline {
            s.push(b'\n');
        }
    }

    /// The input as it came, if it fit in one frame.
    pub fn kept(self) -> Option<Vec<u8>> {
        self.kept
    }
}

/// The first pass over files: which values repeat. Lines, not events: rows need not be
/// expanded to count repeats, and the second pass is the one that warns about the input.
/// Snapshot frames are not looked into ([`Packer::surveys`]).
fn survey(
    inputs: &[Input],
    open: OpenOptions,
    threads: usize,
    packer: &mut Packer,
    interner: &mut intern::Writer,
) -> Result<(), Error> {
    // Plain files are split straight from the file: on a DSH log, whose lines are mostly
    // too short to look into, opening and reading them as every command does (sniffed,
    // buffered twice, each line rebuilt and checked) was most of the pass (0.54 s of a
    // 2.7 s pack of 1 GiB).
    // An interned line (a packed log packed again) must be rebuilt first: then the pass
    // starts again the general way.
    if raw_survey(inputs, threads, packer, interner)? {
        interner.surveyed();
        return Ok(());
    }
    interner.survey_again();
    let opts = OpenOptions {
        quiet: true,
        check: crate::syntax::LineCheck::Off,
        ..open
    };
    for input in inputs {
        packer.start_input(input.path());
        let mut more = true;
        crate::input::each_line(std::slice::from_ref(input), opts, |_, line| {
            more = survey_line(interner, line.bytes, packer.surveys(line.bytes));
            Ok::<_, Error>(if more { Flow::More } else { Flow::Stop })
        })?;
        if !more {
            break;
        }
    }
    interner.surveyed();
    Ok(())
}

/// Surveys one line (passes over it, when `look` is false); whether the survey wants the
/// lines after it.
fn survey_line(interner: &mut intern::Writer, line: &[u8], look: bool) -> bool {
    match look {
        true => interner.survey(line),
        false => interner.survey_passed(line.len() as u64 + 1),
    }
    interner.survey_wants_more()
}

/// [`survey`] of inputs that are all plain files without interned lines, their lines
/// read straight from the file; false (the survey half done) for any other input. With
/// `threads` above 1 the lines are read on a thread of their own, which hands over only
/// those long enough to look into (on a DSH log, reading was half of the pass).
fn raw_survey(
    inputs: &[Input],
    threads: usize,
    packer: &mut Packer,
    interner: &mut intern::Writer,
) -> Result<bool, Error> {
    let plain = |i: &Input| -> Result<bool, Error> {
        let Some(p) = i.path() else { return Ok(false) };
        Ok(crate::input::file_compression(p)? == Some(crate::input::Compression::Plain))
    };
    for input in inputs {
        if !plain(input)? {
            return Ok(false);
        }
    }
    if threads <= 1 {
        return survey_lines(inputs, packer, &mut |line, look| {
            survey_line(interner, line, look)
        });
    }
    let min = interner.min();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Surveyed>(4);
        // Batches come back to be filled again: a fresh buffer for each costs page faults.
        let (back, returned) = std::sync::mpsc::sync_channel::<Surveyed>(6);
        let reading = scope.spawn(move || {
            let mut batch = Surveyed::default();
            let mut passed = 0;
            // Reading stops once the surveying side is gone: it has seen enough.
            let whole = survey_lines(inputs, packer, &mut |line, look| {
                if !look || line.len() < min {
                    passed += line.len() as u64 + 1;
                    if passed < PASSED_TOLD {
                        return true;
                    }
                    // Lines too short to look into count towards the survey's probe too:
                    // told of now and then, so that it can stop with none to look into.
                    batch.passed_after = std::mem::take(&mut passed);
                    let next = returned.try_recv().unwrap_or_default();
                    return tx.send(std::mem::replace(&mut batch, next)).is_ok();
                }
                if line.len() >= LONG_EVENT {
                    // A long line is lent alone, and the reading side waits until it has
                    // been looked into: copied and queued, a few held it several times over.
                    if !batch.lines.is_empty() && tx.send(std::mem::take(&mut batch)).is_err() {
                        return false;
                    }
                    let lines = vec![(std::mem::take(&mut passed), line.len())];
                    return lend(line, |line| {
                        let long = Some(line);
                        let alone = Surveyed {
                            lines,
                            long,
                            ..Surveyed::default()
                        };
                        tx.send(alone).is_ok()
                    });
                }
                batch.bytes.extend_from_slice(line);
                batch.lines.push((std::mem::take(&mut passed), line.len()));
                if batch.bytes.len() < 256 * 1024 {
                    return true;
                }
                let next = returned.try_recv().unwrap_or_default();
                tx.send(std::mem::replace(&mut batch, next)).is_ok()
            })?;
            let _ = tx.send(batch);
            Ok::<_, Error>(whole)
        });
        // Line by line, it stops where the survey on one thread does.
        let mut more = true;
        for mut batch in &rx {
            let bytes = match &batch.long {
                Some(line) => line.bytes(),
                None => &batch.bytes,
            };
            let mut at = 0;
            for &(passed, len) in &batch.lines {
                interner.survey_passed(passed);
                more = more
                    && interner.survey_wants_more()
                    && survey_line(interner, &bytes[at..at + len], true);
                at += len;
            }
            interner.survey_passed(batch.passed_after);
            more = more && interner.survey_wants_more();
            if batch.long.is_none() {
                batch.bytes.clear();
                batch.lines.clear();
                batch.passed_after = 0;
                let _ = back.try_send(batch);
            }
            if !more {
                break;
            }
        }
        // Gone, they stop the reading side at its next hand-over (a MiB of lines at most
        // on), or where it waits.
        drop(rx);
        reading
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The bytes of lines too short to look into that the survey's reading thread passes
/// over before it tells the surveying side, with no line to look into.
const PASSED_TOLD: u64 = 1 << 20;

/// Lines the survey's reading thread hands over, one after another in `bytes`: for each,
/// the bytes of the lines before it that were too short to look into, and its length.
#[derive(Default)]
struct Surveyed {
    bytes: Vec<u8>,
    lines: Vec<(u64, usize)>,
    /// The bytes of lines too short to look into after the last of `lines`.
    passed_after: u64,
    /// One long line alone, lent: its reader waits until it has been looked into.
    long: Option<Lent>,
}

/// Reads the lines of plain files into `take`, with whether the survey looks into each
/// ([`Packer::surveys`]), until the end or until `take` returns false (true: the survey is
/// done), or until a line reads as interned (false).
fn survey_lines(
    inputs: &[Input],
    packer: &mut Packer,
    take: &mut dyn FnMut(&[u8], bool) -> bool,
) -> Result<bool, Error> {
    for input in inputs {
        packer.start_input(input.path());
        let name = input.name();
        let file = std::fs::File::open(input.path().expect("a file"))
            .at(Place::file(&name), "cannot open")?;
        let mut lines = crate::io::LineReader::new(file);
        crate::input::refuse_binary_head(&mut lines, &name)?;
        loop {
            let offset = lines.offset();
            let line = lines
                .next_line()
                .at_with(|| Place::file(&name).offset(offset), "cannot read")?;
            let Some(line) = line else { break };
            if intern::is_interned(line.bytes) {
                return Ok(false);
            }
            if !take(line.bytes, packer.surveys(line.bytes)) {
                return Ok(true);
            }
        }
    }
    Ok(true)
}

/// Where packed lines go: plain packed JSONL, or zstd frames, their repeated values
/// interned ([`crate::intern`]) in both. Plain output holds the very lines the frames
/// would (stock `zstd -dc` of the frames gives it back), so it counts the frames it would
/// have been cut into.
pub enum Out<W: Write> {
    Plain(InternWriter<Counted<W>>),
    Frames(InternWriter<FrameWriter<W>>),
}

/// Interning: values of at least `min` bytes (0: none), within `window` bytes of them.
#[derive(Debug, Clone, Copy)]
pub struct Interning {
    pub min: usize,
    pub window: u64,
}

impl Interning {
    pub const NONE: Interning = Interning { min: 0, window: 0 };

    /// The interner of what is packed. A chunk row (one message's streamed pieces: a
    /// later row does not repeat them) is not looked into: on the 1 GiB DSH log that took
    /// the pack from 1.33-1.36 s to 1.21-1.28 s, and no real log or synth we have had a
    /// value of a row interned.
    fn writer(self, frame_size: usize) -> intern::Writer {
        intern::Writer::new(self.min, self.window)
            .near(frame_size as u64)
            .passing(rows::starts_as_row)
            .streaming(snapshots::is_row)
    }
}

impl<W: Write> Out<W> {
    /// Plain packed JSONL, as frames of `frame_size` would hold it.
    pub fn plain(w: W, frame_size: usize, interning: Interning) -> Out<W> {
        let counted = Counted {
            inner: BufWriter::with_capacity(256 * 1024, w),
            count: FrameCount::new(frame_size),
        };
        Out::Plain(InternWriter::new(counted, interning.writer(frame_size)))
    }

    pub fn frames(w: FrameWriter<W>, interning: Interning) -> Out<W> {
        let size = w.options().frame_size;
        Out::Frames(InternWriter::new(w, interning.writer(size)))
    }

    /// The interner: a first pass over a file input shows it which values repeat
    /// ([`intern::Writer::survey`]).
    pub fn interner(&mut self) -> &mut intern::Writer {
        match self {
            Out::Plain(w) => w.writer_mut(),
            Out::Frames(f) => f.writer_mut(),
        }
    }

    /// Offers the input as it was, for a log of one frame ([`FrameWriter::offer_same`]).
    pub fn offer_same(&mut self, same: Vec<u8>) {
        if let Out::Frames(f) = self {
            f.get_mut().offer_same(same);
        }
    }

    /// What interning did so far.
    pub fn interned(&mut self) -> Interned {
        let (refs, bytes) = match self {
            Out::Plain(w) => w.counts(),
            Out::Frames(f) => f.counts(),
        };
        Interned {
            refs,
            bytes,
            index_bytes: self.interner().index_peak(),
        }
    }

    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            Out::Plain(w) => w,
            Out::Frames(f) => f,
        }
    }

    /// The window expired: everything pending goes out now, through to the output.
    pub fn flush_window(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.flush(),
            Out::Frames(f) => f.get_mut().flush_frame(),
        }
    }

    /// The output underneath.
    pub fn get_ref(&self) -> &W {
        match self {
            Out::Plain(w) => w.get_ref().inner.get_ref(),
            Out::Frames(f) => f.get_ref().get_ref(),
        }
    }

    /// Writes what is pending (and the index, for frames) and hands the output back.
    pub fn finish(self) -> io::Result<W> {
        match self {
            Out::Plain(w) => w.finish()?.inner.into_inner().map_err(|e| e.into_error()),
            Out::Frames(f) => Ok(f.finish()?.finish()?.0),
        }
    }
}

/// What interning did: references written, the bytes they stand for, and the bytes of
/// the window's index at its largest ([`intern::Writer::index_peak`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Interned {
    pub refs: u64,
    pub bytes: u64,
    pub index_bytes: u64,
}

/// Plain output that counts the frames sess's frame writer would cut from it.
pub struct Counted<W: Write> {
    inner: BufWriter<W>,
    count: FrameCount,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_all(buf)?;
        self.count.add(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> intern::Framed for Counted<W> {
    fn next_frame(&self) -> u64 {
        self.count.frames
    }

    fn last_line_frame(&self) -> u64 {
        self.count
            .frames
            .saturating_sub(u64::from(self.count.pending() == 0))
    }
}

impl<W: Write> intern::Framed for FrameWriter<W> {
    fn next_frame(&self) -> u64 {
        self.frames_written() as u64
    }

    fn last_line_frame(&self) -> u64 {
        // Written with its newline just now: still pending, or in the frame just cut.
        (self.frames_written() as u64).saturating_sub(u64::from(self.pending() == 0))
    }

    fn needs(&mut self, frame: u64, earliest: u64) {
        FrameWriter::needs(self, frame, earliest);
    }
}

/// What `sess pack` would write, estimated as it goes (`sess stats`). The `--plain` rows
/// written to it are counted, then interned as the packer interns them, cut into frames
/// as the frame writer cuts them, and each frame is compressed at level 3 (after the
/// interning, that is a small part of the cost). An estimate only because it reads the
/// input once, as from a pipe: the packer, given a file, surveys it first and defines a
/// value where it first occurs, not where it occurs again, and writes a log of one frame
/// as the input came when that is smaller.
pub struct Estimate {
    plain: u64,
    frames: InternWriter<Frames>,
}

/// The figures of an [`Estimate`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimated {
    /// What `sess pack --plain` writes.
    pub plain: u64,
    /// What the frames hold: the rows, interned.
    pub interned: u64,
    /// The bytes interning refers to instead of writing them again.
    pub referenced: u64,
    pub frames: u64,
    /// What `sess pack` writes, estimated: the frames and their index.
    pub packed: u64,
}

impl Estimate {
    /// An estimate for frames of `frame_size` (`sess pack` cuts [`crate::frames::writer::DEFAULT_FRAME_SIZE`]).
    pub fn new(frame_size: usize) -> io::Result<Estimate> {
        let mut compressor = zstd::bulk::Compressor::new(3)?;
        compressor.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
        compressor.set_parameter(zstd::stream::raw::CParameter::ContentSizeFlag(true))?;
        let interning = Interning {
            min: intern::DEFAULT_MIN,
            window: intern::DEFAULT_WINDOW,
        };
        let frames = Frames {
            cutter: Cutter::new(frame_size),
            pending: Vec::new(),
            frames: 0,
            bytes: 0,
            compressed: 0,
            compressor,
        };
        Ok(Estimate {
            plain: 0,
            frames: InternWriter::new(frames, interning.writer(frame_size)),
        })
    }

    /// The input ended: the last frame is cut, and the figures are final. `same`: the
    /// input as it came, when it fit in one frame ([`Same`]).
    pub fn finish(self, same: Option<Vec<u8>>) -> io::Result<Estimated> {
        let (_, referenced) = self.frames.counts();
        let mut s = self.frames.finish()?;
        // A log of one frame is also compressed at a stronger level, and so is the input as
        // it came, as the frame writer does; the smallest is written (with its checksum).
        let strong = |bytes: &[u8]| -> io::Result<u64> {
            Ok(zstd::bulk::compress(bytes, ONLY_FRAME_LEVEL)?.len() as u64 + 4)
        };
        let strong = match s.frames {
            0 => Some(match same.filter(|b| !b.is_empty() && *b != s.pending) {
                Some(same) => strong(&s.pending)?.min(strong(&same)?),
                None => strong(&s.pending)?,
            }),
            _ => None,
        };
        if !s.pending.is_empty() {
            s.frame(s.pending.len())?;
        }
        if let Some(strong) = strong {
            s.compressed = s.compressed.min(strong);
        }
        let index = if s.frames > 1 {
            Index::encoded_len(s.frames as usize)
        } else {
            0
        };
        Ok(Estimated {
            plain: self.plain,
            interned: s.bytes,
            referenced,
            frames: s.frames,
            packed: s.compressed + index,
        })
    }
}

impl Write for Estimate {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.plain += buf.len() as u64;
        self.frames.write_all(buf)?;
        Ok(buf.len())
    }

    /// A line and its newline go on together, to be interned where they lie, as when
    /// packing: apart, the line was gathered into a copy first.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let n = self.frames.write_vectored(bufs)?;
        self.plain += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Frames as the frame writer cuts them, compressed and counted.
struct Frames {
    cutter: Cutter,
    pending: Vec<u8>,
    frames: u64,
    bytes: u64,
    /// The bytes the frames compressed to.
    compressed: u64,
    compressor: zstd::bulk::Compressor<'static>,
}

impl Frames {
    fn frame(&mut self, n: usize) -> io::Result<()> {
        self.compressed += self.compressor.compress(&self.pending[..n])?.len() as u64;
        self.frames += 1;
        self.bytes += n as u64;
        self.pending.drain(..n);
        self.cutter.reset();
        Ok(())
    }
}

impl Write for Frames {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A long line is held whole here (the frame writer compresses it as it comes).
        (self.pending.try_reserve(buf.len())).map_err(|_| NoRoom(buf.len()))?;
        self.pending.extend_from_slice(buf);
        while let Some(n) = self.cutter.next(&self.pending) {
            self.frame(n)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl intern::Framed for Frames {
    fn next_frame(&self) -> u64 {
        self.frames
    }

    fn last_line_frame(&self) -> u64 {
        self.frames
            .saturating_sub(u64::from(self.pending.is_empty()))
    }
}

/// A line a batch of [`Events`] had no memory for (its length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoRoom(pub usize);

impl NoRoom {
    /// The error, naming the line (of `name`) that did not fit: it ends reading, as a
    /// line too long to rebuild does ([`crate::intern::Error::into_fatal`]).
    pub fn at(self, name: &str, line: &crate::io::Line<'_>) -> Error {
        held(name, line, self.into())
    }

    /// The error, naming only the file: the line was taken before memory ran out for it.
    pub fn in_file(self, name: &str) -> Error {
        Error::io(Place::file(name), "cannot hold a line", self.into())
    }
}

impl From<NoRoom> for io::Error {
    fn from(e: NoRoom) -> io::Error {
        crate::io::memory::no_room(e.0)
    }
}

/// `e` (memory ran out for the line, [`NoRoom`]), naming `line` of `name`.
fn held(name: &str, line: &crate::io::Line<'_>, e: io::Error) -> Error {
    held_at(line_at(name, line), e)
}

fn held_at(place: Place, e: io::Error) -> Error {
    Error::io(place, "cannot hold the line", e)
}

/// Where `line` of `name` is.
pub fn line_at(name: &str, line: &crate::io::Line<'_>) -> Place {
    Place::line(name, line.number).offset(line.offset)
}

/// Logical events read, on their way to the packing thread: their bytes end to end, and
/// where each ends and whether it had a newline. Handed over a batch at a time, so that a
/// fast producer costs one hand-over per batch, not per line.
#[derive(Debug, Default)]
pub struct Events {
    bytes: Vec<u8>,
    ends: Vec<(usize, bool)>,
    /// The events read as chunk deltas, by their place in the batch, and their parts.
    known: Vec<(usize, rows::MemberAt)>,
}

impl Events {
    /// The most bytes a batch gathers before it is handed over.
    pub const BATCH: usize = 256 * 1024;

    pub fn push(&mut self, line: &[u8], newline: bool) -> Result<(), NoRoom> {
        self.push_read(line, newline, None)
    }

    /// [`Events::push`] of a line read as a chunk delta (`known`, its parts) or not.
    pub fn push_read(
        &mut self,
        line: &[u8],
        newline: bool,
        known: Option<&rows::MemberAt>,
    ) -> Result<(), NoRoom> {
        // An interned line of a few KB can stand for gigabytes: once rebuilt, its copy here
        // may not fit where the line did, and an allocation that fails aborts.
        (self.bytes.try_reserve(line.len())).map_err(|_| NoRoom(line.len()))?;
        if let Some(at) = known {
            self.known.push((self.ends.len(), *at));
        }
        self.bytes.extend_from_slice(line);
        self.ends.push((self.bytes.len(), newline));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Empties the batch, keeping its room.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.known.clear();
    }

    /// The most events a batch gathers (empty lines add no bytes, but an end each).
    pub const EVENTS: usize = 16 * 1024;

    /// Whether the batch is big enough to hand over.
    pub fn is_full(&self) -> bool {
        self.bytes.len() >= Events::BATCH || self.ends.len() >= Events::EVENTS
    }

    /// Each event and whether it had a newline, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], bool)> {
        self.iter_read().map(|(line, newline, _)| (line, newline))
    }

    /// Each event, whether it had a newline, and its parts when it was read as a chunk
    /// delta, in order.
    pub fn iter_read(&self) -> impl Iterator<Item = (&[u8], bool, Option<&rows::MemberAt>)> {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|&(end, _)| end));
        let mut known = self.known.iter().peekable();
        starts
            .zip(&self.ends)
            .enumerate()
            .map(move |(k, (start, &(end, newline)))| {
                let at = known.next_if(|&&(i, _)| i == k).map(|(_, at)| at);
                (&self.bytes[start..end], newline, at)
            })
    }
}

/// What the reading side of a stream sends.
pub enum Msg {
    /// A new input begins (its path, when it is a file).
    Input(Option<std::path::PathBuf>),
    /// Logical events, in order.
    Events(Events),
    /// One event of [`LONG_EVENT`] bytes or more, lent.
    Long(Long),
    /// The input ended (the reader reports how, when joined).
    Done,
    /// A signal asked to stop: finish what is pending and stop.
    Interrupt(i32),
}

/// An event lent by the reading side ([`crate::io::lend`]), which waits, its buffer
/// untouched, until this is dropped: packed, or dropped unread by a packing side that
/// stopped.
pub struct Long {
    line: Lent,
    newline: bool,
    known: Option<rows::MemberAt>,
    /// Where it is, for an error packing it: on one thread, or copied into a batch, the
    /// reading side named the line.
    place: Place,
}

impl Long {
    pub fn new(line: Lent, newline: bool, known: Option<rows::MemberAt>, place: Place) -> Long {
        Long {
            line,
            newline,
            known,
            place,
        }
    }

    /// `e`, met packing it: when memory ran out, naming the line.
    fn failed(&self, e: io::Error) -> io::Error {
        match e.kind() {
            io::ErrorKind::OutOfMemory => io::Error::new(e.kind(), held_at(self.place.clone(), e)),
            _ => e,
        }
    }
}

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Input,
    Signal(i32),
}

/// Packs the events that arrive on `rx` into `out`, flushing everything pending when the
/// window opened by the oldest pending event expires (the window does not reset on later
/// events). Returns the events packed and how the stream ended; `out` is left to finish.
pub fn stream<W: Write>(
    rx: &Receiver<Msg>,
    window: Duration,
    packer: &mut Packer,
    out: &mut Out<W>,
) -> io::Result<(u64, Ended)> {
    let mut events = 0;
    // When the oldest event not yet written out arrived.
    let mut opened: Option<Instant> = None;
    loop {
        let msg = match opened {
            Some(t) => rx.recv_timeout((t + window).saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match msg {
            Ok(Msg::Input(path)) => {
                packer.end_input(out.writer())?;
                packer.start_input(path.as_deref());
            }
            Ok(Msg::Events(batch)) => {
                for (line, newline) in batch.iter() {
                    opened.get_or_insert_with(Instant::now);
                    events += 1;
                    packer.event(line, newline, out.writer())?;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                // An open row is written as it stands: a shorter row, or its events.
                packer.finish(out.writer())?;
                out.flush_window()?;
                opened = None;
            }
            Ok(Msg::Done) | Err(RecvTimeoutError::Disconnected) => {
                return Ok((events, Ended::Input));
            }
            Ok(Msg::Long(long)) => {
                opened.get_or_insert_with(Instant::now);
                events += 1;
                let packed = packer.event(long.line.bytes(), long.newline, out.writer());
                packed.map_err(|e| long.failed(e))?;
            }
            Ok(Msg::Interrupt(sig)) => return Ok((events, Ended::Signal(sig))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::writer::FrameOptions;

    fn batch_of(bytes: usize) -> Events {
        let mut e = Events::default();
        e.push(&vec![b'x'; bytes], true).unwrap();
        e
    }

    #[test]
    fn every_batch_back_is_filled_again_and_one_of_long_lines() {
        // Filled as the reading side fills them: past BATCH by a line, grown by doubling.
        let filled = || {
            let mut e = Events::default();
            while !e.is_full() {
                e.push(&[b'x'; 200], true).unwrap();
            }
            e
        };
        let (back, returned) = std::sync::mpsc::channel();
        let mut out = BatchesOut::default();
        let n = BATCHES_OUT / Events::BATCH / 2;
        for _ in 0..n {
            out.hand_over(&mut filled(), &returned).unwrap();
        }
        // All come back: each is filled again, none grows afresh.
        for _ in 0..n {
            back.send(filled()).unwrap();
        }
        for _ in 0..n {
            let mut next = filled();
            out.hand_over(&mut next, &returned).unwrap();
            assert!(next.is_empty() && next.bytes.capacity() >= Events::BATCH);
        }
        // Of batches that held long lines, one is kept (and filled first); none that held
        // a line of LONG_EVENT or more.
        for len in [LONG_EVENT, 3 << 20, 4 << 20, 1000] {
            (out.batches, out.bytes) = (out.batches + 1, out.bytes + len);
            out.take_back(batch_of(len));
        }
        let mut next = filled();
        out.hand_over(&mut next, &returned).unwrap();
        assert_eq!(next.bytes.capacity(), 3 << 20);
        assert!(out.long_spare.is_none());
        assert!(out.spares.iter().all(|s| s.bytes.capacity() < 1 << 20));
    }

    #[test]
    fn batches_of_long_lines_wait_for_room_and_each_is_filled_again() {
        use std::sync::atomic::{AtomicBool, Ordering};
        // Past the bytes out, but short of a line that is lent (whose batch is not kept).
        let big = BATCHES_OUT + BATCHES_OUT / 2;
        let (back, returned) = std::sync::mpsc::channel();
        let mut out = BatchesOut::default();
        let mut batch = batch_of(big);
        out.hand_over(&mut batch, &returned).unwrap();
        assert!(batch.is_empty());
        out.hand_over(&mut batch_of(big), &returned).unwrap();
        // Two long batches are out: a third waits until one is back, and is filled next.
        let sent = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                sent.store(true, Ordering::SeqCst);
                back.send(batch_of(big)).unwrap();
            });
            let mut next = batch_of(big);
            out.hand_over(&mut next, &returned).unwrap();
            assert!(sent.load(Ordering::SeqCst), "it did not wait");
            // The one back, whose pages are there already.
            assert!(next.is_empty() && next.bytes.capacity() >= big);
        });
        assert_eq!((out.batches, out.bytes), (2, 2 * big));
        // Small batches: several may be out at once, and one back is filled again.
        let mut small = BatchesOut::default();
        for _ in 0..4 {
            small
                .hand_over(&mut batch_of(Events::BATCH), &returned)
                .unwrap();
        }
        back.send(batch_of(Events::BATCH)).unwrap();
        let mut next = batch_of(Events::BATCH);
        small.hand_over(&mut next, &returned).unwrap();
        assert!(next.is_empty() && next.bytes.capacity() >= Events::BATCH);
        assert_eq!(small.batches, 4);
        // With the packing side gone, one that must wait is not handed over.
        drop(back);
        assert!(out.hand_over(&mut batch_of(big), &returned).is_none());
    }

    #[test]
    fn plain_files_are_surveyed_straight_unless_a_line_is_interned() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            Input::Path(p)
        };
        let plain = file("a.jsonl", b"{\"a\":1}\n{\"b\":2}");
        let interned = [intern::PREFIX, b"],\"refs\":[],\"line\":{}}\n"].concat();
        let interned = file("b.jsonl", &interned);
        let zst = file("c.jsonl.zst", &zstd::encode_all(&b"{}\n"[..], 3).unwrap());
        let mut w = intern::Writer::new(intern::DEFAULT_MIN, intern::DEFAULT_WINDOW);
        for threads in [1, 2] {
            let packer = &mut Packer::default();
            assert!(raw_survey(std::slice::from_ref(&plain), threads, packer, &mut w).unwrap());
            for other in [&interned, &zst, &Input::Stdin] {
                let inputs = [plain.clone(), other.clone()];
                let whole = raw_survey(&inputs, threads, packer, &mut w).unwrap();
                assert!(!whole, "{:?}", inputs[1]);
            }
        }
    }

    /// The survey does not look into snapshot frames (a pi tool_execution_update), with one
    /// thread or two, read straight or the general way (a zstd file): what they hold is
    /// not counted. The same values in other lines are.
    #[test]
    fn the_survey_passes_over_snapshot_frames() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(400);
        let log = |kind: &str| {
            (0..20)
                .map(|k| {
                    format!(r#"{{"type":"{kind}","toolCallId":"t1","partialResult":"{big}{k}"}}"#)
                })
                .collect::<Vec<_>>()
                .join("\n")
                + "\n"
        };
        let pi = Choice::parse("pi").unwrap();
        for kind in ["tool_execution_update", "tool_execution_start"] {
            let text = log(kind);
            let plain = dir.path().join(format!("{kind}.jsonl"));
            std::fs::write(&plain, &text).unwrap();
            let zst = dir.path().join(format!("{kind}.jsonl.zst"));
            std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
            for (path, threads) in [(&plain, 1), (&plain, 2), (&zst, 2)] {
                let mut w = intern::Writer::new(intern::DEFAULT_MIN, intern::DEFAULT_WINDOW);
                let packer = &mut Packer::new(pi.clone());
                let inputs = [Input::Path(path.clone())];
                survey(&inputs, OpenOptions::default(), threads, packer, &mut w).unwrap();
                let frames = kind == "tool_execution_update";
                assert_eq!(w.index_peak() == 0, frames, "{kind} {path:?} {threads}");
            }
        }
    }

    /// A survey that found no repeat in its first frames stops reading there, on every
    /// path (one thread or two, read straight or the general way, a long line last seen):
    /// a value that repeats only after that is not found. One that repeated early keeps
    /// it reading to the end.
    #[test]
    fn a_survey_stops_reading_when_its_first_frames_hold_no_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let near = 4096;
        let value = |k: usize| format!(r#""{}{k}""#, "v".repeat(400));
        let log = |early: bool, long: bool| {
            let mut lines: Vec<String> = (0..200).map(value).collect();
            if early {
                lines[20] = value(0);
            }
            if long {
                lines.push(format!(r#""{}""#, "L".repeat(LONG_EVENT)));
            }
            let late = value(1000);
            lines.push(late.clone());
            lines.extend((300..312).map(value));
            lines.push(late);
            lines.join("\n") + "\n"
        };
        for (early, long) in [(false, false), (false, true), (true, false)] {
            let text = log(early, long);
            let plain = dir.path().join("log.jsonl");
            std::fs::write(&plain, &text).unwrap();
            let zst = dir.path().join("log.jsonl.zst");
            std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 1).unwrap()).unwrap();
            for (path, threads) in [(&plain, 1), (&plain, 2), (&zst, 2)] {
                let mut w =
                    intern::Writer::new(intern::DEFAULT_MIN, intern::DEFAULT_WINDOW).near(near);
                let inputs = [Input::Path(path.clone())];
                survey(
                    &inputs,
                    OpenOptions::default(),
                    threads,
                    &mut Packer::default(),
                    &mut w,
                )
                .unwrap();
                let want = if early { 2 } else { 0 };
                assert_eq!(w.repeats(), want, "{path:?} {threads} long {long}");
            }
        }
    }

    /// A chunk row is not looked into by the interner: a message streamed twice, a frame
    /// and more apart, packs to two rows written whole, where a line of the same values
    /// that is not a row is interned.
    #[test]
    fn chunk_rows_are_not_interned() {
        let frame = 16 << 10;
        let interning = Interning {
            min: intern::DEFAULT_MIN,
            window: intern::DEFAULT_WINDOW,
        };
        let message = |seq0: usize| -> Vec<String> {
            (0..100)
                .map(|i| {
                    format!(
                        r#"{{"type":"assistant/chunk","seq":{},"time":{i},"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"piece {i} of a long answer"}}}}}}"#,
                        seq0 + i
                    )
                })
                .collect()
        };
        let filler: Vec<String> = (0..200)
            .map(|k| format!(r#"{{"type":"note","k":{k},"text":"{}"}}"#, words(k, 20)))
            .collect();
        let pack = |lines: &[String]| -> String {
            let mut out = Out::plain(Vec::new(), frame, interning);
            let mut packer = Packer::default();
            for l in lines {
                packer.event(l.as_bytes(), true, out.writer()).unwrap();
            }
            packer.finish(out.writer()).unwrap();
            String::from_utf8(out.finish().unwrap()).unwrap()
        };
        let log = [message(0), filler.clone(), message(1000)].concat();
        let packed = pack(&log);
        assert_eq!(packed.matches("text-chunks").count(), 2, "{packed}");
        assert!(!packed.contains("sess-interned"), "{packed}");
        // The same long value in lines that are not rows is interned.
        let long = format!(r#"{{"type":"note","text":"{}"}}"#, words(7, 100));
        let plain = pack(&[vec![long.clone()], filler, vec![long.clone(), long]].concat());
        assert!(plain.contains("sess-interned"), "{plain}");
    }

    /// With no line long enough to look into, the survey still stops at its probe, on two
    /// threads as on one: reading never reaches what lies far beyond (here an interned
    /// line, which would send the survey back to the start the general way). The reading
    /// side cannot run more than a few batches of passed lines ahead of the surveying side.
    #[test]
    fn a_survey_of_short_lines_stops_reading_at_its_probe() {
        let dir = tempfile::tempdir().unwrap();
        let mut text: Vec<u8> = (0..1_500_000)
            .flat_map(|k| format!("{{\"k\":{k}}}\n").into_bytes())
            .collect();
        assert!(text.len() > 16 << 20);
        text.extend_from_slice(intern::PREFIX);
        text.extend_from_slice(b"],\"refs\":[],\"line\":{}}\n");
        let path = dir.path().join("short.jsonl");
        std::fs::write(&path, &text).unwrap();
        for threads in [1, 2] {
            let mut w = intern::Writer::new(intern::DEFAULT_MIN, intern::DEFAULT_WINDOW).near(4096);
            let inputs = [Input::Path(path.clone())];
            let whole = raw_survey(&inputs, threads, &mut Packer::default(), &mut w).unwrap();
            assert!(
                whole,
                "{threads} threads: the survey read on to the interned line"
            );
        }
    }

    /// Text of `n` words, different for each `seed`.
    fn words(seed: usize, n: usize) -> String {
        const WORDS: [&str; 12] = [
            "read", "the", "file", "error", "fix", "build", "test", "value", "path", "line",
            "token", "stream",
        ];
        let mut x = (seed as u64).wrapping_mul(2_862_933_555_777_941_757) + 3_037_000_493;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                WORDS[(x >> 33) as usize % WORDS.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A history that grows by a message a line, with a blob repeated in every line.
    fn growing(lines: usize) -> Vec<u8> {
        let blob = words(0, 600);
        let mut out = String::new();
        for k in 1..=lines {
            let hist: Vec<String> = (0..k)
                .map(|i| format!(r#"{{"i":{i},"text":"{}"}}"#, words(i + 1, 40)))
                .collect();
            out += &format!(
                "{{\"k\":{k},\"blob\":\"{blob}\",\"hist\":[{}]}}\n",
                hist.join(",")
            );
        }
        out.into_bytes()
    }

    #[test]
    fn the_estimate_is_what_frames_written_as_from_a_pipe_hold() {
        let log = growing(150);
        let size = 16 << 10;
        let mut estimate = Estimate::new(size).unwrap();
        let writer = FrameWriter::new(Vec::new(), FrameOptions::new(3, size)).unwrap();
        let interning = Interning {
            min: intern::DEFAULT_MIN,
            window: intern::DEFAULT_WINDOW,
        };
        let mut out = Out::frames(writer, interning);
        estimate.write_all(&log).unwrap();
        out.writer().write_all(&log).unwrap();
        let real = out.finish().unwrap().len() as f64;
        let e = estimate.finish(None).unwrap();
        assert_eq!(e.plain, log.len() as u64);
        assert!(e.referenced > log.len() as u64 * 9 / 10, "{e:?}");
        assert!(e.frames > 8, "{e:?}");
        // The same interning, the same frames: the same bytes, but for the index.
        assert_eq!(e.packed as f64, real, "{e:?}");
    }
}
