//! The producer side: the ops that carry one snapshot to the next.
//!
//! Objects get per-key sets and deletes, arrays one splice over what lies between their
//! common prefix and suffix (or per-element ops when only elements changed in place), and
//! strings an append, a front truncation plus an append (a rolling window), or a set. The
//! overlap of a rolling window is found by a bounded candidate scan and always verified, so
//! a bound that runs out costs size (a set), never correctness.

use super::{Op, Path, RESERVED, Seg, is_reserved};
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

/// [`diff`] of two values given as text: the same ops, found without reading the whole of
/// either. Members and elements whose text is the same are passed by (same text, same
/// value), a string whose text grows by a tail becomes an append of that tail alone, and
/// only what changed otherwise is parsed and diffed as values. `prev` must be a value as
/// [`Value::write_json`] writes it (no whitespace, no key twice); `next` may be anything:
/// `None` when what is read of it is not JSON (not all of it is read, so text that is no
/// JSON may give ops too). The caller checks what the ops rebuild.
pub fn diff_text(prev: &[u8], next: &[u8], limits: Limits) -> Option<Vec<Op>> {
    let mut ops = Vec::new();
    let both = |c: u8| prev.first() == Some(&c) && next.first() == Some(&c);
    if both(b'{') || both(b'[') {
        text_walk(&mut Vec::new(), prev, next, limits, &mut ops)?;
        return Some(ops);
    }
    let (a, b) = (Value::parse(prev).ok()?, Value::parse(next).ok()?);
    Some(diff(Some(&a), &b, limits))
}

/// [`walk`] over text: `a` and `b` are the texts of the values at `path`.
fn text_walk(path: &mut Path, a: &[u8], b: &[u8], limits: Limits, ops: &mut Vec<Op>) -> Option<()> {
    if a == b {
        return Some(());
    }
    let kind = |t: &[u8]| t.first().copied();
    match (kind(a), kind(b)) {
        (Some(b'{'), Some(b'{')) => {
            let mark = ops.len();
            if members_walk(path, a, b, limits, ops).is_some() {
                return Some(());
            }
            // Not the same keys: what was found of the members so far is not the ops.
            ops.truncate(mark);
        }
        (Some(b'['), Some(b'[')) => {
            let (xa, xb) = (elements_of(a)?, elements_of(b));
            // Of the same length, `array` follows each element down, and equal ones give
            // no op: so can this, element by element. Else the splice needs the values.
            if let Some(xb) = xb.filter(|xb| xb.len() == xa.len()) {
                for (i, (ea, eb)) in xa.into_iter().zip(xb).enumerate() {
                    path.push(Seg::Index(i as u64));
                    text_walk(path, ea, eb, limits, ops)?;
                    path.pop();
                }
                return Some(());
            }
        }
        (Some(b'"'), Some(b'"')) if !path.is_empty() => {
            // Text that only grows: the tail is what `string` would append (the old text
            // ends where a character or an escape ends, so the tail starts where one does).
            let (ia, ib) = (&a[1..a.len() - 1], b.get(1..b.len().checked_sub(1)?)?);
            if b.ends_with(b"\"") && ib.starts_with(ia) {
                let tail = crate::json::decode_utf16_units(&ib[ia.len()..])?;
                ops.push(Op::Append(path.clone(), tail));
                return Some(());
            }
        }
        _ => {}
    }
    let (va, vb) = (Value::parse(a).ok()?, Value::parse(b).ok()?);
    match path.is_empty() {
        // The root has rules of its own (a root with a reserved key is replaced whole).
        true => ops.extend(diff(Some(&va), &vb, limits)),
        false => walk(path, &va, &vb, limits, ops),
    }
    Some(())
}

/// [`walk`] over two objects with the same keys in the same order, none of them reserved
/// or spelled with an escape (so that equal text is an equal key, and `prev`, as written
/// by sess, has each key once): it follows each member down. `None` when the keys differ
/// or `b` is not a whole object; the caller then drops the ops pushed.
fn members_walk(
    path: &mut Path,
    a: &[u8],
    b: &[u8],
    limits: Limits,
    ops: &mut Vec<Op>,
) -> Option<()> {
    use crate::json::{member_head, skip_value, skip_ws};
    let (mut i, mut j) = (1, 1);
    loop {
        let (Some((ka, va)), Some((kb, vb))) = (member_head(a, i), member_head(b, j)) else {
            // Both at their end, or the keys differ in number.
            let end = |t: &[u8], at: usize| {
                let at = skip_ws(t, at);
                t.get(at) == Some(&b'}') && skip_ws(t, at + 1) == t.len()
            };
            return (end(a, i) && end(b, j)).then_some(());
        };
        if ka != kb || ka.contains(&b'\\') || RESERVED.iter().any(|r| ka == r.as_bytes()) {
            return None;
        }
        let a_end = skip_value(a, va)?;
        let same = &a[va..a_end];
        // The same text at the same place is the same value, found without reading `b`
        // again; its end is where the next member or the object's end begins.
        let delimited =
            |at: usize| matches!(b.get(at), Some(b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r'));
        let b_end = match b.get(vb..vb + same.len()) {
            Some(t) if t == same && delimited(vb + same.len()) => vb + same.len(),
            _ => skip_value(b, vb)?,
        };
        if b[vb..b_end] != *same {
            let key = std::str::from_utf8(ka).ok()?.encode_utf16().collect();
            path.push(Seg::Key(key));
            text_walk(path, same, &b[vb..b_end], limits, ops)?;
            path.pop();
        }
        (i, j) = (a_end, b_end);
    }
}

/// The elements of the array `text` is, or `None` when it is not one, whole.
fn elements_of(text: &[u8]) -> Option<Vec<&[u8]>> {
    let mut elements = Vec::new();
    let end = crate::json::each_element(text, 0, &mut |_, at| {
        let end = crate::json::skip_value(text, at)?;
        elements.push(&text[at..end]);
        Some(end)
    })?;
    (crate::json::skip_ws(text, end) == text.len()).then_some(elements)
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

    mod text {
        use super::super::*;
        use crate::delta::apply::apply;
        use proptest::prelude::*;

        fn u(s: &str) -> Vec<u16> {
            s.encode_utf16().collect()
        }

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                proptest::sample::select(vec!["", "a", "ab\"c", "é", "\u{1F980}", "x\n"])
                    .prop_map(Value::string),
                Just(Value::String(vec![0xD83E])),
                (-2i32..3).prop_map(|n| Value::Number(f64::from(n) / 2.0)),
                Just(Value::Null),
                Just(Value::Bool(true)),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(3, 24, 4, |inner| {
                let key = proptest::sample::select(vec!["a", "b", "c", "__proto__", "é", "q\""]);
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    proptest::collection::vec((key, inner), 0..4).prop_map(|m| {
                        let mut members: Vec<(Vec<u16>, Value)> = Vec::new();
                        for (k, v) in m {
                            if !members.iter().any(|(x, _)| *x == u(k)) {
                                members.push((u(k), v));
                            }
                        }
                        Value::Object(members)
                    }),
                ]
            })
        }

        /// Ops that mostly apply to values like these: appends, sets, deletes, splices.
        fn op() -> impl Strategy<Value = Op> {
            let seg = prop_oneof![
                (0u64..3).prop_map(Seg::Index),
                proptest::sample::select(vec!["a", "b", "q\""]).prop_map(|k| Seg::Key(u(k))),
            ];
            let path = proptest::collection::vec(seg, 1..4);
            prop_oneof![
                (
                    path.clone(),
                    proptest::sample::select(vec!["z", "\"", "\u{1F980}"])
                )
                    .prop_map(|(p, s)| Op::Append(p, u(s))),
                (path.clone(), leaf()).prop_map(|(p, v)| Op::Set(p, v)),
                path.clone().prop_map(Op::Delete),
                (path, leaf()).prop_map(|(p, v)| Op::Splice(p, 0, 1, vec![v])),
            ]
        }

        /// The next value's text, spelled now and then otherwise than sess spells it.
        fn respell(text: String, how: u8) -> String {
            match how {
                0 => text.replacen("\"a\"", "\"\\u0061\"", 1),
                1 => text.replacen(":1", ":1.0", 1),
                2 => text.replacen(",", " , ", 1),
                _ => text,
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// Found from the texts, the ops are those found from the values.
            #[test]
            fn ops_from_text_are_the_ops_from_values(
                prev in value(),
                ops in proptest::collection::vec(op(), 0..6),
                how in 0u8..6,
            ) {
                let mut next = Some(prev.clone());
                for op in ops {
                    let before = next.clone();
                    if apply(&mut next, op).is_err() {
                        next = before;
                    }
                }
                let next_text = respell(String::from_utf8(next.clone().unwrap().to_json()).unwrap(), how);
                let Ok(next) = Value::parse(next_text.as_bytes()) else {
                    return Ok(());
                };
                let want = diff(Some(&prev), &next, Limits::default());
                let got = diff_text(&prev.to_json(), next_text.as_bytes(), Limits::default());
                prop_assert_eq!(got, Some(want), "{}", next_text);
            }
        }

        #[test]
        fn text_that_is_no_json_gives_no_ops() {
            for bad in [&b"{\"a\":[1,}"[..], b"{\"a\":\"x", b"[1]x", b"{\"a\" 1}"] {
                assert_eq!(diff_text(br#"{"a":[1]}"#, bad, Limits::default()), None);
            }
        }
    }
}
