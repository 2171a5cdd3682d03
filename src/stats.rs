//! Where the bytes of a log go: counts and sizes per event type.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::dialect::{Dialect, Sniffer};
use crate::durability::Profile;
use crate::event::{self, Event};
use crate::filter::{Filter, Options, Overrides};
use crate::io::Line;
use crate::pack::Packer;

/// The bucket for lines that have no top-level string `type`.
pub const NO_TYPE: &str = "(no type)";

#[derive(Debug, Default, Clone, Serialize)]
pub struct TypeStats {
    pub count: u64,
    pub bytes: u64,
    pub largest: u64,
}

impl TypeStats {
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.largest = self.largest.max(bytes);
    }
}

/// Accumulates statistics line by line; memory grows with the number of distinct types.
pub struct Stats {
    by_type: HashMap<String, TypeStats>,
    total: TypeStats,
    torn: u64,
    sniffer: Sniffer,
    /// Logical events (packed rows expanded) and their bytes.
    logical: TypeStats,
    /// What `sess pack` would write for the logical events.
    packer: Packer,
    packed: ByteCount,
    /// What `sess filter` (auto profile, defaults) would write.
    filter: Filter,
    filtered: ByteCount,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            by_type: HashMap::new(),
            total: TypeStats::default(),
            torn: 0,
            sniffer: Sniffer::default(),
            logical: TypeStats::default(),
            packer: Packer::default(),
            packed: ByteCount::default(),
            filter: Filter::new(None, Overrides::default(), Options::default())
                .expect("no overrides to fail"),
            filtered: ByteCount::default(),
        }
    }
}

/// A writer that only counts.
#[derive(Default)]
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Serialize)]
pub struct TypeRow {
    #[serde(rename = "type")]
    pub kind: String,
    /// Its durability class under the profile `sess filter` would choose.
    pub class: &'static str,
    pub count: u64,
    pub bytes: u64,
    /// Share of all bytes, 0..1.
    pub share: f64,
    pub largest: u64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub dialect: &'static str,
    pub dialect_description: &'static str,
    pub events: u64,
    pub bytes: u64,
    pub largest: u64,
    pub torn_lines: u64,
    /// Logical events: packed rows count as the events they hold.
    pub logical_events: u64,
    pub logical_bytes: u64,
    /// Bytes `sess pack --plain` would write.
    pub packed_bytes: u64,
    /// The profile `sess filter` would choose, and the bytes it would write.
    pub filter_profile: String,
    pub filtered_bytes: u64,
    /// Sorted by bytes, largest first.
    pub types: Vec<TypeRow>,
}

impl Stats {
    /// Counts one logical event; its physical line is counted with the line's first event.
    pub fn add_event(&mut self, ev: &Event<'_>) {
        if ev.starts_line() {
            self.add(&ev.line);
        }
        let terminated = ev.newline;
        self.logical
            .add(ev.bytes.len() as u64 + u64::from(terminated));
        // Writing to a counter cannot fail.
        let _ = self.packer.event(ev.bytes, terminated, &mut self.packed);
        let _ = self.filter.event(ev.bytes, terminated, &mut self.filtered);
    }

    /// Counts one physical line.
    pub fn add(&mut self, line: &Line<'_>) {
        // A line's bytes include its newline: that is what it costs on disk.
        let bytes = line.bytes.len() as u64 + u64::from(line.terminated());
        let kind = event::kind(line.bytes);
        self.sniffer.observe(line.bytes, kind.as_deref());
        let key = kind.as_deref().unwrap_or(NO_TYPE);
        match self.by_type.get_mut(key) {
            Some(s) => s.add(bytes),
            None => {
                let mut s = TypeStats::default();
                s.add(bytes);
                self.by_type.insert(key.to_string(), s);
            }
        }
        self.total.add(bytes);
        self.torn += u64::from(!line.terminated());
    }

    pub fn dialect(&self) -> Dialect {
        self.sniffer.finish()
    }

    pub fn report(&mut self) -> Report {
        let _ = self.packer.finish(&mut self.packed);
        let _ = self.filter.finish(&mut self.filtered);
        let profile = Profile::for_dialect(self.dialect());
        let total = self.total.bytes.max(1) as f64;
        let mut types: Vec<TypeRow> = self
            .by_type
            .iter()
            .map(|(k, s)| TypeRow {
                kind: k.clone(),
                class: profile
                    .classify((k != NO_TYPE).then_some(k.as_str()))
                    .name(),
                count: s.count,
                bytes: s.bytes,
                share: s.bytes as f64 / total,
                largest: s.largest,
            })
            .collect();
        types.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.kind.cmp(&b.kind)));
        let dialect = self.dialect();
        Report {
            dialect: dialect.name(),
            dialect_description: dialect.describe(),
            events: self.total.count,
            bytes: self.total.bytes,
            largest: self.total.largest,
            torn_lines: self.torn,
            logical_events: self.logical.count,
            logical_bytes: self.logical.bytes,
            packed_bytes: self.packed.0,
            filter_profile: self
                .filter
                .profile()
                .map_or("none", |p| p.name.as_str())
                .to_string(),
            filtered_bytes: self.filtered.0,
            types,
        }
    }
}

impl Report {
    /// A table for people.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "dialect: {} ({})",
            self.dialect, self.dialect_description
        );
        let width = self
            .types
            .iter()
            .map(|t| t.kind.chars().count())
            .max()
            .unwrap_or(4)
            .max("type".len())
            .max("total".len());
        let _ = writeln!(
            out,
            "{:<width$}  {:<8}  {:>10}  {:>12}  {:>6}  {:>12}",
            "type", "class", "count", "bytes", "share", "largest"
        );
        for t in &self.types {
            let _ = writeln!(
                out,
                "{:<width$}  {:<8}  {:>10}  {:>12}  {:>5.1}%  {:>12}",
                t.kind,
                t.class,
                t.count,
                human_bytes(t.bytes),
                t.share * 100.0,
                human_bytes(t.largest)
            );
        }
        let _ = writeln!(
            out,
            "{:<width$}  {:<8}  {:>10}  {:>12}  {:>5.1}%  {:>12}",
            "total",
            "",
            self.events,
            human_bytes(self.bytes),
            if self.events > 0 { 100.0 } else { 0.0 },
            human_bytes(self.largest)
        );
        if self.logical_events != self.events {
            let _ = writeln!(
                out,
                "logical events (packed rows expanded): {} in {}",
                self.logical_events,
                human_bytes(self.logical_bytes)
            );
        }
        let _ = writeln!(
            out,
            "sess filter would write: {} ({:.1}% of the logical bytes; profile {})",
            human_bytes(self.filtered_bytes),
            percent(self.filtered_bytes, self.logical_bytes),
            self.filter_profile
        );
        let _ = writeln!(
            out,
            "sess pack would write: {} ({:.1}% of the logical bytes)",
            human_bytes(self.packed_bytes),
            percent(self.packed_bytes, self.logical_bytes)
        );
        if self.torn_lines > 0 {
            let _ = writeln!(out, "torn lines (no final newline): {}", self.torn_lines);
        }
        out
    }
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

    #[test]
    fn counts_bytes_per_type() {
        let mut s = Stats::default();
        s.add(&line(br#"{"type":"a"}"#, true));
        s.add(&line(br#"{"type":"a","x":12345}"#, true));
        s.add(&line(br#"{"type":"b"}"#, false));
        s.add(&line(b"[1]", true));
        let r = s.report();
        assert_eq!(r.events, 4);
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
    fn formats_bytes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
