//! Op lists: the Chord delta vocabulary, its wire codec, the applier and the differ.
//!
//! An [`Op`] changes a JSON value at a path. Seven verbs, tuples on the wire:
//! `["r",v]` replace the root, `["s",path,v]` set, `["d",path]` delete, `["a",path,str]`
//! append, `["t",path,n]` drop n UTF-16 code units from the front, `["p",path,i,remove,items]`
//! splice, `["m",path,perm]` permute. Only `r`, `p` and `m` may target the root.
//!
//! The wire form ([`wire`]) adds `["#",id,path]` definitions, numeric path references and
//! short tuples that reuse the previous op's path; one [`wire::Encoder`] and one
//! [`wire::Decoder`] per stream, reset at every `r`. [`apply`] runs decoded ops; [`diff`]
//! computes them from two snapshots ([`approx`] and [`stand_in`] only guess how many bytes
//! they hold);
//! [`oplist`] reads durable lists of batches.
//!
//! Errors carry the reference library's class and message, so a rejection reads the same.

pub mod apply;
pub mod approx;
pub mod diff;
pub mod oplist;
pub mod raw;
pub mod spell;
pub mod stand_in;
pub mod wire;

use std::fmt;

use crate::value::{self, Value};

/// A path segment: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(Vec<u16>),
    Index(u64),
}

pub type Path = Vec<Seg>;

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Replace(Value),
    Set(Path, Value),
    Delete(Path),
    Append(Path, Vec<u16>),
    /// Drop this many UTF-16 code units from the front.
    Truncate(Path, u64),
    Splice(Path, u64, u64, Vec<Value>),
    Permute(Path, Vec<u64>),
}

impl Op {
    pub fn verb(&self) -> char {
        match self {
            Op::Replace(_) => 'r',
            Op::Set(..) => 's',
            Op::Delete(_) => 'd',
            Op::Append(..) => 'a',
            Op::Truncate(..) => 't',
            Op::Splice(..) => 'p',
            Op::Permute(..) => 'm',
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Op::Replace(_) => None,
            Op::Set(p, _)
            | Op::Delete(p)
            | Op::Append(p, _)
            | Op::Truncate(p, _)
            | Op::Splice(p, ..)
            | Op::Permute(p, _) => Some(p),
        }
    }

    /// The op as an inline tuple (the debug view of `sess recover --ops`).
    pub fn to_value(&self) -> Value {
        let v = |c: char| Value::string(&c.to_string());
        let num = |n: u64| Value::Number(n as f64);
        let items = match self {
            Op::Replace(x) => vec![v('r'), x.clone()],
            Op::Set(p, x) => vec![v('s'), path_value(p), x.clone()],
            Op::Delete(p) => vec![v('d'), path_value(p)],
            Op::Append(p, s) => vec![v('a'), path_value(p), Value::String(s.clone())],
            Op::Truncate(p, n) => vec![v('t'), path_value(p), num(*n)],
            Op::Splice(p, i, r, xs) => vec![
                v('p'),
                path_value(p),
                num(*i),
                num(*r),
                Value::Array(xs.clone()),
            ],
            Op::Permute(p, perm) => vec![
                v('m'),
                path_value(p),
                Value::Array(perm.iter().map(|&n| num(n)).collect()),
            ],
        };
        Value::Array(items)
    }
}

/// A path as a JSON array.
pub fn path_value(p: &[Seg]) -> Value {
    Value::Array(
        p.iter()
            .map(|s| match s {
                Seg::Key(k) => Value::String(k.clone()),
                Seg::Index(i) => Value::Number(*i as f64),
            })
            .collect(),
    )
}

/// Whether a batch replaces the whole value: its first op is `r`.
pub fn is_base(ops: &[Op]) -> bool {
    matches!(ops.first(), Some(Op::Replace(_)))
}

/// Segments that would walk into a JavaScript prototype; never allowed in a path.
pub const RESERVED: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// The error classes of the reference library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A malformed op.
    TypeError,
    /// A path segment that is reserved, or of the wrong kind.
    UnsafePathError,
    /// A path that does not resolve.
    PathError,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    pub kind: ErrorKind,
    pub message: String,
}

impl OpError {
    pub fn type_error(msg: &str) -> OpError {
        OpError {
            kind: ErrorKind::TypeError,
            message: msg.to_string(),
        }
    }

    /// `unsafe path segment: <seg>`, the segment written as JavaScript's `String()` would.
    pub fn unsafe_segment(seg: &str) -> OpError {
        OpError {
            kind: ErrorKind::UnsafePathError,
            message: format!("unsafe path segment: {seg}"),
        }
    }

    /// `unresolvable path: <JSON of the path>`.
    pub fn unresolvable(path: &[Seg]) -> OpError {
        OpError::unresolvable_text(&String::from_utf8_lossy(&path_value(path).to_json()))
    }

    pub fn unresolvable_text(what: &str) -> OpError {
        OpError {
            kind: ErrorKind::PathError,
            message: format!("unresolvable path: {what}"),
        }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = match self.kind {
            ErrorKind::TypeError => "TypeError",
            ErrorKind::UnsafePathError => "UnsafePathError",
            ErrorKind::PathError => "PathError",
        };
        write!(f, "{class}: {}", self.message)
    }
}

impl std::error::Error for OpError {}

/// A segment as JavaScript's `String()` writes it (arrays join their elements with `,`).
pub fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_nan() => "NaN".into(),
        Value::Number(n) if n.is_infinite() => {
            if *n > 0.0 { "Infinity" } else { "-Infinity" }.into()
        }
        Value::Number(n) => crate::json::js_number(*n),
        Value::String(s) => String::from_utf16_lossy(s),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// A path from its JSON form, checking every segment: a string that is not reserved, or an
/// integer ≥ 0. Numbers stay numbers, so `["o","0"]` and `["o",0]` differ, as on the wire.
pub fn parse_path(v: &Value) -> Result<Path, OpError> {
    let Value::Array(items) = v else {
        return Err(OpError::type_error("path is not an array"));
    };
    items.iter().map(segment).collect()
}

/// Whether a key is a reserved segment.
pub fn is_reserved(key: &[u16]) -> bool {
    RESERVED.iter().any(|r| value::eq_str(key, r))
}

fn segment(v: &Value) -> Result<Seg, OpError> {
    match v {
        Value::String(s) => {
            if is_reserved(s) {
                return Err(OpError::unsafe_segment(&String::from_utf16_lossy(s)));
            }
            Ok(Seg::Key(s.clone()))
        }
        Value::Number(n) if n.fract() == 0.0 && *n >= 0.0 && *n <= crate::json::MAX_SAFE as f64 => {
            Ok(Seg::Index(*n as u64))
        }
        other => Err(OpError::unsafe_segment(&js_string(other))),
    }
}

/// A non-negative safe integer, or `None`.
pub fn count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) if n.fract() == 0.0 && *n >= 0.0 && *n <= crate::json::MAX_SAFE as f64 => {
            Some(*n as u64)
        }
        _ => None,
    }
}
