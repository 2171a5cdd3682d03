//! Applies decoded ops to a value, as the reference library's `apply` does.
//!
//! Paths walk own members only; an array index must exist, or be one past the end where a
//! write appends; a splice clamps its index and count as `Array.prototype.splice` does;
//! `t` drops UTF-16 code units from the front. Not transactional: ops before a failing
//! op stay applied, so callers stop at the first error.

use super::{Op, OpError, Path, Seg};
use crate::value::{MAX_DEPTH, Value};

/// Applies `op` to `root` (`None` until the first `r`). An op that would make the value
/// nest deeper than [`MAX_DEPTH`] is refused: everything that walks a value (serializing,
/// diffing, dropping it) recurses, and a value built by ops is otherwise unbounded.
pub fn apply(root: &mut Option<Value>, op: Op) -> Result<(), OpError> {
    check_depth(&op)?;
    match op {
        Op::Replace(v) => {
            *root = Some(v);
            Ok(())
        }
        Op::Splice(path, i, remove, items) => {
            let Some(Value::Array(a)) = resolve(root, &path)? else {
                return Err(OpError::unresolvable(&path));
            };
            let i = (i as usize).min(a.len());
            let remove = (remove as usize).min(a.len() - i);
            a.splice(i..i + remove, items);
            Ok(())
        }
        Op::Permute(path, perm) => {
            let target = resolve(root, &path)?;
            match target {
                Some(Value::Array(a)) if a.len() == perm.len() => {
                    let old = std::mem::take(a);
                    let mut old: Vec<Option<Value>> = old.into_iter().map(Some).collect();
                    *a = perm
                        .iter()
                        .map(|&j| old[j as usize].take().expect("a bijection"))
                        .collect();
                    Ok(())
                }
                _ => Err(OpError::unresolvable(&path)),
            }
        }
        Op::Set(path, v) => edit(root, &path, Edit::Set(v)),
        Op::Delete(path) => edit(root, &path, Edit::Delete),
        Op::Append(path, s) => edit(root, &path, Edit::Append(&s)),
        Op::Truncate(path, n) => edit(root, &path, Edit::Truncate(n)),
    }
}

/// [`apply`] of the op `edit` makes at `path`, the path and an appended text only
/// borrowed: a replay that reads ops from their bytes applies them without making
/// [`Op`]s.
pub fn edit(root: &mut Option<Value>, path: &[Seg], edit: Edit<'_>) -> Result<(), OpError> {
    if let Edit::Set(v) = &edit {
        nests(path.len() + v.depth())?;
    }
    at_parent(root, path, edit)
}

/// The depth checks [`apply`] makes of `op` before it changes anything, made alone: a text
/// kept in step ([`super::spell`]) applies an op to the part of the value it changes, with
/// a shorter path, and must refuse what the whole path is refused for.
pub fn depth_ok(op: &Op) -> Result<(), OpError> {
    check_depth(op)?;
    if let Op::Set(path, v) = op {
        nests(path.len() + v.depth())?;
    }
    Ok(())
}

/// Refuses a whole value or a splice's items that would nest deeper than [`MAX_DEPTH`]
/// (a set is checked by [`edit`]).
fn check_depth(op: &Op) -> Result<(), OpError> {
    let depth = match op {
        Op::Replace(v) => v.depth(),
        Op::Splice(p, _, _, items) => {
            p.len() + 1 + items.iter().map(Value::depth).max().unwrap_or(0)
        }
        _ => 0,
    };
    nests(depth)
}

/// Refuses a value that would nest `depth` levels deep, more than [`MAX_DEPTH`].
fn nests(depth: usize) -> Result<(), OpError> {
    if depth > MAX_DEPTH {
        return Err(OpError::type_error(&format!(
            "the value would nest {depth} levels deep, more than the {MAX_DEPTH} sess allows"
        )));
    }
    Ok(())
}

/// What `s`, `d`, `a` and `t` do to the member their path ends at.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit<'t> {
    Set(Value),
    Delete,
    Append(&'t [u16]),
    Truncate(u64),
}

impl Edit<'_> {
    /// The op that makes this edit at `path`.
    pub fn into_op(self, path: Path) -> Op {
        match self {
            Edit::Set(v) => Op::Set(path, v),
            Edit::Delete => Op::Delete(path),
            Edit::Append(s) => Op::Append(path, s.to_vec()),
            Edit::Truncate(n) => Op::Truncate(path, n),
        }
    }
}

/// Whether an object key is the one a segment names (a number on an object names the key
/// spelled in digits); a key segment, the common case, is compared without making the key.
pub fn names(key: &[u16], seg: &Seg) -> bool {
    match seg {
        Seg::Key(k) => key == &k[..],
        Seg::Index(_) => key == &key_of(seg)[..],
    }
}

/// The object key a segment names: a number on an object names the key spelled in digits.
fn key_of(seg: &Seg) -> Vec<u16> {
    match seg {
        Seg::Key(k) => k.clone(),
        Seg::Index(i) => i.to_string().encode_utf16().collect(),
    }
}

fn seg_text(seg: &Seg) -> String {
    match seg {
        Seg::Key(k) => String::from_utf16_lossy(k),
        Seg::Index(i) => i.to_string(),
    }
}

/// Walks `path` through own members. `Ok(None)` only for the empty path of an absent root.
fn resolve<'a>(
    root: &'a mut Option<Value>,
    path: &[Seg],
) -> Result<Option<&'a mut Value>, OpError> {
    let Some(mut cur) = root.as_mut() else {
        return if path.is_empty() {
            Ok(None)
        } else {
            Err(OpError::unresolvable(&path[..1]))
        };
    };
    for (k, seg) in path.iter().enumerate() {
        let here = &path[..=k];
        cur = match cur {
            Value::Object(members) => members
                .iter_mut()
                .find(|(name, _)| names(name, seg))
                .map(|(_, v)| v)
                .ok_or_else(|| OpError::unresolvable(here))?,
            Value::Array(items) => match seg {
                Seg::Key(_) => return Err(OpError::unsafe_segment(&seg_text(seg))),
                Seg::Index(i) => items
                    .get_mut(*i as usize)
                    .ok_or_else(|| OpError::unresolvable(here))?,
            },
            _ => return Err(OpError::unresolvable(here)),
        };
    }
    Ok(Some(cur))
}

fn at_parent(root: &mut Option<Value>, path: &[Seg], what: Edit<'_>) -> Result<(), OpError> {
    let Some((last, parent_path)) = path.split_last() else {
        return Err(OpError::unresolvable(&[]));
    };
    let parent = resolve(root, parent_path)?.ok_or_else(|| OpError::unresolvable(path))?;
    match parent {
        Value::Array(items) => {
            let Seg::Index(i) = last else {
                return Err(OpError::unsafe_segment(&seg_text(last)));
            };
            let i = *i as usize;
            if i > items.len() {
                return Err(OpError::unsafe_segment(&i.to_string()));
            }
            match what {
                Edit::Set(v) if i == items.len() => items.push(v),
                Edit::Set(v) => items[i] = v,
                Edit::Delete if i < items.len() => {
                    items.remove(i);
                }
                Edit::Delete => return Err(OpError::unresolvable(path)),
                Edit::Append(s) => string_at(items.get_mut(i), path)?.extend_from_slice(s),
                Edit::Truncate(n) => truncate(string_at(items.get_mut(i), path)?, n),
            }
        }
        Value::Object(members) => {
            let pos = members.iter().position(|(k, _)| names(k, last));
            match (what, pos) {
                (Edit::Set(v), Some(p)) => members[p].1 = v,
                (Edit::Set(v), None) => members.push((key_of(last), v)),
                (Edit::Delete, Some(p)) => {
                    members.remove(p);
                }
                (Edit::Delete, None) => {}
                (Edit::Append(s), p) => {
                    string_at(p.map(|p| &mut members[p].1), path)?.extend_from_slice(s)
                }
                (Edit::Truncate(n), p) => {
                    truncate(string_at(p.map(|p| &mut members[p].1), path)?, n)
                }
            }
        }
        _ => return Err(OpError::unresolvable(parent_path)),
    }
    Ok(())
}

fn string_at<'a>(v: Option<&'a mut Value>, path: &[Seg]) -> Result<&'a mut Vec<u16>, OpError> {
    match v {
        Some(Value::String(s)) => Ok(s),
        _ => Err(OpError::unresolvable(path)),
    }
}

fn truncate(s: &mut Vec<u16>, n: u64) {
    let n = (n as usize).min(s.len());
    s.drain(..n);
}
