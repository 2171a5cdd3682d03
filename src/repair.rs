//! Salvages a damaged or torn log, keeping every complete record and reporting the rest by
//! byte range and line range.
//!
//! - A compressed log ([`salvage_zstd`]): every frame that decodes is copied as it is (not
//!   recompressed); the complete lines of a torn final frame are compressed into a new
//!   frame; a last line without a newline is kept with one added when it is a whole JSON
//!   value, and dropped as torn when it is not; a new index is written. An interned line
//!   ([`crate::intern`]) that needs a value defined in a lost frame can never be read
//!   back: it is dropped and reported too (its frame written again without it). A later
//!   line that refers to a value only such a line defined (outside what it lacks) is
//!   rebuilt and written to stand alone ([`intern::standalone`]), so that the output
//!   holds the lines `cat --recovery skip-corrupt` gives, and reads back whole.
//! - A plain log ([`salvage_plain`]): every line that is one valid JSON value is kept byte
//!   for byte (a last one without a newline gets one), and so is each record among the
//!   zero bytes a crash left in a line; the others are dropped.
//!
//! Every decode is a stream, so memory stays small whatever a frame holds.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::frames::audit;
use crate::frames::decode::{self, LineStats, Outcome};
use crate::frames::index::{Entry, Index};
use crate::frames::reader::is_cut_end;
use crate::frames::walk::{self, End, Kind, Span, ZSTD_MAGIC};
use crate::frames::writer::{FrameMeta, FrameWriter};
use crate::intern;
use crate::io::{Ending, LineReader};
use crate::json;

/// A stretch of the input that could not be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub from: u64,
    pub to: u64,
    /// Lines of the original before the loss (exact while every earlier loss has a known
    /// line count).
    pub after_line: u64,
    /// Lines lost, when known (the old index says, or the loss is one line).
    pub lines: Option<u64>,
    pub why: String,
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.after_line;
        write!(f, "bytes {}..{} ({})", self.from, self.to, self.why)?;
        match self.lines {
            Some(0) => write!(f, ", no lines, after line {n}"),
            Some(1) => write!(f, ": line {} of the original", n + 1),
            Some(k) => write!(f, ": lines {}..{} of the original", n + 1, n + k),
            None => write!(f, ": an unknown number of lines after line {n}"),
        }
    }
}

/// What a salvage kept and lost.
#[derive(Debug, Default)]
pub struct RepairReport {
    pub frames_kept: u64,
    pub lines_kept: u64,
    /// Complete lines saved from a torn final frame (not covered by a checksum).
    pub torn_lines_kept: u64,
    /// Frames kept that have no content checksum, so nothing vouches for their bytes.
    pub unchecked_frames: u64,
    /// A last line without a newline that was kept, with the newline added.
    pub newline_added: Option<u64>,
    pub losses: Vec<Loss>,
}

impl RepairReport {
    /// Whether the input held something and none of it survived.
    pub fn nothing_survived(&self) -> bool {
        self.lines_kept == 0 && !self.losses.is_empty()
    }

    /// Records a loss, as part of the last one when it goes on from it: so memory grows
    /// with the runs of lines lost, not with the lines.
    fn lost(&mut self, loss: Loss) {
        match self.losses.last_mut() {
            Some(last) if last.goes_on_to(&loss) => {
                last.to = loss.to;
                last.lines = Some(last.lines.unwrap_or(0) + loss.lines.unwrap_or(0));
            }
            _ => self.losses.push(loss),
        }
    }
}

impl Loss {
    /// Whether `next` is the lines right after this loss's, in the same bytes (a frame) or
    /// the bytes right after them, lost for the same kind of reason (the words before the
    /// first `: `, which name the kind; the rest names the line's own details).
    fn goes_on_to(&self, next: &Loss) -> bool {
        fn kind(why: &str) -> Option<&str> {
            why.split(": ").next()
        }
        let (Some(a), Some(b)) = (self.lines, next.lines) else {
            return false;
        };
        let bytes = (self.from, self.to) == (next.from, next.to) || self.to == next.from;
        a > 0
            && b > 0
            && self.after_line + a == next.after_line
            && bytes
            && kind(&self.why) == kind(&next.why)
    }
}

/// Copies every good frame of `f` into `out` and reports the rest.
pub fn salvage_zstd<W: Write>(f: &mut File, out: &mut FrameWriter<W>) -> io::Result<RepairReport> {
    let len = f.metadata()?.len();
    let old = match Index::read_from(f)? {
        Some(Ok((index, _))) => Some(index),
        _ => None,
    };
    let entries = old.map(|i| i.entries).unwrap_or_default();
    let at_entry = |offset: u64| entries.binary_search_by_key(&offset, |e| e.offset).ok();
    let listed = |offset: u64| at_entry(offset).map(|k| entries[k]);
    // The lines of the frames the old index lists from `from` to `to`, when both are
    // where it puts a frame (or `to` where its last frame ends).
    let lines_between = |from: u64, to: u64| {
        let end = entries.last().map(|e| e.offset + u64::from(e.compressed));
        let upto = at_entry(to).or((Some(to) == end).then_some(entries.len()))?;
        let lines = entries[at_entry(from)?..upto]
            .iter()
            .map(|e| u64::from(e.lines));
        Some(lines.sum())
    };
    let mut s = Salvager {
        f,
        len,
        report: RepairReport::default(),
        line: 0,
        readers: Readers::default(),
        spill: None,
        untouched: true,
        carry: Vec::new(),
        cut: None,
    };
    let mut at = 0;
    while at < len {
        at = match walk::frame_at(s.f, at, len)? {
            Ok(span) if matches!(span.kind, Kind::Skippable { .. }) => at + span.len,
            Ok(span) => match s.frame(&span, listed(at), out)? {
                Some(why) => {
                    // Its blocks' headers may be what is damaged, and the length they add
                    // up to wrong: the next good frame is searched for from its second
                    // byte, as readers do.
                    let next = next_good_frame(s.f, at + 1, len)?.unwrap_or(len);
                    let lines = lines_between(at, next);
                    s.lose_bytes(at, next, lines, format!("the frame does not decode: {why}"));
                    next
                }
                None => at + span.len,
            },
            // A cut inside the index: it holds no lines.
            Err(End::Torn {
                offset,
                skippable: true,
            }) => {
                let why = "a torn index (a new one is written)".to_string();
                s.lose(offset, len, Some(0), why);
                len
            }
            // A frame that runs past the end with a good frame after it is damaged, not
            // torn.
            Err(End::Torn { offset, .. }) => match next_good_frame(s.f, offset + 1, len)? {
                Some(next) => {
                    let why = "the frame does not decode: its blocks run past the end".into();
                    s.lose_bytes(offset, next, lines_between(offset, next), why);
                    next
                }
                None => {
                    s.torn(offset, out)?;
                    len
                }
            },
            // A frame whose magic is damaged is garbage at a place the index may list.
            Err(End::Garbage { offset, why }) => {
                let next = next_good_frame(s.f, offset + 1, len)?.unwrap_or(len);
                s.lose_bytes(offset, next, lines_between(offset, next), why);
                next
            }
            Err(End::Clean) => unreachable!("frame_at never reports a clean end"),
        };
    }
    s.last_line(out)?;
    Ok(s.report)
}

struct Salvager<'f> {
    f: &'f mut File,
    len: u64,
    report: RepairReport,
    /// Lines of the original read so far: kept, plus lost where the count is known.
    line: u64,
    readers: Readers,
    /// The lines of the frame being planned that are written to stand alone, in order,
    /// each after its length (u64, little-endian), until the frame is written again.
    spill: Option<File>,
    /// Whether every frame so far was copied as it was: their places in the output are
    /// their places in the input, and what the old index says they need still holds.
    untouched: bool,
    /// The first bytes of a line the last frame ended inside (sess never cuts a line, pzstd
    /// and concatenated files may). Its readers must see it whole, so it is read and
    /// written with its end, from the next frame.
    carry: Vec<u8>,
    /// The next line read begins after lost bytes, which may have cut it: the lines its
    /// loss counts for (0 when the line it ends was counted with the bytes) if it is not a
    /// JSON value, the end of a cut line.
    cut: Option<u64>,
}

const CUT_END: &str = "the end of a line that lost bytes before it cut";

/// The lines of a frame (by index) not written as they are stored.
type Plan = Vec<(u64, Fate)>;

enum Fate {
    /// Lost, why, counting for this many lines of the original.
    Lost(String, u64),
    /// Written to stand alone, its bytes in the spill.
    Alone,
}

/// What a line of the input becomes.
enum Verdict {
    /// Written as it is stored.
    Keep,
    /// Dropped, why: it cannot be rebuilt.
    Lose(String),
    /// Written as these bytes: it stands alone.
    Alone(Vec<u8>),
}

/// The interned values as two readers have them.
#[derive(Default)]
struct Readers {
    /// Of every line read, kept or not, as `cat --recovery skip-corrupt` reads: a line that
    /// cannot be rebuilt still defines the values beside what it lacks.
    input: intern::Reader,
    /// Of the lines written, as a reader of the output will have them.
    output: intern::Reader,
    rebuilt: Vec<u8>,
    scratch: Vec<u8>,
}

impl Readers {
    /// What becomes of `line`, each reader having read it (or, for a line that stands
    /// alone, what is written instead). `glue`: a new file begins inside it, there
    /// ([`intern::glued`]).
    fn verdict(&mut self, line: &[u8], glue: Option<usize>) -> io::Result<Verdict> {
        if let Some(at) = glue {
            return self.verdict_glued(line, at);
        }
        if !intern::is_interned(line) {
            return Ok(Verdict::Keep);
        }
        if let Err(e) = self.input.read(line, &mut self.rebuilt) {
            return Ok(Verdict::Lose(unreadable(e.into_fatal()?)));
        }
        match self.output.read(line, &mut self.scratch) {
            Ok(()) if self.scratch == self.rebuilt => return Ok(Verdict::Keep),
            Ok(()) => {}
            // It refers to a value a dropped line defined.
            Err(e) => _ = e.into_fatal()?,
        }
        let mut alone = Vec::new();
        intern::standalone(line, &self.rebuilt, &mut alone).map_err(io::Error::other)?;
        self.alone(alone)
    }

    /// A glued line is written to stand alone: as it is stored, a reader would not see
    /// the interned line in it.
    fn verdict_glued(&mut self, line: &[u8], at: usize) -> io::Result<Verdict> {
        let second = match self.input.read_glued(line, at, &mut self.rebuilt) {
            Ok(second) => second,
            Err(e) => return Ok(Verdict::Lose(unreadable(e.into_fatal()?))),
        };
        let mut alone = Vec::new();
        intern::standalone_glued((line, at), (&self.rebuilt, second), &mut alone)
            .map_err(io::Error::other)?;
        self.alone(alone)
    }

    /// `alone`, a line written to stand alone, read by the reader of the output.
    fn alone(&mut self, alone: Vec<u8>) -> io::Result<Verdict> {
        match self
            .output
            .read(&alone, &mut self.scratch)
            .map_err(intern::Error::into_fatal)
        {
            Ok(()) => Ok(Verdict::Alone(alone)),
            Err(Err(e)) => Err(e),
            Err(Ok(e)) => Err(io::Error::other(format!(
                "a line written to stand alone: {e}"
            ))),
        }
    }
}

fn unreadable(e: intern::Error) -> String {
    format!("the line cannot be read back: {e}")
}

/// Decodes the one frame at the start of `src`, calling `f` with each complete line (without
/// its newline), the first one after `line`, the bytes of it an earlier frame held; returns
/// how decoding ended and the bytes after the last newline. With the line those bytes
/// begin, `f` gets where in it the frame's bytes begin when the two are glued
/// ([`intern::glued`]).
fn frame_lines<R: Read + ?Sized>(
    src: &mut R,
    mut line: Vec<u8>,
    mut f: impl FnMut(&[u8], Option<usize>) -> io::Result<()>,
) -> io::Result<(Outcome, Vec<u8>)> {
    // Judged on the whole first line, not on the first bytes decoded: a call may give none
    // (a block larger than the input buffer), or few.
    let mut carried = Some(line.len()).filter(|&n| n > 0);
    let outcome = decode::frame(src, |b| {
        for piece in b.split_inclusive(|&c| c == b'\n') {
            match piece.strip_suffix(b"\n") {
                Some(end) if line.is_empty() => f(end, None)?,
                Some(end) => {
                    line.extend_from_slice(end);
                    let glue = carried
                        .take()
                        .filter(|&at| intern::glued(&line[..at], &line[at..]));
                    f(&line, glue)?;
                    line.clear();
                }
                None => line.extend_from_slice(piece),
            }
        }
        Ok(())
    })?;
    Ok((outcome, line))
}

impl Salvager<'_> {
    /// Bytes from `from` to `to` are lost, and `lines` lines (when known) with them. When
    /// more follows, a line begun before them is cut, and so may be the one they end inside
    /// (unless the old index counted their lines: sess frames hold whole lines). At the
    /// end, a line begun before them is the last line.
    fn lose_bytes(&mut self, from: u64, to: u64, lines: Option<u64>, why: String) {
        let carried = to < self.len && !std::mem::take(&mut self.carry).is_empty();
        if to < self.len && (carried || lines.is_none()) {
            self.cut = Some(u64::from(!carried));
        }
        self.lose(from, to, lines.map(|n| n + u64::from(carried)), why);
    }

    /// The input is over: a line begun and not ended is the last line, kept (with a newline)
    /// when it is one JSON value that reads back, as the line reader keeps it.
    fn last_line<W: Write>(&mut self, out: &mut FrameWriter<W>) -> io::Result<()> {
        let line = std::mem::take(&mut self.carry);
        if line.is_empty() {
            return Ok(());
        }
        let verdict = match json::validate(&line) {
            Ok(()) => self.readers.verdict(&line, None)?,
            Err(_) => Verdict::Lose(format!(
                "a torn last line: {} byte(s) without a final newline that are not a JSON value",
                line.len()
            )),
        };
        let written = match verdict {
            Verdict::Lose(why) => {
                self.lose(self.len, self.len, Some(1), why);
                return Ok(());
            }
            Verdict::Keep => line,
            Verdict::Alone(bytes) => bytes,
        };
        out.write_all(&written)?;
        out.write_all(b"\n")?;
        self.keep(1);
        self.report.newline_added = Some(self.line);
        out.flush_frame()
    }

    fn lose(&mut self, from: u64, to: u64, lines: Option<u64>, why: String) {
        self.untouched = false;
        self.report.lost(Loss {
            from,
            to,
            after_line: self.line,
            lines,
            why,
        });
        self.line += lines.unwrap_or(0);
    }

    fn keep(&mut self, lines: u64) {
        self.report.lines_kept += lines;
        self.line += lines;
    }

    /// A whole zstd frame: copied if it decodes (re-encoded if it ends inside a line);
    /// why not, when it does not (its caller reports the loss).
    fn frame<W: Write>(
        &mut self,
        span: &Span,
        listed: Option<Entry>,
        out: &mut FrameWriter<W>,
    ) -> io::Result<Option<String>> {
        let mut stats = LineStats::default();
        let outcome = decode::frame(&mut self.bytes(span.offset, span.len)?, |b| {
            stats.add(b);
            Ok(())
        })?;
        let why = match outcome {
            Outcome::Complete => None,
            Outcome::Damaged(why) => Some(why),
            Outcome::Cut => Some("the frame ends early".to_string()),
        };
        if why.is_some() {
            return Ok(why);
        }
        // A frame sess wrote has a content checksum: one the index lists that has none had
        // its header damaged (the flag cleared, its last 4 bytes, the checksum, left after
        // it), when its bytes are no longer the ones listed.
        let listed_len = listed.map_or(0, |e| u64::from(e.compressed));
        if let Some(e) = listed.filter(|_| {
            span.kind == (Kind::Zstd { checksum: false })
                && (span.len..=span.len + 4).contains(&listed_len)
        }) && audit::crc32_of(&mut *self.f, span.offset, listed_len)? != e.crc32
        {
            return Ok(Some(
                "it has no content checksum, and its bytes do not match the index's crc32".into(),
            ));
        }
        self.report.frames_kept += 1;
        self.report.unchecked_frames +=
            u64::from(matches!(span.kind, Kind::Zstd { checksum: false }));
        let partial = stats.has_partial_line();
        let last = partial && self.is_last_data_frame(span.offset + span.len)?;
        let plan = self.plan(span, last)?;
        // A frame that ends inside a line, or holds the end of one, is written again at line
        // ends (sess frames hold whole lines).
        if partial || !self.carry.is_empty() || self.cut.is_some() || !plan.is_empty() {
            self.untouched = false;
            return self.rewrite(span, &plan, last, out).map(|()| None);
        }
        let meta = FrameMeta {
            uncompressed: stats.bytes,
            lines: stats.newlines + u64::from(stats.has_partial_line()),
            first_seq: (out.options().first_seq)(&stats.first_line),
        };
        out.copy_frame(&mut self.bytes(span.offset, span.len)?, span.len, meta)?;
        self.keep(meta.lines);
        // Before any loss or change, the frames it needs are as they were.
        if self.untouched
            && let Some(needs) = listed.and_then(|e| e.needs)
        {
            let k = out.frames_written() as u64 - 1;
            out.needs(k, k.saturating_sub(u64::from(needs)));
        }
        Ok(None)
    }

    /// Reads the interned lines of a frame that decodes as readers of the input and of the
    /// output will, and returns those not to be written as they are stored (the bytes of
    /// those that stand alone go to the spill). The last line without a newline is read too
    /// when `tail` says it will be kept.
    fn plan(&mut self, span: &Span, tail: bool) -> io::Result<Plan> {
        let (mut plan, mut k) = (Vec::new(), 0);
        let mut src = self.bytes(span.offset, span.len)?;
        let spill = match &mut self.spill {
            Some(f) => f,
            None => self.spill.insert(tempfile::tempfile()?),
        };
        spill.set_len(0)?;
        spill.seek(SeekFrom::Start(0))?;
        let mut spill = io::BufWriter::new(spill);
        let (readers, cut) = (&mut self.readers, self.cut);
        let mut take = |line: &[u8], k: u64, glue: Option<usize>| -> io::Result<()> {
            if let Some(n) = cut.filter(|_| k == 0 && is_cut_end(line)) {
                plan.push((k, Fate::Lost(CUT_END.to_string(), n)));
                return Ok(());
            }
            match readers.verdict(line, glue)? {
                Verdict::Keep => {}
                Verdict::Lose(why) => plan.push((k, Fate::Lost(why, 1))),
                Verdict::Alone(bytes) => {
                    spill.write_all(&(bytes.len() as u64).to_le_bytes())?;
                    spill.write_all(&bytes)?;
                    plan.push((k, Fate::Alone));
                }
            }
            Ok(())
        };
        let (_, rest) = frame_lines(&mut src, self.carry.clone(), |line, glue| {
            take(line, k, glue)?;
            k += 1;
            Ok(())
        })?;
        if tail && !rest.is_empty() && json::validate(&rest).is_ok() {
            take(&rest, k, None)?;
        }
        spill.flush()?;
        Ok(plan)
    }

    /// The next line [`Salvager::plan`] put in the spill.
    fn unspill(&mut self) -> io::Result<Vec<u8>> {
        let spill = self.spill.as_mut().expect("a plan spilled the line");
        let mut len = [0u8; 8];
        spill.read_exact(&mut len)?;
        let mut bytes = vec![0; u64::from_le_bytes(len) as usize];
        spill.read_exact(&mut bytes)?;
        Ok(bytes)
    }

    /// Writes a frame again line by line, as [`Salvager::plan`] says: without its lost lines,
    /// and those that stand alone so. A line it ends inside follows the torn-line rule when
    /// the frame is the file's `last`, and goes on as it is (into the next frame) when it
    /// is not.
    fn rewrite<W: Write>(
        &mut self,
        span: &Span,
        plan: &Plan,
        last: bool,
        out: &mut FrameWriter<W>,
    ) -> io::Result<()> {
        let mut src = self.bytes(span.offset, span.len)?;
        if let Some(spill) = &mut self.spill {
            spill.seek(SeekFrom::Start(0))?;
        }
        let mut planned = plan.iter().peekable();
        let (end, mut k) = (span.offset + span.len, 0);
        let carried = std::mem::take(&mut self.carry);
        // A glued line is never kept as it is stored: the plan says what it becomes.
        let (_, tail) = frame_lines(&mut src, carried, |line, _| {
            match planned.next_if(|(at, _)| *at == k) {
                Some((_, Fate::Lost(why, n))) => self.lose(span.offset, end, Some(*n), why.clone()),
                Some((_, Fate::Alone)) => {
                    out.write_all(&self.unspill()?)?;
                    out.write_all(b"\n")?;
                    self.keep(1);
                }
                None => {
                    out.write_all(line)?;
                    out.write_all(b"\n")?;
                    self.keep(1);
                }
            }
            k += 1;
            Ok(())
        })?;
        // A line read after the lost bytes is where what they cut ends.
        if k > 0 || last {
            self.cut = None;
        }
        if let Some((_, Fate::Lost(why, n))) = planned.peek() {
            self.lose(span.offset, end, Some(*n), why.clone());
        } else if let Some((_, Fate::Alone)) = planned.peek() {
            // The last line, without a newline: it stands alone, and gets one.
            out.write_all(&self.unspill()?)?;
            out.write_all(b"\n")?;
            self.keep(1);
            self.report.newline_added = Some(self.line);
        } else if !last {
            self.carry = tail;
        } else if tail.is_empty() {
            // The frame ends at a line end.
        } else if json::validate(&tail).is_ok() {
            out.write_all(&tail)?;
            out.write_all(b"\n")?;
            self.keep(1);
            self.report.newline_added = Some(self.line);
        } else {
            let why = format!(
                "a torn last line: {} byte(s) without a final newline that are not a JSON value",
                tail.len()
            );
            self.lose(span.offset, end, Some(1), why);
        }
        out.flush_frame()
    }

    /// Whether no data frame (whole or torn) follows `from`.
    fn is_last_data_frame(&mut self, mut from: u64) -> io::Result<bool> {
        while from < self.len {
            match walk::frame_at(self.f, from, self.len)? {
                Ok(span) if matches!(span.kind, Kind::Skippable { .. }) => from += span.len,
                // A torn index (a cut inside it) holds no lines.
                Err(End::Torn { skippable, .. }) => return Ok(skippable),
                Ok(_) => return Ok(false),
                // Readers skip garbage to a good frame after it, and drop a line begun
                // before it.
                Err(End::Garbage { offset, .. }) => {
                    return Ok(next_good_frame(self.f, offset + 1, self.len)?.is_none());
                }
                Err(_) => return Ok(true),
            }
        }
        Ok(true)
    }

    /// The file ends inside the frame at `offset`: keep the complete lines its bytes decode
    /// to (those that can be read back). Its last, partial line is cut by the tear, so it is
    /// lost whatever it looks like.
    fn torn<W: Write>(&mut self, offset: u64, out: &mut FrameWriter<W>) -> io::Result<()> {
        // Damage before the tear: nothing of it can be trusted (readers drop it all).
        let mut src = self.bytes(offset, self.len - offset)?;
        let (outcome, _) = frame_lines(&mut src, Vec::new(), |_, _| Ok(()))?;
        if let Outcome::Damaged(why) = outcome {
            let why = format!("a torn final frame that does not decode: {why}");
            self.lose_bytes(offset, self.len, None, why);
            return Ok(());
        }
        let mut src = self.bytes(offset, self.len - offset)?;
        let (mut kept, mut read, mut decoded) = (0, 0, 0);
        let carried = std::mem::take(&mut self.carry);
        let had = carried.len();
        let (_, mut pending) = frame_lines(&mut src, carried, |line, glue| {
            read += 1;
            decoded += line.len() as u64 + 1;
            if let Some(n) = self.cut.take().filter(|_| is_cut_end(line)) {
                self.lose(offset, self.len, Some(n), CUT_END.to_string());
                return Ok(());
            }
            let written = match self.readers.verdict(line, glue)? {
                Verdict::Lose(why) => {
                    self.lose(offset, self.len, Some(1), why);
                    return Ok(());
                }
                Verdict::Keep => out.write_all(line),
                Verdict::Alone(bytes) => out.write_all(&bytes),
            };
            written?;
            out.write_all(b"\n")?;
            self.keep(1);
            kept += 1;
            Ok(())
        })?;
        out.flush_frame()?;
        // What the frame's blocks gave: its lines, and what follows the last (the carried
        // bytes the first line began with were an earlier frame's).
        let decoded = decoded + pending.len() as u64 - had as u64;
        if read == 0 && had > 0 {
            // A line begun before the frame that its prefix does not end: the last line.
            self.carry = pending.drain(..had).collect();
        }
        self.report.torn_lines_kept = kept;
        let mut why = format!(
            "a torn final frame: kept its {kept} complete line(s), dropped {} byte(s) of a \
             partial line",
            pending.len()
        );
        // zstd gives a frame's blocks whole: those the cut went through never decode, and
        // the lines in them are not known. The frame's header says how much it held.
        let lost = match self.content_size(offset)? {
            Some(size) if size == decoded => Some(u64::from(!pending.is_empty())),
            Some(size) => {
                why += &format!(", and {} byte(s) it holds did not decode", size - decoded);
                None
            }
            None => {
                why += ", and what its undecodable end held";
                None
            }
        };
        self.lose(offset, self.len, lost, why);
        Ok(())
    }

    /// The content size that the header of the frame at `offset` gives, if it gives one.
    fn content_size(&self, offset: u64) -> io::Result<Option<u64>> {
        let mut header = Vec::new();
        // A frame header is at most 18 bytes.
        self.bytes(offset, 18)?.read_to_end(&mut header)?;
        Ok(zstd::zstd_safe::get_frame_content_size(&header)
            .ok()
            .flatten())
    }

    /// `len` bytes of the input from `at`, through a handle of their own, so that a reader
    /// of them may update the salvager as it goes.
    fn bytes(&self, at: u64, len: u64) -> io::Result<io::Take<File>> {
        let mut f = self.f.try_clone()?;
        f.seek(SeekFrom::Start(at))?;
        Ok(f.take(len))
    }
}

/// The offset of the next zstd frame at or after `from` that decodes whole. Scans in
/// chunks and decodes as a stream, so memory stays small whatever lies between.
fn next_good_frame(f: &mut File, from: u64, len: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 1 << 20;
    let magic = ZSTD_MAGIC.to_le_bytes();
    let mut pos = from;
    let mut chunk = Vec::new();
    while pos < len {
        let n = CHUNK.min(len - pos) as usize;
        chunk.resize(n, 0);
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut chunk)?;
        let mut k = 0;
        while let Some(hit) = memchr::memmem::find(&chunk[k..], &magic) {
            let at = pos + (k + hit) as u64;
            if let Ok(span) = walk::frame_at(f, at, len)? {
                f.seek(SeekFrom::Start(at))?;
                if decode::frame(&mut (&mut *f).take(span.len), |_| Ok(()))? == Outcome::Complete {
                    return Ok(Some(at));
                }
            }
            k += hit + 1;
        }
        // A magic number may straddle two chunks.
        pos += (n as u64).saturating_sub(3).max(1);
    }
    Ok(None)
}

/// Copies every complete record of a plain log to `out`: lines that are one valid JSON
/// value, a last one without a newline getting one, and the records among the zero bytes a
/// crash left ([`pieces`]).
pub fn salvage_plain<R: Read, W: Write>(input: R, out: &mut W) -> io::Result<RepairReport> {
    let mut report = RepairReport::default();
    // Interned lines (`sess pack --plain --intern-min`): as in frames, a line that needs
    // what only a dropped line defined is written to stand alone.
    let mut readers = Readers::default();
    let mut lines = LineReader::new(input);
    while let Some(line) = lines.next_line()? {
        // Most lines hold no zero byte: read as they are, without a list of pieces.
        if memchr::memchr(0, line.bytes).is_none() {
            salvage_line(line, false, &mut report, &mut readers, out)?;
            continue;
        }
        for piece in pieces(line) {
            match piece {
                Piece::Line(piece, before_zeros) => {
                    salvage_line(piece, before_zeros, &mut report, &mut readers, out)?
                }
                Piece::Zeros(zeros) => report.lost(zeros),
            }
        }
    }
    Ok(report)
}

/// Keeps `line` when it is a complete record (rebuilt to stand alone if need be), else
/// reports it lost. `before_zeros`: a piece of a line, ended by zero bytes ([`pieces`]).
fn salvage_line<W: Write>(
    line: crate::io::Line<'_>,
    before_zeros: bool,
    report: &mut RepairReport,
    readers: &mut Readers,
    out: &mut W,
) -> io::Result<()> {
    // Its JSON text is checked: a first record behind a byte-order mark is kept, mark and
    // all.
    let why = match line.ending {
        Ending::Torn => Some("a torn last line: no final newline and not a JSON value".into()),
        _ => json::validate(line.json_text())
            .err()
            .map(|e| format!("invalid JSON at column {}: {e}", e.offset + 1)),
    };
    let verdict = match why {
        // Readers of the input rebuild it still, and keep what it defines.
        Some(why) => {
            if intern::is_interned(line.bytes)
                && let Err(e) = readers.input.read(line.bytes, &mut readers.rebuilt)
            {
                e.into_fatal()?;
            }
            Verdict::Lose(why)
        }
        None => readers.verdict(line.bytes, None)?,
    };
    let written = match verdict {
        Verdict::Keep => line.bytes,
        Verdict::Alone(ref bytes) => bytes,
        Verdict::Lose(why) => {
            let newline = line.terminated() && !before_zeros;
            let end = line.offset + line.bytes.len() as u64 + u64::from(newline);
            report.lost(Loss {
                from: line.offset,
                to: end,
                after_line: line.number - 1,
                lines: Some(1),
                why,
            });
            return Ok(());
        }
    };
    out.write_all(written)?;
    out.write_all(b"\n")?;
    report.lines_kept += 1;
    if line.ending == Ending::Unterminated && !before_zeros {
        report.newline_added = Some(line.number);
    }
    Ok(())
}

/// A part of a line ([`pieces`]): one to read as a line (and whether zeros end it), or
/// zeros, lost.
enum Piece<'a> {
    Line(crate::io::Line<'a>, bool),
    Zeros(Loss),
}

/// A line that holds zero bytes as the records it holds. Zero bytes are where a crash left them
/// (a file system that had allocated blocks it had not written), and agents go on
/// appending after a restart: so the bytes between runs of zeros are read as lines of
/// their own (a raw zero byte is never inside JSON text, so no record spans one), and the
/// zeros are reported lost, as no line (with the newline, when they end the line). Each
/// piece comes with whether zeros end it; the last piece ends as the line does, a torn last
/// line's being whole when it is one value.
fn pieces(line: crate::io::Line<'_>) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < line.bytes.len() {
        let zeros = line.bytes[at..].iter().take_while(|&&b| b == 0).count();
        if zeros > 0 {
            let newline = at + zeros == line.bytes.len() && line.terminated();
            pieces.push(Piece::Zeros(Loss {
                from: line.offset + at as u64,
                to: line.offset + (at + zeros) as u64 + u64::from(newline),
                after_line: line.number - 1,
                lines: Some(0),
                why: "zero bytes a crash left".into(),
            }));
            at += zeros;
            continue;
        }
        let len = memchr::memchr(0, &line.bytes[at..]).unwrap_or(line.bytes.len() - at);
        let bytes = &line.bytes[at..at + len];
        let last = at + len == line.bytes.len();
        let ending = match (last, line.ending) {
            (false, _) => Ending::Newline,
            (true, Ending::Torn) if json::validate(bytes).is_ok() => Ending::Unterminated,
            (true, e) => e,
        };
        let piece = crate::io::Line {
            bytes,
            offset: line.offset + at as u64,
            ending,
            ..line
        };
        pieces.push(Piece::Line(piece, !last));
        at += len;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(from: u64, to: u64, after_line: u64, lines: Option<u64>, why: &str) -> Loss {
        let why = why.to_string();
        Loss {
            from,
            to,
            after_line,
            lines,
            why,
        }
    }

    #[test]
    fn lines_lost_one_after_another_for_one_reason_are_one_loss() {
        let mut r = RepairReport::default();
        let why = |v: u32| format!("the line cannot be read back: it refers to value {v}");
        // Three lines of one frame, then two lines of the plain log's next bytes.
        for k in 0..3 {
            r.lost(loss(100, 200, 10 + k, Some(1), &why(k as u32)));
        }
        r.lost(loss(200, 230, 13, Some(1), &why(7)));
        assert_eq!(r.losses, [loss(100, 230, 10, Some(4), &why(0))]);
        // Not merged: a gap in the lines, another reason, unknown counts, other bytes.
        let mut r = RepairReport::default();
        r.lost(loss(100, 200, 10, Some(1), &why(0)));
        r.lost(loss(100, 200, 12, Some(1), &why(0)));
        r.lost(loss(100, 200, 13, Some(1), "a torn last line: 3 byte(s)"));
        r.lost(loss(200, 300, 14, None, "the frame does not decode: x"));
        r.lost(loss(300, 400, 14, None, "the frame does not decode: x"));
        r.lost(loss(500, 600, 14, Some(1), "the frame does not decode: x"));
        r.lost(loss(700, 800, 15, Some(1), "the frame does not decode: x"));
        assert_eq!(r.losses.len(), 7);
    }

    /// Zero bytes a crash left, and the records on either side of them on the same line:
    /// the record after the zeros was dropped with them (a whole line lost that was not).
    #[test]
    fn records_among_zero_bytes_on_a_line_are_kept() {
        let zeros = vec![0u8; 2000];
        let salvage = |parts: &[&[u8]]| {
            let mut out = Vec::new();
            let report = salvage_plain(parts.concat().as_slice(), &mut out).unwrap();
            (String::from_utf8(out).unwrap(), report)
        };
        let (a, b) = (&b"{\"n\":1}\n"[..], &b"{\"n\":2}\n"[..]);
        let both = "{\"n\":1}\n{\"n\":2}\n";
        let zeros_lost = |from: u64, to: u64| loss(from, to, 1, Some(0), "zero bytes a crash left");
        // Zeros, then the record.
        let (out, r) = salvage(&[a, &zeros, b]);
        assert_eq!(out, both);
        assert_eq!(r.losses, [zeros_lost(8, 2008)]);
        assert_eq!((r.lines_kept, r.newline_added), (2, None));
        // A record cut, zeros, the next record: the cut one is the line lost.
        let (out, r) = salvage(&[a, b"{\"n\":1.5,\"te", &zeros, b]);
        assert_eq!(out, both);
        let cut = "invalid JSON at column 13: expected a closing '\"'";
        assert_eq!(
            r.losses,
            [loss(8, 20, 1, Some(1), cut), zeros_lost(20, 2020)]
        );
        // A whole record before the zeros is kept too, and one after them at the end of
        // the input, without its newline, gets one.
        let (out, r) = salvage(&[a, b"{\"n\":1.5}", &zeros, b"{\"n\":2}"]);
        assert_eq!(out, "{\"n\":1}\n{\"n\":1.5}\n{\"n\":2}\n");
        assert_eq!(r.losses, [zeros_lost(17, 2017)]);
        assert_eq!(r.newline_added, Some(2));
        // Zeros after the record, to the line's end (its newline lost with them).
        let (out, r) = salvage(&[a, &zeros, b"{\"n\":2}", &zeros, b"\n"]);
        assert_eq!(out, both);
        assert_eq!(r.losses, [zeros_lost(8, 2008), zeros_lost(2015, 4016)]);
        // What is not one whole JSON value is lost, as a line.
        for rest in [&b"{\"n\":2\n"[..], b"{\"n\":2} x\n", b"{\"n\":"] {
            let (out, r) = salvage(&[a, &zeros, rest]);
            assert_eq!(out, "{\"n\":1}\n", "{rest:?}");
            assert_eq!(r.losses.len(), 2, "{rest:?}");
            assert_eq!(r.losses[1].lines, Some(1), "{rest:?}");
        }
        // A line of zeros alone costs no line.
        let (out, r) = salvage(&[a, &zeros, b"\n", b]);
        assert_eq!(out, both);
        assert_eq!(r.losses, [zeros_lost(8, 2009)]);
    }
}
