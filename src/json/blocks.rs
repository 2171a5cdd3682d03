//! Skipping a container 64 bytes at a time, and finding where its children lie.
//!
//! Most of what sess skips is one huge array or object: a Claude Code `agent_progress`
//! repeats a subagent's whole history in one member, pi's `message_update` two snapshots.
//! Walking it byte by byte, stopping at every escape, runs near 1 GB/s; this walks it as
//! bit masks of 64-byte blocks (which bytes are quotes, backslashes, openers, closers),
//! works out from them which bytes are inside strings, and counts brackets outside them.
//! Asked for, it also marks the commas outside strings, and keeps those met at depth 1
//! around the spans long enough to matter: what lies between them are the container's
//! members or elements ([`separators`]). Or it keeps every bracket and comma, for the
//! children of every container inside to be read off them ([`structure`]). What it keeps
//! is bounded by the caller: spans of a shortest length, or a largest count.
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
    dispatch::<false, false>(b, i, &mut Spans::new(i, 0, &mut Vec::new()))
}

/// [`container_end`], pushing onto `out` the separators around each of the container's
/// children whose span is `min` bytes or longer, as a pair: the bracket or comma before
/// it and the comma or bracket after it (commas at the container's own level, none inside
/// its children). Its children are found without reading each, so that an array of a
/// thousand short strings costs its 64-byte blocks and not a thousand string scans; and
/// the short ones are not kept, so that an array of a million numbers costs no room.
/// On `None`, `out` holds an unspecified part of them.
pub fn separators(b: &[u8], i: usize, min: usize, out: &mut Vec<usize>) -> Option<usize> {
    dispatch::<true, false>(b, i, &mut Spans::new(i, min, out))
}

/// The last comma at its own level of the container that opens at `b[i]` and does not
/// close within `b`: where the last of its children that `b` holds whole ends, when `b`
/// is the first bytes of it. `None` when there is none, or the container closes.
pub fn last_comma(b: &[u8], i: usize) -> Option<usize> {
    let mut none = Vec::new();
    let mut spans = Spans::new(i, usize::MAX, &mut none);
    match dispatch::<true, false>(b, i, &mut spans) {
        Some(_) => None,
        None => (spans.last > i).then_some(spans.last),
    }
}

/// [`container_end`], pushing onto `out` where every bracket and comma outside strings
/// lies, at every depth, up to the container's own closing bracket: the commas of each
/// container inside are then read off these (in the order met), without walking its
/// bytes again for each depth it lies at. `None` also for a container that holds a
/// backslash outside a string (never JSON), which only the byte walk reads, and once more
/// than `most` are met: an array of a million numbers is better walked again than kept.
pub fn structure(b: &[u8], i: usize, most: usize, out: &mut Vec<usize>) -> Option<usize> {
    dispatch::<true, true>(b, i, &mut Spans::new(i, most, out))
}

fn dispatch<const COMMAS: bool, const ALL: bool>(
    b: &[u8],
    i: usize,
    spans: &mut Spans,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
    {
        // SAFETY: the CPU has these features, as just checked.
        return unsafe { walk_avx2::<COMMAS, ALL>(b, i, spans) };
    }
    walk::<COMMAS, ALL>(b, i, spans, masks::<COMMAS>, prefix_xor)
}

/// [`walk`] compiled for the CPUs of the last ten years: masks from two 32-byte compares
/// per class, bit counts in one instruction, the prefix parity as a carry-less product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1,pclmulqdq")]
unsafe fn walk_avx2<const COMMAS: bool, const ALL: bool>(
    b: &[u8],
    i: usize,
    spans: &mut Spans,
) -> Option<usize> {
    use std::arch::x86_64::*;
    walk::<COMMAS, ALL>(
        b,
        i,
        spans,
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
    )
}

#[inline(always)]
fn walk<const COMMAS: bool, const ALL: bool>(
    b: &[u8],
    i: usize,
    spans: &mut Spans,
    masks: impl Fn(&[u8; 64]) -> Masks,
    prefix_xor: impl Fn(u64) -> u64,
) -> Option<usize> {
    let mut carry = Carry::default();
    let mut at = i;
    let base = spans.out.len();
    while at < b.len() {
        let block = Block::at(b, at);
        match step::<COMMAS, ALL>(masks(block.bytes()), &prefix_xor, &mut carry, at, spans) {
            Step::Next if ALL && spans.out.len() - base > spans.min => {
                spans.out.truncate(base);
                return None;
            }
            Step::Next => at += 64,
            Step::End(k) => return Some(at + k + 1).filter(|&e| e <= b.len()),
            Step::Odd if ALL => {
                spans.out.truncate(base);
                return None;
            }
            Step::Odd => {
                spans.out.truncate(base);
                return scalar::<COMMAS>(b, i, spans);
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

/// Where the children of a container lie, kept as a walk meets its separators: the pairs
/// of separators around each span of `min` bytes or more ([`separators`]).
pub struct Spans<'a> {
    /// The bracket or comma that the next child follows.
    last: usize,
    /// The shortest span kept; with [`structure`], the most separators kept.
    min: usize,
    out: &'a mut Vec<usize>,
}

impl<'a> Spans<'a> {
    /// The spans of the container that opens at `open`, kept in `out`.
    pub fn new(open: usize, min: usize, out: &'a mut Vec<usize>) -> Spans<'a> {
        Spans {
            last: open,
            min,
            out,
        }
    }

    /// A separator at depth 1, `at`: the span it ends is kept when long enough.
    #[inline(always)]
    pub fn meet(&mut self, at: usize) {
        if at - self.last > self.min {
            self.out.extend([self.last, at]);
        }
        self.last = at;
    }

    /// [`Spans::meet`] each comma `at + k` for each bit `k` set in `bits`.
    #[inline(always)]
    fn meet_bits(&mut self, mut bits: u64, at: usize) {
        while bits != 0 {
            self.meet(at + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// One block of [`walk`]; with `COMMAS`, keeps the spans between the commas at depth 1
/// (block offset `at`); with `ALL` too, every bracket and comma instead, up to the
/// container's end.
#[inline(always)]
fn step<const COMMAS: bool, const ALL: bool>(
    m: Masks,
    prefix_xor: impl Fn(u64) -> u64,
    carry: &mut Carry,
    at: usize,
    spans: &mut Spans,
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
    if ALL {
        // Those past the container's end are taken back at its end.
        push_bits(open | close | comma, at, spans.out);
    }
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
        if COMMAS && !ALL && carry.depth == 1 {
            spans.meet_bits(comma & below(k) & !below(from), at);
        }
        from = k + 1;
        if open >> k & 1 == 1 {
            carry.depth += 1;
        } else {
            carry.depth = carry.depth.saturating_sub(1);
            if carry.depth == 0 {
                while ALL && spans.out.last().is_some_and(|&p| p > at + k) {
                    spans.out.pop();
                }
                if COMMAS && !ALL {
                    spans.meet(at + k);
                }
                return Step::End(k);
            }
        }
    }
    if COMMAS && !ALL && carry.depth == 1 {
        spans.meet_bits(comma & !below(from), at);
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
    scalar::<false>(b, i, &mut Spans::new(i, 0, &mut Vec::new()))
}

/// The byte-by-byte walk, keeping the spans of `min` bytes or more between the separators
/// at depth 1 with `COMMAS`: the definition [`separators`] keeps to.
fn scalar<const COMMAS: bool>(b: &[u8], i: usize, spans: &mut Spans) -> Option<usize> {
    spans.last = i;
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
                    if COMMAS {
                        spans.meet(j);
                    }
                    return Some(j + 1);
                }
            }
            b',' if COMMAS && depth == 1 => spans.meet(j),
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
                    for min in [0, 1, 3, 9] {
                        for (name, got) in separator_variants(b, i, min) {
                            let want = scalar_separators(b, i, min);
                            assert_eq!(got, want, "{name}: {text:?} at {i}, {min}");
                        }
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
                walk::<false, false>(
                    b,
                    i,
                    &mut Spans::new(i, 0, none),
                    masks::<false>,
                    prefix_xor,
                ),
            ),
            (
                "portable",
                walk::<false, false>(
                    b,
                    i,
                    &mut Spans::new(i, 0, none),
                    portable_masks,
                    prefix_xor,
                ),
            ),
        ]
    }

    /// [`variants`] of [`separators`]: where each walk ends, and the spans it kept when
    /// it ended (none otherwise).
    type Found = (Option<usize>, Vec<usize>);
    fn separator_variants(b: &[u8], i: usize, min: usize) -> [(&'static str, Found); 3] {
        walk_variants::<false>(b, i, min, &|out| separators(b, i, min, out))
    }

    /// The walk chosen at run time (`chosen`), then the baseline build and the portable
    /// masks keeping separators as `ALL` says, each with `limit` (a span's least length, or
    /// the most kept): where each ends, and what it kept when it ended (none otherwise).
    fn walk_variants<const ALL: bool>(
        b: &[u8],
        i: usize,
        limit: usize,
        chosen: &dyn Fn(&mut Vec<usize>) -> Option<usize>,
    ) -> [(&'static str, Found); 3] {
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
        let baseline = |out: &mut Vec<usize>| {
            let spans = &mut Spans::new(i, limit, out);
            walk::<true, ALL>(b, i, spans, masks::<true>, prefix_xor)
        };
        let portable = |out: &mut Vec<usize>| {
            let spans = &mut Spans::new(i, limit, out);
            walk::<true, ALL>(b, i, spans, portable_masks, prefix_xor)
        };
        [
            ("chosen", run(chosen)),
            ("baseline", run(&baseline)),
            ("portable", run(&portable)),
        ]
    }

    /// Every bracket and comma outside strings from `b[i]` to the container's end, byte by
    /// byte: what [`structure`] finds.
    fn scalar_structure(b: &[u8], i: usize) -> Found {
        let (mut out, mut depth, mut j) = (Vec::new(), 0usize, i);
        while j < b.len() {
            match b[j] {
                b'"' => match crate::json::string_end(b, j) {
                    Some(e) => {
                        j = e;
                        continue;
                    }
                    None => break,
                },
                b'{' | b'[' => {
                    depth += 1;
                    out.push(j);
                }
                b'}' | b']' => {
                    out.push(j);
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return (Some(j + 1), out);
                    }
                }
                b',' => out.push(j),
                _ => {}
            }
            j += 1;
        }
        (None, Vec::new())
    }

    /// [`structure`] with each of the masks, as [`separator_variants`].
    fn structure_variants(b: &[u8], i: usize, most: usize) -> [(&'static str, Found); 3] {
        walk_variants::<true>(b, i, most, &|out| structure(b, i, most, out))
    }

    #[test]
    fn structure_is_every_bracket_and_comma_outside_strings_to_the_end() {
        let object = r#"{"a":[1,2],"b,":"x\",y]","c":{"d":[3,{"e":4}]} , "f":5}"#;
        for pad in 0..130 {
            // Blocks begin where the walk does: padding moves every byte across their edges.
            let long = format!("[{}{object},{object} ,[{object}]],[9]", " ".repeat(pad));
            let want = scalar_structure(long.as_bytes(), 0);
            assert_eq!(want.0, Some(long.len() - 4));
            assert_eq!(want.1.len(), 3 * 15 + 6, "{pad}");
            for (name, got) in structure_variants(long.as_bytes(), 0, usize::MAX) {
                assert_eq!(got, want, "{name} {pad}");
            }
        }
        // A backslash outside a string is left to the byte walk.
        assert_eq!(structure(br#"[1,\"x"]"#, 0, 99, &mut Vec::new()), None);
        // More than it may keep (it counts at the end of each block), and it gives up.
        let many = format!("[{}0]", "0,".repeat(200));
        for most in [0, 49, 190] {
            let mut out = vec![7];
            assert_eq!(structure(many.as_bytes(), 0, most, &mut out), None);
            assert_eq!(out, [7]);
        }
        let mut out = vec![7];
        assert_eq!(
            structure(many.as_bytes(), 0, 202, &mut out),
            Some(many.len())
        );
        assert_eq!(out.len(), 1 + 202);
    }

    /// The commas at depth 1, byte by byte, and where the container ends.
    fn scalar_commas(b: &[u8], i: usize) -> Found {
        let (mut out, mut depth, mut j) = (Vec::new(), 0usize, i);
        while j < b.len() {
            match b[j] {
                b'"' => match crate::json::string_end(b, j) {
                    Some(e) => {
                        j = e;
                        continue;
                    }
                    None => break,
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return (Some(j + 1), out);
                    }
                }
                b',' if depth == 1 => out.push(j),
                _ => {}
            }
            j += 1;
        }
        (None, Vec::new())
    }

    /// The pairs of separators around the spans of `min` bytes or more between the
    /// commas at depth 1: what [`separators`] keeps, and [`scalar`] too.
    fn scalar_separators(b: &[u8], i: usize, min: usize) -> Found {
        let (end, commas) = scalar_commas(b, i);
        let Some(end) = end else {
            return (None, Vec::new());
        };
        let seps: Vec<usize> = [i].into_iter().chain(commas).chain([end - 1]).collect();
        let pairs = seps
            .windows(2)
            .filter(|w| (w[0] + 1..w[1]).len() >= min)
            .flatten();
        let found = (Some(end), pairs.copied().collect());
        let mut out = Vec::new();
        let end = scalar::<true>(b, i, &mut Spans::new(i, min, &mut out));
        assert_eq!((end, out), found, "the byte walk");
        found
    }

    #[test]
    fn separators_are_the_commas_between_children() {
        let text = br#"{"a":[1,2],"b,":"x\",y","c":{"d":[3,{"e":4}]} , "f":5}tail,"#;
        let (end, pairs) = scalar_separators(text, 0, 0);
        assert_eq!(end, Some(text.len() - 5));
        let spans: Vec<&str> = pairs
            .chunks(2)
            .map(|p| std::str::from_utf8(&text[p[0] + 1..p[1]]).unwrap())
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
            let second = at + 1 + object.len() + 1;
            let all = vec![0, at, at, second, second, long.len() - 1];
            assert_eq!(
                scalar_separators(long.as_bytes(), 0, 0),
                (Some(long.len()), all)
            );
            // Of the three spans, the first holds the padding and the last the brackets.
            let spans = [pad + object.len(), object.len() + 1, object.len() + 2];
            for min in [0, object.len() + 2, pad + object.len() + 1, long.len()] {
                let kept: Vec<usize> = [0, at, second, long.len() - 1]
                    .windows(2)
                    .zip(spans)
                    .filter(|(_, len)| *len >= min)
                    .flat_map(|(w, _)| w.to_vec())
                    .collect();
                for (name, got) in separator_variants(long.as_bytes(), 0, min) {
                    assert_eq!(got, (Some(long.len()), kept.clone()), "{name} {pad} {min}");
                }
            }
            for (name, got) in separator_variants(long.as_bytes(), pad + 1, 0) {
                assert_eq!(
                    got.1,
                    pairs.iter().map(|c| c + pad + 1).collect::<Vec<_>>(),
                    "{name}"
                );
            }
            // A block that begins two deep and climbs out to a comma of the outer array.
            let deep = format!("[[{}1],2]", " ".repeat(pad));
            let comma = deep.len() - 3;
            for (min, kept) in [(0, vec![0, comma, comma, comma + 2]), (2, vec![0, comma])] {
                for (name, got) in separator_variants(deep.as_bytes(), 0, min) {
                    assert_eq!(got, (Some(deep.len()), kept.clone()), "{name} {pad}");
                }
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
        fn the_last_comma_of_a_prefix_is_the_byte_walks(b in jsonish(), cut: prop::sample::Index) {
            let b = &b[..cut.index(b.len() + 1)];
            // Byte by byte: the last comma at depth 1 before the container closes, if it
            // does not, or before a string that does not end within the prefix.
            let (mut depth, mut last, mut j) = (0usize, None, 0);
            let want = loop {
                let Some(&c) = b.get(j) else { break last };
                match c {
                    b'"' => match crate::json::string_end(b, j) {
                        Some(e) => {
                            j = e;
                            continue;
                        }
                        None => break last,
                    },
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break None;
                        }
                    }
                    b',' if depth == 1 => last = Some(j),
                    _ => {}
                }
                j += 1;
            };
            prop_assert_eq!(last_comma(b, 0), want);
        }

        #[test]
        fn agrees_with_the_byte_walk(
            b in jsonish(),
            raw in prop::collection::vec(any::<u8>(), 0..300),
            min in 0usize..12,
        ) {
            let mut raw = raw;
            raw.insert(0, b'{');
            for text in [&b, &raw] {
                for (name, got) in variants(text, 0) {
                    prop_assert_eq!(got, scalar_end(text, 0), "{}", name);
                }
                for (name, got) in separator_variants(text, 0, min) {
                    prop_assert_eq!(&got, &scalar_separators(text, 0, min), "{}", name);
                    prop_assert_eq!(got.0, scalar_end(text, 0));
                }
                // Where a backslash outside a string is met, the byte walk alone reads on.
                for (name, got) in structure_variants(text, 0, usize::MAX) {
                    if got.0.is_some() || !text.contains(&b'\\') {
                        prop_assert_eq!(&got, &scalar_structure(text, 0), "{}", name);
                    }
                }
            }
        }
    }
}
