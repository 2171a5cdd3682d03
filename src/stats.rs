//! Where the bytes of a log go: per input, counts and sizes per kind and what `filter` and
//! `pack` would write; then totals over all inputs.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::event::Event;
use crate::filter::{Filter, FilterOptions};
use crate::io::Line;
use crate::pack::{Estimate, Estimated, Events, NoRoom, Packer, Same};
use crate::profile::detect::{Detected, Detector};
use crate::profile::{Choice, Chooser, Overrides, registry};

/// The bucket for lines that have no kind.
pub use crate::filter::NO_KIND as NO_TYPE;
use crate::filter::{OTHER_KINDS, with_kind};

/// How many lines are searched for the producer's version.
const VERSION_LINES: u64 = 16;

#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Tally {
    pub count: u64,
    pub bytes: u64,
    pub largest: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.largest = self.largest.max(bytes);
    }
}

/// A writer that only counts.
#[derive(Default)]
pub struct ByteCount(pub u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Accumulates the statistics of one input; memory grows with the number of kinds.
pub struct Stats {
    name: String,
    by_kind: HashMap<String, Tally>,
    /// The kind of the last line counted, as the table names it.
    line_kind: String,
    lines: Tally,
    torn: u64,
    detector: Detector<'static>,
    /// Reads kinds with the profile a stream would choose.
    kinds: Chooser,
    /// Logical events (packed rows expanded) and their bytes.
    events: Tally,
    pack: PackSide,
    /// The input as it came, while it fits in one frame: `sess pack` writes it instead
    /// when it compresses smaller (not of a stream, whose frames it writes as they come).
    same: Option<Same>,
    filter: Filter,
    filtered: ByteCount,
    /// The first value found at one of the profile's version paths.
    version: Option<String>,
    accuracy: Accuracy,
}

#[derive(Debug, Serialize)]
pub struct KindRow {
    #[serde(rename = "type")]
    pub kind: String,
    /// Its durability class under the profile detected for the input.
    pub class: &'static str,
    pub count: u64,
    pub bytes: u64,
    /// Share of the input's bytes, 0..1.
    pub share: f64,
    pub largest: u64,
    /// Whether the profile names this kind; one it does not is a fact.
    pub known: bool,
    /// Bytes `sess filter` would write for this kind.
    pub filtered_bytes: u64,
}

/// What one input holds.
#[derive(Debug, Serialize)]
pub struct FileReport {
    pub file: String,
    pub dialect: String,
    pub dialect_description: String,
    /// The producer's version, from the fields its profile names.
    pub producer_version: Option<String>,
    /// Kinds the profile does not know (they are facts), largest first.
    pub unknown_kinds: Vec<String>,
    /// Lines as stored (a packed row is one), and their bytes.
    pub lines: u64,
    pub bytes: u64,
    pub largest: u64,
    pub torn_lines: u64,
    /// Events: a packed row counts as the events it holds, and their bytes.
    pub events: u64,
    pub event_bytes: u64,
    /// Bytes `sess pack --plain` would write (rows, no interning), with snapshot rows
    /// estimated unless `pack.accuracy` is exact.
    pub packed_bytes: u64,
    /// What `sess pack` would write (see `docs/FORMAT.md`, "sess stats").
    pub pack: PackEstimate,
    /// The profile `sess filter` would choose, and the bytes it would write.
    pub filter_profile: String,
    pub filtered_bytes: u64,
    /// Sorted by bytes, largest first.
    pub types: Vec<KindRow>,
}

/// Every input, and the totals over them: what `stats --json` prints.
#[derive(Debug, Serialize)]
pub struct StatsReport {
    /// `sess-stats/1`: the keys below, as `docs/FORMAT.md` ("`sess stats --json`") says.
    pub schema: &'static str,
    pub files: Vec<FileReport>,
    pub total: Totals,
}

/// The version of what `stats --json` writes.
pub const SCHEMA: &str = "sess-stats/1";

/// What `sess pack` would write to zstd frames, estimated.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct PackEstimate {
    /// The bytes of the frames' content: the rows, with repeated values interned.
    pub interned_bytes: u64,
    /// The bytes interning refers to instead of writing them again.
    pub referenced_bytes: u64,
    pub frames: u64,
    /// The estimate: the frames, compressed, and their index.
    pub bytes: u64,
    /// How snapshot rows were counted.
    pub accuracy: Accuracy,
}

impl PackEstimate {
    fn new(e: Estimated, accuracy: Accuracy) -> PackEstimate {
        PackEstimate {
            interned_bytes: e.interned,
            referenced_bytes: e.referenced,
            frames: e.frames,
            bytes: e.packed,
            accuracy,
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Totals {
    pub files: u64,
    pub lines: u64,
    pub bytes: u64,
    pub events: u64,
    pub event_bytes: u64,
    pub packed_bytes: u64,
    /// The sum of the estimates of what `sess pack` would write.
    pub pack_estimate_bytes: u64,
    pub filtered_bytes: u64,
}

/// How what `sess pack` would write is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accuracy {
    /// Packed as `sess pack` packs, except that snapshot rows are estimated from the bytes
    /// that changed between frames ([`crate::delta::stand_in`]) instead of diffed and checked.
    #[default]
    Estimate,
    /// Packed as `sess pack` packs (`--exact`).
    Exact,
}

impl Stats {
    /// Statistics of the input named `name` (`path` when it is a file).
    pub fn new(name: &str, path: Option<&Path>, accuracy: Accuracy) -> Stats {
        let opts = FilterOptions {
            per_kind: true,
            ..FilterOptions::default()
        };
        let mut filter =
            Filter::new(Choice::Auto, Overrides::default(), opts).expect("no overrides to fail");
        filter.start_input(path);
        let mut kinds = Chooser::new(Choice::Auto, Overrides::default()).expect("no overrides");
        kinds.start_input(path);
        Stats {
            name: name.to_string(),
            by_kind: HashMap::new(),
            line_kind: String::new(),
            lines: Tally::default(),
            torn: 0,
            detector: Detector::new(registry::all(), path),
            kinds,
            events: Tally::default(),
            pack: PackSide::Here(Box::new(Simulation::new(path, accuracy))),
            same: Some(Same::new(crate::frames::writer::DEFAULT_FRAME_SIZE, 1)),
            filter,
            filtered: ByteCount::default(),
            version: None,
            accuracy,
        }
    }

    /// Counts one logical event; its physical line is counted with the line's first event.
    /// Fails when the pack simulation has no memory for a copy of the event (an interned
    /// line can stand for gigabytes): its batch for the other thread, or, on this thread,
    /// the frame it is written into. A failure on the other thread is told by
    /// [`Stats::report`].
    pub fn add_event(&mut self, ev: &Event<'_>) -> Result<(), NoRoom> {
        if ev.starts_line() {
            self.add_line(ev.line);
        }
        self.events
            .add(ev.bytes.len() as u64 + u64::from(ev.newline));
        self.pack.event(ev.bytes, ev.newline)?;
        if let Some(same) = &mut self.same {
            same.event(ev);
        }
        // `sess filter` reads a last line without its newline as a record (the newline
        // added) or drops it as torn. Writing to a counter cannot fail. What it keeps of a
        // packed row's events is the row's, in the table, which has no line for them.
        if !ev.line.is_torn() {
            let row = ev.member.map(|_| self.line_kind.as_str());
            let _ = self
                .filter
                .event_as(ev.bytes, true, &mut self.filtered, row);
        }
        Ok(())
    }

    /// Counts what `sess pack` writes of the input as a stream (from a pipe): its frames
    /// as they come, never the input as it came.
    pub fn streamed(mut self) -> Stats {
        self.same = None;
        self
    }

    /// Runs what `sess pack` would write on a thread of its own: the tallies and the
    /// filter cost a fifth of what it does, and no longer wait for it (a 256 MiB pi log:
    /// 0.94 s on one thread, 0.72 s on two).
    pub fn pack_on_a_thread(mut self) -> Stats {
        if let PackSide::Here(sim) = self.pack {
            // One batch waits while one is packed and one gathers: a line longer than a
            // batch is held at most three times.
            let (tx, rx) = std::sync::mpsc::sync_channel::<Events>(1);
            let handle = std::thread::spawn(move || {
                let mut sim = *sim;
                for batch in rx {
                    // Once failed, it drains the batches (it says so when finished).
                    for (line, newline) in batch.iter() {
                        let _ = sim.event(line, newline);
                    }
                }
                sim
            });
            self.pack = PackSide::Thread {
                batch: Events::default(),
                tx,
                handle,
            };
        }
        self
    }

    /// Counts one physical line.
    pub fn add_line(&mut self, line: &Line<'_>) {
        // A line's bytes include its newline: that is what it costs on disk.
        let bytes = line.bytes.len() as u64 + u64::from(line.terminated());
        let top = crate::event::kind(line.bytes);
        self.detector.observe_kind(line.bytes, top.as_deref());
        // The kind as the profile reads it; its field is `type` in every profile but one
        // that says otherwise.
        let kind = match self.kinds.see(line.bytes) {
            Some(p) if p.kind.field == "type" => match top {
                Some(t) => Some(p.refine_kind(line.bytes, t)),
                None => p.marker_kind(line.bytes),
            },
            Some(p) => p.kind_of(line.bytes),
            None => top,
        };
        if self.version.is_none()
            && self.lines.count < VERSION_LINES
            && let Some(p) = self.kinds.current()
        {
            self.version = p
                .version
                .iter()
                .find_map(|path| crate::json::path(line.bytes, path))
                .map(version_text);
        }
        let kind = kind.as_deref().unwrap_or(NO_TYPE);
        with_kind(&mut self.by_kind, kind, |t| t.add(bytes));
        self.line_kind.clear();
        self.line_kind.push_str(kind);
        self.lines.add(bytes);
        self.torn += u64::from(!line.terminated());
    }

    /// What the input was.
    pub fn detected(&self) -> Detected {
        self.detector.finish()
    }

    /// The figures; fails only when the pack simulation ran out of memory for a line (on
    /// its own thread, after [`Stats::add_event`] took it).
    pub fn report(mut self) -> Result<FileReport, NoRoom> {
        let _ = self.filter.end_input(&mut self.filtered);
        let detected = self.detected();
        let estimated = self.pack.finish(self.same.and_then(Same::kept))?;
        let profile = detected
            .profile
            .clone()
            .unwrap_or_else(crate::profile::Profile::none);
        let total = self.lines.bytes.max(1) as f64;
        let mut types: Vec<KindRow> = self
            .by_kind
            .iter()
            .map(|(k, s)| KindRow {
                kind: k.clone(),
                class: profile
                    .classify((k != NO_TYPE).then_some(k.as_str()))
                    .name(),
                count: s.count,
                bytes: s.bytes,
                share: s.bytes as f64 / total,
                largest: s.largest,
                // sess's own rows are known whatever the producer.
                known: k == NO_TYPE
                    || k == OTHER_KINDS
                    || k == crate::snapshots::KIND
                    || detected.profile.is_none()
                    || profile.knows(k),
                filtered_bytes: self.filter.by_kind.get(k).map_or(0, |c| c.bytes_out),
            })
            .collect();
        types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.kind.cmp(&b.kind)));
        let unknown_kinds = types
            .iter()
            .filter(|t| !t.known)
            .map(|t| t.kind.clone())
            .collect();
        Ok(FileReport {
            file: self.name,
            dialect: detected.dialect,
            dialect_description: detected.describe,
            producer_version: self.version,
            unknown_kinds,
            lines: self.lines.count,
            bytes: self.lines.bytes,
            largest: self.lines.largest,
            torn_lines: self.torn,
            events: self.events.count,
            event_bytes: self.events.bytes,
            packed_bytes: estimated.plain,
            pack: PackEstimate::new(estimated, self.accuracy),
            filter_profile: self
                .filter
                .profile()
                .map_or("none", |p| p.name.as_str())
                .to_string(),
            filtered_bytes: self.filtered.0,
            types,
        })
    }
}

/// What `sess pack` would write, found by packing as the log is read.
struct Simulation {
    packer: Packer,
    /// What the packer writes, on its way to an estimate of the frames.
    packed: Estimate,
    failed: Option<NoRoom>,
}

impl Simulation {
    fn new(path: Option<&Path>, accuracy: Accuracy) -> Simulation {
        let mut packer = match accuracy {
            Accuracy::Estimate => Packer::default().estimating(),
            Accuracy::Exact => Packer::default(),
        };
        packer.start_input(path);
        Simulation {
            packer,
            packed: Estimate::new(crate::frames::writer::DEFAULT_FRAME_SIZE)
                .expect("a zstd compressor at level 3"),
            failed: None,
        }
    }

    /// Packs one event into the counters. That fails only when memory runs out for a line
    /// (an interned line can stand for gigabytes); the simulation then stops, and says so
    /// when finished.
    fn event(&mut self, bytes: &[u8], newline: bool) -> Result<(), NoRoom> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        match self.packer.event(bytes, newline, &mut self.packed) {
            Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
                Err(*self.failed.insert(NoRoom(bytes.len())))
            }
            // Writing to counters cannot fail otherwise.
            _ => Ok(()),
        }
    }

    fn finish(mut self, same: Option<Vec<u8>>) -> Result<Estimated, NoRoom> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        let _ = self.packer.end_input(&mut self.packed);
        // Counters and a compressor in memory (and the interner's temporary file).
        Ok(self.packed.finish(same).unwrap_or_default())
    }
}

/// Where the simulation runs: here, or on its own thread, fed batches of events.
enum PackSide {
    Here(Box<Simulation>),
    Thread {
        batch: Events,
        tx: std::sync::mpsc::SyncSender<Events>,
        handle: std::thread::JoinHandle<Simulation>,
    },
}

impl PackSide {
    fn event(&mut self, bytes: &[u8], newline: bool) -> Result<(), NoRoom> {
        match self {
            PackSide::Here(sim) => sim.event(bytes, newline),
            PackSide::Thread { batch, tx, .. } => {
                batch.push(bytes, newline)?;
                if batch.is_full() {
                    // A thread that has stopped has panicked; joining it says so.
                    let _ = tx.send(std::mem::take(batch));
                }
                Ok(())
            }
        }
    }

    fn finish(self, same: Option<Vec<u8>>) -> Result<Estimated, NoRoom> {
        match self {
            PackSide::Here(sim) => sim.finish(same),
            PackSide::Thread { batch, tx, handle } => {
                if !batch.is_empty() {
                    let _ = tx.send(batch);
                }
                drop(tx);
                match handle.join() {
                    Ok(sim) => sim.finish(same),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        }
    }
}

impl StatsReport {
    pub fn new(files: Vec<FileReport>) -> StatsReport {
        let mut total = Totals::default();
        for f in &files {
            total.files += 1;
            total.lines += f.lines;
            total.bytes += f.bytes;
            total.events += f.events;
            total.event_bytes += f.event_bytes;
            total.packed_bytes += f.packed_bytes;
            total.pack_estimate_bytes += f.pack.bytes;
            total.filtered_bytes += f.filtered_bytes;
        }
        StatsReport {
            schema: SCHEMA,
            files,
            total,
        }
    }

    /// Tables for people: a section per input (headed by its name when there are several),
    /// then the totals.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let several = self.files.len() > 1;
        for f in &self.files {
            if several {
                let _ = writeln!(out, "== {}", f.file);
            }
            out += &f.render();
            if several {
                out.push('\n');
            }
        }
        if several {
            let t = &self.total;
            let _ = writeln!(
                out,
                "== total: {} inputs, {} lines, {} ({} logical events in {})",
                t.files,
                t.lines,
                human_bytes(t.bytes),
                t.events,
                human_bytes(t.event_bytes)
            );
            let _ = writeln!(
                out,
                "sess filter would write: {} ({:.1}% of the logical bytes)",
                human_bytes(t.filtered_bytes),
                percent(t.filtered_bytes, t.event_bytes)
            );
            let _ = writeln!(
                out,
                "sess pack of each file alone would write: about {} ({:.1}% of the logical \
                 bytes; --plain: {})",
                human_bytes(t.pack_estimate_bytes),
                percent(t.pack_estimate_bytes, t.event_bytes),
                human_bytes(t.packed_bytes)
            );
        }
        out
    }
}

impl FileReport {
    /// A table for people.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let version = self
            .producer_version
            .as_ref()
            .map_or(String::new(), |v| format!(", version {v}"));
        let _ = writeln!(
            out,
            "dialect: {} ({}{version})",
            self.dialect, self.dialect_description
        );
        let width = self
            .types
            .iter()
            .map(|t| t.kind.chars().count() + usize::from(!t.known))
            .max()
            .unwrap_or(4)
            .max("type".len())
            .max("total".len());
        let row = |out: &mut String, cells: [&str; 8]| {
            let [kind, class, count, bytes, share, bar, largest, kept] = cells;
            let _ = writeln!(
                out,
                "{kind:<width$}  {class:<8}  {count:>10}  {bytes:>12}  {share:>6} {bar:<BAR$}  {largest:>12}  {kept:>12}"
            );
        };
        row(
            &mut out,
            [
                "type",
                "class",
                "count",
                "bytes",
                "share",
                "",
                "largest",
                "filter keeps",
            ],
        );
        for t in &self.types {
            let kind = if t.known {
                t.kind.clone()
            } else {
                format!("{}*", t.kind)
            };
            row(
                &mut out,
                [
                    &kind,
                    t.class,
                    &t.count.to_string(),
                    &human_bytes(t.bytes),
                    &format!("{:.1}%", t.share * 100.0),
                    &bar(t.share),
                    &human_bytes(t.largest),
                    &human_bytes(t.filtered_bytes),
                ],
            );
        }
        row(
            &mut out,
            [
                "total",
                "",
                &self.lines.to_string(),
                &human_bytes(self.bytes),
                if self.lines > 0 { "100.0%" } else { "0.0%" },
                "",
                &human_bytes(self.largest),
                &human_bytes(self.filtered_bytes),
            ],
        );
        if !self.unknown_kinds.is_empty() {
            let _ = writeln!(
                out,
                "* {} kind(s) the {} profile does not know: kept as facts",
                self.unknown_kinds.len(),
                self.filter_profile
            );
        }
        if self.events != self.lines {
            let _ = writeln!(
                out,
                "logical events (packed rows expanded): {} in {}",
                self.events,
                human_bytes(self.event_bytes)
            );
        }
        let _ = writeln!(
            out,
            "sess filter would write: {} ({:.1}% of the logical bytes; profile {})",
            human_bytes(self.filtered_bytes),
            percent(self.filtered_bytes, self.event_bytes),
            self.filter_profile
        );
        let p = &self.pack;
        let how = match p.accuracy {
            Accuracy::Estimate => "; snapshot rows estimated, --exact builds them",
            Accuracy::Exact => "",
        };
        let _ = writeln!(
            out,
            "sess pack would write: about {} ({:.1}% of the logical bytes, {} frame(s){how})",
            human_bytes(p.bytes),
            percent(p.bytes, self.event_bytes),
            p.frames,
        );
        let _ = writeln!(
            out,
            "  rows alone (--plain): {}; repeats written as references: {}",
            human_bytes(self.packed_bytes),
            human_bytes(p.referenced_bytes)
        );
        if self.torn_lines > 0 {
            let _ = writeln!(out, "torn lines (no final newline): {}", self.torn_lines);
        }
        out
    }
}

/// The width of the share bars, in characters.
const BAR: usize = 10;

/// A share (0 to 1) drawn as a bar of [`BAR`] characters, in eighths of one.
fn bar(share: f64) -> String {
    bar_of(share, BAR)
}

/// A share (0 to 1) drawn as a bar of `width` characters, in eighths of one.
pub fn bar_of(share: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = (share.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(EIGHTHS[eighths % 8]);
    }
    s
}

/// A version as found: a string's text, anything else as written.
fn version_text(raw: &[u8]) -> String {
    crate::json::str_value(raw)
        .map(|s| s.into_owned())
        .unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned())
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Bytes in binary units, exact below 1 KiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Ending;

    fn line(bytes: &[u8], terminated: bool) -> Line<'_> {
        Line {
            bytes,
            number: 1,
            offset: 0,
            ending: if terminated {
                Ending::Newline
            } else {
                Ending::Unterminated
            },
        }
    }

    /// A simulation that ran out of memory for a line (on stats' other thread, where the
    /// error cannot be returned) says so when finished, rather than figures of nothing.
    #[test]
    fn a_simulation_that_failed_says_so_when_finished() {
        let mut sim = Simulation::new(None, Accuracy::Estimate);
        assert!(sim.event(b"{\"type\":\"a\"}", true).is_ok());
        sim.failed = Some(NoRoom(7));
        assert_eq!(sim.event(b"{\"type\":\"b\"}", true), Err(NoRoom(7)));
        assert_eq!(sim.finish(None).err(), Some(NoRoom(7)));
        let mut thread = Stats::new("t", None, Accuracy::Estimate).pack_on_a_thread();
        assert!(matches!(thread.pack, PackSide::Thread { .. }));
        thread.add_line(&line(br#"{"type":"a"}"#, true));
        assert!(thread.report().is_ok());
    }

    #[test]
    fn counts_bytes_per_type() {
        let mut s = Stats::new("t", None, Accuracy::Estimate);
        s.add_line(&line(br#"{"type":"a"}"#, true));
        s.add_line(&line(br#"{"type":"a","x":12345}"#, true));
        s.add_line(&line(br#"{"type":"b"}"#, false));
        s.add_line(&line(b"[1]", true));
        let r = s.report().unwrap();
        assert_eq!(r.lines, 4);
        assert_eq!(r.bytes, 13 + 23 + 12 + 4);
        assert_eq!(r.torn_lines, 1);
        assert_eq!(r.types[0].kind, "a");
        assert_eq!(r.types[0].count, 2);
        assert_eq!(r.types[0].largest, 23);
        assert!(r.types.iter().any(|t| t.kind == NO_TYPE && t.bytes == 4));
        let table = r.render();
        assert!(table.contains("total"), "{table}");
    }

    #[test]
    fn draws_shares_as_bars() {
        assert_eq!(bar(0.0), "");
        assert_eq!(bar(1.0), "█".repeat(BAR));
        assert_eq!(bar(0.5), "█████");
        assert_eq!(bar(0.0125), "▏");
        assert_eq!(bar(0.665), "██████▋");
        assert!(bar(2.0).chars().count() == BAR);
    }

    #[test]
    fn formats_bytes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
