//! Skipping a container 64 bytes at a time, and finding where its children lie.
//!
//! Most of what sess skips is one huge array or object: a Claude Code `agent_progress`
//! repeats a subagent's whole history in one member, pi's `message_update` two snapshots.
//! Walking it byte by byte, stopping at every escape, runs near 1 GB/s; this walks it as
//! bit masks of 64-byte blocks (which bytes are quotes, backslashes, openers, closers),
//! works out from them which bytes are inside strings, and counts brackets outside them.
//! Asked for, it also marks the commas outside strings, and keeps those met at depth 1:
//! what lies between them are the container's members or elements ([`separators`]).
//!
//! The answer is the byte-by-byte walk's answer on every input, JSON or not. The masks
//! treat every backslash as an escape, which the byte walk does only inside strings; the
//! two agree until the first backslash outside a string, and a block holding one (never
//! valid JSON) hands the whole container back to the byte walk.

/// Bit `k` of each mask describes byte `k` of a block.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
    /// Only for [`separators`]: [`container_end`] does without the compare.
    comma: u64,
}

/// The state carried from one block to the next.
#[derive(Default)]
struct Carry {
    /// The first byte of the next block is escaped (the block ended in an odd backslash run).
    escaped: bool,
    /// The next block starts inside a string.
    in_string: bool,
    /// Open containers.
    depth: u64,
}

/// The masks of a 64-byte block from `64 / LANES` compares per class, with the intrinsics
/// of one vector width (SSE2's 16 lanes, AVX2's 32). Call inside `unsafe`, where those
/// intrinsics are available.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_masks {
    ($block:expr, $commas:expr, $lanes:expr, $bits:ty, $vec:ty, $load:ident, $set1:ident,
     $eq:ident, $or:ident, $movemask:ident) => {{
        let mut m = Masks {
            quote: 0,
            backslash: 0,
            open: 0,
            close: 0,
            comma: 0,
        };
        let (quote, backslash) = ($set1(b'"' as i8), $set1(b'\\' as i8));
        let (open, close) = ($set1(b'{' as i8), $set1(b'}' as i8));
        let (bit5, comma) = ($set1(0x20), $set1(b',' as i8));
        for k in 0..64 / $lanes {
            let v = $load($block.as_ptr().add($lanes * k).cast::<$vec>());
            let folded = $or(v, bit5);
            let bits = |x: $vec| u64::from($movemask(x) as $bits) << ($lanes * k);
            m.quote |= bits($eq(v, quote));
            m.backslash |= bits($eq(v, backslash));
            m.open |= bits($eq(folded, open));
            m.close |= bits($eq(folded, close));
            if $commas {
                m.comma |= bits($eq(v, comma));
            }
        }
        m
    }};
}

/// The end (one past the closing bracket) of the container opening at `b[i]`, as
/// [`scalar_end`] finds it, or `None` when it does not close within `b`.
pub fn container_end(b: &[u8], i: usize) -> Option<usize> {
    dispatch::<false>(b, i, &mut Vec::new())
}

/// [`container_end`], pushing onto `out` where the container's commas at its own level
/// lie (those between its members or elements, none inside them): its children are the
/// spans between them, found without reading each child, so that an array of a thousand
/// short strings costs its 64-byte blocks and not a thousand string scans. On `None`,
/// `out` holds an unspecified part of them.
pub fn separators(b: &[u8], i: usize, out: &mut Vec<usize>) -> Option<usize> {
    dispatch::<true>(b, i, out)
}

fn dispatch<const COMMAS: bool>(b: &[u8], i: usize, out: &mut Vec<usize>) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
    {
        // SAFETY: the CPU has these features, as just checked.
        return unsafe { walk_avx2::<COMMAS>(b, i, out) };
    }
    walk::<COMMAS>(b, i, masks::<COMMAS>, prefix_xor, out)
}

/// [`walk`] compiled for the CPUs of the last ten years: masks from two 32-byte compares
/// per class, bit counts in one instruction, the prefix parity as a carry-less product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1,pclmulqdq")]
unsafe fn walk_avx2<const COMMAS: bool>(b: &[u8], i: usize, out: &mut Vec<usize>) -> Option<usize> {
    use std::arch::x86_64::*;
    walk::<COMMAS>(
        b,
        i,
        // SAFETY: AVX2 is enabled for this function; each unaligned load reads bytes
        // 32k..32k+32 of the 64-byte block.
        |block| unsafe {
            simd_masks!(
                block,
                COMMAS,
                32,
                u32,
                __m256i,
                _mm256_loadu_si256,
                _mm256_set1_epi8,
                _mm256_cmpeq_epi8,
                _mm256_or_si256,
                _mm256_movemask_epi8
            )
        },
        |x| {
            // The carry-less product of x and all ones has, at bit k, the parity of bits 0..=k.
            let p = _mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0);
            _mm_cvtsi128_si64(p) as u64
        },
        out,
    )
}

#[inline(always)]
fn walk<const COMMAS: bool>(
    b: &[u8],
    i: usize,
    masks: impl Fn(&[u8; 64]) -> Masks,
    prefix_xor: impl Fn(u64) -> u64,
    out: &mut Vec<usize>,
) -> Option<usize> {
    let mut carry = Carry::default();
    let mut at = i;
    let base = out.len();
    while at < b.len() {
        let block = Block::at(b, at);
        match step::<COMMAS>(masks(block.bytes()), &prefix_xor, &mut carry, at, out) {
            Step::Next => at += 64,
            Step::End(k) => return Some(at + k + 1).filter(|&e| e <= b.len()),
            Step::Odd => {
                out.truncate(base);
                return scalar::<COMMAS>(b, i, out);
            }
        }
    }
    None
}

enum Step {
    Next,
    /// The container closes at this byte of the block.
    End(usize),
    /// A backslash outside a string: not JSON; the byte walk decides.
    Odd,
}

/// One block of [`walk`]; with `COMMAS`, pushes the commas at depth 1 (block offset `at`).
#[inline(always)]
fn step<const COMMAS: bool>(
    m: Masks,
    prefix_xor: impl Fn(u64) -> u64,
    carry: &mut Carry,
    at: usize,
    out: &mut Vec<usize>,
) -> Step {
    let escaped = escapes(m.backslash, &mut carry.escaped);
    let quotes = m.quote & !escaped;
    // 1 on the opening quote and the bytes of a string, 0 on its closing quote.
    let inside = prefix_xor(quotes) ^ if carry.in_string { !0 } else { 0 };
    carry.in_string = inside >> 63 == 1;
    if m.backslash & !inside != 0 {
        return Step::Odd;
    }
    let (open, close) = (m.open & !inside, m.close & !inside);
    let comma = if COMMAS { m.comma & !inside } else { 0 };
    // Cannot reach depth 0 in this block (nor depth 1, where the commas that count lie),
    // whatever the order.
    if carry.depth > u64::from(COMMAS) + u64::from(close.count_ones()) {
        carry.depth += u64::from(open.count_ones());
        carry.depth -= u64::from(close.count_ones());
        return Step::Next;
    }
    // Between two brackets the depth holds: the commas there count when it is 1.
    let mut from = 0;
    let mut brackets = open | close;
    while brackets != 0 {
        let k = brackets.trailing_zeros() as usize;
        brackets &= brackets - 1;
        if COMMAS && carry.depth == 1 {
            push_bits(comma & below(k) & !below(from), at, out);
        }
        from = k + 1;
        if open >> k & 1 == 1 {
            carry.depth += 1;
        } else {
            carry.depth = carry.depth.saturating_sub(1);
            if carry.depth == 0 {
                return Step::End(k);
            }
        }
    }
    if COMMAS && carry.depth == 1 {
        push_bits(comma & !below(from), at, out);
    }
    Step::Next
}

/// The bits below bit `k` (all 64 for `k` 64).
fn below(k: usize) -> u64 {
    1u64.checked_shl(k as u32).map_or(!0, |b| b - 1)
}

/// Pushes `at + k` for each bit `k` set in `bits`.
fn push_bits(mut bits: u64, at: usize, out: &mut Vec<usize>) {
    while bits != 0 {
        out.push(at + bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

/// The bytes escaped by a backslash that matter here: the byte after each run of
/// backslashes of odd length (the run's own backslashes escape each other in pairs).
/// `carry` says the first byte is escaped, and is set when the last run escapes the next
/// block's first byte. Branch-free, after Langdale and Lemire's simdjson paper: adding a
/// run's start bit to the run carries through it to the byte after it, and whether that
/// byte is escaped is the parity of the run's length, read off the parity of its start.
fn escapes(backslash: u64, carry: &mut bool) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let first = u64::from(std::mem::take(carry));
    let b = backslash & !first;
    let starts = b & !(b << 1);
    let even_ends = b.wrapping_add(starts & EVEN) & !b;
    let (odd_sum, out) = b.overflowing_add(starts & !EVEN);
    *carry = out;
    first | (even_ends & !EVEN) | (odd_sum & !b & EVEN)
}

/// Bit `k` of the result is the parity of bits `0..=k` of `x`.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// 64 bytes of the input, the last block padded with spaces (which no mask marks).
enum Block<'a> {
    Whole(&'a [u8; 64]),
    Tail([u8; 64]),
}

impl<'a> Block<'a> {
    fn at(b: &'a [u8], at: usize) -> Block<'a> {
        match b.get(at..at + 64) {
            Some(s) => Block::Whole(s.try_into().expect("64 bytes")),
            None => {
                let mut pad = [b' '; 64];
                pad[..b.len() - at].copy_from_slice(&b[at..]);
                Block::Tail(pad)
            }
        }
    }

    fn bytes(&self) -> &[u8; 64] {
        match self {
            Block::Whole(b) => b,
            Block::Tail(b) => b,
        }
    }
}

/// `{` and `[` are 0x7B and 0x5B, `}` and `]` 0x7D and 0x5D: setting bit 5 maps each pair to
/// one byte, and no other byte lands on either.
#[cfg(target_arch = "x86_64")]
fn masks<const COMMAS: bool>(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline, so every intrinsic here is available;
    // each unaligned load reads bytes 16k..16k+16 of the 64-byte block.
    unsafe {
        simd_masks!(
            block,
            COMMAS,
            16,
            u16,
            __m128i,
            _mm_loadu_si128,
            _mm_set1_epi8,
            _mm_cmpeq_epi8,
            _mm_or_si128,
            _mm_movemask_epi8
        )
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn masks<const COMMAS: bool>(block: &[u8; 64]) -> Masks {
    portable_masks(block)
}

#[cfg(any(test, not(target_arch = "x86_64")))]
fn portable_masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
        comma: 0,
    };
    for (k, &c) in block.iter().enumerate() {
        m.quote |= u64::from(c == b'"') << k;
        m.backslash |= u64::from(c == b'\\') << k;
        m.open |= u64::from(c | 0x20 == b'{') << k;
        m.close |= u64::from(c | 0x20 == b'}') << k;
        m.comma |= u64::from(c == b',') << k;
    }
    m
}

/// The byte-by-byte walk: the definition [`container_end`] keeps to.
pub fn scalar_end(b: &[u8], i: usize) -> Option<usize> {
    scalar::<false>(b, i, &mut Vec::new())
}

/// The byte-by-byte walk, pushing the commas at depth 1 with `COMMAS`: the definition
/// [`separators`] keeps to.
fn scalar<const COMMAS: bool>(b: &[u8], i: usize, out: &mut Vec<usize>) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = super::string_end(b, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            b',' if COMMAS && depth == 1 => out.push(j),
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn agrees_with_the_byte_walk_at_block_edges() {
        // Strings, escapes and brackets straddling the 64-byte boundaries.
        for pad in 0..130 {
            for tail in [
                r#"{"a":"x\"]}","b":[1,{"c":"\\"}],"d":"\\\"}"}"#,
                r#"[["\\\\\\"],"}"]"#,
                r#"{"a":[}"#,
                r#"{"a":"\"#,
                r#"{"a":\"}"]}"#,
                r#"{}}"#,
            ] {
                let text = format!("[{}{tail}]", " ".repeat(pad));
                let b = text.as_bytes();
                for i in [0, pad + 1] {
                    for (name, got) in variants(b, i) {
                        assert_eq!(got, scalar_end(b, i), "{name}: {text:?} at {i}");
                    }
                    for (name, got) in separator_variants(b, i) {
                        assert_eq!(got, scalar_separators(b, i), "{name}: {text:?} at {i}");
                    }
                }
            }
        }
    }

    /// Every way this machine can walk: the one chosen at run time, the baseline build and
    /// the portable masks.
    fn variants(b: &[u8], i: usize) -> [(&'static str, Option<usize>); 3] {
        let none = &mut Vec::new();
        [
            ("chosen", container_end(b, i)),
            (
                "baseline",
                walk::<false>(b, i, masks::<false>, prefix_xor, none),
            ),
            (
                "portable",
                walk::<false>(b, i, portable_masks, prefix_xor, none),
            ),
        ]
    }

    /// [`variants`] of [`separators`]: where each walk ends, and the commas it found when
    /// it ended (none otherwise).
    type Found = (Option<usize>, Vec<usize>);
    fn separator_variants(b: &[u8], i: usize) -> [(&'static str, Found); 3] {
        let run = |walk: &dyn Fn(&mut Vec<usize>) -> Option<usize>| {
            let mut out = vec![usize::MAX];
            let end = walk(&mut out);
            assert_eq!(out.first(), Some(&usize::MAX), "what was in out stays");
            out.remove(0);
            if end.is_none() {
                out.clear();
            }
            (end, out)
        };
        [
            ("chosen", run(&|out| separators(b, i, out))),
            (
                "baseline",
                run(&|out| walk::<true>(b, i, masks::<true>, prefix_xor, out)),
            ),
            (
                "portable",
                run(&|out| walk::<true>(b, i, portable_masks, prefix_xor, out)),
            ),
        ]
    }

    fn scalar_separators(b: &[u8], i: usize) -> Found {
        let mut out = Vec::new();
        let end = scalar::<true>(b, i, &mut out);
        if end.is_none() {
            out.clear();
        }
        (end, out)
    }

    #[test]
    fn separators_are_the_commas_between_children() {
        let text = br#"{"a":[1,2],"b,":"x\",y","c":{"d":[3,{"e":4}]} , "f":5}tail,"#;
        let (end, commas) = scalar_separators(text, 0);
        assert_eq!(end, Some(text.len() - 5));
        let spans: Vec<&str> = std::iter::once(0)
            .chain(commas.iter().copied())
            .zip(commas.iter().copied().chain(end.map(|e| e - 1)))
            .map(|(a, b)| std::str::from_utf8(&text[a + 1..b]).unwrap())
            .collect();
        assert_eq!(
            spans,
            [
                r#""a":[1,2]"#,
                r#""b,":"x\",y""#,
                r#""c":{"d":[3,{"e":4}]} "#,
                r#" "f":5"#
            ]
        );
        // Blocks begin where the walk does: the padding moves every byte of the object
        // across their edges, a nested container's end and the comma after it too.
        let object = std::str::from_utf8(&text[..end.unwrap()]).unwrap();
        for pad in 0..130 {
            let long = format!("[{}{object},{object} ,[{object}]]", " ".repeat(pad));
            let at = pad + 1 + object.len();
            let want = (Some(long.len()), vec![at, at + 1 + object.len() + 1]);
            assert_eq!(scalar_separators(long.as_bytes(), 0), want);
            for (name, got) in separator_variants(long.as_bytes(), 0) {
                assert_eq!(got, want, "{name} {pad}");
            }
            for (name, got) in separator_variants(long.as_bytes(), pad + 1) {
                assert_eq!(
                    got.1,
                    commas.iter().map(|c| c + pad + 1).collect::<Vec<_>>(),
                    "{name}"
                );
            }
            // A block that begins two deep and climbs out to a comma of the outer array.
            let deep = format!("[[{}1],2]", " ".repeat(pad));
            for (name, got) in separator_variants(deep.as_bytes(), 0) {
                assert_eq!(
                    got,
                    (Some(deep.len()), vec![deep.len() - 3]),
                    "{name} {pad}"
                );
            }
        }
    }

    fn jsonish() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\"".to_vec()),
            Just(b"\\".to_vec()),
            Just(b"{".to_vec()),
            Just(b"}".to_vec()),
            Just(b"[".to_vec()),
            Just(b"]".to_vec()),
            Just(b",".to_vec()),
            "[a-z \\n]{0,70}".prop_map(String::into_bytes),
        ];
        prop::collection::vec(piece, 0..200).prop_map(|v| {
            let mut out = b"[".to_vec();
            out.extend(v.concat());
            out
        })
    }

    proptest! {
        #[test]
        fn the_portable_masks_are_the_same(block in prop::array::uniform32(any::<u8>()), seed: u8) {
            let mut b = [0u8; 64];
            for (k, x) in b.iter_mut().enumerate() {
                // Half the bytes from the interesting ones, half random.
                *x = if k % 2 == 0 { b"\"\\{}[], "[(seed as usize + k) % 8] } else { block[k / 2] };
            }
            prop_assert_eq!(masks::<true>(&b), portable_masks(&b));
            let m = masks::<false>(&b);
            prop_assert_eq!(m, Masks { comma: 0, ..portable_masks(&b) });
        }

        #[test]
        fn agrees_with_the_byte_walk(b in jsonish(), raw in prop::collection::vec(any::<u8>(), 0..300)) {
            let mut raw = raw;
            raw.insert(0, b'{');
            for text in [&b, &raw] {
                for (name, got) in variants(text, 0) {
                    prop_assert_eq!(got, scalar_end(text, 0), "{}", name);
                }
                for (name, got) in separator_variants(text, 0) {
                    prop_assert_eq!(&got, &scalar_separators(text, 0), "{}", name);
                    prop_assert_eq!(got.0, scalar_end(text, 0));
                }
            }
        }
    }
}
