//! Op records read straight from their bytes, without a value tree.
//!
//! Replaying a durable list parsed each record into a [`Value`] and then decoded that into
//! ops: most of `sess recover`'s time went to building and dropping trees for records like
//! `{"seq":7,"tag":null,"ops":[["t",["out"],40],["a","text"],["s",["n"],7]]}`. Here the
//! common shapes are read from the bytes: a record of `seq`, `tag` null, `ops` (or
//! `value`) and `address`, each once; ops `a`, `t`, `s`, `d` and `#`, with paths inline,
//! by id or implied. Anything else (a base batch, a splice, a key that repeats, a number
//! not spelled as a plain integer, a reserved segment, any error) is read by the general
//! path ([`super::oplist::parse_record`], [`super::wire::Decoder::decode_owned`]), which
//! is the one that reports errors. The answer is the general path's whenever this one
//! gives one.
//!
//! A record is read in one pass that checks each part as strictly as [`json::validate`]
//! would ([`record`]), and a batch whose paths all resolve is applied edit by edit as its
//! tuples are walked ([`Decoder::each_op`]), without making [`Op`]s. Its tuples, the
//! segments of their paths and the texts they append are read into a [`Batch`] that the
//! next record reuses: allocating them anew for each op was a sixth of the time.

use std::ops::Range;

use super::apply::Edit;
use super::wire::Decoder;
use super::{Op, Path, Seg, is_reserved};
use crate::json;
use crate::value::{MAX_DEPTH, Value};

/// A record as [`record`] reads it: its seq, its address, and its ops.
#[derive(Debug, PartialEq)]
pub struct RawRecord<'a> {
    pub seq: Option<u64>,
    pub address: Option<String>,
    /// The raw JSON of its ops (valid).
    pub ops: &'a [u8],
    /// Whether its tuples were read into the [`Batch`] (their paths not yet resolved);
    /// false when one is of a shape not read here, for the general path to decode it.
    pub read: bool,
}

/// The tuples of the last batch [`record`] read, with what they hold: the segments of
/// their paths, and the texts they append, each a range of a buffer here. Kept from
/// record to record, so that its buffers are reused (the keys' too).
#[derive(Debug, Default)]
pub struct Batch {
    tuples: Vec<Tuple>,
    /// The segments read, `segs[..used]`; the keys past `used` are buffers to reuse.
    segs: Vec<Seg>,
    used: usize,
    /// The texts read, one after another.
    units: Vec<u16>,
}

impl Batch {
    fn clear(&mut self) {
        self.tuples.clear();
        self.used = 0;
        self.units.clear();
    }

    /// The next segment, a key: its buffer, emptied.
    fn key(&mut self) -> &mut Vec<u16> {
        if self.used == self.segs.len() {
            self.segs.push(Seg::Key(Vec::new()));
        }
        let seg = &mut self.segs[self.used];
        self.used += 1;
        if !matches!(seg, Seg::Key(_)) {
            *seg = Seg::Key(Vec::new());
        }
        let Seg::Key(key) = seg else { unreachable!() };
        key.clear();
        key
    }

    /// The next segment, an index.
    fn index(&mut self, i: u64) {
        match self.segs.get_mut(self.used) {
            Some(seg) => *seg = Seg::Index(i),
            None => self.segs.push(Seg::Index(i)),
        }
        self.used += 1;
    }
}

/// Where in a [`Batch`] a path's segments or a text lie.
type Span = Range<usize>;

/// An op tuple as read from its bytes, before its path is resolved against the decoder.
#[derive(Debug, Clone, PartialEq)]
enum Tuple {
    /// `["#", id, path]`.
    Define(u64, Span),
    Op(Target, Read),
}

/// Where an op applies: a path written out, a path's id, or the op before's path.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Path(Span),
    Id(u64),
    Previous,
}

/// An [`Edit`] as read: a text appended lies in the batch. A value set is taken out of
/// it when the edit is made.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    Set(Value),
    Delete,
    Append(Span),
    Truncate(u64),
}

/// The record `line` holds, when it is valid JSON of the common shape; `None` for anything
/// else. A record tagged `base` is left to the general path (it starts with `r`).
///
/// One pass over the line: each part is checked as strictly as [`json::validate`] checks
/// it while it is read, so whatever this answers is valid JSON. Its tuples are read into
/// `batch` (what it held is gone, whatever the answer).
pub fn record<'a>(line: &'a [u8], batch: &mut Batch) -> Option<RawRecord<'a>> {
    batch.clear();
    let mut c = Cursor {
        b: line,
        i: 0,
        depth: 0,
        out: batch,
    };
    let rec = match c.peek()? {
        b'[' => {
            let (ops, read) = c.ops()?;
            RawRecord {
                seq: None,
                address: None,
                ops,
                read,
            }
        }
        b'{' => c.object()?,
        _ => return None,
    };
    c.peek().is_none().then_some(rec)
}

/// Reads a line's JSON strictly, giving up (`None`) at anything not of the shapes read
/// here: the general path then reads the line, and reports what is wrong with it.
struct Cursor<'a, 'o> {
    b: &'a [u8],
    i: usize,
    /// The depth in the line of the value at `i` (0 for the record), for refusing what
    /// nests deeper than [`MAX_DEPTH`] as a parse of the whole line does.
    depth: usize,
    out: &'o mut Batch,
}

impl<'a> Cursor<'a, '_> {
    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.i = json::skip_ws(self.b, self.i);
        self.b.get(self.i).copied()
    }

    /// Takes byte `c`, the next after whitespace.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// Takes one value, strictly checked (UTF-8 too), and gives its bytes.
    fn value(&mut self) -> Option<&'a [u8]> {
        let raw = self.word()?;
        std::str::from_utf8(raw).ok().map(|_| raw)
    }

    /// [`Cursor::value`] not checked as UTF-8, for a value compared with ASCII (a key, a
    /// verb, `null`), read as digits, or checked by its reader: bytes that match are ASCII.
    fn word(&mut self) -> Option<&'a [u8]> {
        self.peek()?;
        let start = self.i;
        // Keys, verbs and counts are short and plain: read here, byte by byte (faster
        // than the general check for so few bytes); anything else is checked in full.
        let rest = &self.b[start..];
        let plain = match rest[0] {
            b'"' => rest[1..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .filter(|&n| rest[n + 1] == b'"')
                .map(|n| n + 2),
            // Digits alone: a fraction or exponent after them is caught where a `,` or a
            // closing bracket is expected.
            b'0'..=b'9' => {
                let n = rest.iter().take_while(|d| d.is_ascii_digit()).count();
                (rest[0] != b'0' || n == 1).then_some(n)
            }
            _ => None,
        };
        self.i = match plain {
            Some(n) => start + n,
            None => json::value_end_within(self.b, start, MAX_DEPTH - self.depth).ok()?,
        };
        Some(&self.b[start..self.i])
    }

    /// An op's argument: a string decoded or a path read (each checked in the same pass),
    /// or any other value's bytes, strictly checked but not as UTF-8 (each use of them
    /// checks what it reads).
    fn arg(&mut self) -> Option<Arg<'a>> {
        let (start, depth, used) = (self.i, self.depth, self.out.used);
        match self.peek()? {
            b'"' => return self.text().map(Arg::Text),
            b'[' => {
                if let Some(path) = self.path() {
                    return Some(Arg::Path(path, &self.b[start..self.i]));
                }
                // Not a path: read again as a value, and its segments let go.
                (self.i, self.depth, self.out.used) = (start, depth, used);
            }
            _ => {}
        }
        self.word().map(Arg::Raw)
    }

    /// A string, decoded into the batch's texts.
    fn text(&mut self) -> Option<Span> {
        let start = self.out.units.len();
        self.i = json::decode_strict(self.b, self.i, &mut self.out.units)?;
        Some(start..self.out.units.len())
    }

    /// An inline path, its segments read into the batch: keys that are not reserved, and
    /// plain counts.
    fn path(&mut self) -> Option<Span> {
        let start = self.out.used;
        self.list(|c| {
            if c.peek()? == b'"' {
                let key = c.out.key();
                c.i = json::decode_strict(c.b, c.i, key)?;
                return (!is_reserved(key)).then_some(());
            }
            let start = c.i;
            c.i += c.b[start..]
                .iter()
                .take_while(|d| d.is_ascii_digit())
                .count();
            c.out.index(plain_count(&c.b[start..c.i])?);
            Some(())
        })?;
        Some(start..self.out.used)
    }

    /// Takes a list's elements, each taken by `item`, and the list's end.
    fn list(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        self.depth += 1;
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A record object of `seq`, `tag` null, `address` and `ops` (or `value`), each once.
    fn object(&mut self) -> Option<RawRecord<'a>> {
        let mut rec = RawRecord {
            seq: None,
            address: None,
            ops: b"",
            read: false,
        };
        // Which keys were seen: a key twice is left to the general path (the last one wins).
        let mut seen = [false; 4];
        self.eat(b'{')?;
        self.depth += 1;
        loop {
            let key = self.word()?;
            self.eat(b':')?;
            let k = match key {
                b"\"seq\"" => 0,
                b"\"tag\"" => 1,
                b"\"address\"" => 2,
                b"\"ops\"" | b"\"value\"" => 3,
                _ => return None,
            };
            // `ops` and `value` are one slot: a record with both is an error.
            if std::mem::replace(&mut seen[k], true) {
                return None;
            }
            match k {
                0 => rec.seq = Some(plain_count(self.word()?)?),
                1 => (self.word()? == b"null").then_some(())?,
                2 => rec.address = Some(plain_string(self.word()?)?),
                _ => (rec.ops, rec.read) = self.ops()?,
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => break,
                _ => return None,
            }
        }
        self.i += 1;
        self.depth -= 1;
        // `null` tags a batch that does not start with `r` (spelled plainly: an escaped
        // verb is left to the general path, which decodes it).
        let plain_verb = |v: &[u8]| v != b"r" && !v.contains(&b'\\');
        let untagged = !seen[1] || super::wire::first_verb(rec.ops).is_none_or(plain_verb);
        (seen[3] && untagged).then_some(rec)
    }

    /// A batch: its bytes, and whether its tuples (all of the shapes read here) are in
    /// the batch.
    fn ops(&mut self) -> Option<(&'a [u8], bool)> {
        self.peek()?;
        let start = self.i;
        let mut read = true;
        self.list(|c| {
            c.peek()?;
            let at = (c.i, c.depth);
            if read {
                if let Some(tuple) = c.tuple() {
                    c.out.tuples.push(tuple);
                    return Some(());
                }
                // Not read here: from here on only checked, and the batch decoded the
                // general way.
                read = false;
                (c.i, c.depth) = at;
            }
            c.value().map(|_| ())
        })?;
        Some((&self.b[start..self.i], read))
    }

    /// An op tuple `[verb, ...]` of a verb and arity read here.
    fn tuple(&mut self) -> Option<Tuple> {
        self.eat(b'[')?;
        self.depth += 1;
        let verb = match self.word()? {
            [b'"', v, b'"'] => *v,
            _ => return None,
        };
        let mut args = [None, None];
        let mut n = 0;
        while self.peek()? == b',' {
            self.i += 1;
            *args.get_mut(n)? = Some(self.arg()?);
            n += 1;
        }
        self.eat(b']')?;
        self.depth -= 1;
        let [first, second] = args;
        let target = |arg: Option<Arg>| match arg? {
            Arg::Path(path, _) => Some(Target::Path(path)),
            Arg::Raw(raw) => plain_count(raw).map(Target::Id),
            Arg::Text(_) => None,
        };
        let (on, last) = match n {
            2 => (target(first)?, second?),
            1 if verb == b'd' => (target(first)?, Arg::Raw(b"")),
            1 => (Target::Previous, first?),
            _ if verb == b'd' => (Target::Previous, Arg::Raw(b"")),
            _ => return None,
        };
        let edit = match (verb, last) {
            (b'#', Arg::Path(path, _)) => {
                return match on {
                    Target::Id(id) if n == 2 => Some(Tuple::Define(id, path)),
                    _ => None,
                };
            }
            (b'a', Arg::Text(span)) => Read::Append(span),
            (b't', Arg::Raw(raw)) => Read::Truncate(plain_count(raw)?),
            (b's', Arg::Text(span)) => Read::Set(Value::String(self.out.units[span].to_vec())),
            // A count is the number it spells (at most 15 digits: exact as a double).
            (b's', Arg::Raw(raw)) => Read::Set(match plain_count(raw) {
                Some(n) => Value::Number(n as f64),
                None => {
                    std::str::from_utf8(raw).ok()?;
                    Value::parse_valid(raw).ok()?
                }
            }),
            // Read as a path, so valid, UTF-8 too.
            (b's', Arg::Path(_, raw)) => Read::Set(Value::parse_valid(raw).ok()?),
            (b'd', _) if n < 2 => Read::Delete,
            _ => return None,
        };
        Some(Tuple::Op(on, edit))
    }
}

/// An op's argument as [`Cursor::arg`] reads it.
enum Arg<'a> {
    /// A string, decoded into the batch.
    Text(Span),
    /// A path, its segments in the batch, and its bytes (the value of `s` when it is not
    /// the op's path).
    Path(Span, &'a [u8]),
    Raw(&'a [u8]),
}

/// A non-negative integer spelled as digits alone (no sign, fraction or exponent, no
/// leading zero), at most 15 of them: a count the general path reads the same.
fn plain_count(raw: &[u8]) -> Option<u64> {
    let ok = !raw.is_empty()
        && raw.len() <= 15
        && raw.iter().all(u8::is_ascii_digit)
        && (raw[0] != b'0' || raw.len() == 1);
    ok.then(|| raw.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// A string without escapes, as UTF-8.
fn plain_string(raw: &[u8]) -> Option<String> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    String::from_utf8(inner.to_vec()).ok()
}

impl Decoder {
    /// Whether every op of `batch` finds its path: an id defined before it (in an earlier
    /// batch or this one), an op before it for the short form, and no path empty.
    pub fn resolves(&self, batch: &Batch) -> bool {
        let mut defined: Vec<(u64, bool)> = Vec::new();
        let mut previous = false;
        for tuple in &batch.tuples {
            let on = match tuple {
                Tuple::Define(id, p) => {
                    defined.push((*id, !p.is_empty()));
                    continue;
                }
                Tuple::Op(on, _) => on,
            };
            let found = match on {
                Target::Path(p) => !p.is_empty(),
                Target::Id(id) => match defined.iter().rev().find(|(d, _)| d == id) {
                    Some(&(_, some)) => some,
                    None => self.path_by_id(*id).is_some_and(|p| !p.is_empty()),
                },
                Target::Previous => previous,
            };
            if !found {
                return false;
            }
            previous = true;
        }
        true
    }

    /// Shows each op of `batch`, which [`Decoder::resolves`], to `f` in order: its index
    /// among the ops, its path and its edit. Paths are defined as they come, so the decoder
    /// is left as decoding the whole batch leaves it, unless `f` fails. The tuples are
    /// taken out of the batch (a value set is moved, not copied), so they are made once.
    pub fn each_op<E>(
        &mut self,
        batch: &mut Batch,
        mut f: impl FnMut(usize, &[Seg], Edit<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Batch {
            tuples,
            segs,
            units,
            ..
        } = batch;
        // The path of the op before: in the batch, or (`None`) an id's, copied, since a
        // `#` after it may define the id again.
        let mut by_id: Path = Vec::new();
        let mut previous: Option<Option<Span>> = None;
        let mut k = 0;
        for tuple in tuples.drain(..) {
            let (on, read) = match tuple {
                Tuple::Define(id, p) => {
                    self.define_path(id, segs[p].to_vec());
                    continue;
                }
                Tuple::Op(on, read) => (on, read),
            };
            let at = match on {
                Target::Path(p) => Some(p),
                Target::Id(id) => {
                    by_id.clone_from(self.path_by_id(id).expect("resolves"));
                    None
                }
                Target::Previous => previous.take().expect("resolves"),
            };
            let edit = match read {
                Read::Set(v) => Edit::Set(v),
                Read::Delete => Edit::Delete,
                Read::Append(text) => Edit::Append(&units[text]),
                Read::Truncate(n) => Edit::Truncate(n),
            };
            let path = at.as_ref().map_or(&by_id[..], |p| &segs[p.clone()]);
            f(k, path, edit)?;
            k += 1;
            previous = Some(at);
        }
        Ok(())
    }

    /// The ops of a batch [`record`] read, when every path resolves; `None` leaves the
    /// decoder as it was, for the general path to decode the batch.
    pub fn decode_raw(&mut self, batch: &mut Batch) -> Option<Vec<Op>> {
        self.resolves(batch).then(|| self.ops_of(batch))
    }

    /// The ops of `batch`, which [`Decoder::resolves`].
    pub fn ops_of(&mut self, batch: &mut Batch) -> Vec<Op> {
        let mut out = Vec::with_capacity(batch.tuples.len());
        let Ok(()) = self.each_op(batch, |_, path, edit| {
            out.push(edit.into_op(path.to_vec()));
            Ok::<(), std::convert::Infallible>(())
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::oplist::{Ops, Replay, parse_record};
    use proptest::prelude::*;

    /// The ops of `batch` (a bare batch), read and decoded here.
    fn decode_raw(d: &mut Decoder, batch: &[u8]) -> Option<Vec<Op>> {
        let mut b = Batch::default();
        record(batch, &mut b)?.read.then(|| d.decode_raw(&mut b))?
    }

    /// The record `line` holds, read into a batch of its own.
    fn read(line: &[u8]) -> Option<RawRecord<'_>> {
        record(line, &mut Batch::default())
    }

    /// What the general path reads of `line`, as a raw record gives it.
    fn general(line: &[u8]) -> Option<(Option<u64>, Option<String>, Value)> {
        let rec = parse_record(line).ok()?;
        Some((rec.seq, rec.address, rec.ops))
    }

    #[test]
    fn reads_the_common_records() {
        let r = read(br#" {"seq":7,"tag":null,"ops":[["a",["x"],"y"]],"address":"q"} "#).unwrap();
        assert_eq!((r.seq, r.address.as_deref()), (Some(7), Some("q")));
        assert_eq!(r.ops, br#"[["a",["x"],"y"]]"#);
        assert_eq!(read(br#"[["d",["x"]]] "#).unwrap().ops, br#"[["d",["x"]]]"#);
        assert_eq!(read(br#"{"value":[]}"#).unwrap().ops, b"[]");
    }

    #[test]
    fn reads_values_as_deep_as_a_line_may_nest_them_and_no_deeper() {
        let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
        // In a record, an `s` value lies 3 levels down: 998 arrays reach level 1000.
        for (n, in_one_pass) in [(998, true), (999, false)] {
            let line = format!(r#"{{"ops":[["t",["x"],1],["s",["n"],{}]]}}"#, nest(n));
            let tuples = read(line.as_bytes()).is_some_and(|r| r.read);
            assert_eq!(tuples, in_one_pass, "{n}");
        }
        // In a bare batch, 2 levels down.
        let line = format!(r#"[["d",["x"]],["s",["n"],{}]]"#, nest(999));
        assert!(read(line.as_bytes()).unwrap().read);
        let line = format!(r#"[["d",["x"]],["p",["n"],0,0,{}]]"#, nest(1000));
        assert_eq!(read(line.as_bytes()), None);
    }

    #[test]
    fn leaves_the_rest_to_the_general_path() {
        for line in [
            r#"{"seq":7,"seq":8,"ops":[]}"#,
            r#"{"seq":7,"ops":[],"value":[]}"#,
            r#"{"seq":7,"tag":"base","ops":[["r",1]]}"#,
            r#"{"seq":7,"tag":null,"ops":[["r",1]]}"#,
            r#"{"seq":7.0,"ops":[]}"#,
            r#"{"seq":07,"ops":[]}"#,
            r#"{"seq":7,"ops":[],"x":1}"#,
            r#"{"seq":7,"ops":[],"address":"\u0041"}"#,
            r#"{"seq":7,"ops":{}}"#,
            r#"{"seq":7}"#,
            r#"{"seq":7,"ops":[]"#,
            "[1,]",
        ] {
            assert_eq!(read(line.as_bytes()), None, "{line}");
        }
        // Not JSON, in the parts read in one pass: each is left to the general path, which
        // says what is wrong.
        for line in [
            &b"{\"ops\":[],\"address\":\"a\x01b\"}"[..],
            b"{\"ops\":[[\"s\",[\"n\"],07]]}",
            b"{\"ops\":[[\"s\",[\"n\"],1.]]}",
            b"{\"ops\":[[\"t\",[\"n\"],01]]}",
            b"{\"ops\":[[\"a\",[\"n\"],\"\xff\"]]}",
            b"{\"ops\":[[\"a\",[\"n\"],\"a\x1fb\"]]}",
            b"{\"ops\":[[\"a\",[\"\xc3\"],\"x\"]]}",
            b"{\"ops\":[[\"s\",[\"n\"],{\"\xe2\x9c\":1}]]}",
            b"{\"ops\":[[\"p\",[\"n\"],0,0,[\"\xff\"]]]}",
            b"{\"ops\":[[\"a\",[\"n\"],\"x\\q\"]]}",
        ] {
            assert_eq!(read(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn decodes_ops_as_the_general_decoder_does() {
        let batch = br##"[["#",0,["a","b"]],["a",0,"x\u00e9"],["t",5],["s",[1,"c"],{"k":[1]}],["d",0],["d"]]"##;
        let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
        let ops = decode_raw(&mut fast, batch).unwrap();
        assert_eq!(
            ops,
            slow.decode_owned(Value::parse(batch).unwrap()).unwrap()
        );
        // The ids it defined stay for the next batch; an id defined again is the new path.
        let next =
            br##"[["t",0,1],["#",0,["c"]],["#",1,["d"]],["#",0,["e"]],["a",0,"z"],["d",1]]"##;
        assert_eq!(
            decode_raw(&mut fast, next).unwrap(),
            slow.decode_owned(Value::parse(next).unwrap()).unwrap()
        );
    }

    #[test]
    fn a_batch_it_does_not_read_leaves_the_decoder_as_it_was() {
        let mut d = Decoder::default();
        // A definition, then an op with an id no one defined.
        assert_eq!(
            decode_raw(&mut d, br##"[["#",0,["a"]],["a",1,"x"]]"##),
            None
        );
        assert_eq!(decode_raw(&mut d, br#"[["a",0,"x"]]"#), None);
        for batch in [
            r#"[["a",["__proto__"],"x"]]"#,
            r#"[["a",[],"x"]]"#,
            r##"[["#",0,[]],["a",0,"x"]]"##,
            r#"[["a","x"]]"#,
            r#"[["p",["a"],0,0,[]]]"#,
            r#"[["t",["a"],1.5]]"#,
            r#"[["a",["a"],1]]"#,
            r#"[["x",["a"],1]]"#,
            r#"[["aa",["a"],"x"]]"#,
            r#"[5]"#,
        ] {
            assert_eq!(decode_raw(&mut d, batch.as_bytes()), None, "{batch}");
        }
    }

    /// Ops, mostly of the shapes read here, some not, some bad.
    fn op() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            12 => Just("\"a\"".to_string()),
            6 => Just("\"b\\n\"".to_string()),
            2 => Just("\"é\\/\"".to_string()),
            6 => Just("0".to_string()),
            1 => Just("01".to_string()),
            1 => Just("\"__proto__\"".to_string()),
            1 => Just("1.0".to_string()),
        ];
        let path = prop_oneof![
            8 => prop::collection::vec(key, 1..3).prop_map(|k| format!("[{}]", k.join(","))),
            1 => Just("[]".to_string()),
            4 => Just("0".to_string()),
            1 => (1u8..3).prop_map(|n| n.to_string()),
        ];
        let text = prop_oneof![
            12 => Just("\"x\"".to_string()),
            4 => Just("\"\\ud800\\u00e9\"".to_string()),
            2 => Just("\"\"".to_string()),
            2 => Just("\"naïve ✓ 🦀\\\"\"".to_string()),
            1 => Just("\"bad \\x\"".to_string()),
            1 => Just("\"tab\there\"".to_string()),
            1 => Just("7".to_string()),
        ];
        let value = prop_oneof![
            4 => Just(r#"{"v":[1,"x"]}"#),
            2 => Just("7"),
            1 => Just("07"),
            1 => Just("-0"),
            1 => Just("1.50"),
            1 => Just("1e5"),
            1 => Just("123456789012345678"),
            1 => Just(r#"["a",0]"#),
            1 => Just("[]"),
            1 => Just(r#""é""#),
            1 => Just("null"),
        ];
        let count = prop_oneof![8 => Just("3"), 4 => Just("0"), 1 => Just("1e1"), 1 => Just("-1")];
        prop_oneof![
            4 => (path.clone(), text.clone()).prop_map(|(p, t)| format!(r#"["a",{p},{t}]"#)),
            4 => text.prop_map(|t| format!(r#"["a",{t}]"#)),
            2 => (path.clone(), count.clone()).prop_map(|(p, c)| format!(r#"["t",{p},{c}]"#)),
            2 => count.prop_map(|c| format!(r#"["t",{c}]"#)),
            2 => (path.clone(), value.clone()).prop_map(|(p, v)| format!(r#"["s",{p},{v}]"#)),
            1 => value.prop_map(|v| format!(r#"["s",{v}]"#)),
            1 => path.clone().prop_map(|p| format!(r#"["d",{p}]"#)),
            1 => Just(r#"["d"]"#.to_string()),
            1 => (0u8..3, path).prop_map(|(n, p)| format!(r##"["#",{n},{p}]"##)),
            1 => Just(r#"["r",{"a":"x"}]"#.to_string()),
        ]
    }

    proptest! {
        #[test]
        fn whenever_it_answers_it_is_the_general_answer(
            batches in prop::collection::vec(prop::collection::vec(op(), 1..6), 1..5),
            seq in prop_oneof![2 => Just(""), 3 => Just(r#""seq":3,"#), 1 => Just(r#""seq":03,"#)],
            tag in prop_oneof![2 => Just(""), 3 => Just(r#""tag":null,"#), 1 => Just(r#""tag":"base","#)],
            address in prop_oneof![
                3 => Just(""),
                2 => Just(r#""address":"q","#),
                1 => Just(r#""address":"é","#),
                1 => Just(r#""address":"\u0041","#),
            ],
            spaced in any::<bool>(),
            flip in prop::option::weighted(0.3, (any::<prop::sample::Index>(), any::<u8>())),
        ) {
            let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
            // One batch for every line, as a replay reads them: what a line leaves in it
            // must not reach the next.
            let mut batch = Batch::default();
            for ops in batches {
                // Id 0 is defined first, mostly: refs to it resolve.
                let line = format!("{{{seq}{tag}{address}\"ops\":[[\"#\",0,[\"a\"]],{}]}}", ops.join(","));
                let mut line = match spaced {
                    true => line.replace(',', " ,\t").replace('[', "[ ").into_bytes(),
                    false => line.into_bytes(),
                };
                // A byte anywhere set to anything, UTF-8 or not.
                if let Some((at, byte)) = flip {
                    let at = at.index(line.len());
                    line[at] = byte;
                }
                if record(&line, &mut batch).is_some() {
                    prop_assert!(json::validate(&line).is_ok(), "{}", String::from_utf8_lossy(&line));
                }
                let general = general(&line);
                let Some(raw) = record(&line, &mut batch) else {
                    // The general path reads it, or says why not: the same in either case.
                    let Some((_, _, ops)) = general else { continue };
                    let a = slow.decode_owned(ops.clone());
                    let b = fast.decode_owned(ops);
                    prop_assert_eq!(a, b);
                    continue;
                };
                let (gseq, gaddr, gops) = general.expect("the general path reads what this one reads");
                prop_assert_eq!((raw.seq, raw.address.clone()), (gseq, gaddr));
                prop_assert_eq!(Value::parse(raw.ops).unwrap(), gops.clone());
                let expected = slow.decode_owned(gops);
                match raw.read.then(|| fast.decode_raw(&mut batch)).flatten() {
                    Some(ops) => prop_assert_eq!(Ok(ops), expected),
                    None => prop_assert_eq!(fast.decode_owned(Value::parse(raw.ops).unwrap()), expected),
                }
            }
        }

        #[test]
        fn ops_applied_as_read_give_the_general_replay(
            batches in prop::collection::vec(prop::collection::vec(op(), 1..6), 1..6),
        ) {
            // A value the ops' paths mostly find, with strings to append to and cut.
            let base = r#"[["r",{"a":{"a":"x","b\n":"y"},"b\n":"z","é/":["q"],"0":"w"}]]"#;
            let (mut fast, mut slow) = (Replay::default(), Replay::default());
            let mut batch = Batch::default();
            for ops in std::iter::once(base.to_string()).chain(batches.iter().map(|b| {
                format!(r##"[["#",0,["a"]],{}]"##, b.join(","))
            })) {
                let Ok(parsed) = Value::parse(ops.as_bytes()) else { continue };
                let read = match record(ops.as_bytes(), &mut batch) {
                    Some(r) => Ops::Raw(r.ops, r.read.then_some(&mut batch)),
                    None => Ops::Parsed(parsed.clone()),
                };
                let a = fast.batch(read, false);
                let b = slow.batch(Ops::Parsed(parsed), false);
                prop_assert_eq!(&a, &b);
                prop_assert_eq!(&fast.value, &slow.value);
                if a.is_err() {
                    break;
                }
            }
        }
    }
}
