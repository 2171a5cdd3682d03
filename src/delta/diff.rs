//! The producer side: the ops that carry one snapshot to the next.
//!
//! Objects get per-key sets and deletes, arrays one splice over what lies between their
//! common prefix and suffix (or per-element ops when only elements changed in place), and
//! strings an append, a front truncation plus an append (a rolling window), or a set. The
//! overlap of a rolling window is found by a bounded candidate scan and always verified, so
//! a bound that runs out costs size (a set), never correctness.

use super::{Op, Path, Seg, is_reserved};
use crate::value::{KeyIndex, Value};

/// Bounds of the overlap search, as the reference tracker sets them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How far back into the old string an overlap may start.
    pub max_overlap_scan: usize,
    /// Length of the head of the new string looked for in the old one.
    pub probe: usize,
    /// Candidate positions verified before giving up.
    pub max_candidates: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_overlap_scan: 65_536,
            probe: 64,
            max_candidates: 8,
        }
    }
}

/// The ops from `prev` (nothing before the first snapshot) to `next`. A change the root
/// cannot take in place (a new root type, a new scalar root) is one `r`.
pub fn diff(prev: Option<&Value>, next: &Value, limits: Limits) -> Vec<Op> {
    let Some(prev) = prev else {
        return vec![Op::Replace(next.clone())];
    };
    let mut ops = Vec::new();
    let root_in_place = matches!(
        (prev, next),
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
    );
    if root_in_place && !has_reserved_key(prev) && !has_reserved_key(next) {
        walk(&mut Vec::new(), prev, next, limits, &mut ops);
    } else if prev != next {
        ops.push(Op::Replace(next.clone()));
    }
    ops
}

/// An object with a reserved key cannot be changed key by key (the key is not a valid
/// path segment), so it is set as a whole.
fn has_reserved_key(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.iter().any(|(k, _)| is_reserved(k)))
}

fn walk(path: &mut Path, a: &Value, b: &Value, limits: Limits, ops: &mut Vec<Op>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) if !has_reserved_key(a) && !has_reserved_key(b) => {
            let (mut in_a, mut in_b) = (KeyIndex::default(), KeyIndex::default());
            for (k, _) in ma {
                if in_b.find(mb, k).is_none() {
                    ops.push(Op::Delete(child(path, Seg::Key(k.clone()))));
                }
            }
            for (k, vb) in mb {
                match in_a.find(ma, k).map(|i| &ma[i]) {
                    None => ops.push(Op::Set(child(path, Seg::Key(k.clone())), vb.clone())),
                    Some((_, va)) => {
                        path.push(Seg::Key(k.clone()));
                        walk(path, va, vb, limits, ops);
                        path.pop();
                    }
                }
            }
        }
        (Value::Array(xa), Value::Array(xb)) => array(path, xa, xb, limits, ops),
        (Value::String(sa), Value::String(sb)) if !path.is_empty() => {
            string(path, sa, sb, limits, ops)
        }
        _ => ops.push(Op::Set(path.clone(), b.clone())),
    }
}

fn child(path: &Path, seg: Seg) -> Path {
    let mut p = path.clone();
    p.push(seg);
    p
}

fn array(path: &mut Path, xa: &[Value], xb: &[Value], limits: Limits, ops: &mut Vec<Op>) {
    let prefix = xa.iter().zip(xb).take_while(|(a, b)| a == b).count();
    let suffix = xa[prefix..]
        .iter()
        .rev()
        .zip(xb[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mid_a = &xa[prefix..xa.len() - suffix];
    let mid_b = &xb[prefix..xb.len() - suffix];
    if mid_a.len() == mid_b.len() {
        // Elements changed in place: follow them down (a growing text block stays an append).
        for (i, (a, b)) in mid_a.iter().zip(mid_b).enumerate() {
            path.push(Seg::Index((prefix + i) as u64));
            walk(path, a, b, limits, ops);
            path.pop();
        }
    } else {
        ops.push(Op::Splice(
            path.clone(),
            prefix as u64,
            mid_a.len() as u64,
            mid_b.to_vec(),
        ));
    }
}

fn string(path: &Path, a: &[u16], b: &[u16], limits: Limits, ops: &mut Vec<Op>) {
    if b.starts_with(a) {
        ops.push(Op::Append(path.clone(), b[a.len()..].to_vec()));
        return;
    }
    let k = overlap(a, b, limits);
    if k == 0 {
        ops.push(Op::Set(path.clone(), Value::String(b.to_vec())));
        return;
    }
    ops.push(Op::Truncate(path.clone(), (a.len() - k) as u64));
    if b.len() > k {
        ops.push(Op::Append(path.clone(), b[k..].to_vec()));
    }
}

/// The longest `k` such that the last `k` units of `a` are the first `k` of `b`, or 0 when
/// there is none within the limits. Every candidate is verified.
pub fn overlap(a: &[u16], b: &[u16], limits: Limits) -> usize {
    let max_k = a.len().min(b.len()).min(limits.max_overlap_scan);
    if max_k == 0 {
        return 0;
    }
    // Long overlaps: where does the head of `b` occur in the tail of `a`? Leftmost first,
    // which is the longest overlap.
    if max_k >= limits.probe {
        let head = &b[..limits.probe];
        let start = a.len() - max_k;
        let mut candidates = 0;
        let mut i = start;
        while let Some(found) = find(&a[i..], head) {
            let pos = i + found;
            let k = a.len() - pos;
            if b[..k] == a[pos..] {
                return k;
            }
            candidates += 1;
            if candidates >= limits.max_candidates {
                // Repetitive text: give up rather than verify thousands of candidates.
                return 0;
            }
            i = pos + 1;
            if i > a.len() - limits.probe {
                break;
            }
        }
    }
    // Short overlaps, shorter than the probe: a head that long cannot occur in them.
    (1..=max_k.min(limits.probe - 1))
        .rev()
        .find(|&k| b[..k] == a[a.len() - k..])
        .unwrap_or(0)
}

/// The first position of `needle` in `hay`, comparing UTF-16 units.
fn find(hay: &[u16], needle: &[u16]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut i = 0;
    while i < hay.len() {
        let k = hay[i..].iter().position(|&u| u == first)?;
        i += k;
        if hay[i + 1..].starts_with(rest) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn finds_overlaps_long_and_short() {
        let l = Limits::default();
        assert_eq!(overlap(&u("abcdefgh"), &u("defghxyz"), l), 5);
        let a = "x".repeat(10) + &"0123456789".repeat(20);
        let b = "0123456789".repeat(20) + "tail";
        assert_eq!(overlap(&u(&a), &u(&b), l), 200);
        assert_eq!(overlap(&u("abc"), &u("xyz"), l), 0);
        let a = "a".repeat(5000);
        assert_eq!(overlap(&u(&a), &u(&("a".repeat(4000) + "b")), l), 4000);
        // A run of one character matches everywhere: after 8 failed candidates the scan
        // gives up (the true overlap is 4000), which costs a set, never a wrong value.
        let b = "a".repeat(4000) + "b" + &"a".repeat(2000);
        assert_eq!(overlap(&u(&a), &u(&b), l), 0);
    }

    #[test]
    fn string_changes_become_append_truncate_or_set() {
        let l = Limits::default();
        let mut ops = Vec::new();
        let p = vec![Seg::Key(u("s"))];
        string(&p, &u("hello"), &u("hello world"), l, &mut ops);
        assert_eq!(ops, vec![Op::Append(p.clone(), u(" world"))]);
        ops.clear();
        string(&p, &u("abcdefgh"), &u("defghxyz"), l, &mut ops);
        assert_eq!(
            ops,
            vec![Op::Truncate(p.clone(), 3), Op::Append(p.clone(), u("xyz"))]
        );
        ops.clear();
        string(&p, &u("abc"), &u("zzz"), l, &mut ops);
        assert_eq!(ops, vec![Op::Set(p.clone(), Value::String(u("zzz")))]);
    }
}
