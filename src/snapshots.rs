//! Snapshot-delta rows: a run of snapshot frames (pi `message_update` carrying the whole
//! message, `tool_execution_update` carrying a cumulative `partialResult`) stored as its
//! first event plus, for each next event, the op batch that carries the previous one to it.
//! This turns a log that grows quadratically with a response into one that grows linearly,
//! without dropping a byte:
//!
//! ```text
//! {"type":"snapshot-deltas","first":{...the first event, as written...},"ops":[[...],[...]]}
//! ```
//!
//! `ops` holds one wire batch per later event, encoded by one encoder for the row (ids and
//! short forms as in op lists). The encoder ([`SnapshotPacker`]) and decoder ([`expand`]) sit side
//! by side. An event joins a row only if decoding its batch rebuilds its exact bytes, which
//! the encoder checks before writing it, so unpacking is byte-exact by construction.
//!
//! A log written with `\r\n` line endings packs as well: its row says so with a last field,
//! `"eol":"\r\n"`, and holds its events without the `\r`, which the decoder puts back.

use std::io::{self, Write};

use crate::delta::diff::{Ends, Limits, diff_text_with};
use crate::delta::spell::Spelled;
use crate::delta::wire::{Decoder, Encoder as WireEncoder};
use crate::delta::{Op, is_base};
use crate::json;
use crate::value::Value;

/// How every snapshot-delta row starts: sess writes them only so.
pub const PREFIX: &[u8] = br#"{"type":"snapshot-deltas","first":"#;

/// The `type` of a snapshot-delta row: sess's own, so every profile knows it.
pub const KIND: &str = "snapshot-deltas";

/// The value of a row's last field, `eol`, when its events end in `\r` (a log written with
/// `\r\n`).
const CRLF: &[u8] = br#""\r\n""#;

/// The most events one row holds: a damaged row loses at most this many.
pub const MAX_RUN: usize = 4096;

/// Whether a line is a snapshot-delta row.
#[inline]
pub fn is_row(line: &[u8]) -> bool {
    crate::json::starts_with_tag(line, PREFIX)
}

/// The raw top-level `type` of every event a snapshot-delta row holds (its first event's),
/// if it has one.
pub fn member_type(row: &[u8]) -> Option<&[u8]> {
    first_event(row).and_then(|first| json::field(first, "type"))
}

/// Why a row could not be expanded.
#[derive(Debug)]
pub enum ExpandError<E> {
    /// The row is bad: why.
    Row(String),
    /// The visitor failed.
    Visit(E),
}

/// What [`expand`] calls with each event.
pub type Visit<'a, E> = dyn FnMut(usize, usize, &[u8]) -> Result<bool, E> + 'a;

/// Calls `f` with each event a row holds, in order: its position, the row's event count,
/// its bytes; `f` returns whether to go on. The first event is given as written, each later
/// one rebuilt.
pub fn expand<E>(line: &[u8], f: &mut Visit<'_, E>) -> Result<(), ExpandError<E>> {
    let row = Row::parse(line).map_err(ExpandError::Row)?;
    let n = row.batches.len() + 1;
    // Each event as it was written: its `\r` back when the row says it had one.
    let mut event = Vec::new();
    let mut visit = |k: usize, bytes: &[u8]| {
        if !row.cr {
            return f(k, n, bytes).map_err(ExpandError::Visit);
        }
        event.clear();
        event.extend_from_slice(bytes);
        event.push(b'\r');
        f(k, n, &event).map_err(ExpandError::Visit)
    };
    if !visit(0, row.first)? {
        return Ok(());
    }
    let mut go_on = Ok(true);
    row.replay(Some(&mut |k, event| {
        row.check_type(k, event)?;
        go_on = visit(k + 1, event);
        Ok(matches!(go_on, Ok(true)))
    }))
    .map_err(ExpandError::Row)?;
    go_on.map(|_| ())
}

/// The last event of a row, rebuilt without writing the ones before it. Every op is
/// applied and checked, and the last event's type, so a row that [`expand`] refuses is
/// refused here too, for the same reason, but for one whose ops change the type of an
/// event before the last and back (the filter, which alone reads rows so, takes whole only
/// rows whose ops never touch it).
pub fn last_event(line: &[u8]) -> Result<Vec<u8>, String> {
    let row = Row::parse(line)?;
    let mut last = row.replay(None)?;
    match row.batches.len() {
        0 => last = row.first.to_vec(),
        n => row.check_type(n - 1, &last)?,
    }
    if row.cr {
        last.push(b'\r');
    }
    Ok(last)
}

/// The first event of a row, as written (without the `\r` its row may give it back).
pub fn first_event(row: &[u8]) -> Option<&[u8]> {
    json::field(row, "first")
}

/// Calls `f` with every path a row's ops could change, raw (a JSON array), or with `None`
/// for an op that replaces the whole event, without decoding the ops: every path an op
/// names is spelled in full once in its batch or in a definition, and the other ops reuse
/// those. More may be given than the ops change (the value of a short `s` that is an
/// array), never less. Returns false, having perhaps called `f`, when the ops are not a
/// well-formed array of batches, or an op's verb is not one sess writes plainly: then
/// nothing can be told this way. The ops are read in one pass.
pub fn op_paths(row: &[u8], f: &mut dyn FnMut(Option<&[u8]>)) -> bool {
    let Some(ops) = json::field(row, "ops") else {
        return false;
    };
    let mut plain = true;
    let end = json::each_element(ops, 0, &mut |ops, at| {
        json::each_element(ops, at, &mut |ops, at| {
            let end = json::skip_value(ops, at)?;
            plain = plain && paths_of_op(&ops[at..end], f);
            Some(end)
        })
    });
    plain && end == Some(ops.len())
}

/// [`op_paths`] for one op.
fn paths_of_op(op: &[u8], f: &mut dyn FnMut(Option<&[u8]>)) -> bool {
    let mut parts = json::elements(op);
    match parts.next() {
        Some(br#""r""#) => f(None),
        // A definition: its id, then its path.
        Some(br##""#""##) => f(parts.nth(1)),
        Some(br#""s""# | br#""d""# | br#""a""# | br#""t""# | br#""p""# | br#""m""#) => {
            if let Some(path) = parts.next().filter(|p| p.starts_with(b"[")) {
                f(Some(path));
            }
        }
        _ => return false,
    }
    true
}

/// What [`Row::replay`] calls with each rebuilt event: its batch and its text.
type Each<'a> = dyn FnMut(usize, &[u8]) -> Result<bool, String> + 'a;

/// A row's parts, checked: its first event, its batches, whether its events end in `\r`.
struct Row<'a> {
    first: &'a [u8],
    batches: Vec<Value>,
    cr: bool,
}

impl<'a> Row<'a> {
    fn parse(line: &'a [u8]) -> Result<Row<'a>, String> {
        json::validate(line).map_err(|e| {
            format!(
                "invalid JSON in a snapshot-deltas row at column {}: {e}",
                e.offset + 1
            )
        })?;
        let fields: Vec<(&[u8], &[u8])> = json::members(line).collect();
        let keys: Vec<&[u8]> = fields.iter().map(|(k, _)| *k).collect();
        let cr = match keys[..] {
            [b"type", b"first", b"ops"] => false,
            [b"type", b"first", b"ops", b"eol"] if fields[3].1 == CRLF => true,
            _ => {
                return Err(
                    r#"a snapshot-deltas row must be exactly {type, first, ops}, with "eol":"\r\n" last if its events end in \r"#.into(),
                );
            }
        };
        let batches = match Value::parse(fields[2].1) {
            Ok(Value::Array(b)) => b,
            _ => return Err("the ops of a snapshot-deltas row must be an array of batches".into()),
        };
        Ok(Row {
            first: fields[1].1,
            batches,
            cr,
        })
    }

    /// Applies each batch in turn to the first event's value, and returns the last one's
    /// text. With `each`, calls it with each event's text (batch `k` makes event `k + 1`),
    /// until it says stop. Only the text is held, never the value (see [`Spelled`]).
    fn replay(&self, mut each: Option<&mut Each<'_>>) -> Result<Vec<u8>, String> {
        // A member of the row, which `Row::parse` validated whole.
        let first = Spelled::of_valid_text(self.first);
        let mut spelled = first.map_err(|e| format!("its first event: {e}"))?;
        let mut decoder = Decoder::default();
        for (k, batch) in self.batches.iter().enumerate() {
            let decoded = decoder.decode(batch).map_err(|(op, e)| match op {
                Some(op) => format!("snapshot-deltas batch {k}, op {op}: {e}"),
                None => format!("snapshot-deltas batch {k}: {e}"),
            })?;
            for op in decoded {
                spelled
                    .apply(op)
                    .map_err(|e| format!("snapshot-deltas batch {k}: {e}"))?;
            }
            if let Some(each) = &mut each
                && !each(k, spelled.text())?
            {
                break;
            }
        }
        Ok(spelled.into_text())
    }

    /// Every event of a row has its first event's type, so that a reader looking for other
    /// types can pass the row by unexpanded: `event`, made by batch `k`, must have it.
    fn check_type(&self, k: usize, event: &[u8]) -> Result<(), String> {
        if json::field(event, "type") != json::field(self.first, "type") {
            return Err(format!(
                "snapshot-deltas batch {k}: its event's type is not the type of the row's \
                 first event (every event of a row has it)"
            ));
        }
        Ok(())
    }
}

/// The most bytes of a row held before it is written: a run whose first event and batches
/// come to this many is written as it goes from then on, and the interning writer passes
/// it on as it comes instead of gathering it ([`crate::intern::STREAM_AT`]). So a run of
/// snapshots of 60 MB holds the last event's text, not the first's as well, nor the row.
pub const HELD: usize = crate::intern::STREAM_AT;

/// The open run: the row so far, and what the next event is diffed against.
struct SnapshotRun {
    frame_type: String,
    key: Option<Vec<u8>>,
    /// The raw `type` of its first event, which every event of a row has.
    event_type: Option<Vec<u8>>,
    /// Whether its events end in `\r`: they are held without it, and all alike.
    cr: bool,
    first: First,
    /// The batches not yet written: `,[batch],[batch]...`, without the leading comma for
    /// the row's first batch.
    batches: Vec<u8>,
    count: usize,
    last: Last,
}

/// Where a run's first event is (its line without its `\r`).
enum First {
    /// Only in `last`: the run holds it alone.
    InLast,
    /// Kept apart from the second event on, the row not written yet.
    Kept(Vec<u8>),
    /// In the row's head, written (and so are the batches before those held).
    Written,
}

/// What the next event of a run is compared with.
enum Last {
    /// The last event's text, and what rebuilds it, as the unpacker will hold them.
    Checked(Box<Checked>),
    /// Only the last event's bytes: batches are estimated (see [`SnapshotPacker::estimating`]).
    Bytes(Vec<u8>),
}

impl Last {
    fn text(&self) -> &[u8] {
        match self {
            Last::Checked(c) => c.spelled.text(),
            Last::Bytes(b) => b,
        }
    }
}

struct Checked {
    encoder: WireEncoder,
    /// Mirrors the unpacker's decoder, to check each batch before it is written.
    decoder: Decoder,
    /// The last event's text, kept in step with the ops as the unpacker keeps it.
    spelled: Spelled,
    /// Where values of that text end, as far as its diff found them.
    ends: Ends,
}

/// Groups runs of snapshot frames into rows. Which lines are snapshot frames, and of which
/// run, the caller says (`sess pack` asks the profile).
#[derive(Default)]
pub struct SnapshotPacker {
    run: Option<SnapshotRun>,
    /// Writes stand-ins for batches instead of checked ones.
    estimating: bool,
    pub rows: u64,
    pub packed_events: u64,
}

/// A snapshot frame's run: its kind and pairing key.
pub type Group = (String, Option<Vec<u8>>);

impl SnapshotPacker {
    /// A packer whose rows are only counted (`sess stats`): each batch is a stand-in of
    /// about the size of the real one ([`crate::delta::stand_in::batch`]), and an event
    /// joins a run when its stand-in is no longer than itself and the bytes that changed
    /// are spelled as sess spells JSON. A run's first event is checked as in `sess pack`.
    /// It costs a fraction of diffing and checking, and its rows cannot be unpacked.
    pub fn estimating() -> SnapshotPacker {
        SnapshotPacker {
            estimating: true,
            ..SnapshotPacker::default()
        }
    }

    /// Takes a snapshot frame: it joins the open run, or starts a new one. Returns false,
    /// having ended the open run, for a line that cannot be rebuilt byte for byte (not
    /// written exactly as sess writes its value, and perhaps a `\r`): the caller writes it
    /// as it is.
    pub fn take<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        (frame_type, key): Group,
        out: &mut W,
    ) -> io::Result<bool> {
        let (line, cr) = split_cr(line);
        let joins = self.run.as_ref().is_some_and(|r| {
            r.frame_type == frame_type && r.key == key && r.cr == cr && r.count < MAX_RUN
        });
        if joins && self.join(line, out)? {
            return Ok(true);
        }
        self.finish(out)?;
        // A line that joins is rebuilt exactly, so it is spelled as sess spells values;
        // one that starts a run must be found so.
        if !Value::is_canonical(line) {
            return Ok(false);
        }
        // The copy that starts a run: a line lent by the reading thread may fit in memory
        // once and not twice, which is an error naming it, not an abort.
        let mut copy = Vec::new();
        crate::io::memory::extend(&mut copy, line)?;
        let last = match self.estimating {
            true => Last::Bytes(copy),
            false => Last::Checked(Box::new(Checked {
                spelled: Spelled::of_canonical(copy),
                encoder: WireEncoder::default(),
                decoder: Decoder::default(),
                ends: Ends::default(),
            })),
        };
        self.run = Some(SnapshotRun {
            frame_type,
            key,
            event_type: json::field(line, "type").map(<[u8]>::to_vec),
            cr,
            first: First::InLast,
            batches: Vec::new(),
            count: 1,
            last,
        });
        Ok(true)
    }

    /// Adds the event to the open run if its batch rebuilds it (or, estimating, if its
    /// stand-in is taken).
    fn join<W: Write + ?Sized>(&mut self, line: &[u8], out: &mut W) -> io::Result<bool> {
        let run = self.run.as_mut().expect("joins only an open run");
        if json::field(line, "type") != run.event_type.as_deref() {
            return Ok(false);
        }
        let batch = match &mut run.last {
            Last::Checked(checked) => {
                let Some(found) = checked.diff(line) else {
                    return Ok(false);
                };
                // Checking the batch carries the text on to this event: the first event's
                // text is kept (or written) before.
                run.first.keep(checked.spelled.text(), out)?;
                checked.check(found, line)
            }
            Last::Bytes(last) => {
                let batch = crate::delta::stand_in::batch(last, line);
                if batch.is_some() {
                    run.first.keep(last, out)?;
                    last.clear();
                    last.extend_from_slice(line);
                }
                batch
            }
        };
        let Some(batch) = batch else {
            return Ok(false);
        };
        if run.count > 1 {
            run.batches.push(b',');
        }
        run.batches.extend_from_slice(&batch);
        run.count += 1;
        let held = match &run.first {
            First::Kept(first) => first.len() + run.batches.len(),
            _ => run.batches.len(),
        };
        if matches!(run.first, First::Written) || held >= HELD {
            run.write_out(out)?;
        }
        Ok(true)
    }

    /// Writes the open run: a row if it holds two events or more, else its event.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        let alone = match &run.first {
            First::InLast => Some(run.last.text()),
            First::Kept(first) if run.count == 1 => Some(&first[..]),
            _ => None,
        };
        if let Some(event) = alone {
            // The event and its line end in one write: the interning writer then reads the
            // event where it lies. Written apart, it gathered a copy (a stream's window
            // that closed on a run of one 116 MB frame held it three times).
            let end: &[u8] = if run.cr { b"\r\n" } else { b"\n" };
            return crate::io::write_ended(out, event, end);
        }
        // Freed before the row is written.
        run.last = Last::Bytes(Vec::new());
        run.write_out(out)?;
        out.write_all(b"]")?;
        if run.cr {
            out.write_all(b",\"eol\":")?;
            out.write_all(CRLF)?;
        }
        out.write_all(b"}\n")?;
        self.rows += 1;
        self.packed_events += run.count as u64;
        Ok(())
    }
}

impl First {
    /// Before the second event is checked (which carries `last`, whose text is `text`, on
    /// to it): the first event's text is kept apart, or, when it is as long as a row is
    /// held, its row's head is written. Should the check then fail, that row holds the
    /// first event alone.
    fn keep<W: Write + ?Sized>(&mut self, text: &[u8], out: &mut W) -> io::Result<()> {
        if let First::InLast = self {
            *self = match text.len() < HELD {
                true => First::Kept(text.to_vec()),
                false => {
                    write_head(text, out)?;
                    First::Written
                }
            };
        }
        Ok(())
    }
}

impl SnapshotRun {
    /// Writes the row's head, if not written yet, and the batches held.
    fn write_out<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        if let First::Kept(first) = &self.first {
            write_head(first, out)?;
            self.first = First::Written;
        }
        out.write_all(&self.batches)?;
        self.batches.clear();
        Ok(())
    }
}

/// A row up to its batches: `{"type":"snapshot-deltas","first":...,"ops":[`.
fn write_head<W: Write + ?Sized>(first: &[u8], out: &mut W) -> io::Result<()> {
    out.write_all(PREFIX)?;
    out.write_all(first)?;
    out.write_all(b",\"ops\":[")
}

impl Checked {
    /// The batch that carries the last event to `line`, as found from their texts, and
    /// where values of `line` end; `None` if there is none, or one that replaces the
    /// whole event. Changes nothing.
    fn diff(&self, line: &[u8]) -> Option<(Vec<Op>, Ends)> {
        let mut ends = Ends::default();
        let ops = diff_text_with(
            self.spelled.text(),
            line,
            Limits::default(),
            &self.ends,
            &mut ends,
        )?;
        (!is_base(&ops)).then_some((ops, ends))
    }

    /// The wire batch of `ops` if, decoded as the unpacker decodes it and applied to the
    /// last event's text, it rebuilds `line` byte for byte. The text is carried on: if the
    /// check fails, the run cannot go on (the encoder and decoder have seen the batch).
    fn check(&mut self, (ops, ends): (Vec<Op>, Ends), line: &[u8]) -> Option<Vec<u8>> {
        let wire = self.encoder.encode(ops);
        let spelled = &mut self.spelled;
        let applied = self
            .decoder
            .decode(&wire)
            .ok()
            .is_some_and(|ops| ops.into_iter().try_for_each(|op| spelled.apply(op)).is_ok());
        // The bytes are compared: what unpack writes is what is checked.
        if !applied || spelled.text() != line {
            return None;
        }
        // The kept text is now this line, whose ends the diff found.
        self.ends = ends;
        Some(wire.to_json())
    }
}

/// A line without its last `\r`, and whether it had one.
fn split_cr(line: &[u8]) -> (&[u8], bool) {
    match line.strip_suffix(b"\r") {
        Some(body) => (body, true),
        None => (line, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs the lines whose type ends in `_update` (grouped by type and `toolCallId`);
    /// the others are copied. The profile's part, done by hand: this module only packs.
    fn pack(lines: &[&str]) -> Vec<u8> {
        let mut p = SnapshotPacker::default();
        let mut out = Vec::new();
        for l in lines {
            let line = l.as_bytes();
            let kind = json::field(line, "type").and_then(json::str_value);
            let taken = match kind {
                Some(k) if k.ends_with("_update") => {
                    let key = json::field(line, "toolCallId").map(<[u8]>::to_vec);
                    p.take(line, (k.into_owned(), key), &mut out).unwrap()
                }
                _ => false,
            };
            match taken {
                true => {}
                false => {
                    p.finish(&mut out).unwrap();
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            }
        }
        p.finish(&mut out).unwrap();
        out
    }

    fn unpack(packed: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in packed.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if is_row(line) {
                expand::<()>(line, &mut |_, _, e| {
                    out.extend_from_slice(e);
                    out.push(b'\n');
                    Ok(true)
                })
                .unwrap();
            } else {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        out
    }

    #[test]
    fn events_of_another_type_never_join_a_run() {
        // Same kind to the caller, but the line's own type differs: a row holds one type.
        let lines = [
            r#"{"type":"x_update","n":1}"#,
            r#"{"type":"x_update","n":2}"#,
            r#"{"type":"y_update","n":3}"#,
        ];
        let mut p = SnapshotPacker::default();
        let mut out = Vec::new();
        for l in lines {
            let taken = p.take(l.as_bytes(), ("x_update".into(), None), &mut out);
            assert!(taken.unwrap());
        }
        p.finish(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .starts_with(r#"{"type":"y_update""#)
        );
    }

    #[test]
    fn runs_of_snapshots_become_rows_and_come_back_exactly() {
        let mut lines = vec![r#"{"type":"session","version":3}"#.to_string()];
        let mut text = String::new();
        for i in 0..50 {
            text += &format!(" w{i}\u{1F980}\\n");
            let msg =
                format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}"#);
            lines.push(format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"w{i}","partial":{msg}}},"message":{msg}}}"#
            ));
        }
        lines.push(r#"{"type":"message_end","message":{}}"#.to_string());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let packed = pack(&refs);
        let original: Vec<u8> = lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        assert_eq!(
            packed
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
            3
        );
        assert!(
            packed.len() * 4 < original.len(),
            "{} vs {}",
            packed.len(),
            original.len()
        );
        assert_eq!(unpack(&packed), original);
    }

    /// A response streamed as `tool_execution_update` snapshots growing by one word.
    fn growing_updates(n: usize, eol: &str) -> Vec<String> {
        let mut text = String::new();
        (0..n)
            .map(|i| {
                text += &format!(" w{i}");
                format!(
                    r#"{{"type":"tool_execution_update","toolCallId":"c","partialResult":{{"text":"{text}"}}}}{eol}"#
                )
            })
            .collect()
    }

    fn joined(lines: &[String]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    #[test]
    fn crlf_runs_become_rows_that_give_their_cr_back() {
        let lines = growing_updates(20, "\r");
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let packed = pack(&refs);
        let rows: Vec<&[u8]> = packed
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(rows.len(), 1, "{}", String::from_utf8_lossy(&packed));
        assert!(rows[0].ends_with(br#"],"eol":"\r\n"}"#));
        assert!(!rows[0].contains(&b'\r'));
        assert_eq!(unpack(&packed), joined(&lines));
    }

    #[test]
    fn a_change_of_line_ending_ends_the_run() {
        let mut lines = growing_updates(6, "");
        for (i, l) in lines.iter_mut().enumerate().skip(3) {
            if i != 4 {
                l.push('\r');
            }
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let packed = pack(&refs);
        // LF row of 3, then one CRLF event alone, one LF alone, one CRLF alone.
        assert_eq!(
            packed
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
            4
        );
        assert_eq!(unpack(&packed), joined(&lines));
    }

    #[test]
    fn a_row_with_another_eol_is_refused() {
        let lines = growing_updates(3, "\r");
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let packed = String::from_utf8(pack(&refs)).unwrap();
        for bad in [r#""eol":"\n""#, r#""eol":"\r""#, r#""eol":"\u000d\n""#] {
            let row = packed.trim_end().replace(r#""eol":"\r\n""#, bad);
            let got = expand::<()>(row.as_bytes(), &mut |_, _, _| Ok(true));
            assert!(matches!(got, Err(ExpandError::Row(_))), "{bad}");
        }
    }

    #[test]
    fn events_not_written_canonically_stay_verbatim() {
        let lines = [
            r#"{"type":"session","version":3}"#,
            r#"{"type":"tool_execution_update","toolCallId":"c","partialResult":{"content":[]}}"#,
            r#"{"type":"tool_execution_update", "toolCallId":"c","partialResult":{"content":[1]}}"#,
            r#"{"type":"tool_execution_update","toolCallId":"d","partialResult":{"content":[1.0]}}"#,
        ];
        let packed = pack(&lines);
        let original: Vec<u8> = lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        assert_eq!(packed, original);
    }

    /// An update of `text` and `n`, as pi's old `message_update` carries its message.
    fn update(text: &str, n: u32) -> String {
        format!(r#"{{"type":"message_update","n":{n},"message":{{"text":"{text}"}}}}"#)
    }

    /// A run whose first event is as long as a row is held is written as it goes: its
    /// head when the second event joins, each batch as it comes. The bytes are those of a
    /// row held whole, and a check that fails after the head is out leaves a row of the
    /// first event alone, which unpacks to it.
    #[test]
    fn a_run_of_long_snapshots_is_written_as_it_goes() {
        let long = "x".repeat(HELD);
        let lines = [
            update(&long, 1),
            update(&format!("{long}y"), 2),
            update(&format!("{long}yz"), 3),
        ];
        let mut p = SnapshotPacker::default();
        let mut out = Vec::new();
        let group = || ("message_update".to_string(), None);
        for (k, line) in lines.iter().enumerate() {
            assert!(p.take(line.as_bytes(), group(), &mut out).unwrap());
            // Nothing out for the first alone; from the second on, the row so far.
            assert_eq!(out.is_empty(), k == 0, "after event {k}");
        }
        assert!(out.len() < lines[0].len() + 300, "{} bytes", out.len());
        p.finish(&mut out).unwrap();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(out, pack(&refs), "the same row as one held whole");
        assert_eq!(unpack(&out), (refs.join("\n") + "\n").into_bytes());

        // The second event is spelled otherwise than sess spells it (a space): its batch
        // does not rebuild it, after the head is written.
        let spaced = update(&format!("{long}y"), 2).replace(r#""n":2"#, r#""n": 2"#);
        let mut p = SnapshotPacker::default();
        let mut out = Vec::new();
        assert!(p.take(lines[0].as_bytes(), group(), &mut out).unwrap());
        assert!(!p.take(spaced.as_bytes(), group(), &mut out).unwrap());
        out.extend_from_slice(spaced.as_bytes());
        out.push(b'\n');
        let first_alone = unpack(&out);
        assert_eq!(
            first_alone,
            format!("{}\n{spaced}\n", lines[0]).into_bytes()
        );
        assert!(out.starts_with(PREFIX), "a row of one event");
    }

    /// A run whose first event is short but whose batches come to `HELD` is written from
    /// then on as it goes, and so is one whose events end in `\r`: one row each, whose
    /// head is the first event as it was, and which unpacks to the events.
    #[test]
    fn a_run_whose_batches_grow_long_is_written_from_then_on() {
        let piece = "p".repeat(1 << 20);
        for eol in ["", "\r"] {
            let mut text = String::new();
            let mut lines = Vec::new();
            for n in 0..10 {
                lines.push(format!("{}{eol}", update(&text, n)));
                text.push_str(&piece);
            }
            let mut p = SnapshotPacker::default();
            let mut out = Vec::new();
            for line in &lines {
                let group = ("message_update".to_string(), None);
                assert!(p.take(line.as_bytes(), group, &mut out).unwrap());
            }
            assert!(
                out.len() > HELD,
                "{} bytes written before the run ended",
                out.len()
            );
            p.finish(&mut out).unwrap();
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1, "one row");
            let head = format!(
                "{}{},\"ops\":[",
                std::str::from_utf8(PREFIX).unwrap(),
                update("", 0)
            );
            assert!(out.starts_with(head.as_bytes()));
            assert_eq!(out.ends_with(b"\"eol\":\"\\r\\n\"}\n"), eol == "\r");
            assert!(unpack(&out) == (lines.join("\n") + "\n").into_bytes());
            assert_eq!((p.rows, p.packed_events), (1, 10));
        }
    }
}
