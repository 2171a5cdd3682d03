//! `sess stats DIR`: what a whole store holds, by producer, session, kind and age, and what
//! `filter`, `pack` and `compact` would make of it. Each log is read once, on one of
//! `threads` workers (largest first, so that the last to finish is a small one), with what
//! `sess stats` computes for a file plus a zstd level 3 count of its bytes (what
//! `compact --compat` would write).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{Found, Log};
use crate::event::{self, LastLine};
use crate::filter::{MAX_KINDS, OTHER_KINDS};
use crate::frames::reader::Recovery;
use crate::input::{Flow, Input, OpenOptions};
use crate::io::Ending;
use crate::profile::store::logical_name;
use crate::stats::{Accuracy, ByteCount, Stats, bar_of, human_bytes, percent};
use crate::syntax::LineCheck;

/// The version of what `stats --json` writes for folders.
pub const SCHEMA: &str = "sess-store/1";

#[derive(Debug, Clone)]
pub struct Options {
    pub threads: usize,
    /// How many sessions and kinds the text report lists (the JSON lists every kind).
    pub top: usize,
    /// What `compact` would take: logs older than this.
    pub older_than: Duration,
    pub now: SystemTime,
    /// How what `pack` would write is found.
    pub accuracy: Accuracy,
}

/// What one log holds, as the report adds it up.
#[derive(Debug, Default)]
struct Summary {
    producer: String,
    session: String,
    size: u64,
    age: Duration,
    /// Stored compressed already (its name ends in `.zst`, `.gz`...).
    compressed: bool,
    event_bytes: u64,
    filtered_bytes: u64,
    /// What `sess pack` and a plain zstd level 3 would write, estimated.
    pack_bytes: u64,
    compat_bytes: u64,
    kinds: Vec<(String, &'static str, u64, u64)>,
    error: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct ProducerRow {
    pub producer: String,
    pub logs: u64,
    pub sessions: u64,
    pub bytes: u64,
    /// Logical bytes (packed rows expanded, compression undone).
    pub event_bytes: u64,
    pub filtered_bytes: u64,
    pub pack_bytes: u64,
    pub compat_bytes: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct SessionRow {
    pub producer: String,
    pub session: String,
    pub logs: u64,
    pub bytes: u64,
    pub pack_bytes: u64,
    /// Days since its newest log was modified.
    pub age_days: f64,
}

#[derive(Debug, Serialize)]
pub struct KindRow {
    pub producer: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub class: &'static str,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct AgeRow {
    /// The bucket: logs last modified at least `from_days` and less than `to_days` ago
    /// (`to_days` null for the last).
    pub label: &'static str,
    pub from_days: u64,
    pub to_days: Option<u64>,
    pub logs: u64,
    pub bytes: u64,
}

/// Bytes before and after a command, over the logs it would take.
#[derive(Debug, Default, Serialize)]
pub struct Saving {
    pub logs: u64,
    pub bytes: u64,
    pub bytes_after: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct Savings {
    /// `sess filter`: logical bytes in, bytes out (plain JSONL; lossy by design, it keeps
    /// what the durability classes say).
    pub filter: Saving,
    /// `sess pack` of every log (a log already smaller stays as it is).
    pub pack: Saving,
    /// `sess compact` with its options: the cold, uncompressed logs.
    pub compact: Saving,
    pub compact_compat: Saving,
}

#[derive(Debug, Serialize)]
pub struct ErrorRow {
    pub file: String,
    pub message: String,
}

/// `sess stats --json` of folders.
#[derive(Debug, Serialize)]
pub struct StoreReport {
    pub schema: &'static str,
    pub roots: Vec<String>,
    pub logs: u64,
    pub bytes: u64,
    /// Files that are not logs (by name): counted, not read.
    pub other_files: u64,
    pub other_bytes: u64,
    /// Sessions in all, and the largest `--top` of them.
    pub sessions_total: u64,
    pub producers: Vec<ProducerRow>,
    pub sessions: Vec<SessionRow>,
    pub kinds: Vec<KindRow>,
    pub ages: Vec<AgeRow>,
    pub older_than_days: f64,
    /// How `pack_bytes` were found: snapshot rows estimated, or built (`--exact`).
    pub pack_accuracy: Accuracy,
    pub savings: Savings,
    pub errors: Vec<ErrorRow>,
}

const DAY: u64 = 86_400;

const AGES: [(&str, u64, Option<u64>); 6] = [
    ("< 1 day", 0, Some(1)),
    ("1-7 days", 1, Some(7)),
    ("7-30 days", 7, Some(30)),
    ("30-90 days", 30, Some(90)),
    ("90-365 days", 90, Some(365)),
    ("> 1 year", 365, None),
];

/// Reads every log `found` holds and adds them up; `progress` is called with each log's
/// bytes as it is done.
pub fn report(
    roots: &[PathBuf],
    found: &Found,
    opts: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> StoreReport {
    let mut order: Vec<usize> = (0..found.logs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(found.logs[i].size));
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(order.len()));
    std::thread::scope(|s| {
        for _ in 0..opts.threads.max(1) {
            s.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let log = &found.logs[i];
                    let summary = summarize(log, opts.now, opts.accuracy);
                    progress(log.size);
                    done.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, summary));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    // The same report whatever the threads: logs in the walk's order.
    done.sort_by_key(|(i, _)| *i);
    let summaries: Vec<Summary> = done.into_iter().map(|(_, s)| s).collect();
    add_up(roots, found, &summaries, opts)
}

fn reading() -> OpenOptions {
    OpenOptions {
        quiet: true,
        recovery: Recovery::TolerateTail,
        collect_warnings: true,
        // Binary data named .jsonl is an error for the report, and a log with lines that
        // are not JSON gets its one warning, as `sess stats FILE` gives it.
        check: LineCheck::Warn,
        // Logs are read on every core already, one a thread.
        read_ahead: false,
    }
}

fn summarize(log: &Log, now: SystemTime, accuracy: Accuracy) -> Summary {
    let name = log.path.display().to_string();
    let file_name = log.name();
    let compressed = log.compressed();
    let mut stats = Stats::new(&name, Some(&log.path), accuracy);
    let mut compat = zstd::stream::write::Encoder::new(ByteCount::default(), 3).ok();
    let read = event::each_event::<crate::error::Error>(
        &[Input::Path(log.path.clone())],
        reading(),
        LastLine::Verbatim,
        |name, ev| {
            stats.add_event(ev).map_err(|e| e.at(name, ev.line))?;
            if let Some(c) = compat.as_mut().filter(|_| !compressed && ev.starts_line()) {
                let _ = c.write_all(ev.line.bytes);
                if ev.line.ending == Ending::Newline {
                    let _ = c.write_all(b"\n");
                }
            }
            Ok(Flow::More)
        },
    );
    let r = match stats.report() {
        Ok(r) => r,
        // Left out of the figures, as an unreadable log is.
        Err(e) => {
            let error = read.err().unwrap_or_else(|| e.in_file(&name)).to_string();
            return Summary {
                size: log.size,
                error: Some(error),
                ..Summary::default()
            };
        }
    };
    let session = log.layout.as_ref().map_or_else(
        || {
            logical_name(&file_name)
                .trim_end_matches(".jsonl")
                .to_string()
        },
        |l| l.session.clone(),
    );
    let producer = match &log.layout {
        Some(l) => l.producer.clone(),
        None if r.filter_profile == "none" => "unknown".into(),
        None => r.filter_profile.clone(),
    };
    let compat_bytes = match compat.map(|c| c.finish()) {
        Some(Ok(count)) if !compressed => count.0,
        _ => log.size,
    };
    Summary {
        producer,
        session,
        size: log.size,
        age: now.duration_since(log.modified).unwrap_or_default(),
        compressed,
        event_bytes: r.event_bytes,
        filtered_bytes: r.filtered_bytes,
        pack_bytes: r.pack.bytes,
        compat_bytes,
        kinds: kept_kinds(&r.types),
        error: read.err().map(|e| e.to_string()),
    }
}

/// The kinds a log's summary keeps until the folder's figures are added up: its largest
/// [`LOG_KINDS`], and the rest as one `(other kinds)` row. Every log's summary is held to
/// the end, so 10,000 kinds a log grew with the number of logs.
fn kept_kinds(types: &[crate::stats::KindRow]) -> Vec<(String, &'static str, u64, u64)> {
    let mut kept: Vec<_> = types
        .iter()
        .take(LOG_KINDS)
        .map(|t| (t.kind.clone(), t.class, t.count, t.bytes))
        .collect();
    let mut rest = types.iter().skip(LOG_KINDS).peekable();
    if rest.peek().is_some() {
        let (count, bytes) = rest.fold((0, 0), |(c, b), t| (c + t.count, b + t.bytes));
        // As stats classes it: a kind no profile names is a fact.
        kept.push((OTHER_KINDS.to_string(), "fact", count, bytes));
    }
    kept
}

/// See [`kept_kinds`]: far more than any producer writes.
const LOG_KINDS: usize = 500;

fn add_up(roots: &[PathBuf], found: &Found, logs: &[Summary], opts: &Options) -> StoreReport {
    let mut producers: BTreeMap<String, ProducerRow> = BTreeMap::new();
    let mut sessions: BTreeMap<(String, String), SessionRow> = BTreeMap::new();
    let mut kinds: BTreeMap<(String, String), KindRow> = BTreeMap::new();
    let mut kinds_held: BTreeMap<String, usize> = BTreeMap::new();
    let mut ages: Vec<AgeRow> = AGES
        .iter()
        .map(|&(label, from_days, to_days)| AgeRow {
            label,
            from_days,
            to_days,
            logs: 0,
            bytes: 0,
        })
        .collect();
    let mut savings = Savings::default();
    let mut errors: Vec<ErrorRow> = found
        .errors
        .iter()
        .map(|e| ErrorRow {
            file: String::new(),
            message: e.clone(),
        })
        .collect();
    let mut session_names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (s, log) in logs.iter().zip(&found.logs) {
        // A log that could not be read is listed, and left out of every figure: what it
        // would pack to is not known.
        if let Some(e) = &s.error {
            let file = log.path.display().to_string();
            let message = e
                .strip_prefix(&format!("{file}: "))
                .unwrap_or(e)
                .to_string();
            errors.push(ErrorRow { file, message });
            continue;
        }
        let p = producers.entry(s.producer.clone()).or_default();
        p.producer = s.producer.clone();
        p.logs += 1;
        p.bytes += s.size;
        p.event_bytes += s.event_bytes;
        p.filtered_bytes += s.filtered_bytes;
        p.pack_bytes += s.pack_bytes.min(s.size);
        p.compat_bytes += s.compat_bytes.min(s.size);
        session_names
            .entry(s.producer.clone())
            .or_default()
            .insert(s.session.clone());
        let sr = sessions
            .entry((s.producer.clone(), s.session.clone()))
            .or_insert_with(|| SessionRow {
                producer: s.producer.clone(),
                session: s.session.clone(),
                age_days: f64::MAX,
                ..SessionRow::default()
            });
        sr.logs += 1;
        sr.bytes += s.size;
        sr.pack_bytes += s.pack_bytes.min(s.size);
        sr.age_days = sr.age_days.min(s.age.as_secs_f64() / DAY as f64);
        for (kind, class, count, bytes) in &s.kinds {
            // Kinds a producer's logs hold apart: at most MAX_KINDS, and the rest in one row,
            // as for one log.
            let key = (s.producer.clone(), kind.clone());
            let held = kinds_held.entry(s.producer.clone()).or_default();
            let key = match kinds.contains_key(&key) || *held < MAX_KINDS {
                true => key,
                false => (s.producer.clone(), OTHER_KINDS.to_string()),
            };
            if !kinds.contains_key(&key) && key.1 != OTHER_KINDS {
                *held += 1;
            }
            let k = kinds.entry(key).or_insert_with_key(|(_, kind)| KindRow {
                producer: s.producer.clone(),
                kind: kind.clone(),
                class,
                count: 0,
                bytes: 0,
            });
            k.count += count;
            k.bytes += bytes;
        }
        let days = s.age.as_secs() / DAY;
        if let Some(a) = ages.iter_mut().rev().find(|a| days >= a.from_days) {
            a.logs += 1;
            a.bytes += s.size;
        }
        add_savings(&mut savings, s, opts);
    }
    for (name, set) in &session_names {
        if let Some(p) = producers.get_mut(name) {
            p.sessions = set.len() as u64;
        }
    }
    let mut producers: Vec<ProducerRow> = producers.into_values().collect();
    producers.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.producer.cmp(&b.producer))
    });
    let sessions_total = sessions.len() as u64;
    let mut sessions: Vec<SessionRow> = sessions.into_values().collect();
    sessions.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.session.cmp(&b.session))
    });
    sessions.truncate(opts.top);
    let mut kinds: Vec<KindRow> = kinds.into_values().collect();
    kinds.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.kind.cmp(&b.kind)));
    StoreReport {
        schema: SCHEMA,
        roots: roots.iter().map(|r| r.display().to_string()).collect(),
        logs: logs.iter().filter(|s| s.error.is_none()).count() as u64,
        bytes: logs
            .iter()
            .filter(|s| s.error.is_none())
            .map(|s| s.size)
            .sum(),
        other_files: found.other_files,
        other_bytes: found.other_bytes,
        sessions_total,
        producers,
        sessions,
        kinds,
        ages,
        older_than_days: opts.older_than.as_secs_f64() / DAY as f64,
        pack_accuracy: opts.accuracy,
        savings,
        errors,
    }
}

fn add_savings(savings: &mut Savings, s: &Summary, opts: &Options) {
    let add = |sv: &mut Saving, before: u64, after: u64| {
        sv.logs += 1;
        sv.bytes += before;
        sv.bytes_after += after.min(before);
    };
    add(&mut savings.filter, s.event_bytes, s.filtered_bytes);
    add(&mut savings.pack, s.size, s.pack_bytes);
    if s.error.is_none() && !s.compressed && s.age >= opts.older_than {
        // Not a log that holds packed rows itself: its packed form unpacks to more than it
        // is, and compact leaves it alone (not exact); its bytes compressed (--compat) are
        // exact whatever they hold.
        if s.event_bytes == s.size {
            add(&mut savings.compact, s.size, s.pack_bytes);
        }
        add(&mut savings.compact_compat, s.size, s.compat_bytes);
    }
}

impl StoreReport {
    /// Tables for people.
    pub fn render(&self, top: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} logs, {} in {} ({} other files, {}), {} sessions",
            self.logs,
            human_bytes(self.bytes),
            self.roots.join(", "),
            self.other_files,
            human_bytes(self.other_bytes),
            self.sessions_total
        );
        self.render_producers(&mut out);
        self.render_sessions(&mut out);
        self.render_kinds(&mut out, top);
        self.render_ages(&mut out);
        self.render_savings(&mut out);
        if !self.errors.is_empty() {
            let _ = writeln!(out, "\n{} could not be read:", self.errors.len());
            for e in &self.errors {
                match e.file.as_str() {
                    "" => writeln!(out, "  {}", e.message),
                    file => writeln!(out, "  {}", crate::error::about(file, &e.message)),
                }
                .ok();
            }
        }
        out
    }

    fn render_producers(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n{:<16} {:>7} {:>9} {:>11} {:>11} {:>11} {:>11}",
            "producer", "logs", "sessions", "bytes", "filtered", "packed", "zstd -3"
        );
        for p in &self.producers {
            let _ = writeln!(
                out,
                "{:<16} {:>7} {:>9} {:>11} {:>11} {:>11} {:>11}",
                p.producer,
                p.logs,
                p.sessions,
                human_bytes(p.bytes),
                human_bytes(p.filtered_bytes),
                human_bytes(p.pack_bytes),
                human_bytes(p.compat_bytes)
            );
        }
    }

    fn render_sessions(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\nlargest sessions ({} of {}):",
            self.sessions.len(),
            self.sessions_total
        );
        for s in &self.sessions {
            let _ = writeln!(
                out,
                "  {:>11}  packed {:>11}  {:>4} {:<4}  {:>6.1} days  {} {}",
                human_bytes(s.bytes),
                human_bytes(s.pack_bytes),
                s.logs,
                if s.logs == 1 { "log" } else { "logs" },
                s.age_days,
                s.producer,
                s.session
            );
        }
    }

    fn render_kinds(&self, out: &mut String, top: usize) {
        let _ = writeln!(
            out,
            "\nlargest kinds ({} of {}):",
            self.kinds.len().min(top),
            self.kinds.len()
        );
        for k in self.kinds.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:>11}  {:>10}  {:<8}  {} {}",
                human_bytes(k.bytes),
                k.count,
                k.class,
                k.producer,
                k.kind
            );
        }
    }

    fn render_ages(&self, out: &mut String) {
        let _ = writeln!(out, "\nby age (last modified):");
        let most = self.ages.iter().map(|a| a.bytes).max().unwrap_or(0).max(1);
        for a in &self.ages {
            let _ = writeln!(
                out,
                "  {:<11} {:<30} {:>11} {:>7} logs",
                a.label,
                bar_of(a.bytes as f64 / most as f64, 30),
                human_bytes(a.bytes),
                a.logs
            );
        }
    }

    fn render_savings(&self, out: &mut String) {
        let s = &self.savings;
        let _ = writeln!(out, "\nwhat each would write:");
        let line = |out: &mut String, what: &str, sv: &Saving| {
            let _ = writeln!(
                out,
                "  {what:<24} {:>11} -> {:>11} ({:.1}%, {} logs)",
                human_bytes(sv.bytes),
                human_bytes(sv.bytes_after),
                percent(sv.bytes_after, sv.bytes),
                sv.logs
            );
        };
        line(out, "sess filter (logical)", &s.filter);
        line(out, "sess pack", &s.pack);
        let days = self.older_than_days;
        line(out, &format!("sess compact (> {days} d)"), &s.compact);
        line(out, "sess compact --compat", &s.compact_compat);
    }
}
