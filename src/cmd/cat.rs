//! `sess cat`: logical events from any input, optionally selected by type, position or seq.

use std::collections::VecDeque;
use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::{Global, IoArgs};
use crate::range::Range;
use sess::event::{self, Event, KindSelection, LastLine};
use sess::frames::Recovery;
use sess::frames::reader::Glues;
use sess::frames::seek::Seekable;
use sess::input::{self, Flow, Input};
use sess::intern;
use sess::io::{Line, Sink};

const ABOUT: &str = "Print the logical events of a log as JSONL";

const LONG_ABOUT: &str = "Print the logical events of one or more logs as JSONL, one event per line, \
each exactly as it was written. Inputs may be plain JSONL, gzip or zstd (detected by magic), \
and packed chunk rows are expanded into the events they hold. Several inputs are read in \
order, as one stream.\n\n\
On a compressed file, --tail and --seq seek: they decode only the frames they need, found \
through the file's frame index (or its frame headers when it has none), and the frames the \
index says hold the values their interned lines refer to. Under --recovery \
point-in-time, skip-corrupt or absolute they read the file through instead, so that damage \
is handled as the mode says (absolute fails on damage anywhere in the file). --seq seeks \
only where the index shows seq rising from frame to frame; a log whose seq starts again \
(logs joined with cat; verify reports it) is read through, as a plain one is. The index \
gives only each frame's first seq, so a seq that starts again inside a frame is seen only \
when that frame is read: the range's events after it can be missed. Give joined logs as \
separate inputs, or read such a file through (--recovery point-in-time).\n\n\
A last line without a newline that is valid JSON is printed (with a newline added); one that is \
not valid JSON is a torn write and is dropped with a warning on stderr.";

const EXAMPLES: &str = "Examples:
  sess cat run.jsonl.zst > run.jsonl
  sess cat --type message_end run.jsonl | jq -r .message.role
  sess cat --lines 10..20 run.jsonl
  sess cat --tail 5 run.jsonl.zst
  sess cat --seq 1200..1300 session.jsonl.zst";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub io: IoArgs,

    /// Keep only events whose top-level "type" is T, or whose kind as a profile reads it is T
    /// (TOP:SUB, as sess stats lists kinds: progress:agent_progress, event_msg:token_count).
    /// Repeatable.
    #[arg(short = 't', long = "type", value_name = "T")]
    pub types: Vec<String>,

    /// Keep only events at these 1-based positions, counted across all inputs (A..B, A.., ..B
    /// or N; inclusive).
    #[arg(long, value_name = "RANGE", conflicts_with = "seq", value_parser = Range::one_based)]
    pub lines: Option<Range>,

    /// Keep only events whose top-level "seq" is in this range (A..B, A.., ..B or N;
    /// inclusive). Each input is read through, so that where seq starts again (the next
    /// input, or logs joined in one file) the range is found again; a compressed file whose
    /// index shows seq rising is read only where the range lies.
    #[arg(long, value_name = "RANGE")]
    pub seq: Option<Range>,

    /// Print only the last N selected events (N at least 1).
    #[arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub tail: Option<usize>,
}

/// What makes an event selected, apart from its position.
struct Select {
    types: KindSelection,
    seq: Option<Range>,
    /// Whether an event with a seq was seen (with --seq): if none was, the user is told.
    saw_seq: std::cell::Cell<bool>,
}

impl Select {
    /// Whether to keep `bytes`, and whether reading may stop (past the seq range).
    fn check(&self, bytes: &[u8]) -> (bool, bool) {
        if let Some(r) = &self.seq {
            let Some(s) = event::seq(bytes).and_then(|s| u64::try_from(s).ok()) else {
                return (false, false);
            };
            self.saw_seq.set(true);
            if !r.contains(s) {
                return (false, r.end.is_some_and(|e| s > e));
            }
        }
        (self.types.is_empty() || self.types.holds(bytes), false)
    }
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.io.inputs();
    let select = Select {
        types: KindSelection::new(&args.types, sess::profile::registry::all()),
        seq: args.seq,
        saw_seq: std::cell::Cell::new(false),
    };
    // Every event, on threads: rows are expanded on helpers, and this thread only writes
    // what they hand back, on its own (without the writing thread's copy).
    let everything =
        args.types.is_empty() && args.lines.is_none() && args.seq.is_none() && args.tail.is_none();
    if everything && let Some(helpers) = event::ahead::helpers(args.io.threads, &inputs) {
        let mut sink = args.io.sink_here()?;
        let opts = args.io.open_options(g);
        let read = event::ahead::write_events(&inputs, opts, LastLine::Records, helpers, &mut sink);
        super::settled(&mut sink, read)?;
        return Ok(sink.finish()?);
    }
    let mut sink = args.io.sink()?;
    // Seeking reads frames as they are, and any damage in one is an error: to stop at
    // damage (point-in-time), skip it (skip-corrupt, which can skip lines of interned
    // logs) or fail on damage anywhere (absolute, also in frames a seek passes over), the
    // whole file is read through instead.
    let recovery = args.io.open_options(g).recovery;
    let reads_through = matches!(
        recovery,
        Recovery::PointInTime | Recovery::SkipCorrupt | Recovery::Absolute
    );
    let seekable = match &inputs[..] {
        [Input::Path(p)]
            if args.lines.is_none()
                && !reads_through
                && (args.tail.is_some() || args.seq.is_some()) =>
        {
            Seekable::open(p).with_context(|| format!("{}: cannot read", p.display()))?
        }
        _ => None,
    };
    // --seq seeks where seq rises, as the index tells: where it starts again (logs joined
    // with `cat`), the file is read through, as a plain one is.
    let seekable = seekable.filter(|f| args.seq.is_none() || f.seq_rises());
    let read = match (seekable, args.tail) {
        (Some(mut file), Some(n)) => tail_frames(&mut file, n, &select, &mut sink),
        (Some(mut file), None) => seq_frames(&mut file, &select, &mut sink),
        (None, _) => sequential(&args, &inputs, &select, g, &mut sink),
    };
    super::settled(&mut sink, read)?;
    if select.seq.is_some() && !select.saw_seq.get() {
        sess::io::tell!(
            "sess: warning: no event read has a top-level seq, so --seq selected none \
             (--lines selects by position)"
        );
    }
    Ok(sink.finish()?)
}

fn sequential(
    args: &Args,
    inputs: &[Input],
    select: &Select,
    g: Global,
    sink: &mut Sink,
) -> Result<()> {
    let mut position = 0u64;
    let mut tail: VecDeque<Vec<u8>> = VecDeque::new();
    // With --type alone, rows of other types are passed by unexpanded. --lines counts
    // every event, and --seq looks at each one's seq, so they read all.
    let types = |kind: &[u8]| select.types.may_hold(kind);
    let wanted: Option<event::Wanted<'_>> =
        (!select.types.is_empty() && args.lines.is_none() && select.seq.is_none())
            .then_some(&types);
    super::each_event_where(
        inputs,
        args.io.open_options(g),
        LastLine::Records,
        wanted,
        |_, ev| {
            position += 1;
            if let Some(r) = &args.lines
                && !r.contains(position)
            {
                return Ok(if r.is_past(position) {
                    Flow::Stop
                } else {
                    Flow::More
                });
            }
            // Past the range, reading goes on: seq may start again (another input, or
            // logs joined in one file), and nothing tells where but reading.
            let (keep, _) = select.check(ev.bytes);
            if !keep {
                return Ok(Flow::More);
            }
            match args.tail {
                Some(n) => {
                    if tail.len() == n {
                        tail.pop_front();
                    }
                    tail.push_back(ev.bytes.to_vec());
                }
                None => write_line(sink, ev.bytes)?,
            }
            Ok(Flow::More)
        },
    )?;
    for l in &tail {
        write_line(sink, l)?;
    }
    Ok(())
}

/// The definitions interned lines need when frames are read out of order: those of the
/// frames `from..next`. Filled only when a frame holds an interned line, by reading the
/// frames before it that the index says it needs ([`Defs::prime`]); a log without interned
/// lines is never read so.
struct Defs {
    reader: intern::Reader,
    from: usize,
    next: usize,
    /// Whether priming guesses how far back to begin: the index does not say (one of
    /// version 1, or of frames `repair` wrote after a loss), or said too little.
    guessing: bool,
    /// How many frames before the one read a guess begins: a ref names a definition at
    /// most 8 frames back, but a definition may itself be rebuilt from older ones (a
    /// history's `[0` refs chain), so it doubles when a line needs more.
    back: usize,
    /// The frame priming was last for (it began at `from`).
    primed_for: Option<usize>,
}

impl Default for Defs {
    fn default() -> Defs {
        Defs {
            reader: intern::Reader::default(),
            from: 0,
            next: 0,
            guessing: false,
            back: 9,
            primed_for: None,
        }
    }
}

impl Defs {
    /// Whether frame `k` can be read with the definitions at hand: they are those of the
    /// frames just before it, from as far back as it needs.
    fn ready_for(&self, file: &Seekable, k: usize) -> bool {
        self.next == k && (self.guessing || file.first_needed(k).is_none_or(|f| f >= self.from))
    }

    /// Makes the definitions those of the frames `k` needs, before it: from where the
    /// index says, else from `k - back`. A line of those frames that does not read (it
    /// needs a definition from before them, or its frame is damaged) is passed by: the
    /// command may not need what it defines, and a line that does is found missing later,
    /// and then priming begins further back, or reading fails naming that line.
    fn prime(&mut self, file: &mut Seekable, k: usize) -> Result<()> {
        self.reader.clear()?;
        let wanted = match file.first_needed(k) {
            Some(first) if !self.guessing => first,
            _ => k.saturating_sub(self.back),
        };
        // Priming again for a later frame of a range read on, which needs more: at least
        // twice as far back as the last time, so that frames whose needs each reach a
        // little further cost a few primes, not one each.
        self.from = match self.primed_for {
            Some(at) if at < k && wanted < self.from => {
                wanted.min(k.saturating_sub(2 * (k - self.from)))
            }
            _ => wanted,
        };
        self.primed_for = Some(k);
        let name = file.name().to_string();
        let mut buf = Vec::new();
        let crossings = file.crossings();
        for j in self.from..k {
            let mut lines = file
                .lines(j)
                .with_context(|| format!("{name}: cannot read"))?;
            while let Ok(Some(line)) = lines.next_line() {
                let read = match glue_in(&crossings, &line) {
                    _ if line.is_torn() => continue,
                    Some(at) => self.reader.read_glued(line.bytes, at, &mut buf).map(drop),
                    None if intern::is_interned(line.bytes) => {
                        self.reader.read(line.bytes, &mut buf)
                    }
                    None => continue,
                };
                // Only failing to keep what it defines (the disk, or memory) stops priming.
                if let Err(e) = read {
                    e.into_fatal()
                        .with_context(|| format!("{name}: cannot rebuild interned lines"))?;
                }
            }
        }
        self.next = k;
        Ok(())
    }

    /// A line of frame `k` needs a definition from before the frames read: whether
    /// priming can begin further back; it will, at the next [`Defs::prime`], guessing.
    fn widen(&mut self, k: usize) -> bool {
        self.guessing = true;
        self.back = self.back.max(k - self.from).saturating_mul(2);
        self.from > 0
    }
}

/// Where a new file begins inside `line`, when it runs on from one frame into the next
/// and the two parts are lines glued ([`intern::glued`]).
fn glue_in(crossings: &Glues, line: &Line<'_>) -> Option<usize> {
    crossings
        .inside(line.offset, line.bytes.len())
        .filter(|&at| intern::glued(&line.bytes[..at], &line.bytes[at..]))
}

/// How reading a frame's events ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameEnd {
    Done,
    /// Its last event lies past the seq range.
    Past,
    /// An interned line needs definitions of earlier frames, and priming was not allowed.
    NeedsDefs,
}

/// Calls `f` with the selected events of frame `k`, in order. At an interned line whose
/// definitions are not at hand, the frames before are read for them when `prime` allows
/// it, and reading ends with [`FrameEnd::NeedsDefs`] when it does not.
fn frame_events(
    file: &mut Seekable,
    k: usize,
    select: &Select,
    defs: &mut Defs,
    prime: bool,
    f: &mut impl FnMut(&[u8]) -> Result<()>,
) -> Result<FrameEnd> {
    let name = file.name().to_string();
    let (mut buf, mut rebuilt) = (Vec::new(), Vec::new());
    let mut past = false;
    if !defs.ready_for(file, k) {
        defs.next = usize::MAX;
    }
    // The frame is streamed (a bomb decodes to gigabytes). At its first interned line
    // without the definitions at hand, reading stops, the frames before are read for
    // them, and the frame is read again from the line where it stopped.
    let mut skip = 0;
    let crossings = file.crossings();
    loop {
        let mut stopped_at = None;
        let mut lines = file
            .lines(k)
            .with_context(|| format!("{name}: cannot read"))?;
        let mut n = 0;
        let mut widen_at = None;
        while let Some(line) = lines
            .next_line()
            .with_context(|| format!("{name}: cannot read"))?
        {
            n += 1;
            let glue = glue_in(&crossings, &line);
            if (glue.is_some() || intern::is_interned(line.bytes)) && defs.next != k {
                stopped_at = Some(n - 1);
                break;
            }
            // Lines written before priming again are read again only for what they
            // define.
            let line = match glue {
                Some(at) => input::rebuild_glued(&name, line, at, &mut defs.reader, &mut rebuilt),
                None => input::rebuild(&name, line, &mut defs.reader, &mut rebuilt),
            };
            let line = match line {
                Ok(_) if n <= skip => continue,
                Ok(line) => line,
                // Priming began after a definition this line needs.
                Err(_) if prime && defs.widen(k) => {
                    widen_at = Some(n - 1);
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            let Some(newline) = event::newline_for(&name, &line, LastLine::Records) else {
                continue;
            };
            // The frame is read to its end: seq may start again inside it (logs joined),
            // and only the index, frame by frame, tells where it rises.
            super::expand(&name, &line, newline, &mut buf, &mut |_, ev: &Event<'_>| {
                let (keep, stop) = select.check(ev.bytes);
                if keep {
                    f(ev.bytes)?;
                }
                past = stop;
                Ok(Flow::More)
            })?;
        }
        drop(lines);
        match stopped_at.or(widen_at) {
            Some(_) if !prime => return Ok(FrameEnd::NeedsDefs),
            Some(at) => {
                defs.prime(file, k)?;
                skip = skip.max(at);
            }
            None => break,
        }
    }
    if defs.next == k {
        defs.next = k + 1;
    }
    Ok(if past { FrameEnd::Past } else { FrameEnd::Done })
}

/// Keeps the last `n` of what it is given.
fn keep_last(kept: &mut VecDeque<Vec<u8>>, n: usize, bytes: &[u8]) {
    if kept.len() == n {
        kept.pop_front();
    }
    kept.push_back(bytes.to_vec());
}

/// The last `n` selected events, decoding frames from the end until there are enough. The
/// last two frames, and frames the index says what they need of, when their interned
/// lines need definitions, are read after the frames before them that hold them
/// ([`Defs::prime`]); at another frame, or once that has read more frames than reading
/// up to it would, the frames up to it are read once from the start instead.
fn tail_frames(file: &mut Seekable, n: usize, select: &Select, sink: &mut Sink) -> Result<()> {
    let mut kept: VecDeque<Vec<u8>> = VecDeque::new();
    let mut defs = Defs::default();
    let frames = file.frames().len();
    let mut k = frames;
    // Frames read so far to prime frames the index says what they need of.
    let mut primed = 0;
    while k > 0 && kept.len() < n {
        k -= 1;
        // This frame's last n selected events, in order, go before what is kept so far.
        let mut here: VecDeque<Vec<u8>> = VecDeque::new();
        let want = n - kept.len();
        // Each frame read backwards reads the frames before it that hold its definitions:
        // a few, for the last two, or when the index says how many, while all of that costs
        // less than reading the frames up to it once.
        let primes = file.first_needed(k).map(|first| k - first);
        let prime = frames - k <= 2
            || primes.is_some_and(|n| {
                primed += n;
                primed <= k
            });
        let end = frame_events(file, k, select, &mut defs, prime, &mut |b| {
            keep_last(&mut here, want, b);
            Ok(())
        })?;
        if end == FrameEnd::NeedsDefs {
            here.clear();
            for j in 0..=k {
                frame_events(file, j, select, &mut defs, true, &mut |b| {
                    keep_last(&mut here, want, b);
                    Ok(())
                })?;
            }
            k = 0;
        }
        for e in here.into_iter().rev() {
            kept.push_front(e);
        }
    }
    for e in &kept {
        write_line(sink, e)?;
    }
    Ok(())
}

/// The events in a seq range, starting at the last frame that begins at or before it.
fn seq_frames(file: &mut Seekable, select: &Select, sink: &mut Sink) -> Result<()> {
    let from = select.seq.map_or(0, |r| r.start as i64);
    let to = select.seq.and_then(|r| r.end).map(|e| e as i64);
    let mut defs = Defs::default();
    for k in file.first_frame_for_seq(from)..file.frames().len() {
        // A frame that begins past the range is not read (the index shows seq rising from
        // frame to frame): a damaged one there does not fail a range that ended before it.
        if let (Some(to), Some(first)) = (to, file.frames()[k].first_seq)
            && first > to
        {
            break;
        }
        let end = frame_events(file, k, select, &mut defs, true, &mut |bytes| {
            write_line(sink, bytes)
        })?;
        if end == FrameEnd::Past {
            break;
        }
    }
    Ok(())
}

fn write_line(sink: &mut Sink, bytes: &[u8]) -> Result<()> {
    sink.write_all(bytes)?;
    sink.write_all(b"\n")?;
    Ok(())
}
