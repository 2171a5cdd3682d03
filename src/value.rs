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
        let mut p = Parser { b: text, i: 0 };
        let v = p.value(0)?;
        Ok(v)
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
            Value::Number(n) => out.extend_from_slice(json::js_number(*n).as_bytes()),
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
    out.push(b'"');
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
                let c = char::from_u32(
                    0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(s[i + 1]) - 0xDC00),
                )
                .expect("a surrogate pair is a char");
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += 1;
            }
            0xD800..=0xDFFF => out.extend_from_slice(format!("\\u{u:04x}").as_bytes()),
            _ => {
                let c = char::from_u32(u32::from(u)).expect("a non-surrogate unit is a char");
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        i += 1;
    }
    out.push(b'"');
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

/// Builds values from text `json::validate` has accepted.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError {
                offset: self.i,
                expected: "nesting no deeper than 1000",
            });
        }
        self.i = json::skip_ws(self.b, self.i);
        let b = self.b;
        Ok(match b[self.i] {
            b'{' => {
                self.i += 1;
                let mut members: Vec<(Vec<u16>, Value)> = Vec::new();
                let mut index = KeyIndex::default();
                loop {
                    self.i = json::skip_ws(b, self.i);
                    match b[self.i] {
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        _ => {
                            let key = self.string();
                            self.i = json::skip_ws(b, self.i) + 1; // the ':'
                            let v = self.value(depth + 1)?;
                            match index.find(&members, &key) {
                                Some(at) => members[at].1 = v,
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
                    self.i = json::skip_ws(b, self.i);
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
                let v = json::number_value(&b[self.i..end]).unwrap_or(f64::NAN);
                self.i = end;
                Value::Number(v)
            }
        })
    }

    fn string(&mut self) -> Vec<u16> {
        let end = json::string_end(self.b, self.i).expect("validated");
        let units = json::decode_utf16_units(&self.b[self.i + 1..end - 1]).expect("validated");
        self.i = end;
        units
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
