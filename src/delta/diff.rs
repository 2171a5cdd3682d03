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
    diff_text_with(prev, next, limits, &Ends::default(), &mut Ends::default())
}

/// [`diff_text`], given where values of `prev` end (`known`: what the diff that had `prev`
/// as its next text found), and noting where values of `next` end in `found`, for the diff
/// that comes after. A run of snapshots changes in the same places from one to the next, so
/// the values walked into are found in `known` instead of being scanned to their ends.
pub fn diff_text_with(
    prev: &[u8],
    next: &[u8],
    limits: Limits,
    known: &Ends,
    found: &mut Ends,
) -> Option<Vec<Op>> {
    found.0.clear();
    let both = |c: u8| prev.first() == Some(&c) && next.first() == Some(&c);
    if !(both(b'{') || both(b'[')) {
        let (a, b) = (Value::parse(prev).ok()?, Value::parse(next).ok()?);
        return Some(diff(Some(&a), &b, limits));
    }
    let mut ops = Vec::new();
    let mut t = Texts {
        a: prev,
        b: next,
        known,
        found,
        limits,
    };
    let end = text_walk(&mut t, &mut Vec::new(), (0, prev.len()), 0, &mut ops)?;
    found.0.sort_unstable();
    (crate::json::skip_ws(next, end) == next.len()).then_some(ops)
}

/// Where values of a text end, by where they start: those of [`REMEMBERED`] bytes or more
/// that a diff walked into or passed by.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Ends(Vec<(usize, usize)>);

/// Shorter values are scanned again: that costs less than remembering them.
const REMEMBERED: usize = 128;

impl Ends {
    fn get(&self, start: usize) -> Option<usize> {
        let i = self.0.binary_search_by_key(&start, |&(s, _)| s).ok()?;
        Some(self.0[i].1)
    }
}

/// The two texts of one diff, and what is known of where their values end.
struct Texts<'t> {
    a: &'t [u8],
    b: &'t [u8],
    known: &'t Ends,
    found: &'t mut Ends,
    limits: Limits,
}

impl Texts<'_> {
    /// The end of the value of `a` at `at`: remembered, or scanned. A remembered end is
    /// used only where it closes what `at` opens (it came from a text the caller says is
    /// this one; the caller's check of what the ops rebuild stays the proof).
    fn a_end(&self, at: usize) -> Option<usize> {
        let closes = |end: usize| {
            let close = match self.a.get(at) {
                Some(b'{') => b'}',
                Some(b'[') => b']',
                Some(b'"') => b'"',
                _ => return false,
            };
            end > at + 1 && self.a.get(end - 1) == Some(&close)
        };
        match self.known.get(at) {
            Some(end) if closes(end) => Some(end),
            _ => crate::json::skip_value(self.a, at),
        }
    }

    /// Notes where a value of `b` ends.
    fn note(&mut self, start: usize, end: usize) -> usize {
        if end - start >= REMEMBERED {
            self.found.0.push((start, end));
        }
        end
    }

    /// Where the value at `vb` in `b` ends, if its text is `a[va..a_end]`.
    fn same_at(&self, (va, a_end): (usize, usize), vb: usize) -> Option<usize> {
        let end = vb + (a_end - va);
        let delimited = matches!(
            self.b.get(end),
            None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
        );
        (self.b.get(vb..end) == Some(&self.a[va..a_end]) && delimited).then_some(end)
    }
}

/// [`walk`] over text: `a[va..a_end]` is the value at `path` in the previous text, and the
/// value at `vb` in the next is walked to its end, which is returned. `None` where
/// [`diff_text`] gives up.
fn text_walk(
    t: &mut Texts,
    path: &mut Path,
    (va, a_end): (usize, usize),
    vb: usize,
    ops: &mut Vec<Op>,
) -> Option<usize> {
    if let Some(end) = t.same_at((va, a_end), vb) {
        return Some(t.note(vb, end));
    }
    let mark = ops.len();
    match (t.a[va], t.b.get(vb)) {
        (b'{', Some(b'{')) => {
            if let Some(end) = members_walk(t, path, va, vb, ops) {
                return Some(t.note(vb, end));
            }
            // Not the same keys: what was found of the members so far is not the ops.
            ops.truncate(mark);
        }
        (b'[', Some(b'[')) => match elements_walk(t, path, va, vb, ops) {
            Elements::Walked(end) => return Some(t.note(vb, end)),
            Elements::Failed => return None,
            // Of another length: the splice needs the values.
            Elements::Reshaped => ops.truncate(mark),
        },
        (b'"', Some(b'"')) if !path.is_empty() => {
            // Text that only grows: the tail is what `string` would append (the old text
            // ends where a character or an escape ends, so the tail starts where one does).
            let end = crate::json::string_end(t.b, vb)?;
            let (ia, ib) = (&t.a[va + 1..a_end - 1], &t.b[vb + 1..end - 1]);
            if let Some(tail) = ib.strip_prefix(ia) {
                let tail = crate::json::decode_utf16_units(tail)?;
                ops.push(Op::Append(path.clone(), tail));
                return Some(t.note(vb, end));
            }
        }
        _ => {}
    }
    let end = crate::json::skip_value(t.b, vb)?;
    let va = Value::parse(&t.a[va..a_end]).ok()?;
    let vb = Value::parse(&t.b[vb..end]).ok()?;
    match path.is_empty() {
        // The root has rules of its own (a root with a reserved key is replaced whole).
        true => ops.extend(diff(Some(&va), &vb, t.limits)),
        false => walk(path, &va, &vb, t.limits, ops),
    }
    Some(end)
}

/// [`walk`] over two objects with the same keys in the same order, none of them reserved
/// or spelled with an escape (so that equal text is an equal key, and `a`, as written by
/// sess, has each key once): it follows each member down, and returns where the object in
/// `b` ends. `None` when the keys differ or `b` is not a whole object; the caller then
/// drops the ops pushed.
fn members_walk(
    t: &mut Texts,
    path: &mut Path,
    va: usize,
    vb: usize,
    ops: &mut Vec<Op>,
) -> Option<usize> {
    use crate::json::{member_head, skip_ws};
    let (mut i, mut j) = (va + 1, vb + 1);
    loop {
        let (Some((ka, ia)), Some((kb, jb))) = (member_head(t.a, i), member_head(t.b, j)) else {
            // Both at their end, or the keys differ in number.
            let (i, j) = (skip_ws(t.a, i), skip_ws(t.b, j));
            return (t.a.get(i) == Some(&b'}') && t.b.get(j) == Some(&b'}')).then_some(j + 1);
        };
        if ka != kb || ka.contains(&b'\\') || RESERVED.iter().any(|r| ka == r.as_bytes()) {
            return None;
        }
        let a_end = t.a_end(ia)?;
        let b_end = match t.same_at((ia, a_end), jb) {
            Some(end) => t.note(jb, end),
            None => {
                let key = std::str::from_utf8(ka).ok()?.encode_utf16().collect();
                path.push(Seg::Key(key));
                let end = text_walk(t, path, (ia, a_end), jb, ops)?;
                path.pop();
                end
            }
        };
        (i, j) = (a_end, b_end);
    }
}

/// What walking two arrays element by element came to.
enum Elements {
    /// Of the same length, each element followed down; the array in `b` ends here.
    Walked(usize),
    /// Of the same length, and an element's walk gave up.
    Failed,
    /// Of other lengths, or `b` is not a whole array.
    Reshaped,
}

/// [`walk`] over two arrays of the same length, element by element (as `array` follows
/// elements changed in place, and equal ones give no op).
fn elements_walk(
    t: &mut Texts,
    path: &mut Path,
    va: usize,
    vb: usize,
    ops: &mut Vec<Op>,
) -> Elements {
    use crate::json::{skip_value, skip_ws};
    // After the opening bracket, or after an element: where the next element starts, or
    // `None` at the array's end (`Some(None)`) or at anything else (`None`).
    let next = |text: &[u8], at: usize, first: bool| -> Option<Option<usize>> {
        let at = skip_ws(text, at);
        match text.get(at)? {
            b']' => Some(None),
            b',' if !first => Some(Some(skip_ws(text, at + 1))),
            _ if first => Some(Some(at)),
            _ => None,
        }
    };
    // Whether every element so far has the same text in both: only then is each equal
    // (no ops is not enough: an object whose keys moved gives none, and differs).
    let (mut i, mut j, mut index, mut all_same) = (va + 1, vb + 1, 0, true);
    loop {
        let first = index == 0;
        let (Some(ia), Some(jb)) = (next(t.a, i, first), next(t.b, j, first)) else {
            return Elements::Reshaped;
        };
        let (ia, jb) = match (ia, jb) {
            (None, None) => return Elements::Walked(skip_ws(t.b, j) + 1),
            (Some(ia), Some(jb)) => (ia, jb),
            // Every element the same, and more after them (a history that grows): the
            // splice `array` finds, from the new elements alone.
            (None, Some(jb)) if all_same => {
                return match appended(t.b, jb) {
                    Some((items, end)) => {
                        ops.push(Op::Splice(path.clone(), index, 0, items));
                        Elements::Walked(end)
                    }
                    None => Elements::Reshaped,
                };
            }
            _ => return Elements::Reshaped,
        };
        let Some(a_end) = t.a_end(ia) else {
            return Elements::Failed;
        };
        let b_end = match t.same_at((ia, a_end), jb) {
            Some(end) => Some(t.note(jb, end)),
            None => {
                all_same = false;
                path.push(Seg::Index(index));
                let end = text_walk(t, path, (ia, a_end), jb, ops);
                path.pop();
                end
            }
        };
        let Some(b_end) = b_end else {
            // Given up on an element: that counts only if the lengths are the same.
            let count = |text: &[u8], at: usize| -> Option<u64> {
                let mut n = 0;
                crate::json::each_element(text, at, &mut |text, start| {
                    n += 1;
                    skip_value(text, start)
                })?;
                Some(n)
            };
            let same_length = count(t.b, vb).is_some_and(|n| count(t.a, va) == Some(n));
            return match same_length {
                true => Elements::Failed,
                false => Elements::Reshaped,
            };
        };
        (i, j, index) = (a_end, b_end, index + 1);
    }
}

/// The elements of an array in `b` from the one at `at` on, and where the array ends.
fn appended(b: &[u8], at: usize) -> Option<(Vec<Value>, usize)> {
    let mut items = Vec::new();
    let end = crate::json::each_element_from(b, at, &mut |b, start| {
        let end = crate::json::skip_value(b, start)?;
        items.push(Value::parse(&b[start..end]).ok()?);
        Some(end)
    })?;
    Some((items, end))
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
                (path.clone(), leaf()).prop_map(|(p, v)| Op::Splice(p, 0, 1, vec![v])),
                // Elements added: at the end of arrays of one or two (a growing history).
                (path, leaf(), 1u64..3).prop_map(|(p, v, at)| Op::Splice(
                    p,
                    at,
                    0,
                    vec![v.clone(), v]
                )),
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

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            /// Along a run of snapshots, each diff given where the last one found values
            /// ending finds the ops found from the values; long strings make the ends
            /// worth remembering.
            #[test]
            fn ops_found_with_remembered_ends_are_the_ops_from_values(
                first in value(),
                steps in proptest::collection::vec(proptest::collection::vec(op(), 0..4), 1..6),
                long in 0usize..3,
                grow in proptest::collection::vec(any::<bool>(), 6),
            ) {
                let long = Value::string(&"long text \"quoted\" ".repeat(8 * long));
                let (mut prev, grown) = match first {
                    Value::Object(mut m) => {
                        m.push((u("long"), Value::Array(vec![long.clone(), long])));
                        (Value::Object(m), vec![Seg::Key(u("long")), Seg::Index(1)])
                    }
                    other => (Value::Array(vec![other, long]), vec![Seg::Index(1)]),
                };
                let mut known = Ends::default();
                for (mut ops, grow) in steps.into_iter().zip(grow) {
                    if grow {
                        ops.push(Op::Append(grown.clone(), u("é\n")));
                    }
                    let mut next = Some(prev.clone());
                    for op in ops {
                        let before = next.clone();
                        if apply(&mut next, op).is_err() {
                            next = before;
                        }
                    }
                    let next = next.unwrap();
                    let mut found = Ends::default();
                    let got = diff_text_with(
                        &prev.to_json(),
                        &next.to_json(),
                        Limits::default(),
                        &known,
                        &mut found,
                    );
                    prop_assert_eq!(got, Some(diff(Some(&prev), &next, Limits::default())));
                    let text = next.to_json();
                    for &(start, end) in &found.0 {
                        prop_assert_eq!(crate::json::skip_value(&text, start), Some(end));
                    }
                    (prev, known) = (next, found);
                }
            }
        }

        #[test]
        fn remembered_ends_are_used_and_a_wrong_one_is_not() {
            let text = format!(r#"{{"a":"{}","b":1}}"#, "x".repeat(200));
            let next = format!(r#"{{"a":"{}y","b":1}}"#, "x".repeat(200));
            let mut found = Ends::default();
            diff_text_with(
                text.as_bytes(),
                next.as_bytes(),
                Limits::default(),
                &Ends::default(),
                &mut found,
            )
            .unwrap();
            // The string and the whole object are long enough to be remembered.
            assert_eq!(found.0, vec![(0, next.len()), (5, 5 + 203)]);
            // An end that does not close what opens there, or lies outside the text, is
            // scanned for instead (a wrong one costs the walk, and may not cost a panic).
            for wrong in [(5, 100), (5, 6), (5, 10_000), (0, 3)] {
                let wrong = Ends(vec![wrong]);
                let got = diff_text_with(
                    text.as_bytes(),
                    next.as_bytes(),
                    Limits::default(),
                    &wrong,
                    &mut found,
                );
                assert_eq!(got, Some(vec![Op::Append(vec![Seg::Key(u("a"))], u("y"))]));
            }
        }

        #[test]
        fn a_grown_array_whose_element_moved_its_keys_is_spliced_as_values_are() {
            // The moved keys give no op, but the element is not equal: `array` splices it.
            let (prev, next) = (
                br#"{"h":[{"x":1,"y":2}]}"#,
                br#"{"h":[{"y":2,"x":1},{"z":3}]}"#,
            );
            let want = diff(
                Some(&Value::parse(prev).unwrap()),
                &Value::parse(next).unwrap(),
                Limits::default(),
            );
            assert_eq!(diff_text(prev, next, Limits::default()), Some(want));
        }

        #[test]
        fn text_that_is_no_json_gives_no_ops() {
            for bad in [&b"{\"a\":[1,}"[..], b"{\"a\":\"x", b"[1]x", b"{\"a\" 1}"] {
                assert_eq!(diff_text(br#"{"a":[1]}"#, bad, Limits::default()), None);
            }
        }
    }
}
