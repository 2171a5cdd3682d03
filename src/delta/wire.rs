//! The wire form of op batches: encoder and decoder side by side.
//!
//! A path is written inline on its first use; on its second use the encoder first emits
//! `["#",id,path]` (ids count from 0) and from then on refers to it by number. An op whose
//! path is the previous op's (within one batch) is written short, without its path; arity
//! tells the forms apart. `r` resets both tables. One encoder and one decoder per stream.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::{Op, OpError, Path, count, js_string, parse_path, path_value};
use crate::value::Value;

/// Checks the shape of a wire op (`assertValidWireOp`): verb, arity, payload types, path
/// references and their segments.
pub fn validate(op: &Value) -> Result<(), OpError> {
    let t = match op {
        Value::Array(t) if !t.is_empty() => t,
        _ => return Err(OpError::type_error("op is not a tuple")),
    };
    let verb = match &t[0] {
        Value::String(s) => s,
        other => {
            return Err(OpError::type_error(&format!(
                "unknown op verb: {}",
                js_string(other)
            )));
        }
    };
    let n = t.len();
    // Verbs are one ASCII letter; the text is made only for a message.
    let text = || String::from_utf16_lossy(verb);
    let letter = match verb[..] {
        [c] if c < 0x80 => c as u8,
        _ => 0,
    };
    let arity = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(OpError::type_error(&format!("{} arity", text())))
        }
    };
    // The path reference of a long form, at index 1.
    let reference = |long: bool| if long { validate_ref(&t[1]) } else { Ok(()) };
    match letter {
        b'r' => arity(n == 2),
        b's' => {
            arity(n == 2 || n == 3)?;
            reference(n == 3)
        }
        b'd' => {
            arity(n == 1 || n == 2)?;
            reference(n == 2)
        }
        b'a' => {
            arity(n == 2 || n == 3)?;
            if !matches!(t[n - 1], Value::String(_)) {
                return Err(OpError::type_error("a value"));
            }
            reference(n == 3)
        }
        b't' => {
            arity(n == 2 || n == 3)?;
            if count(&t[n - 1]).is_none() {
                return Err(OpError::type_error("t count"));
            }
            reference(n == 3)
        }
        b'p' => {
            arity(n == 4 || n == 5)?;
            reference(n == 5)?;
            if count(&t[n - 3]).is_none() {
                return Err(OpError::type_error("p index"));
            }
            if count(&t[n - 2]).is_none() {
                return Err(OpError::type_error("p remove"));
            }
            if !matches!(t[n - 1], Value::Array(_)) {
                return Err(OpError::type_error("p items"));
            }
            Ok(())
        }
        b'm' => {
            arity(n == 2 || n == 3)?;
            reference(n == 3)?;
            permutation(&t[n - 1]).map(|_| ())
        }
        b'#' => {
            if n != 3 || count(&t[1]).is_none() || !matches!(t[2], Value::Array(_)) {
                return Err(OpError::type_error("# shape"));
            }
            parse_path(&t[2]).map(|_| ())
        }
        _ => Err(OpError::type_error(&format!("unknown op verb: {}", text()))),
    }
}

fn validate_ref(v: &Value) -> Result<(), OpError> {
    match v {
        Value::Number(_) if count(v).is_some() => Ok(()),
        Value::Number(_) => Err(OpError::type_error("bad path id")),
        _ => parse_path(v).map(|_| ()),
    }
}

/// A permutation of `0..n`.
fn permutation(v: &Value) -> Result<Vec<u64>, OpError> {
    let Value::Array(items) = v else {
        return Err(OpError::type_error("m permutation is not an array"));
    };
    let perm: Option<Vec<u64>> = items.iter().map(count).collect();
    let bijection = perm.as_ref().is_some_and(|p| {
        let mut seen = vec![false; p.len()];
        p.iter()
            .all(|&i| (i as usize) < seen.len() && !std::mem::replace(&mut seen[i as usize], true))
    });
    match perm {
        Some(p) if bijection => Ok(p),
        _ => Err(OpError::type_error("m permutation is not a bijection")),
    }
}

/// Decodes the batches of one stream.
#[derive(Debug, Default)]
pub struct Decoder {
    paths: HashMap<u64, Path>,
}

/// A decoding failure: the index of the op in its batch (if the batch is an array) and why.
pub type DecodeError = (Option<usize>, OpError);

impl Decoder {
    /// The path defined under `id`.
    pub fn path_by_id(&self, id: u64) -> Option<&Path> {
        self.paths.get(&id)
    }

    /// Defines `path` under `id`, as a `#` op does.
    pub fn define_path(&mut self, id: u64, path: Path) {
        self.paths.insert(id, path);
    }

    /// Decodes a batch that stays the caller's: the ops' values are copied out of it.
    pub fn decode(&mut self, batch: &Value) -> Result<Vec<Op>, DecodeError> {
        let Value::Array(ops) = batch else {
            return Err((None, OpError::type_error("op is not a tuple")));
        };
        self.decode_each(ops.iter().map(Cow::Borrowed))
    }

    /// Decodes a batch given away: the ops' values are moved out of it, not copied (an
    /// append's text, a set's value, a base's whole snapshot).
    pub fn decode_owned(&mut self, batch: Value) -> Result<Vec<Op>, DecodeError> {
        let Value::Array(ops) = batch else {
            return Err((None, OpError::type_error("op is not a tuple")));
        };
        self.decode_each(ops.into_iter().map(Cow::Owned))
    }

    fn decode_each<'v>(
        &mut self,
        ops: impl ExactSizeIterator<Item = Cow<'v, Value>>,
    ) -> Result<Vec<Op>, DecodeError> {
        let mut previous: Option<Path> = None;
        let mut out = Vec::with_capacity(ops.len());
        for (k, op) in ops.enumerate() {
            if let Some(op) = self.one(op, &mut previous).map_err(|e| (Some(k), e))? {
                out.push(op);
            }
        }
        Ok(out)
    }

    fn one(
        &mut self,
        mut op: Cow<'_, Value>,
        previous: &mut Option<Path>,
    ) -> Result<Option<Op>, OpError> {
        validate(&op)?;
        let Value::Array(t) = &*op else {
            unreachable!("validated")
        };
        let Value::String(verb) = &t[0] else {
            unreachable!("validated")
        };
        let (verb, n) = (verb[0] as u8, t.len());
        if verb == b'#' {
            let id = count(&t[1]).expect("validated");
            self.paths.insert(id, parse_path(&t[2])?);
            return Ok(None);
        }
        if verb == b'r' {
            self.paths.clear();
            *previous = None;
            return Ok(Some(Op::Replace(payload(&mut op, 1))));
        }
        let short = matches!(
            (verb, n),
            (b'd', 1) | (b's' | b'a' | b't' | b'm', 2) | (b'p', 4)
        );
        let path = if short {
            previous.clone().ok_or_else(|| OpError::unresolvable(&[]))?
        } else {
            let path = match &t[1] {
                Value::Number(_) => {
                    let id = count(&t[1]).expect("validated");
                    self.paths
                        .get(&id)
                        .cloned()
                        .ok_or_else(|| OpError::unresolvable_text(&id.to_string()))?
                }
                p => parse_path(p)?,
            };
            *previous = Some(path.clone());
            path
        };
        if path.is_empty() && matches!(verb, b's' | b'd' | b'a' | b't') {
            return Err(OpError::unresolvable(&[]));
        }
        let last = &t[n - 1];
        Ok(Some(match verb {
            b's' => Op::Set(path, payload(&mut op, n - 1)),
            b'd' => Op::Delete(path),
            b'a' => {
                let Value::String(s) = payload(&mut op, n - 1) else {
                    unreachable!("validated")
                };
                Op::Append(path, s)
            }
            b't' => Op::Truncate(path, count(last).expect("validated")),
            b'p' => {
                let (at, remove) = (count(&t[n - 3]), count(&t[n - 2]));
                let Value::Array(items) = payload(&mut op, n - 1) else {
                    unreachable!("validated")
                };
                Op::Splice(
                    path,
                    at.expect("validated"),
                    remove.expect("validated"),
                    items,
                )
            }
            b'm' => Op::Permute(path, permutation(last)?),
            _ => unreachable!("validated"),
        }))
    }
}

/// Element `i` of a validated op: moved out when the op is the decoder's, else copied.
fn payload(op: &mut Cow<'_, Value>, i: usize) -> Value {
    match op {
        Cow::Borrowed(Value::Array(t)) => t[i].clone(),
        Cow::Owned(Value::Array(t)) => std::mem::replace(&mut t[i], Value::Null),
        _ => unreachable!("validated"),
    }
}

/// Encodes the batches of one stream.
#[derive(Debug, Default)]
pub struct Encoder {
    seen: HashSet<Path>,
    ids: HashMap<Path, u64>,
    next_id: u64,
}

impl Encoder {
    /// The batch of `ops` on the wire. The ops are taken, so that their values move into
    /// it: a snapshot of 200 MB was cloned once more here (`sess diff` held 8 times it).
    pub fn encode(&mut self, ops: Vec<Op>) -> Value {
        let mut out = Vec::with_capacity(ops.len());
        let mut previous: Option<Path> = None;
        for op in ops {
            let Some(path) = op.path() else {
                if let Op::Replace(v) = op {
                    out.push(Value::Array(vec![Value::string("r"), v]));
                }
                self.seen.clear();
                self.ids.clear();
                self.next_id = 0;
                previous = None;
                continue;
            };
            let mut t = vec![Value::string(&op.verb().to_string())];
            if previous.as_ref() != Some(path) {
                t.push(self.reference(path, &mut out));
                previous = Some(path.clone());
            }
            match op {
                Op::Set(_, v) => t.push(v),
                Op::Delete(_) | Op::Replace(_) => {}
                Op::Append(_, s) => t.push(Value::String(s)),
                Op::Truncate(_, n) => t.push(Value::Number(n as f64)),
                Op::Splice(_, i, r, items) => t.extend([
                    Value::Number(i as f64),
                    Value::Number(r as f64),
                    Value::Array(items),
                ]),
                Op::Permute(_, p) => t.push(Value::Array(
                    p.iter().map(|&i| Value::Number(i as f64)).collect(),
                )),
            }
            out.push(Value::Array(t));
        }
        Value::Array(out)
    }

    /// How an op names `path`: the path itself the first time, an id from the second
    /// (declared in `out` with a `#` op), and that id after.
    fn reference(&mut self, path: &Path, out: &mut Vec<Value>) -> Value {
        if let Some(&id) = self.ids.get(path) {
            return Value::Number(id as f64);
        }
        if !self.seen.contains(path) {
            self.seen.insert(path.clone());
            return path_value(path);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.ids.insert(path.clone(), id);
        out.push(Value::Array(vec![
            Value::string("#"),
            Value::Number(id as f64),
            path_value(path),
        ]));
        Value::Number(id as f64)
    }
}

/// The verb of a batch's first op, read from raw JSON without parsing the batch: a cheap
/// base test while scanning a list backwards.
pub fn first_verb(ops: &[u8]) -> Option<&[u8]> {
    let i = crate::json::skip_ws(ops, 0);
    if ops.get(i) != Some(&b'[') {
        return None;
    }
    let i = crate::json::skip_ws(ops, i + 1);
    if ops.get(i) != Some(&b'[') {
        return None;
    }
    let i = crate::json::skip_ws(ops, i + 1);
    // The quote first: a line may end here (`[[`), where there is no string to end.
    if ops.get(i) != Some(&b'"') {
        return None;
    }
    let end = crate::json::string_end(ops, i)?;
    Some(&ops[i + 1..end - 1])
}
