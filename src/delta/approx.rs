//! What changed between two texts, guessed from their bytes: the cheap stand-in for
//! [`super::diff`] that `sess stats` uses to estimate a snapshot row without building one.
//!
//! The two texts are aligned greedily: equal bytes are skipped eight at a time, and at a
//! mismatch [`ANCHOR`] bytes of either side, taken a distance `s` ahead, are looked for in
//! the other side near where it stands, `s` doubling until one is found. Found, the bytes
//! of the new text before it were inserted (or replaced the old bytes skipped). Snapshots of
//! a growing message differ by a few insertions (the text streamed since the last one),
//! which this finds exactly at the speed of `memcmp`; a value replaced by another of about
//! its length costs a few searches. It is not a minimal diff: a repeated anchor can align
//! on a false match, which the windows keep near. Its work is bounded (see [`changed`]),
//! whatever the texts.

use std::ops::Range;

/// Bytes looked for to find where the texts agree again.
const ANCHOR: usize = 16;

/// How far beyond the distance probed an anchor is looked for.
const NEAR: usize = 256;

/// Windows longer than this are searched with `memmem`.
const LONG: usize = 1024;

/// Calls `each` with the ranges of `next` that are not in `prev`, in order, each with
/// whether it replaced bytes of `prev` (else it was inserted), and returns their total
/// length. Bytes of `prev` deleted with none put in their place are an empty range where
/// they were, replaced: what an op does there depends on the value they were in.
/// Searching stops after scanning sixteen times the length of the parts that differ, plus
/// 16 KiB; what is left of `next` then counts as changed.
pub fn changed(prev: &[u8], next: &[u8], mut each: impl FnMut(Range<usize>, bool)) -> usize {
    let head = same_from_start(prev, next);
    let tail = same_from_end(&prev[head..], &next[head..]);
    let (a, b) = (
        &prev[head..prev.len() - tail],
        &next[head..next.len() - tail],
    );
    let mut total = 0;
    let mut budget = 16 * (a.len() + b.len()) + 64 * NEAR;
    let (mut i, mut j) = (0, 0);
    loop {
        let k = same_from_start(&a[i..], &b[j..]);
        (i, j) = (i + k, j + k);
        if j == b.len() {
            if i < a.len() {
                each(head + j..head + j, true);
            }
            break;
        }
        let step = match i < a.len() {
            true => resync(&a[i..], &b[j..], &mut budget),
            false => None,
        };
        // Not found again: the rest is new.
        let (di, dj) = step.unwrap_or((a.len() - i, b.len() - j));
        // What the skipped parts end with alike is not changed.
        let same = same_from_end(&a[i..i + di], &b[j..j + dj]);
        let (di, dj) = (di - same, dj - same);
        if dj > 0 || di > 0 {
            each(head + j..head + j + dj, di > 0);
        }
        total += dj;
        (i, j) = (i + di, j + dj);
    }
    total
}

/// Where `a` and `b`, which differ at their first byte, agree again: how many bytes of
/// each to skip, the fewest of `b` first. None when not found within the budget.
///
/// Each round looks for what follows a skip of `s` bytes of either side, and for each
/// side's start (a pure insertion or deletion), in windows of `2s + NEAR`: a long insertion
/// is found whole rather than by a skip that jumps over the changes after it.
fn resync(a: &[u8], b: &[u8], budget: &mut usize) -> Option<(usize, usize)> {
    let mut s = 0;
    while *budget > 0 && (s < a.len() || s < b.len()) {
        let window = 2 * s + NEAR;
        let mut best: Option<(usize, usize)> = None;
        let mut keep = |found: Option<(usize, usize)>| {
            if let Some(f) = found
                && best.is_none_or(|kept| f.1 < kept.1)
            {
                best = Some(f);
            }
        };
        // The first round probes only the two starts.
        let skips: &[usize] = if s == 0 { &[0] } else { &[0, s] };
        for &skip in skips {
            // Skip `skip` bytes of a (deleted or replaced): where does what follows begin in b?
            if skip < a.len() {
                keep(find(b, &a[skip..], window, budget).map(|p| (skip, p)));
            }
            // Skip `skip` bytes of b (inserted or replacing): where does what follows begin in a?
            if skip < b.len() {
                keep(find(a, &b[skip..], window, budget).map(|p| (p, skip)));
            }
        }
        if best.is_some() {
            return best;
        }
        // Bytes alike at the end of what is skipped are given back (see `changed`), so
        // skips need not be finer than an anchor.
        s = (2 * s).max(ANCHOR);
    }
    None
}

/// Where the first [`ANCHOR`] bytes of `from` occur in the first `far` bytes of `hay`,
/// charged to `budget`.
fn find(hay: &[u8], from: &[u8], far: usize, budget: &mut usize) -> Option<usize> {
    let needle = &from[..from.len().min(ANCHOR)];
    // Most windows are short and the needle new each time: a first-byte scan beats
    // building a `memmem` searcher (a fifth of the time of `sess stats` on a pi log). A long
    // one pays for the searcher, which does not stop at every common byte.
    let hay = &hay[..hay.len().min(far.saturating_add(needle.len()))];
    *budget = budget.saturating_sub(hay.len());
    if hay.len() > LONG {
        return memchr::memmem::find(hay, needle);
    }
    let starts = hay.len().checked_sub(needle.len())? + 1;
    let is_at = |p: usize| match <&[u8; ANCHOR]>::try_from(needle) {
        // A whole anchor compares as one 16-byte word, without a call to `memcmp`.
        Ok(n) => hay[p..p + ANCHOR] == n[..],
        Err(_) => hay[p..].starts_with(needle),
    };
    memchr::memchr_iter(needle[0], &hay[..starts]).find(|&p| is_at(p))
}

/// How many bytes `a` and `b` share from the start, compared eight at a time.
fn same_from_start(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("eight bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` share at the end, compared eight at a time.
fn same_from_end(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut k = 0;
    while k + 8 <= n {
        let x = u64::from_be_bytes(a[n - k - 8..n - k].try_into().expect("eight bytes"));
        let y = u64::from_be_bytes(b[n - k - 8..n - k].try_into().expect("eight bytes"));
        if x != y {
            return k + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    k + a[..n - k]
        .iter()
        .rev()
        .zip(b[..n - k].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn regions(prev: &str, next: &str) -> Vec<String> {
        let mut out = Vec::new();
        let total = changed(prev.as_bytes(), next.as_bytes(), |r, _| {
            out.push(next[r].to_string())
        });
        assert_eq!(total, out.iter().map(String::len).sum::<usize>());
        out
    }

    #[test]
    fn shared_ends_are_counted_eight_bytes_at_a_time_and_then_one() {
        for n in 0..40 {
            let a: Vec<u8> = (0..n as u8).collect();
            for cut in 0..n {
                let mut b = a.clone();
                b[cut] ^= 0x80;
                assert_eq!(same_from_start(&a, &b), cut);
                assert_eq!(same_from_end(&a, &b), n - cut - 1);
            }
            assert_eq!(same_from_start(&a, &a), n);
            assert_eq!(same_from_end(&a, &a), n);
            assert_eq!(same_from_start(&a, &a[..n / 2]), n / 2);
            assert_eq!(same_from_end(&a, &a[n / 2..]), n - n / 2);
        }
    }

    #[test]
    fn a_grown_snapshot_differs_by_what_was_streamed() {
        let prev = r#"{"type":"message_update","event":{"delta":"path.","partial":{"text":"Here is the path."}},"message":{"text":"Here is the path.","usage":{"output":48}}}"#;
        let next = r#"{"type":"message_update","event":{"delta":" token","partial":{"text":"Here is the path. token"}},"message":{"text":"Here is the path. token","usage":{"output":49}}}"#;
        let got = regions(prev, next);
        assert_eq!(got.concat().len(), " token".len() * 3 + 1, "{got:?}");
        assert_eq!(got, [" token", " token", " token", "9"]);
        assert!(regions(prev, prev).is_empty());
        assert_eq!(regions("", next), [next]);
        // A deletion is where it was, and holds nothing.
        assert_eq!(regions(next, ""), [""]);
        let mut at = Vec::new();
        changed(
            b"abcdefgh-ijklmnopqrstuvwxyz",
            b"abcdefghijklmnopqrstuvwxyz",
            |r, replaced| at.push((r, replaced)),
        );
        assert_eq!(at, [(8..8, true)]);
        // One among others.
        let (x, y, z) = (
            "0123456789abcdefghij",
            "klmnopqrstuvwxyzABCD",
            "EFGHIJKLMNOPQRSTUVWX",
        );
        at.clear();
        let prev = format!("{x}-{y}{z}");
        let next = format!("{x}{y}+{z}");
        changed(prev.as_bytes(), next.as_bytes(), |r, replaced| {
            at.push((r, replaced))
        });
        assert_eq!(at, [(20..20, true), (40..41, false)]);
    }

    #[test]
    fn a_long_insertion_is_found_whole_beyond_the_window() {
        let body = "x".repeat(10_000);
        let prev = r#"{"content":[{"text":"a"}],"usage":{"in":1},"id":"q"}"#;
        let next = format!(
            r#"{{"content":[{{"text":"a"}},{{"text":"{body}"}}],"usage":{{"in":1}},"id":"q"}}"#
        );
        let got = regions(prev, &next).concat().len();
        let inserted = body.len() + r#",{"text":""}"#.len();
        assert!((inserted..inserted + 2 * ANCHOR).contains(&got), "{got}");
    }

    proptest! {
        /// Insertions anywhere: the total is never less than the growth, nor more than the
        /// new text.
        #[test]
        fn insertions_are_counted(
            base in proptest::collection::vec(any::<u8>(), 0..3000),
            cuts in proptest::collection::vec((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..300)), 0..6),
        ) {
            let mut next = base.clone();
            let mut inserted = 0;
            for (at, bytes) in &cuts {
                let at = at.index(next.len() + 1);
                next.splice(at..at, bytes.iter().copied());
                inserted += bytes.len();
            }
            let total = changed(&base, &next, |_, _| {});
            prop_assert!(total >= inserted);
            prop_assert!(total <= next.len());
        }

        /// Insertions apart from each other, in random bytes (no false anchors): each is
        /// found with at most a few bytes of slack, however long.
        #[test]
        fn insertions_apart_are_found(
            seed in any::<u64>(),
            cuts in proptest::collection::btree_set(0usize..30, 0..6),
            lens in proptest::collection::vec(1usize..2000, 6),
        ) {
            // Noise that shrinking cannot turn into zeros (splitmix64).
            let mut x = seed;
            let mut noise = move || {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (z ^ (z >> 31)) as u8
            };
            let base: Vec<u8> = (0..2500).map(|_| noise()).collect();
            let mut next = Vec::new();
            let mut from = 0;
            let mut inserted = Vec::new();
            for (&cut, &len) in cuts.iter().zip(&lens) {
                let at = cut * 64;
                next.extend_from_slice(&base[from..at]);
                inserted.push(next.len()..next.len() + len);
                next.extend((0..len).map(|_| noise()));
                from = at;
            }
            next.extend_from_slice(&base[from..]);
            let mut found = Vec::new();
            changed(&base, &next, |r, replaced| {
                assert!(!replaced, "{r:?} was inserted");
                found.push(r)
            });
            prop_assert_eq!(found.len(), inserted.len(), "{:?} for {:?}", found, inserted);
            for (f, i) in found.iter().zip(&inserted) {
                // An insertion that begins as the bytes before it end can be seen a few
                // bytes earlier: as good.
                let near = f.start + ANCHOR >= i.start && f.end <= i.end + ANCHOR;
                prop_assert!(near && (i.len()..=i.len() + ANCHOR).contains(&f.len()), "{:?} for {:?}", f, i);
            }
        }

        /// Any two texts: ranges in order and within the text, and work that stops.
        #[test]
        fn any_texts_give_ordered_ranges(
            a in proptest::collection::vec(0u8..4, 0..2000),
            b in proptest::collection::vec(0u8..4, 0..2000),
        ) {
            let mut last = 0;
            let mut sum = 0;
            let total = changed(&a, &b, |r, replaced| {
                // Empty: a deletion, which replaced bytes.
                assert!(r.start >= last && r.start <= r.end && r.end <= b.len());
                assert!(replaced || !r.is_empty());
                last = r.end;
                sum += r.len();
            });
            prop_assert_eq!(total, sum);
            prop_assert!(total >= b.len().saturating_sub(a.len()));
            prop_assert!(total + same_from_start(&a, &b) <= b.len());
        }
    }
}
