//! The streaming filter: facts through byte for byte, frames dropped (or bounded), a frame run
//! that never gets its successor kept as facts, boundaries projected. What each kind is
//! comes from the profile in force ([`crate::profile`]); this module knows no producer.
//!
//! An open run holds at most one snapshot frame, or its delta frames. Snapshots stay in
//! memory; delta frames do up to a budget, then wait in a temporary file ([`held`]).

pub mod bound;
mod held;
mod lazy;
pub mod project;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Place, Result};
use crate::profile::{Choice, Chooser, Class, Overrides, Profile};
use held::{Held, Holder};

/// The bucket for lines that have no kind.
pub const NO_KIND: &str = "(no type)";

/// How many kinds a per-kind table keeps apart. A log whose `type` holds an id has a kind
/// per line: a table of them grew with the log (`stats` of 2 million such lines took
/// 890 MB). Past this many, new kinds share the [`OTHER_KINDS`] row.
pub const MAX_KINDS: usize = 10_000;

/// The bucket for the kinds past [`MAX_KINDS`].
pub const OTHER_KINDS: &str = "(other kinds)";

/// Calls `f` with the entry of `kind` in a per-kind table, or of [`OTHER_KINDS`] once the
/// table holds [`MAX_KINDS`] others. (A closure, not a returned entry: one lookup for a
/// kind already there, nearly every line.)
pub fn with_kind<V: Default>(table: &mut HashMap<String, V>, kind: &str, f: impl FnOnce(&mut V)) {
    if let Some(v) = table.get_mut(kind) {
        return f(v);
    }
    let key = if table.len() < MAX_KINDS {
        kind
    } else {
        OTHER_KINDS
    };
    f(table.entry(key.to_string()).or_default())
}

#[derive(Debug, Clone)]
pub struct FilterOptions {
    pub include_live: bool,
    pub keep_boundaries: bool,
    pub max_frame_bytes: usize,
    /// Write only the input events of this class, untouched.
    pub only: Option<Class>,
    /// Count events and bytes per kind too (`stats` does; it costs a map update a line).
    pub per_kind: bool,
    /// Let [`Filter::row`] take snapshot-delta rows whole. The events it passes over
    /// unbuilt are then not counted: only for a caller that reports no counts.
    pub lazy_rows: bool,
    /// The bytes of delta frames held for their successor kept in memory (64 more counted
    /// for each); the rest wait in a temporary file.
    pub hold_in_memory: usize,
}

impl Default for FilterOptions {
    fn default() -> FilterOptions {
        FilterOptions {
            include_live: false,
            keep_boundaries: false,
            max_frame_bytes: 256 * 1024,
            only: None,
            per_kind: false,
            lazy_rows: false,
            hold_in_memory: held::DEFAULT_BUDGET,
        }
    }
}

/// Events and bytes in and out, for one class.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    pub events_in: u64,
    pub bytes_in: u64,
    pub events_out: u64,
    pub bytes_out: u64,
}

impl Counts {
    fn add(&mut self, c: Counts) {
        self.events_in += c.events_in;
        self.bytes_in += c.bytes_in;
        self.events_out += c.events_out;
        self.bytes_out += c.bytes_out;
    }
}

/// A run of frames waiting for its successor.
struct OpenRun {
    frame_type: String,
    key: Option<Vec<u8>>,
    frames: Vec<Held>,
    /// The kind its frames are counted under per kind, when not their own: the packed row
    /// that held the last of them ([`Filter::event_as`]).
    account: Option<String>,
}

/// The open runs, found by type and key in constant time and written in the order they
/// opened, so that many open runs (thousands of tool calls that never end) cost linear
/// time, not quadratic.
struct OpenRuns {
    /// By when each run opened.
    runs: BTreeMap<u64, OpenRun>,
    by_key: HashMap<(String, Option<Vec<u8>>), u64>,
    by_type: HashMap<String, BTreeSet<u64>>,
    next: u64,
    /// Where their frames' bytes are.
    holder: Holder,
}

impl OpenRuns {
    fn new(budget: usize) -> OpenRuns {
        OpenRuns {
            runs: BTreeMap::new(),
            by_key: HashMap::new(),
            by_type: HashMap::new(),
            next: 0,
            holder: Holder::new(budget),
        }
    }

    /// Holds a frame in the run of its type and key, opening it if need be. A snapshot
    /// carries the whole value so far: it supersedes what the run held.
    fn hold(
        &mut self,
        frame_type: &str,
        key: Option<Vec<u8>>,
        snapshot: bool,
        (bytes, terminated, row): (&[u8], bool, Option<Place>),
        account: Option<&str>,
    ) -> io::Result<()> {
        let id = self.open_id(frame_type, key);
        let run = self.runs.get_mut(&id).expect("indexed runs are open");
        if run.account.as_deref() != account {
            run.account = account.map(str::to_string);
        }
        let frames = &mut run.frames;
        if snapshot {
            self.holder.replace(frames, bytes, terminated, row);
            Ok(())
        } else {
            self.holder.hold(frames, bytes, terminated, row)
        }
    }

    /// The run of this type and key, opened if need be.
    fn open_id(&mut self, frame_type: &str, key: Option<Vec<u8>>) -> u64 {
        match self.by_key.get(&(frame_type.to_string(), key.clone())) {
            Some(&id) => id,
            None => {
                // Every run taken has been written by now (a run is opened only after).
                if self.runs.is_empty() {
                    self.holder.idle();
                }
                let id = self.next;
                self.next += 1;
                self.by_key
                    .insert((frame_type.to_string(), key.clone()), id);
                self.by_type
                    .entry(frame_type.to_string())
                    .or_default()
                    .insert(id);
                let run = OpenRun {
                    frame_type: frame_type.to_string(),
                    account: None,
                    key,
                    frames: Vec::new(),
                };
                self.runs.insert(id, run);
                id
            }
        }
    }

    fn remove(&mut self, id: u64) -> Option<OpenRun> {
        let run = self.runs.remove(&id)?;
        for held in &run.frames {
            self.holder.release(held);
        }
        self.by_key
            .remove(&(run.frame_type.clone(), run.key.clone()));
        if let Some(ids) = self.by_type.get_mut(&run.frame_type) {
            ids.remove(&id);
        }
        Some(run)
    }

    /// Closes the run of this type and key, if one is open.
    fn close(&mut self, frame_type: &str, key: Option<Vec<u8>>) {
        if let Some(id) = self.by_key.get(&(frame_type.to_string(), key)).copied() {
            self.remove(id);
        }
    }

    /// Takes the runs of this type whose key is not `key`, oldest first.
    fn take_others(&mut self, frame_type: &str, key: &Option<Vec<u8>>) -> Vec<OpenRun> {
        let ids: Vec<u64> = self
            .by_type
            .get(frame_type)
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| self.runs.get(id).is_some_and(|r| r.key != *key))
            .collect();
        ids.into_iter().filter_map(|id| self.remove(id)).collect()
    }

    /// Takes the runs of these types (every run when `types` is `None`), oldest first.
    fn take(&mut self, types: Option<&[&String]>) -> Vec<OpenRun> {
        let mut ids: Vec<u64> = match types {
            None => self.runs.keys().copied().collect(),
            Some(types) => types
                .iter()
                .filter_map(|t| self.by_type.get(t.as_str()))
                .flatten()
                .copied()
                .collect(),
        };
        ids.sort_unstable();
        ids.into_iter().filter_map(|id| self.remove(id)).collect()
    }
}

pub struct Filter {
    profile: Chooser,
    opts: FilterOptions,
    open: OpenRuns,
    pub counts: BTreeMap<Class, Counts>,
    /// Per kind, when `per_kind` is on.
    pub by_kind: HashMap<String, Counts>,
    /// Opted-in frames too large to bound at all (not even their type fits the cap).
    pub dropped_unboundable: u64,
    /// The last line written had no newline.
    unterminated: bool,
    /// For conditional frame kinds: the value the last line of the kind had.
    last_values: HashMap<String, Vec<u8>>,
}

impl Filter {
    /// Fails when the overrides do not apply (a malformed `--frame`).
    pub fn new(choice: Choice, overrides: Overrides, opts: FilterOptions) -> Result<Filter> {
        Ok(Filter {
            profile: Chooser::new(choice, overrides)?,
            open: OpenRuns::new(opts.hold_in_memory),
            opts,
            counts: BTreeMap::new(),
            by_kind: HashMap::new(),
            dropped_unboundable: 0,
            unterminated: false,
            last_values: HashMap::new(),
        })
    }

    /// A new input begins (`path` when it is a file): an `auto` profile is chosen again.
    /// Call [`Filter::end_input`] at its end.
    pub fn start_input(&mut self, path: Option<&Path>) {
        self.profile.start_input(path);
        self.last_values.clear();
    }

    /// The profile in force, once chosen.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.current()
    }

    /// One logical event (without newline). `terminated` is false only for a last line
    /// without newline, which is written back so when kept.
    pub fn event<W: Write>(
        &mut self,
        line: &[u8],
        terminated: bool,
        out: &mut W,
    ) -> io::Result<()> {
        self.event_as(line, terminated, out, None)
    }

    /// [`Filter::event`], counted per kind (when [`FilterOptions::per_kind`]) under
    /// `account` when given rather than its own kind: `stats` tallies a packed row's events
    /// under the row, as its table has a line for the row and none for the events it holds.
    pub fn event_as<W: Write>(
        &mut self,
        line: &[u8],
        terminated: bool,
        out: &mut W,
        account: Option<&str>,
    ) -> io::Result<()> {
        let (class, kind) = match self.profile.see(line) {
            Some(p) => {
                let kind = p.kind_of(line);
                (p.classify(kind.as_deref()), kind)
            }
            // Before a profile is chosen every line is a fact; its kind is only counted.
            None => (
                Class::Fact,
                crate::json::field(line, "type").and_then(crate::json::str_value),
            ),
        };
        let kind = kind.as_deref();
        let class = match (class, kind) {
            (Class::Frame, Some(k)) => self.frame_or_fact(k, line),
            _ => class,
        };
        let tally = account.or(kind);
        let n = line.len() as u64 + u64::from(terminated);
        let c = self.counts.entry(class).or_default();
        c.events_in += 1;
        c.bytes_in += n;
        if self.opts.per_kind {
            with_kind(&mut self.by_kind, tally.unwrap_or(NO_KIND), |c| {
                c.events_in += 1;
                c.bytes_in += n;
            });
        }
        if let Some(only) = self.opts.only {
            if only == class {
                self.write((class, tally), line, terminated, out)?;
            }
            return Ok(());
        }
        if let Some(k) = kind {
            self.prove_orphans(k, line, out)?;
        }
        match class {
            Class::Fact => {
                if let Some(k) = kind {
                    self.close_runs(k, line);
                }
                self.write((class, tally), line, terminated, out)
            }
            Class::Frame if !self.opts.include_live => {
                let k = kind.unwrap_or_default();
                self.end_other_runs(k, line, out)?;
                self.pend(k, line, (line, terminated, None), account)
            }
            Class::Frame | Class::Mirror if self.opts.include_live => {
                if class == Class::Frame {
                    // Held as without the option: a run that never gets its successor is
                    // the only copy of its output, which is then written whole as well
                    // ([`Filter::keep_orphan`]).
                    let k = kind.unwrap_or_default();
                    self.end_other_runs(k, line, out)?;
                    self.pend(k, line, (line, terminated, None), account)?;
                }
                let how = &self.profile.current().expect("classified by it").bound;
                match bound::bound(line, self.opts.max_frame_bytes, how) {
                    Some(b) => self.write((class, tally), &b, true, out),
                    None => {
                        self.dropped_unboundable += 1;
                        Ok(())
                    }
                }
            }
            Class::Frame | Class::Mirror => Ok(()),
            Class::Boundary => {
                let k = kind.unwrap_or_default();
                self.close_runs(k, line);
                let projected = match self.profile.current() {
                    Some(p) if !self.opts.keep_boundaries => p
                        .boundaries
                        .get(k)
                        .and_then(|how| project::project(line, how)),
                    _ => None,
                };
                match projected {
                    Some(p) => self.write((class, tally), &p, terminated, out),
                    None => self.write((class, tally), line, terminated, out),
                }
            }
        }
    }

    /// A packed snapshot-delta row, before it is expanded: returns whether the filter took
    /// it whole (see the module `lazy`); if not, the caller gives [`Filter::event`] each of its
    /// events. Only with [`FilterOptions::lazy_rows`], and only when the filter would write
    /// none of the events but perhaps the last, which is rebuilt only then. `(file, line)`
    /// names the row.
    pub fn row<W: Write>(
        &mut self,
        row: &[u8],
        (file, line): (&str, u64),
        out: &mut W,
    ) -> io::Result<bool> {
        let o = &self.opts;
        if !o.lazy_rows || o.include_live || o.only.is_some() || o.per_kind {
            return Ok(false);
        }
        let Some((kind, first)) = self
            .profile
            .current()
            .and_then(|p| lazy::kind_of_row(p, row))
        else {
            return Ok(false);
        };
        self.end_other_runs(&kind, first, out)?;
        // The row's events all end in a newline: they are members of a line.
        self.pend(
            &kind,
            first,
            (row, true, Some(Place::line(file, line))),
            None,
        )?;
        Ok(true)
    }

    /// The input ended: writes every run still open (no successor will come).
    pub fn end_input<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.finish(out)
    }

    /// The bytes of the frames held for their successor that are in memory, as
    /// [`FilterOptions::hold_in_memory`] bounds them: snapshots (one per open run at most)
    /// are held in memory besides.
    pub fn held_in_memory(&self) -> usize {
        self.open.holder.in_memory()
    }

    /// Writes every run still open: the input ended, so no successor will come.
    pub fn finish<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        for run in self.open.take(None) {
            self.keep_orphan(run, out)?;
        }
        Ok(())
    }

    fn write<W: Write>(
        &mut self,
        (class, kind): (Class, Option<&str>),
        bytes: &[u8],
        terminated: bool,
        out: &mut W,
    ) -> io::Result<()> {
        // A line written without its newline must stay last: if anything follows it (an
        // orphaned run written at the end), it gets its newline after all.
        if std::mem::take(&mut self.unterminated) {
            out.write_all(b"\n")?;
        }
        out.write_all(bytes)?;
        if terminated {
            out.write_all(b"\n")?;
        } else {
            self.unterminated = true;
        }
        let n = bytes.len() as u64 + u64::from(terminated);
        let c = self.counts.entry(class).or_default();
        c.events_out += 1;
        c.bytes_out += n;
        if self.opts.per_kind {
            with_kind(&mut self.by_kind, kind.unwrap_or(NO_KIND), |c| {
                c.events_out += 1;
                c.bytes_out += n;
            });
        }
        Ok(())
    }

    /// A frame run without a successor is the only copy of its output: keep it, as facts,
    /// in its original order. A row held whole gives its last event, rebuilt now. With
    /// `--include-live-events` its frames were written already, bounded: those that did not
    /// fit the bound are written again, whole.
    fn keep_orphan<W: Write>(&mut self, run: OpenRun, out: &mut W) -> io::Result<()> {
        for held in run.frames {
            let mut frames = Holder::frames(held);
            while let Some(frame) = frames.next(&self.open.holder)? {
                let line = match frame.row {
                    None => frame.bytes,
                    Some(place) => crate::snapshots::last_event(&frame.bytes)
                        .map_err(|why| io::Error::other(Error::invalid(*place, why)))?,
                };
                if self.opts.include_live && bound::kept_whole(&line, self.opts.max_frame_bytes) {
                    continue;
                }
                let kind = (
                    Class::Frame,
                    Some(run.account.as_deref().unwrap_or(&run.frame_type)),
                );
                self.write(kind, &line, frame.terminated, out)?;
            }
        }
        Ok(())
    }

    /// Writes the runs that event type `k` proves will never get their successor: those
    /// of the frame types `k` opens (a new message), or every run if `k` closes them all.
    fn prove_orphans<W: Write>(&mut self, k: &str, line: &[u8], out: &mut W) -> io::Result<()> {
        let Some(p) = self.profile.current() else {
            return Ok(());
        };
        let closes_all = p.closers.iter().any(|c| c.holds(line, Some(k)));
        let opened: Vec<&String> = p
            .frames
            .iter()
            .filter(|(_, r)| r.opener.as_deref() == Some(k))
            .map(|(t, _)| t)
            .collect();
        if !closes_all && opened.is_empty() {
            return Ok(());
        }
        let orphans = self.open.take((!closes_all).then_some(&opened[..]));
        for run in orphans {
            self.keep_orphan(run, out)?;
        }
        Ok(())
    }

    /// A frame of a conditional kind (`repeats`) is one only when it repeats the value of
    /// the previous line of its kind; else it is a fact.
    fn frame_or_fact(&mut self, k: &str, line: &[u8]) -> Class {
        let Some(path) = self
            .profile
            .current()
            .and_then(|p| p.frames.get(k))
            .and_then(|r| r.repeats.as_deref())
        else {
            return Class::Frame;
        };
        let value = crate::json::path(line, path).unwrap_or_default();
        let repeat = self.last_values.get(k).is_some_and(|v| v == value);
        if !repeat {
            self.last_values.insert(k.to_string(), value.to_vec());
        }
        if repeat { Class::Frame } else { Class::Fact }
    }

    /// For an `exclusive` frame kind, a frame of a new key ends the open runs of the others:
    /// their last frames are written, in place.
    fn end_other_runs<W: Write>(&mut self, k: &str, line: &[u8], out: &mut W) -> io::Result<()> {
        let Some(rule) = self.profile.current().and_then(|p| p.frames.get(k)) else {
            return Ok(());
        };
        if !rule.exclusive {
            return Ok(());
        }
        let key = rule.key_of(line);
        for run in self.open.take_others(k, &key) {
            self.keep_orphan(run, out)?;
        }
        Ok(())
    }

    /// A successor arrived: the runs it closes carried nothing it does not.
    fn close_runs(&mut self, k: &str, line: &[u8]) {
        let Some(p) = self.profile.current() else {
            return;
        };
        for (frame_type, rule) in &p.frames {
            if rule.successor.as_deref() == Some(k) {
                self.open.close(frame_type, rule.key_of(line));
            }
        }
    }

    /// Holds a frame in its run. Its key and snapshot rule are read from `line`; what is
    /// held is `bytes` (the line, or a row whose last event is the frame), whether it ended
    /// in a newline, and for a row where it was read.
    fn pend(
        &mut self,
        frame_type: &str,
        line: &[u8],
        held: (&[u8], bool, Option<Place>),
        account: Option<&str>,
    ) -> io::Result<()> {
        let Some(rule) = self
            .profile
            .current()
            .and_then(|p| p.frames.get(frame_type))
        else {
            return Ok(());
        };
        let key = rule.key_of(line);
        let snapshot = rule.snapshot.holds(line);
        self.open.hold(frame_type, key, snapshot, held, account)
    }

    /// Per-class counts as one JSON object (`docs/FORMAT.md`, "`sess filter --stats
    /// --json`"): each class, then the total.
    pub fn counts_json(&self) -> serde_json::Value {
        let mut classes = serde_json::Map::new();
        let mut total = Counts::default();
        for class in Class::ALL {
            let c = self.counts.get(&class).copied().unwrap_or_default();
            total.add(c);
            classes.insert(class.name().to_string(), serde_json::json!(c));
        }
        serde_json::json!({
            "classes": classes,
            "total": total,
            "frames_too_large": self.dropped_unboundable,
        })
    }

    /// Per-class counts as a table for people.
    pub fn render_counts(&self) -> String {
        let mut out = format!(
            "{:<9} {:>10} {:>14} {:>10} {:>14}\n",
            "class", "events in", "bytes in", "events out", "bytes out"
        );
        let mut total = Counts::default();
        for class in Class::ALL {
            let c = self.counts.get(&class).copied().unwrap_or_default();
            out += &format!(
                "{:<9} {:>10} {:>14} {:>10} {:>14}\n",
                class.name(),
                c.events_in,
                c.bytes_in,
                c.events_out,
                c.bytes_out
            );
            total.add(c);
        }
        out += &format!(
            "{:<9} {:>10} {:>14} {:>10} {:>14}\n",
            "total", total.events_in, total.bytes_in, total.events_out, total.bytes_out
        );
        if self.dropped_unboundable > 0 {
            out += &format!(
                "frames too large to bound at all: {}\n",
                self.dropped_unboundable
            );
        }
        out
    }
}
