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

use super::wire::Decoder;
use super::{Op, Path, Seg, is_reserved};
use crate::json;
use crate::value::Value;

/// A record as [`record`] reads it: its seq, its address, and the raw JSON of its ops.
#[derive(Debug, PartialEq)]
pub struct RawRecord<'a> {
    pub seq: Option<u64>,
    pub address: Option<String>,
    pub ops: &'a [u8],
}

/// The record `line` holds, when it is valid JSON of the common shape; `None` for anything
/// else. A record tagged `base` is left to the general path (it starts with `r`).
pub fn record(line: &[u8]) -> Option<RawRecord<'_>> {
    json::validate(line).ok()?;
    let start = json::skip_ws(line, 0);
    if line.get(start) == Some(&b'[') {
        return Some(RawRecord {
            seq: None,
            address: None,
            ops: line[start..].trim_ascii_end(),
        });
    }
    let mut rec = RawRecord {
        seq: None,
        address: None,
        ops: b"",
    };
    // Which keys were seen: a key twice is left to the general path (the last one wins).
    let mut seen = [false; 4];
    for (key, value) in json::members(line) {
        let k = match key {
            b"seq" => 0,
            b"tag" => 1,
            b"address" => 2,
            b"ops" => 3,
            b"value" => 4,
            _ => return None,
        };
        // `ops` and `value` are one slot: a record with both is an error.
        let slot = k.min(3);
        if std::mem::replace(&mut seen[slot], true) {
            return None;
        }
        match k {
            0 => rec.seq = Some(plain_count(value)?),
            1 if value == b"null" => {}
            2 => rec.address = Some(plain_string(value)?),
            3 | 4 if value.first() == Some(&b'[') => rec.ops = value,
            _ => return None,
        }
    }
    // `null` tags a batch that does not start with `r`.
    (seen[3] && (!seen[1] || super::wire::first_verb(rec.ops) != Some(b"r"))).then_some(rec)
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

/// A string's UTF-16 units, as the general path decodes them.
fn units(raw: &[u8]) -> Option<Vec<u16>> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    json::decode_valid(inner).map(|(units, _)| units)
}

/// An inline path: keys that are not reserved, and plain counts.
fn path(raw: &[u8]) -> Option<Path> {
    if raw.first() != Some(&b'[') {
        return None;
    }
    json::elements(raw)
        .map(|seg| match seg.first() {
            Some(b'"') => units(seg).filter(|k| !is_reserved(k)).map(Seg::Key),
            _ => plain_count(seg).map(Seg::Index),
        })
        .collect()
}

impl Decoder {
    /// The ops of a batch (the raw JSON of a record's valid `ops`), when every one is of
    /// a shape read here and decodes; `None` leaves the decoder as it was, for the general
    /// path to decode the batch.
    pub fn decode_raw(&mut self, batch: &[u8]) -> Option<Vec<Op>> {
        // Paths defined by this batch, put in the table only once it all decodes.
        let mut defined: Vec<(u64, Path)> = Vec::new();
        let mut previous: Option<Path> = None;
        let mut out = Vec::new();
        let mut at = batch.first().filter(|&&c| c == b'[').map(|_| 1)?;
        loop {
            at = json::skip_ws(batch, at);
            match batch.get(at) {
                Some(b']') => break,
                Some(b',') => at = json::skip_ws(batch, at + 1),
                _ => {}
            }
            let (verb, parts, n, end) = tuple(batch, at)?;
            at = end;
            let rest = &parts[..n];
            let long = match (verb, rest.len()) {
                (b'#', 2) => {
                    defined.push((plain_count(rest[0])?, path(rest[1])?));
                    continue;
                }
                (b'a' | b't' | b's', 2) | (b'd', 1) => true,
                (b'a' | b't' | b's', 1) | (b'd', 0) => false,
                _ => return None,
            };
            let path = if long {
                let p = match rest[0].first() {
                    Some(b'[') => path(rest[0])?,
                    _ => {
                        let id = plain_count(rest[0])?;
                        match defined.iter().rev().find(|(d, _)| *d == id) {
                            Some((_, p)) => p.clone(),
                            None => self.path_by_id(id)?.clone(),
                        }
                    }
                };
                previous = Some(p.clone());
                p
            } else {
                previous.clone()?
            };
            if path.is_empty() {
                return None;
            }
            let last = rest.last().copied();
            out.push(match verb {
                b'a' => Op::Append(path, units(last?)?),
                b't' => Op::Truncate(path, plain_count(last?)?),
                b's' => Op::Set(path, Value::parse_valid(last?).ok()?),
                _ => Op::Delete(path),
            });
        }
        for (id, p) in defined {
            self.define_path(id, p);
        }
        Some(out)
    }
}

/// The op tuple `[verb, ...]` at `b[i]` of a valid batch: its one-letter verb, the raw
/// elements after the verb (up to three; `None` for more), how many there are, and where
/// the tuple ends.
fn tuple(b: &[u8], i: usize) -> Option<(u8, [&[u8]; 3], usize, usize)> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut at = json::skip_ws(b, i + 1);
    let verb = match b.get(at..at + 3)? {
        [b'"', v, b'"'] => *v,
        _ => return None,
    };
    at += 3;
    let mut parts: [&[u8]; 3] = [b""; 3];
    let mut n = 0;
    loop {
        at = json::skip_ws(b, at);
        match b.get(at)? {
            b']' => return Some((verb, parts, n, at + 1)),
            b',' if n < parts.len() => {
                let start = json::skip_ws(b, at + 1);
                at = json::skip_value(b, start)?;
                parts[n] = &b[start..at];
                n += 1;
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::oplist::parse_record;
    use proptest::prelude::*;

    /// What the general path reads of `line`, as a raw record gives it.
    fn general(line: &[u8]) -> Option<(Option<u64>, Option<String>, Value)> {
        let rec = parse_record(line).ok()?;
        Some((rec.seq, rec.address, rec.ops))
    }

    #[test]
    fn reads_the_common_records() {
        let r = record(br#" {"seq":7,"tag":null,"ops":[["a",["x"],"y"]],"address":"q"} "#).unwrap();
        assert_eq!((r.seq, r.address.as_deref()), (Some(7), Some("q")));
        assert_eq!(r.ops, br#"[["a",["x"],"y"]]"#);
        assert_eq!(
            record(br#"[["d",["x"]]] "#).unwrap().ops,
            br#"[["d",["x"]]]"#
        );
        assert_eq!(record(br#"{"value":[]}"#).unwrap().ops, b"[]");
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
            assert_eq!(record(line.as_bytes()), None, "{line}");
        }
    }

    #[test]
    fn decodes_ops_as_the_general_decoder_does() {
        let batch = br##"[["#",0,["a","b"]],["a",0,"x\u00e9"],["t",5],["s",[1,"c"],{"k":[1]}],["d",0],["d"]]"##;
        let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
        let ops = fast.decode_raw(batch).unwrap();
        assert_eq!(
            ops,
            slow.decode_owned(Value::parse(batch).unwrap()).unwrap()
        );
        // The ids it defined stay for the next batch; an id defined again is the new path.
        let next =
            br##"[["t",0,1],["#",0,["c"]],["#",1,["d"]],["#",0,["e"]],["a",0,"z"],["d",1]]"##;
        assert_eq!(
            fast.decode_raw(next).unwrap(),
            slow.decode_owned(Value::parse(next).unwrap()).unwrap()
        );
    }

    #[test]
    fn a_batch_it_does_not_read_leaves_the_decoder_as_it_was() {
        let mut d = Decoder::default();
        // A definition, then an op with an id no one defined.
        assert_eq!(d.decode_raw(br##"[["#",0,["a"]],["a",1,"x"]]"##), None);
        assert_eq!(d.decode_raw(br#"[["a",0,"x"]]"#), None);
        for batch in [
            r#"[["a",["__proto__"],"x"]]"#,
            r#"[["a",[],"x"]]"#,
            r#"[["a","x"]]"#,
            r#"[["p",["a"],0,0,[]]]"#,
            r#"[["t",["a"],1.5]]"#,
            r#"[["a",["a"],1]]"#,
            r#"[["x",["a"],1]]"#,
            r#"[["aa",["a"],"x"]]"#,
            r#"[5]"#,
        ] {
            assert_eq!(d.decode_raw(batch.as_bytes()), None, "{batch}");
        }
    }

    /// Ops, mostly of the shapes read here, some not, some bad.
    fn op() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            12 => Just("\"a\"".to_string()),
            6 => Just("\"b\\n\"".to_string()),
            6 => Just("0".to_string()),
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
            1 => Just("7".to_string()),
        ];
        let count = prop_oneof![8 => Just("3"), 4 => Just("0"), 1 => Just("1e1"), 1 => Just("-1")];
        prop_oneof![
            4 => (path.clone(), text.clone()).prop_map(|(p, t)| format!(r#"["a",{p},{t}]"#)),
            4 => text.prop_map(|t| format!(r#"["a",{t}]"#)),
            2 => (path.clone(), count.clone()).prop_map(|(p, c)| format!(r#"["t",{p},{c}]"#)),
            2 => count.prop_map(|c| format!(r#"["t",{c}]"#)),
            2 => path.clone().prop_map(|p| format!(r#"["s",{p},{{"v":[1,"x"]}}]"#)),
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
        ) {
            let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
            for ops in batches {
                // Id 0 is defined first, mostly: refs to it resolve.
                let line = format!("{{{seq}{tag}\"ops\":[[\"#\",0,[\"a\"]],{}]}}", ops.join(","));
                let general = general(line.as_bytes());
                let Some(raw) = record(line.as_bytes()) else {
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
                match fast.decode_raw(raw.ops) {
                    Some(ops) => prop_assert_eq!(Ok(ops), expected),
                    None => prop_assert_eq!(fast.decode_owned(Value::parse(raw.ops).unwrap()), expected),
                }
            }
        }
    }
}
