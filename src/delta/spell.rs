//! A value's JSON text kept in step with the ops applied to it, without the value.
//!
//! A snapshot row rebuilds each event from the one before by a few ops, most of them an
//! append of a token to a long string. Writing the whole value again after every batch
//! costs the event's length in escaping work, and holding the value costs twice the
//! text's length in memory (its strings are UTF-16). So only the text is held, and an op
//! changes only its part of it: an append inserts its text before the string's closing
//! quote, a set of a value that is there replaces that value's text, a member added to an
//! object goes before its brace and one deleted is cut out, a truncate cuts the front of
//! its string (counting code units in the text), elements added at the end of an array go
//! before its bracket. Any other op is applied to the value of the least part of the text
//! it changes (the container of what it adds or removes), parsed for it and written again.
//! The text stays exactly what [`Value::write_json`] writes for the value, which the tests
//! check against a value the ops are applied to.

use std::ops::Range;

use super::apply::{apply, depth_ok};
use super::{Op, OpError, Path, Seg};
use crate::json;
use crate::value::{ParseError, Value, write_string};

/// A value's text, as [`Value::write_json`] writes it, kept in step with the ops applied.
#[derive(Debug, Default, Clone)]
pub struct Spelled {
    /// Empty for no value (before a first `r`).
    text: Vec<u8>,
    /// The text an op writes in place of what it changed.
    piece: Vec<u8>,
    /// Where the values ops named lately are in the text, kept as the text changes: the
    /// ops of a row name the same few paths batch after batch, and finding one walks the
    /// text before it.
    found: Vec<(Path, Range<usize>)>,
    /// The last element a splice at the end of an array adds, and where it begins in
    /// `piece`: remembered once the piece is in the text.
    added: Option<(Path, usize)>,
}

/// How many places [`Spelled`] remembers.
const REMEMBERED: usize = 32;

/// The most room the piece keeps from one op to the next.
const PIECE_KEPT: usize = 1 << 20;

impl Spelled {
    /// The text of `value` (empty for none).
    pub fn of(value: Option<&Value>) -> Spelled {
        let mut s = Spelled::default();
        s.respell(value);
        s
    }

    /// The text of the value `text` spells, one whole value cut from a line that
    /// [`crate::json::validate`] accepted: `text` itself when it is spelled as sess writes
    /// it ([`Value::is_canonical_valid`], told without building the value), else the value
    /// parsed and written again.
    pub fn of_valid_text(text: &[u8]) -> Result<Spelled, ParseError> {
        if Value::is_canonical_valid(text) {
            return Ok(Spelled::of_canonical(text.to_vec()));
        }
        Ok(Spelled::of(Some(&Value::parse_valid(text)?)))
    }

    /// A text the caller found spelled as sess writes its value ([`Value::is_canonical`]).
    pub fn of_canonical(text: Vec<u8>) -> Spelled {
        debug_assert!(Value::is_canonical(&text));
        Spelled {
            text,
            ..Spelled::default()
        }
    }

    /// The text, as [`Value::write_json`] writes the value.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    pub fn into_text(self) -> Vec<u8> {
        self.text
    }

    /// Applies `op` to the value this text spells, as [`apply`] would, and brings the
    /// text along. An op that fails changes nothing and fails with [`apply`]'s error.
    pub fn apply(&mut self, op: Op) -> Result<(), OpError> {
        depth_ok(&op)?;
        match self.in_place(&op) {
            Some(range) => {
                let (at, len) = (range.start, self.piece.len());
                self.put(range);
                if let Some((path, from)) = self.added.take() {
                    self.remember(path, at + from..at + len);
                }
                Ok(())
            }
            None => self.within(op),
        }
    }

    /// The range an op that is written straight into the text replaces, with `piece`,
    /// what replaces it; `None` for an op applied to a value ([`Spelled::within`]).
    fn in_place(&mut self, op: &Op) -> Option<Range<usize>> {
        self.piece.clear();
        match op {
            // A low surrogate first could pair with a high one the string ends in, which
            // is then no longer written as an escape.
            Op::Append(path, s) if !path.is_empty() && !s.first().is_some_and(is_low) => {
                let r = self.find(path)?;
                if self.text[r.start] != b'"' {
                    return None;
                }
                write_string(s, &mut self.piece);
                self.piece.pop();
                self.piece.remove(0);
                Some(r.end - 1..r.end - 1)
            }
            // The front of the string cut (a rolling window of output).
            Op::Truncate(path, n) if !path.is_empty() => {
                let r = self.find(path)?;
                if self.text[r.start] != b'"' {
                    return None;
                }
                // The code units dropped are counted in the text: a string is not decoded
                // (twice its bytes in UTF-16) to keep its end. As `apply` counts them.
                let at = front_dropped(&self.text[r.start + 1..r.end - 1], *n as usize);
                let (from, low) = at?;
                // Half of a pair dropped: the other half is alone, and so escaped.
                if let Some(unit) = low {
                    self.piece
                        .extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
                Some(r.start + 1..r.start + 1 + from)
            }
            Op::Set(path, v) if !path.is_empty() => match self.find(path) {
                Some(r) => {
                    v.write_json(&mut self.piece);
                    Some(r)
                }
                // A member added to an object: written last, as `apply` pushes it.
                None => {
                    let (last, parent) = path.split_last()?;
                    let r = self.find(parent)?;
                    if self.text.get(r.start) != Some(&b'{') {
                        return None;
                    }
                    if r.len() > 2 {
                        self.piece.push(b',');
                    }
                    write_key(last, &mut self.piece);
                    self.piece.push(b':');
                    v.write_json(&mut self.piece);
                    Some(r.end - 1..r.end - 1)
                }
            },
            // A member of an object taken out, with a comma; one that is not there is
            // deleted already.
            Op::Delete(path) if !path.is_empty() => {
                let (last, parent) = path.split_last()?;
                let r = self.find(parent)?;
                if self.text.get(r.start) != Some(&b'{') {
                    return None;
                }
                let Some(v) = self.find(path) else {
                    return Some(r.start..r.start);
                };
                write_key(last, &mut self.piece);
                let key = v.start.checked_sub(self.piece.len() + 1)?;
                if self.text[key..v.start - 1] != self.piece[..] {
                    return None;
                }
                self.piece.clear();
                Some(match (self.text[key - 1], self.text[v.end]) {
                    (_, b',') => key..v.end + 1,
                    (b',', _) => key - 1..v.end,
                    _ => key..v.end,
                })
            }
            // Elements added at the end (a history that grows): written before the bracket.
            Op::Splice(path, at, 0, items) if !items.is_empty() => {
                let r = self.find(path)?;
                if self.text.get(r.start) != Some(&b'[') || !self.has_length(path, r.start, *at) {
                    return None;
                }
                let mut last = 0;
                for (k, item) in items.iter().enumerate() {
                    if k > 0 || *at > 0 {
                        self.piece.push(b',');
                    }
                    last = self.piece.len();
                    item.write_json(&mut self.piece);
                }
                // Where the array now ends, for the next splice there to find at once.
                let mut end = path.clone();
                end.push(Seg::Index(at + items.len() as u64 - 1));
                self.added = Some((end, last));
                Some(r.end - 1..r.end - 1)
            }
            _ => None,
        }
    }

    /// Whether the array at `text[start]`, at `path`, has `n` elements: whether its
    /// element `n - 1` is its last, found where the last splice put it, or walked to.
    fn has_length(&mut self, path: &[Seg], start: usize, n: u64) -> bool {
        let Some(last) = n.checked_sub(1) else {
            return self.text.get(start + 1) == Some(&b']');
        };
        let mut at = path.to_vec();
        at.push(Seg::Index(last));
        self.find(&at)
            .is_some_and(|r| self.text.get(r.end) == Some(&b']'))
    }

    /// Applies `op` to the value of the container it changes (the target itself for a
    /// splice or a permutation), parsed from the text, and writes that value again. An op
    /// whose container is the root, or is not there, is applied to the whole value; so is
    /// one that fails, to fail with the error its whole path gives.
    fn within(&mut self, op: Op) -> Result<(), OpError> {
        let Some(path) = op.path() else {
            return self.whole(op);
        };
        let depth = match op {
            Op::Splice(..) | Op::Permute(..) => path.len(),
            _ => path.len().saturating_sub(1),
        };
        let Some(range) = (depth > 0).then(|| self.find(&path[..depth])).flatten() else {
            return self.whole(op);
        };
        let mut part = Some(self.value_at(range.clone()));
        if apply(&mut part, below(op.clone(), depth)).is_err() {
            return self.whole(op);
        }
        self.piece.clear();
        if let Some(v) = part {
            v.write_json(&mut self.piece);
        }
        self.put(range);
        Ok(())
    }

    /// Applies `op` to the whole value, and writes it again.
    fn whole(&mut self, op: Op) -> Result<(), OpError> {
        let mut value = (!self.text.is_empty()).then(|| self.value_at(0..self.text.len()));
        apply(&mut value, op)?;
        self.respell(value.as_ref());
        Ok(())
    }

    /// The value of a part of the text, which is spelled as sess writes values.
    fn value_at(&self, range: Range<usize>) -> Value {
        Value::parse_valid(&self.text[range]).expect("the text is written by write_json")
    }

    fn respell(&mut self, value: Option<&Value>) {
        self.found.clear();
        self.text.clear();
        if let Some(v) = value {
            v.write_json(&mut self.text);
        }
    }

    /// Puts `piece` in place of `range`, and moves the places remembered along: one after
    /// it shifts, one before it stays, one around it stretches, the value replaced takes
    /// the piece's range, and one inside it is forgotten.
    fn put(&mut self, range: Range<usize>) {
        let (start, end, len) = (range.start, range.end, self.piece.len());
        // Room for an eighth more, not twice the text: a snapshot of 60 MB grows by a
        // few bytes an event.
        let grows = len.saturating_sub(end - start);
        if self.text.len() + grows > self.text.capacity() {
            self.text.reserve_exact(grows + self.text.len() / 8);
        }
        self.text.splice(range, self.piece.iter().copied());
        // A piece as long as a whole snapshot is not kept for the next few bytes.
        if self.piece.capacity() > PIECE_KEPT {
            self.piece = Vec::new();
        }
        let moved = |at: usize| at + len - (end - start);
        self.found.retain_mut(|(_, r)| {
            if (r.start, r.end) == (start, end) {
                *r = start..start + len;
            } else if end <= r.start {
                *r = moved(r.start)..moved(r.end);
            } else if r.end <= start {
                // Before it, even when it ends where text is inserted (an array's last
                // element, with elements added after it).
            } else if r.start <= start && end <= r.end {
                r.end = moved(r.end);
            } else {
                // One inside it is gone.
                return false;
            }
            true
        });
    }

    /// The range of the value at `path`, remembered or found. It is found from the
    /// longest path before it that is remembered, and the paths before it that are walked
    /// through are remembered too: a value named next to a huge one (Claude Code's `uuid`
    /// after `data`) is then found without walking the huge one again.
    fn find(&mut self, path: &[Seg]) -> Option<Range<usize>> {
        let mut range = 0..self.text.len();
        let mut depth = 0;
        for d in (0..=path.len()).rev() {
            if let Some(k) = self.found.iter().position(|(p, _)| p[..] == path[..d]) {
                // Most recently used last: the least recently used is forgotten first.
                let place = self.found.remove(k);
                range = place.1.clone();
                self.found.push(place);
                depth = d;
                break;
            }
        }
        for d in depth..path.len() {
            range = locate(&self.text, range.start, &path[d], &self.found)?;
            self.remember(path[..=d].to_vec(), range.clone());
        }
        Some(range)
    }

    /// Remembers where the value at `path` is, forgetting the least recently used place.
    fn remember(&mut self, path: Path, range: Range<usize>) {
        if self.found.len() == REMEMBERED {
            self.found.remove(0);
        }
        self.found.push((path, range));
    }
}

/// Where the text of a string (its inside, as sess writes strings) goes on once its first
/// `n` UTF-16 code units are dropped, and the low surrogate left alone when the last unit
/// dropped is the high half of a pair (written raw, as one character of four bytes).
/// `None` for text not spelled so.
fn front_dropped(inner: &[u8], n: usize) -> Option<(usize, Option<u16>)> {
    let (mut i, mut units) = (0, 0);
    while units < n && i < inner.len() {
        let width = match inner[i] {
            b'\\' if inner.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            c if c < 0x80 => 1,
            c if c >= 0xF0 => 4,
            c if c >= 0xE0 => 3,
            _ => 2,
        };
        let char_end = i + width;
        if width == 4 {
            let c = std::str::from_utf8(inner.get(i..char_end)?)
                .ok()?
                .chars()
                .next()?;
            let mut pair = [0u16; 2];
            c.encode_utf16(&mut pair);
            if n - units == 1 {
                return Some((char_end, Some(pair[1])));
            }
            units += 2;
        } else {
            units += 1;
        }
        i = char_end;
    }
    Some((i.min(inner.len()), None))
}

/// The key `seg` names in an object, as written (a number names the key of its digits).
fn write_key(seg: &Seg, out: &mut Vec<u8>) {
    match seg {
        Seg::Key(k) => write_string(k, out),
        Seg::Index(i) => out.extend_from_slice(format!("\"{i}\"").as_bytes()),
    }
}

/// The op, its path without its first `depth` segments: the same op, made on the value
/// found there.
fn below(mut op: Op, depth: usize) -> Op {
    match &mut op {
        Op::Replace(_) => {}
        Op::Set(p, _)
        | Op::Delete(p)
        | Op::Append(p, _)
        | Op::Truncate(p, _)
        | Op::Splice(p, ..)
        | Op::Permute(p, _) => {
            p.drain(..depth);
        }
    }
    op
}

fn is_low(unit: &u16) -> bool {
    (0xDC00..0xE000).contains(unit)
}

/// How a walk passes a value: by its place in `found` when it is there, else by reading it.
fn skipper<'t>(
    text: &'t [u8],
    found: &'t [(Path, Range<usize>)],
) -> impl Fn(usize) -> Option<usize> + 't {
    move |at| match found.iter().find(|(_, r)| r.start == at) {
        Some((_, r)) => Some(r.end),
        None => json::skip_value(text, at),
    }
}

/// The range of the value `seg` names in the container at `text[start]`, a value as
/// [`Value::write_json`] writes it (no whitespace, each key once, spelled as the writer
/// spells it), walked as [`apply`] walks the value: object members by key (a number naming
/// the key spelled in digits), array elements by index. A value passed by whose place is
/// in `found` is not walked.
fn locate(
    text: &[u8],
    start: usize,
    seg: &Seg,
    found: &[(Path, Range<usize>)],
) -> Option<Range<usize>> {
    let skip = skipper(text, found);
    match (text.get(start)?, seg) {
        (b'{', _) => {
            let mut key = Vec::new();
            write_key(seg, &mut key);
            member(text, start, &key, skip)
        }
        (b'[', Seg::Index(i)) => element(text, start, usize::try_from(*i).ok()?, skip),
        _ => None,
    }
}

/// The range of the value of the member whose key is spelled `key` (quotes included) in
/// the object at `text[start]`.
fn member(
    text: &[u8],
    start: usize,
    key: &[u8],
    skip: impl Fn(usize) -> Option<usize>,
) -> Option<Range<usize>> {
    let mut i = start + 1;
    while text.get(i) == Some(&b'"') {
        let key_end = json::string_end(text, i)?;
        let value_start = key_end + 1;
        let value_end = skip(value_start)?;
        if &text[i..key_end] == key {
            return Some(value_start..value_end);
        }
        i = value_end + usize::from(text.get(value_end) == Some(&b','));
    }
    None
}

/// The range of element `n` of the array at `text[start]`.
fn element(
    text: &[u8],
    start: usize,
    n: usize,
    skip: impl Fn(usize) -> Option<usize>,
) -> Option<Range<usize>> {
    let mut i = start + 1;
    for k in 0.. {
        if matches!(text.get(i), None | Some(b']')) {
            return None;
        }
        let end = skip(i)?;
        if k == n {
            return Some(i..end);
        }
        i = end + usize::from(text.get(end) == Some(&b','));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::parse_path;
    use proptest::prelude::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    fn path(p: &str) -> Path {
        parse_path(&Value::parse(p.as_bytes()).unwrap()).unwrap()
    }

    /// Applies `ops` both ways: to the text, and to a value written whole after each op.
    /// Both must give the same text, and fail alike. Returns how many ops applied.
    fn check(start: &str, ops: Vec<Op>) -> usize {
        let mut value = Some(Value::parse(start.as_bytes()).unwrap());
        let mut spelled = Spelled::of_valid_text(start.as_bytes()).unwrap();
        let mut applied = 0;
        for op in ops {
            let shown = format!("{op:?}");
            let before = spelled.text().to_vec();
            let got = spelled.apply(op.clone());
            let want = apply(&mut value, op);
            assert_eq!(got, want, "{shown}");
            let whole = value.as_ref().map(Value::to_json).unwrap_or_default();
            assert_eq!(
                String::from_utf8_lossy(spelled.text()),
                String::from_utf8_lossy(&whole),
                "after {shown} ({})",
                if want.is_ok() { "applied" } else { "failed" }
            );
            if want.is_err() {
                assert_eq!(spelled.text(), &before[..], "a failed {shown}");
            }
            applied += usize::from(want.is_ok());
        }
        applied
    }

    #[test]
    fn appends_sets_and_the_rest_keep_the_text() {
        let start = r#"{"a":{"t":"x\u00e9","n":[1,{"k":"v"}]},"b":"","1":[]}"#;
        let applied = check(
            start,
            vec![
                Op::Append(path(r#"["a","t"]"#), units("y\"z\n🦀")),
                Op::Set(path(r#"["a","n",1,"k"]"#), Value::Number(1.5)),
                Op::Set(path(r#"["a","new"]"#), Value::string("w")),
                Op::Set(path(r#"["a","n",2]"#), Value::Null),
                Op::Append(path(r#"[1]"#), vec![]),
            ],
        );
        assert_eq!(applied, 4, "appending to an array fails");
        let applied = check(
            start,
            vec![
                Op::Truncate(path(r#"["a","t"]"#), 1),
                Op::Delete(path(r#"["a","n"]"#)),
                Op::Splice(path(r#"[1]"#), 0, 0, vec![Value::Bool(true)]),
                Op::Set(path(r#"[1,0]"#), Value::string("s")),
                Op::Permute(path(r#"[1]"#), vec![0]),
                Op::Replace(Value::Array(vec![])),
                Op::Splice(vec![], 0, 0, vec![Value::string("x")]),
                Op::Append(path("[0]"), units("y")),
            ],
        );
        assert_eq!(applied, 8);
    }

    /// A history that grows by splices at its end: each finds the end where the last put
    /// it, and a change that moves elements (a delete, a splice before the end) leaves no
    /// stale place behind.
    #[test]
    fn splices_at_the_end_of_an_array_follow_one_another() {
        let grow = |at: u64| {
            Op::Splice(
                path(r#"["h"]"#),
                at,
                0,
                vec![Value::string("m"), Value::Null],
            )
        };
        let ops = vec![
            grow(1),
            grow(3),
            Op::Set(path(r#"["h",4]"#), Value::string("n")),
            grow(5),
            Op::Delete(path(r#"["h",0]"#)),
            grow(7),
            grow(6),
            Op::Splice(path(r#"["h"]"#), 1, 0, vec![Value::Bool(true)]),
            grow(8),
            grow(9),
            Op::Truncate(path(r#"["h",0]"#), 1),
            grow(11),
        ];
        // A splice past the end (grow(7) of six) clamps, as JavaScript's does.
        assert_eq!(check(r#"{"h":["a"],"z":1}"#, ops), 12);
        // An element longer than the piece keeps: its place is where it was put.
        let long = Value::string(&"l".repeat(PIECE_KEPT + 10));
        let ops = vec![
            Op::Splice(path(r#"["h"]"#), 1, 0, vec![long]),
            Op::Truncate(path(r#"["h",1]"#), 3),
            Op::Append(path(r#"["h",1]"#), units("end")),
            grow(2),
        ];
        assert_eq!(check(r#"{"h":["a"],"z":1}"#, ops), 4);
    }

    #[test]
    fn an_append_that_completes_a_surrogate_pair_writes_the_string_again() {
        let mut ops = vec![Op::Append(path(r#"["s"]"#), vec![0xD83E])];
        ops.push(Op::Append(path(r#"["s"]"#), vec![0xDD80, 0xD800]));
        ops.push(Op::Append(path(r#"["s"]"#), units("x")));
        assert_eq!(check(r#"{"s":"a"}"#, ops), 3);
    }

    /// Before a first `r` there is no value: every other op fails as `apply` fails it.
    #[test]
    fn ops_before_a_value_fail_as_applied() {
        for op in [
            Op::Set(path(r#"["a"]"#), Value::Null),
            Op::Delete(path(r#"["a"]"#)),
            Op::Append(path(r#"["a"]"#), units("x")),
            Op::Truncate(path(r#"["a"]"#), 1),
            Op::Splice(vec![], 0, 0, vec![Value::Null]),
        ] {
            let mut spelled = Spelled::of(None);
            let want = apply(&mut None, op.clone());
            assert!(want.is_err());
            assert_eq!(spelled.apply(op), want);
            assert!(spelled.text().is_empty());
        }
    }

    #[test]
    fn a_failed_op_leaves_the_text() {
        let op = Op::Append(path(r#"["nowhere"]"#), units("x"));
        assert_eq!(check(r#"{"s":"a"}"#, vec![op]), 0);
        let op = Op::Append(path(r#"["s"]"#), units("x"));
        assert_eq!(check(r#"{"s":1}"#, vec![op]), 0);
    }

    fn text() -> impl Strategy<Value = Vec<u16>> {
        prop_oneof![
            Just(units("a")),
            Just(units("\"\\\n")),
            Just(units("é🦀")),
            Just(vec![0xD83E]),
            Just(vec![0xDD80]),
            Just(vec![]),
        ]
    }

    fn seg() -> impl Strategy<Value = Seg> {
        prop_oneof![
            (0u64..3).prop_map(Seg::Index),
            proptest::sample::select(vec!["a", "a", "b", "0", "é\"", "x"])
                .prop_map(|k| Seg::Key(units(k))),
        ]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(Value::String),
            Just(Value::Null),
            (-3i32..3).prop_map(|n| Value::Number(f64::from(n) / 2.0)),
            Just(Value::Object(vec![])),
            Just(Value::Array(vec![])),
            Just(Value::Object(vec![(units("a"), Value::string("s"))])),
        ]
    }

    /// Mostly paths of the start value below (ops that apply), else any.
    fn any_path() -> impl Strategy<Value = Path> {
        let known = [
            "[]",
            r#"["a"]"#,
            r#"["a","a"]"#,
            r#"["a","0"]"#,
            r#"["a",0,1]"#,
            r#"["a","0",0]"#,
            r#"["a","0",1,"a"]"#,
            r#"["a","é\""]"#,
            r#"["b"]"#,
            r#"["b",0,"a"]"#,
            r#"["b",1]"#,
            r#"["b",2]"#,
            r#"["c"]"#,
        ];
        prop_oneof![
            3 => proptest::sample::select(known.to_vec()).prop_map(path),
            1 => proptest::collection::vec(seg(), 0..4),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any_path(), text()).prop_map(|(p, s)| Op::Append(p, s)),
            3 => (any_path(), leaf()).prop_map(|(p, v)| Op::Set(p, v)),
            1 => any_path().prop_map(Op::Delete),
            1 => (any_path(), 0u64..3).prop_map(|(p, n)| Op::Truncate(p, n)),
            1 => (any_path(), 0u64..3, 0u64..2, proptest::collection::vec(leaf(), 0..2))
                .prop_map(|(p, i, r, v)| Op::Splice(p, i, r, v)),
            1 => any_path().prop_map(|p| Op::Permute(p, vec![1, 0])),
            1 => leaf().prop_map(Op::Replace),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever the ops, the text kept in step is the text written whole, and a failed
        /// op leaves it as it was.
        #[test]
        fn the_text_kept_in_step_is_the_text_written_whole(
            ops in proptest::collection::vec(op(), 0..40),
        ) {
            let start = r#"{"a":{"a":"x","0":["s",{"a":"y"}],"é\"":1},"b":[{"a":""},"t"]}"#;
            check(start, ops);
        }
    }

    /// The random ops above are not all refused: enough of them apply to test something.
    #[test]
    fn most_random_op_lists_apply_some_ops() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = proptest::collection::vec(op(), 40..41);
        let start = r#"{"a":{"a":"x","0":["s",{"a":"y"}],"é\"":1},"b":[{"a":""},"t"]}"#;
        let mut applied = 0;
        for _ in 0..100 {
            let ops = strategy.new_tree(&mut runner).unwrap().current();
            applied += check(start, ops);
        }
        assert!(applied > 4000 / 10, "{applied} of 4000 ops applied");
    }
}
