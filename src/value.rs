//! A JSON value exactly as JavaScript holds one.
//!
//! serde_json cannot hold a lone surrogate (`"\ud800"`), which JavaScript producers write and
//! which must survive. Here strings are UTF-16 code units, as in JavaScript, so lengths and
//! slices count the way the producers count; numbers are doubles, as `JSON.parse` makes
//! them; objects keep insertion order, and a repeated key keeps its first position and its
//! last value, as `JSON.parse` does. Serialization is `JSON.stringify`'s.

use std::fmt;

use crate::json::{self, SyntaxError};

/// How deep values may nest. Deeper input is an error rather than a stack overflow.
pub const MAX_DEPTH: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(Vec<u16>),
    Array(Vec<Value>),
    Object(Vec<(Vec<u16>, Value)>),
}

/// A parse failure: a syntax error or nesting deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub expected: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {} at byte {}", self.expected, self.offset)
    }
}

impl std::error::Error for ParseError {}

impl From<SyntaxError> for ParseError {
    fn from(e: SyntaxError) -> ParseError {
        ParseError {
            offset: e.offset,
            expected: e.expected,
        }
    }
}

impl Value {
    /// Parses one JSON text (surrounding whitespace allowed), strictly.
    pub fn parse(text: &[u8]) -> Result<Value, ParseError> {
        json::validate(text)?;
        Parser::new(text).value(0)
    }

    /// [`Value::parse`] of text already checked: one whole value cut from a line that
    /// [`json::validate`] accepted.
    pub fn parse_valid(text: &[u8]) -> Result<Value, ParseError> {
        Parser::new(text).value(0)
    }

    /// The value of `text` when `text` is canonical ([`Value::is_canonical`]), else `None`.
    pub fn parse_canonical(text: &[u8]) -> Option<Value> {
        Value::is_canonical(text)
            .then(|| Value::parse_valid(text).ok())
            .flatten()
    }

    /// Whether `text` is exactly what [`Value::to_json`] writes for its value (no
    /// whitespace, numbers and strings spelled as `JSON.stringify` spells them, no key
    /// twice, nesting within [`MAX_DEPTH`]): the same answer as parsing, writing and
    /// comparing, told from the bytes alone. A snapshot of 60 MB is checked in itself, not
    /// in a tree of twice its size.
    pub fn is_canonical(text: &[u8]) -> bool {
        json::validate(text).is_ok() && Value::is_canonical_valid(text)
    }

    /// [`Value::is_canonical`] of text already checked: one whole value cut from a line
    /// that [`json::validate`] accepted.
    pub fn is_canonical_valid(text: &[u8]) -> bool {
        canonical_end(text, 0, 0) == Some(text.len())
    }

    /// The value as `JSON.stringify` writes it.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }

    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Number(n) => json::write_js_number(*n, out),
            Value::String(s) => write_string(s, out),
            Value::Array(items) => {
                out.push(b'[');
                for (k, v) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    v.write_json(out);
                }
                out.push(b']');
            }
            Value::Object(members) => {
                out.push(b'{');
                for (k, (key, v)) in members.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    write_string(key, out);
                    out.push(b':');
                    v.write_json(out);
                }
                out.push(b'}');
            }
        }
    }

    /// How deep the value nests: 0 for a scalar, 1 for `[]` or `[1]`, and so on. Iterative,
    /// so it cannot overflow the stack.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 0usize)];
        while let Some((v, d)) = stack.pop() {
            let children: Box<dyn Iterator<Item = &Value>> = match v {
                Value::Array(items) => Box::new(items.iter()),
                Value::Object(members) => Box::new(members.iter().map(|(_, v)| v)),
                _ => continue,
            };
            deepest = deepest.max(d + 1);
            stack.extend(children.map(|c| (c, d + 1)));
        }
        deepest
    }

    /// A member of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| eq_str(k, key)).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<String> {
        match self {
            Value::String(s) => Some(String::from_utf16_lossy(s)),
            _ => None,
        }
    }

    pub fn string(s: &str) -> Value {
        Value::String(s.encode_utf16().collect())
    }
}

/// Whether UTF-16 units spell `s`.
pub fn eq_str(units: &[u16], s: &str) -> bool {
    units.iter().copied().eq(s.encode_utf16())
}

/// Writes UTF-16 text as a JSON string, escaped as `JSON.stringify` escapes it.
pub fn write_string(s: &[u16], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut i = 0;
    while i < s.len() {
        // Most text is runs of ASCII that needs no escape: copied a run at a time.
        let run = s[i..]
            .iter()
            .take_while(|&&u| (0x20..0x80).contains(&u) && u != 0x22 && u != 0x5C)
            .count();
        out.extend(s[i..i + run].iter().map(|&u| u as u8));
        i += run;
        let Some(&u) = s.get(i) else { break };
        match u {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0..=0x1F => write_unit_escape(u, out),
            0xD800..=0xDBFF if s.get(i + 1).is_some_and(|l| (0xDC00..=0xDFFF).contains(l)) => {
                let c = 0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(s[i + 1]) - 0xDC00);
                write_char(c, out);
                i += 1;
            }
            0xD800..=0xDFFF => write_unit_escape(u, out),
            _ => write_char(u32::from(u), out),
        }
        i += 1;
    }
    out.push(b'"');
}

/// `\uxxxx`, lower case, as `JSON.stringify` escapes control characters and lone
/// surrogates.
fn write_unit_escape(u: u16, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((u >> shift) & 0xF)]);
    }
}

/// A scalar value (never a surrogate) as UTF-8.
fn write_char(c: u32, out: &mut Vec<u8>) {
    let cont = |shift: u32| 0x80 | ((c >> shift) & 0x3F) as u8;
    match c {
        0..=0x7F => out.push(c as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (c >> 6) as u8, cont(0)]),
        0x800..=0xFFFF => out.extend_from_slice(&[0xE0 | (c >> 12) as u8, cont(6), cont(0)]),
        _ => out.extend_from_slice(&[0xF0 | (c >> 18) as u8, cont(12), cont(6), cont(0)]),
    }
}

/// Finds an object's members by key: a scan while the object is small, a hash map (built
/// once, the first time it is needed) when it is not, so that an object of n keys costs
/// O(n), not O(n²), to build or to diff.
#[derive(Default)]
pub struct KeyIndex {
    map: Option<std::collections::HashMap<Vec<u16>, usize>>,
}

const SCAN_LIMIT: usize = 16;

impl KeyIndex {
    /// Where `key` first is among `members`. `members` must be the list this index has
    /// been told about (through [`KeyIndex::add`]) or a fresh one.
    pub fn find(&mut self, members: &[(Vec<u16>, Value)], key: &[u16]) -> Option<usize> {
        if self.map.is_none() && members.len() > SCAN_LIMIT {
            let mut m = std::collections::HashMap::with_capacity(members.len() * 2);
            for (at, (k, _)) in members.iter().enumerate() {
                m.entry(k.clone()).or_insert(at);
            }
            self.map = Some(m);
        }
        match &self.map {
            Some(m) => m.get(key).copied(),
            None => members.iter().position(|(k, _)| k == key),
        }
    }

    /// Records that `key` was pushed at position `at`.
    pub fn add(&mut self, key: &[u16], at: usize) {
        if let Some(m) = &mut self.map {
            m.entry(key.to_vec()).or_insert(at);
        }
    }
}

/// Where the canonical value at `b[i]` ends, in a text [`json::validate`] accepted; `None`
/// for one spelled otherwise or nested deeper than [`MAX_DEPTH`] (which [`Parser`] refuses).
fn canonical_end(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    match *b.get(i)? {
        b'{' => canonical_members(b, i + 1, depth),
        b'[' => {
            let mut i = i + 1;
            if b.get(i) == Some(&b']') {
                return Some(i + 1);
            }
            loop {
                i = canonical_end(b, i, depth + 1)?;
                match b.get(i)? {
                    b',' => i += 1,
                    b']' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b'"' => {
            let end = json::string_end(b, i)?;
            json::is_canonical_string(&b[i + 1..end - 1]).then_some(end)
        }
        b't' | b'n' => Some(i + 4),
        b'f' => Some(i + 5),
        _ => {
            let end = json::number_end(b, i).ok()?;
            json::is_canonical_number(&b[i..end]).then_some(end)
        }
    }
}

/// [`canonical_end`] of the members of an object, from just after its `{`. A key written
/// twice is not canonical; a canonical key has one spelling, so its bytes are compared.
fn canonical_members(b: &[u8], mut i: usize, depth: usize) -> Option<usize> {
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut index: Option<std::collections::HashSet<&[u8]>> = None;
    loop {
        // A key, not whitespace before one (which `string_end` would read as its quote).
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = json::string_end(b, i)?;
        let key = &b[i..key_end];
        if !json::is_canonical_string(&key[1..key.len() - 1]) || b.get(key_end) != Some(&b':') {
            return None;
        }
        let seen = match &mut index {
            Some(set) => !set.insert(key),
            None if keys.len() < SCAN_LIMIT => {
                let seen = keys.contains(&key);
                keys.push(key);
                seen
            }
            None => {
                let set = index.insert(keys.drain(..).collect());
                !set.insert(key)
            }
        };
        if seen {
            return None;
        }
        i = canonical_end(b, key_end + 1, depth + 1)?;
        match b.get(i)? {
            b',' => i += 1,
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Builds values from text `json::validate` has accepted.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn new(b: &'a [u8]) -> Parser<'a> {
        Parser { b, i: 0 }
    }

    fn skip_ws(&mut self) {
        self.i = json::skip_ws(self.b, self.i);
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError {
                offset: self.i,
                expected: "nesting no deeper than 1000",
            });
        }
        self.skip_ws();
        let b = self.b;
        Ok(match b[self.i] {
            b'{' => {
                self.i += 1;
                let mut members: Vec<(Vec<u16>, Value)> = Vec::new();
                let mut index = KeyIndex::default();
                loop {
                    self.skip_ws();
                    match b[self.i] {
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        _ => {
                            let key = self.string();
                            self.skip_ws();
                            self.i += 1; // the ':'
                            let v = self.value(depth + 1)?;
                            match index.find(&members, &key) {
                                Some(at) => {
                                    // The last one wins, and is written where the first was.
                                    members[at].1 = v;
                                }
                                None => {
                                    index.add(&key, members.len());
                                    members.push((key, v));
                                }
                            }
                        }
                    }
                }
                Value::Object(members)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match b[self.i] {
                        b']' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
                Value::Array(items)
            }
            b'"' => Value::String(self.string()),
            b't' => {
                self.i += 4;
                Value::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Value::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Value::Null
            }
            _ => {
                let end = json::number_end(b, self.i)?;
                let raw = &b[self.i..end];
                let v = json::number_value(raw).unwrap_or(f64::NAN);
                self.i = end;
                Value::Number(v)
            }
        })
    }

    fn string(&mut self) -> Vec<u16> {
        let end = json::string_end(self.b, self.i).expect("validated");
        let inner = &self.b[self.i + 1..end - 1];
        let (units, _) = json::decode_valid(inner).expect("validated");
        self.i = end;
        units
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`write_string`] wrote before its fast path: unit by unit.
    fn write_string_slowly(s: &[u16]) -> Vec<u8> {
        let mut out = vec![b'"'];
        let mut i = 0;
        while i < s.len() {
            let u = s[i];
            match u {
                0x22 => out.extend_from_slice(b"\\\""),
                0x5C => out.extend_from_slice(b"\\\\"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0C => out.extend_from_slice(b"\\f"),
                0x0A => out.extend_from_slice(b"\\n"),
                0x0D => out.extend_from_slice(b"\\r"),
                0x09 => out.extend_from_slice(b"\\t"),
                0..=0x1F => out.extend_from_slice(format!("\\u{u:04x}").as_bytes()),
                0xD800..=0xDBFF if s.get(i + 1).is_some_and(|l| (0xDC00..=0xDFFF).contains(l)) => {
                    let pair = [u, s[i + 1]];
                    out.extend_from_slice(String::from_utf16(&pair).unwrap().as_bytes());
                    i += 1;
                }
                0xD800..=0xDFFF => out.extend_from_slice(format!("\\u{u:04x}").as_bytes()),
                _ => out.extend_from_slice(String::from_utf16(&[u]).unwrap().as_bytes()),
            }
            i += 1;
        }
        out.push(b'"');
        out
    }

    /// JSON texts in canonical and other spellings: spaces, number forms, escapes, and keys
    /// that repeat.
    fn spellings() -> impl Strategy<Value = String> {
        let ws = prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("\n")];
        let number = prop::sample::select(vec![
            "0",
            "-0",
            "1",
            "1.0",
            "1e2",
            "100",
            "0.5",
            "5e-1",
            "-3",
            "1E2",
            "1e21",
            "1e+21",
            "123456789012345678901",
            "1e400",
            "0.1",
            "1e-7",
            "0.0000001",
        ]);
        let piece = prop::sample::select(vec![
            "a",
            "\\n",
            "\\u000a",
            "\\/",
            "/",
            "é",
            "\\u00e9",
            "\\ud800",
            "\\uD800",
            "\\ud83d\\ude00",
            "😀",
            "\\u001f",
            "\\b",
            "\\u0008",
            "\\\"",
            "\\u0022",
            "\\u007f",
        ]);
        let string = prop::collection::vec(piece, 0..4).prop_map(|p| format!("\"{}\"", p.concat()));
        let leaf = prop_oneof![
            number.prop_map(str::to_string),
            string.clone(),
            prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_string),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            let ws = ws.clone();
            prop_oneof![
                (prop::collection::vec((inner.clone(), ws.clone()), 0..4)).prop_map(|items| {
                    let parts: Vec<String> =
                        items.into_iter().map(|(v, w)| format!("{w}{v}")).collect();
                    format!("[{}]", parts.join(","))
                }),
                prop::collection::vec(
                    (
                        prop::sample::select(vec!["a", "b", "\\u0061", ":0,a"]),
                        ws.clone(),
                        ws,
                        inner
                    ),
                    0..4
                )
                .prop_map(|members| {
                    let parts: Vec<String> = members
                        .into_iter()
                        .map(|(k, before, w, v)| format!("{before}\"{k}\"{w}:{v}"))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }),
            ]
        })
    }

    /// What the random spellings do not reach: objects of many keys (a key met again among
    /// them), and nesting at and past the limit.
    #[test]
    fn the_canonical_check_agrees_with_the_parse_on_wide_and_deep_values() {
        let keys: Vec<String> = (0..40).map(|k| format!("\"k{k}\":{k}")).collect();
        let wide = format!("{{{}}}", keys.join(","));
        let again = format!("{{{},\"k3\":0}}", keys.join(","));
        let early = format!("{{\"k3\":0,{}}}", keys.join(","));
        for depth in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
            let deep = format!("{}{}", "[".repeat(depth + 1), "]".repeat(depth + 1));
            assert_eq!(
                Value::is_canonical(deep.as_bytes()),
                Value::parse_canonical(deep.as_bytes()).is_some(),
                "{depth}"
            );
        }
        // Whitespace before a key whose text would read as the rest of an object.
        let spaced = |t: &str| (t.to_string(), false);
        for (text, canonical) in [
            (wide, true),
            (again, false),
            (early, false),
            spaced(r#"{ ":0,x":1}"#),
            spaced(r#"{"a":1, ":0,b":2}"#),
        ] {
            assert_eq!(Value::is_canonical(text.as_bytes()), canonical, "{text}");
            assert_eq!(Value::parse_canonical(text.as_bytes()).is_some(), canonical);
        }
    }

    proptest! {
        #[test]
        fn a_canonical_parse_accepts_exactly_what_writing_gives_back(text in spellings()) {
            let bytes = text.as_bytes();
            let round_trips = Value::parse(bytes).is_ok_and(|v| v.to_json() == bytes);
            prop_assert_eq!(Value::parse_canonical(bytes).is_some(), round_trips, "{}", text);
            prop_assert_eq!(Value::is_canonical(bytes), round_trips, "{}", text);
            if let Some(v) = Value::parse_canonical(bytes) {
                prop_assert_eq!(v.to_json(), bytes);
            }
        }

        #[test]
        fn the_fast_string_writer_agrees_with_the_unit_walk(
            units in prop::collection::vec(prop_oneof![
                4 => 0x20u16..0x80,
                1 => 0u16..0x20,
                1 => 0x80u16..0x800,
                1 => 0x800u16..0xD800,
                1 => 0xD800u16..0xE000,
                1 => 0xE000u16..=0xFFFF,
            ], 0..40),
        ) {
            let mut out = Vec::new();
            write_string(&units, &mut out);
            prop_assert_eq!(out, write_string_slowly(&units));
        }
    }

    fn round(s: &str) -> String {
        String::from_utf8(Value::parse(s.as_bytes()).unwrap().to_json()).unwrap()
    }

    #[test]
    fn stringifies_like_javascript() {
        assert_eq!(
            round(r#" {"a" : [1.0, -0, 1e21, true, null], "b":"\u0041\/\ud83d\ude00"} "#),
            r#"{"a":[1,0,1e+21,true,null],"b":"A/😀"}"#
        );
        assert_eq!(round(r#""\ud800x\udc00""#), r#""\ud800x\udc00""#);
        assert_eq!(
            round(r#""\u0001\u001f\n\u2028""#),
            "\"\\u0001\\u001f\\n\u{2028}\""
        );
        assert_eq!(round(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(round("1e400"), "null");
    }

    #[test]
    fn counts_utf16_units() {
        let v = Value::parse("\"a😀\\ud800\"".as_bytes()).unwrap();
        let Value::String(s) = v else { panic!() };
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn rejects_bad_and_too_deep() {
        assert!(Value::parse(b"{").is_err());
        let deep = "[".repeat(MAX_DEPTH + 5) + &"]".repeat(MAX_DEPTH + 5);
        assert_eq!(
            Value::parse(deep.as_bytes()).unwrap_err().expected,
            "nesting no deeper than 1000"
        );
    }
}
