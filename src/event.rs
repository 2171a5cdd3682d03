//! Logical events, and what commands ask of one, answered by scanning its raw bytes.
//!
//! Reading is layout-blind: a packed row is expanded into the events it holds wherever
//! events are read, so every command sees the same logical log whatever its layout.

use std::borrow::Cow;

use crate::error::{Error, Place};

use crate::input::{self, Flow, Input, OpenOptions};
use crate::io::{Ending, Line};
use crate::json;
use crate::profile::{Profile, Sub, registry};
use crate::rows;
use crate::snapshots::{self, ExpandError};

pub mod ahead;

/// One logical event: a whole line, or one member of a packed row.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The event's bytes, without newline.
    pub bytes: &'a [u8],
    /// The physical line it came from (by reference: a copy, taken just after the stores
    /// of its parts, cost a stall an event).
    pub line: &'a Line<'a>,
    /// For a member of a packed row: its position and the row's member count.
    pub member: Option<(usize, usize)>,
    /// Whether the event is written back with a newline after it: always, but for the last
    /// input's last line without one, read [`LastLine::Verbatim`].
    pub newline: bool,
}

impl Event<'_> {
    /// Whether this is the first event read from its physical line.
    pub fn starts_line(&self) -> bool {
        self.member.is_none_or(|(k, _)| k == 0)
    }
}

/// What a reader does with a last line that has no newline (the policy is the line
/// layer's: see [`Ending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLine {
    /// Records only: a torn line is dropped; a whole JSON value is a record, written back
    /// with its newline. Each with a warning. (`cat`, `filter`, `stats`.)
    Records,
    /// Every byte, for a byte-exact round trip: the line is kept as it is, with a warning.
    /// (`pack`, `unpack`.)
    Verbatim,
    /// [`LastLine::Verbatim`] for an input that another input follows: the line is kept,
    /// with a newline added and a warning, so that the next input's first line is not
    /// joined to it (two records read as one line that is neither).
    Between,
    /// [`LastLine::Verbatim`] without the warning, for a pass that reads again what was
    /// read and warned about already (`compact`'s check of a packed form against its log,
    /// whose name is not the log's).
    Rechecked,
}

impl LastLine {
    /// The rule for input `k` of `n`: only the last input's last line may stay without
    /// its newline.
    pub fn for_input(self, k: usize, n: usize) -> LastLine {
        match self {
            LastLine::Verbatim if k + 1 < n => LastLine::Between,
            rule => rule,
        }
    }
}

/// Calls `f` with every logical event of every input, in order, until it says
/// [`Flow::Stop`]. A malformed packed row is an error naming its file and line.
pub fn each_event<E: From<Error>>(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    f: impl FnMut(&str, &Event<'_>) -> Result<Flow, E>,
) -> Result<(), E> {
    each_event_where(inputs, opts, last, None, f)
}

/// Whether a reader wants events of a raw top-level `type`.
pub type Wanted<'a> = &'a dyn Fn(&[u8]) -> bool;

/// [`each_event`] for a reader that wants only some types: a packed row whose events are
/// all of a type `wanted` refuses (told from the row's first bytes) is passed by without
/// being expanded, so reading a packed log costs what the wanted events cost. Such a row is
/// not checked either: `sess verify` reads every row.
pub fn each_event_where<E: From<Error>>(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    wanted: Option<Wanted<'_>>,
    mut f: impl FnMut(&str, &Event<'_>) -> Result<Flow, E>,
) -> Result<(), E> {
    let skip = |_: &mut (), _: &str, line: &Line<'_>| {
        Ok(wanted.is_some_and(|wanted| row_member_type(line.bytes).is_some_and(|k| !wanted(k))))
    };
    each_event_or_row(inputs, opts, last, &mut (), skip, |_, name, ev| f(name, ev))
}

/// [`each_event`] for a reader that may take a packed row whole: `row` is offered every
/// line that is not torn before it is expanded, and says whether it took it (then its
/// events are not read). Both callbacks get `state`, which they share.
pub fn each_event_or_row<S, E: From<Error>>(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    state: &mut S,
    mut row: impl FnMut(&mut S, &str, &Line<'_>) -> Result<bool, E>,
    mut f: impl FnMut(&mut S, &str, &Event<'_>) -> Result<Flow, E>,
) -> Result<(), E> {
    for (k, input) in inputs.iter().enumerate() {
        let src = input::open(input, opts)?;
        let last = last.for_input(k, inputs.len());
        if each_event_in(src, last, state, &mut row, &mut f)? == Flow::Stop {
            break;
        }
    }
    Ok(())
}

/// [`each_event_or_row`] for one input, opened (a caller may wrap its reader).
pub fn each_event_in<S, E: From<Error>>(
    src: input::Source,
    last: LastLine,
    state: &mut S,
    row: &mut impl FnMut(&mut S, &str, &Line<'_>) -> Result<bool, E>,
    f: &mut impl FnMut(&mut S, &str, &Event<'_>) -> Result<Flow, E>,
) -> Result<Flow, E> {
    let mut buf = Vec::new();
    input::each_line_of(src, &mut |name, line| {
        if let Some(e) = not_jsonl(name, line) {
            return Err(e.into());
        }
        let Some(newline) = newline_for(name, line, last) else {
            return Ok(Flow::More);
        };
        if !line.is_torn() && row(state, name, line)? {
            return Ok(Flow::More);
        }
        expand(name, line, newline, &mut buf, &mut |name, ev| {
            f(state, name, ev)
        })
    })
}

/// The raw top-level `type` of every event a packed row holds, or `None` for a line that is
/// not a row (or a row whose events have no type).
pub fn row_member_type(line: &[u8]) -> Option<&[u8]> {
    if snapshots::is_row(line) {
        return snapshots::member_type(line);
    }
    let kind = json::field(line, "type")?;
    rows::is_row_type(kind).then_some(br#""assistant/chunk""#.as_slice())
}

/// An input whose first line is a lone `{` or `[` is one JSON document written over many
/// lines, not JSONL: that is said once, naming the formats producers write so, instead of
/// reading every line of it as a bad one.
pub fn not_jsonl(name: &str, line: &Line<'_>) -> Option<Error> {
    if line.number != 1 {
        return None;
    }
    let t = line.bytes.trim_ascii();
    if !(t == b"{" || t == b"[") {
        return None;
    }
    let known: Vec<&str> = registry::all()
        .iter()
        .flat_map(|p| p.recognise.documents.iter().map(String::as_str))
        .collect();
    let maybe = match &known[..] {
        [] => String::new(),
        k => format!(" (such as {})", k.join(", or ")),
    };
    Some(Error::invalid(
        Place::line(name, 1),
        format!(
            "this is one JSON document written over many lines{maybe}, not JSONL (one JSON \
             value per line); sess reads JSONL only"
        ),
    ))
}

/// Whether to write `line` back with a newline, or `None` to drop it, under `last`; warns
/// about a last line without a newline.
pub fn newline_for(name: &str, line: &Line<'_>, last: LastLine) -> Option<bool> {
    let what = match (line.ending, last) {
        (Ending::Newline, _) => return Some(true),
        (_, LastLine::Rechecked) => return Some(false),
        (Ending::Torn, LastLine::Records) => "not a JSON value (a torn write): dropped",
        (Ending::Unterminated, LastLine::Records) => KEPT_AS_A_RECORD,
        (_, LastLine::Verbatim) => "kept as it is",
        (_, LastLine::Between) => {
            "kept, with a newline added: another input follows, whose first line would join it"
        }
    };
    say_last_line(&line.place(name), line.bytes.len(), line.offset, what);
    match (line.ending, last) {
        (Ending::Torn, LastLine::Records) => None,
        (_, LastLine::Records | LastLine::Between) => Some(true),
        (_, LastLine::Verbatim | LastLine::Rechecked) => Some(false),
    }
}

/// The warning about a last line without a newline, at `place` (`file:line`): `len` bytes
/// at byte `offset`, and what was made of it.
pub fn say_last_line(place: &str, len: usize, offset: u64, what: &str) {
    crate::io::tell!(
        "sess: warning: {place}: the last line has no final newline ({len} bytes at byte \
         offset {offset}); {what}"
    );
}

/// What readers of records make of a last line that is one whole JSON value.
pub const KEPT_AS_A_RECORD: &str = "a whole JSON value: kept as a record, with the newline added";

/// Calls `f` with the logical events of one line: the line itself, or the members of the
/// packed row it holds (written into `buf` one at a time). `newline` is the line's own.
pub fn expand<E: From<Error>>(
    name: &str,
    line: &Line<'_>,
    newline: bool,
    buf: &mut Vec<u8>,
    f: &mut impl FnMut(&str, &Event<'_>) -> Result<Flow, E>,
) -> Result<Flow, E> {
    let whole = Event {
        bytes: line.bytes,
        line,
        member: None,
        newline,
    };
    // A torn line is never read as a row: it is left to the torn-line policy.
    if line.is_torn() {
        return f(name, &whole);
    }
    if snapshots::is_row(line.bytes) {
        let mut flow = Flow::More;
        let expanded = snapshots::expand(line.bytes, &mut |k, n, bytes| {
            let ev = Event {
                bytes,
                line,
                member: Some((k, n)),
                newline: true,
            };
            flow = f(name, &ev)?;
            Ok(flow == Flow::More)
        });
        return match expanded {
            Ok(()) => Ok(flow),
            Err(ExpandError::Visit(e)) => Err(e),
            Err(ExpandError::Row(why)) => {
                Err(Error::invalid(Place::line(name, line.number), why).into())
            }
        };
    }
    let Some(row) = chunk_row(name, line)? else {
        return f(name, &whole);
    };
    for k in 0..row.len() {
        buf.clear();
        row.write_member(k, buf);
        let ev = Event {
            bytes: buf,
            line,
            member: Some((k, row.len())),
            newline: true,
        };
        if f(name, &ev)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::More)
}

/// Whether [`expand`] gives `line` as its own one event (not a packed row, good or bad).
pub fn is_one_event(line: &Line<'_>) -> bool {
    line.is_torn()
        || !snapshots::is_row(line.bytes) && matches!(rows::parse(line.bytes), rows::Parsed::Event)
}

/// The chunk row a line holds, `None` for a line that is not one, or the error naming
/// where a row is bad.
fn chunk_row<'a>(name: &str, line: &Line<'a>) -> Result<Option<rows::Row<'a>>, Error> {
    match rows::parse(line.bytes) {
        rows::Parsed::Event => Ok(None),
        rows::Parsed::Row(row) => Ok(Some(row)),
        rows::Parsed::BadJson(_, e) => {
            let place = Place::line(name, line.number)
                .column(e.offset as u64 + 1)
                .offset(line.offset + e.offset as u64);
            Err(Error::invalid(
                place,
                format!("invalid JSON in a packed row: {e}"),
            ))
        }
        rows::Parsed::BadRow(e) => Err(Error::invalid(
            Place::line(name, line.number),
            e.to_string(),
        )),
    }
}

/// [`expand`] for a reader that wants every event as bytes: each is appended to `out`
/// with its newline. A chunk row's members are written straight into `out` (not through
/// a buffer, as for a callback); `full` is called whenever `out` holds `at_least` bytes
/// or more, between two events, to take them.
pub fn expand_to<E: From<Error>>(
    name: &str,
    line: &Line<'_>,
    newline: bool,
    out: &mut Vec<u8>,
    at_least: usize,
    full: &mut impl FnMut(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let whole = line.is_torn();
    // Snapshot frames are rebuilt one by one, into a buffer of their own.
    if !whole && snapshots::is_row(line.bytes) {
        let mut buf = Vec::new();
        return expand(name, line, newline, &mut buf, &mut |_, ev| {
            out.extend_from_slice(ev.bytes);
            ended(out, ev.newline, at_least, full).map(|()| Flow::More)
        })
        .map(|_| ());
    }
    // Each line is read as a row once: a line that is not one is its own event.
    match if whole { None } else { chunk_row(name, line)? } {
        Some(row) => (0..row.len()).try_for_each(|k| {
            row.write_member(k, out);
            ended(out, true, at_least, full)
        }),
        None => {
            out.extend_from_slice(line.bytes);
            ended(out, newline, at_least, full)
        }
    }
}

/// An event written into `out` ends: its newline, and `out` handed to `full` once it
/// holds `at_least` bytes.
fn ended<E>(
    out: &mut Vec<u8>,
    newline: bool,
    at_least: usize,
    full: &mut impl FnMut(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    if newline {
        out.push(b'\n');
    }
    match out.len() >= at_least {
        true => full(out),
        false => Ok(()),
    }
}

/// The seq of a line's first logical event, as the frame index records it: its `seq`, a
/// chunk row's `seq0`, or the `seq` of a snapshot-delta row's first event; for an interned
/// line, that of the line it holds (a ref never stands for a number as short as a seq).
pub fn line_seq(line: &[u8]) -> Option<i64> {
    if crate::intern::is_interned(line) {
        // Read into the line it holds rather than take it whole: a frame's index may be
        // given only the first bytes of a long line (frames::writer).
        return json::from_field(line, "line")
            .filter(|inner| !crate::intern::is_interned(inner))
            .and_then(line_seq);
    }
    if snapshots::is_row(line) {
        return json::field(line, "first").and_then(seq);
    }
    seq(line).or_else(|| json::field(line, "seq0").and_then(json::safe_integer))
}

/// The top-level `seq` of an event, if it has a safe integer one.
pub fn seq(line: &[u8]) -> Option<i64> {
    json::field(line, "seq").and_then(json::safe_integer)
}

/// The top-level `type` of a line, if the line is an object with a string `type`.
/// Only the bytes up to that field are looked at.
pub fn kind(line: &[u8]) -> Option<Cow<'_, str>> {
    json::field(line, "type").and_then(json::str_value)
}

/// Whether a raw JSON `type` value is a string among `types`.
pub fn raw_kind_is_one_of(raw: &[u8], types: &[String]) -> bool {
    if let Some(inner) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\""))
        && !inner.contains(&b'\\')
    {
        return types.iter().any(|t| t.as_bytes() == inner);
    }
    json::str_value(raw).is_some_and(|t| types.iter().any(|x| *x == t))
}

/// The kinds a reader selects (`cat --type`): each the top-level `type` as written, or a
/// kind as the profiles read it, `TOP:SUB` (the sub-kind at the path a profile names for
/// `TOP`: Claude Code's `progress:agent_progress`, Codex's `event_msg:token_count`), as
/// `sess stats` lists kinds. No detection is needed: any profile that reads `TOP:SUB` so
/// is asked.
#[derive(Debug, Clone, Default)]
pub struct KindSelection {
    names: Vec<String>,
    /// `(TOP, path, SUB)`: a line of top-level type TOP whose value at path is SUB.
    subs: Vec<(String, String, String)>,
}

impl KindSelection {
    pub fn new(kinds: &[String], profiles: &[Profile]) -> KindSelection {
        let mut subs = Vec::new();
        for kind in kinds {
            let Some((top, sub)) = kind.split_once(':') else {
                continue;
            };
            for p in profiles.iter().filter(|p| p.kind.field == "type") {
                let path = match &p.kind.sub {
                    Sub::None => continue,
                    Sub::All(path) => path,
                    Sub::Per(m) => match m.get(top) {
                        Some(path) => path,
                        None => continue,
                    },
                };
                let rule = (top.to_string(), path.clone(), sub.to_string());
                if !subs.contains(&rule) {
                    subs.push(rule);
                }
            }
        }
        KindSelection {
            names: kinds.to_vec(),
            subs,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether the line's kind is one of those selected. Compares raw bytes first, so an
    /// unescaped type (the common case) costs no allocation.
    pub fn holds(&self, line: &[u8]) -> bool {
        let Some(raw) = json::field(line, "type") else {
            return false;
        };
        raw_kind_is_one_of(raw, &self.names)
            || self.subs_of(raw).any(|(_, path, sub)| {
                json::path(line, path)
                    .and_then(json::str_value)
                    .is_some_and(|s| s == sub.as_str())
            })
    }

    /// Whether a line whose top-level `type` is `raw` may be of a kind selected: a packed
    /// row of other types is passed by unexpanded.
    pub fn may_hold(&self, raw: &[u8]) -> bool {
        raw_kind_is_one_of(raw, &self.names) || self.subs_of(raw).next().is_some()
    }

    /// The `TOP:SUB` rules whose TOP is the raw type `raw` (decoded once, and only when
    /// there are any).
    fn subs_of(&self, raw: &[u8]) -> impl Iterator<Item = &(String, String, String)> {
        let top = (!self.subs.is_empty())
            .then(|| json::str_value(raw))
            .flatten();
        self.subs
            .iter()
            .filter(move |(t, ..)| top.as_deref() == Some(t.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interned_line_has_the_seq_of_the_line_it_holds() {
        let plain = br#"{"seq":7,"type":"x"}"#;
        let interned = br#"{"type":"sess-interned","v":1,"defs":[],"refs":[[20,1,300,5]],"line":{"seq":7,"type":"x","big":0}}"#;
        let row = br#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":{"type":"snapshot-deltas","first":{"seq":9},"ops":[]}}"#;
        assert_eq!(line_seq(plain), Some(7));
        assert_eq!(line_seq(interned), Some(7));
        assert_eq!(line_seq(row), Some(9));
        // Only the first bytes of a long interned line: its seq is among them.
        let cut = br#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":{"seq":8,"x":"abc"#;
        assert_eq!(line_seq(cut), Some(8));
        let cut = br#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":{"x":"abc"#;
        assert_eq!(line_seq(cut), None);
    }

    #[test]
    fn reads_kind() {
        assert_eq!(kind(br#"{"type":"a/b","x":1}"#).as_deref(), Some("a/b"));
        assert_eq!(kind(br#"{"x":{"type":"no"}}"#), None);
        assert_eq!(kind(br#"{"type":7}"#), None);
        let types = KindSelection::new(&["message_end".to_string()], &[]);
        assert!(types.holds(br#"{"type":"message_end"}"#));
        assert!(types.holds(br#"{"type":"message\u005fend"}"#));
        assert!(!types.holds(br#"{"type":"message_start"}"#));
        assert!(!types.holds(b"not json"));
    }
}
