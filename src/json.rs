//! A small scanner over raw JSON text.
//!
//! sess never re-serializes a line it keeps, so most decisions are made on the raw bytes:
//! find a top-level field, skip a value, check that a line is well-formed. Nothing here
//! recurses, so a line of a million `[` cannot overflow the stack.
//!
//! The validator is RFC 8259 strict with one deliberate extension: `\uXXXX` escapes of lone
//! surrogates are accepted, because JavaScript's `JSON.stringify` writes them and the logs we
//! read come from JavaScript producers.

pub mod blocks;

use std::borrow::Cow;
use std::fmt;

/// A syntax error at a byte offset within the scanned text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub expected: &'static str,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}", self.expected)
    }
}

impl std::error::Error for SyntaxError {}

fn err<T>(offset: usize, expected: &'static str) -> Result<T, SyntaxError> {
    Err(SyntaxError { offset, expected })
}

/// Whether `line` begins with `prefix`, a line tag of 16 bytes or more (`{"type":"…`).
/// Every line is asked this about the tags of interned and snapshot rows; the first 16
/// bytes, compared as one word, tell almost every line apart without a call to `memcmp`.
#[inline]
pub fn starts_with_tag(line: &[u8], prefix: &[u8]) -> bool {
    let (Some(head), Some(want)) = (line.first_chunk::<16>(), prefix.first_chunk::<16>()) else {
        return line.starts_with(prefix);
    };
    u128::from_ne_bytes(*head) == u128::from_ne_bytes(*want) && line.starts_with(prefix)
}

/// `text` without the UTF-8 byte-order mark it may begin with, which RFC 8259 lets a
/// parser pass over (editors on Windows write one before a file's first line).
pub fn strip_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text)
}

/// JSON insignificant whitespace.
#[inline]
pub fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline]
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// Checks that `text` is exactly one JSON value, optionally surrounded by whitespace.
pub fn validate(text: &[u8]) -> Result<(), SyntaxError> {
    if let Err(e) = std::str::from_utf8(text) {
        return err(e.valid_up_to(), "valid UTF-8");
    }
    let start = skip_ws(text, 0);
    if start == text.len() {
        return err(start, "a JSON value");
    }
    let end = value_end_within(text, start, usize::MAX)?;
    let end = skip_ws(text, end);
    if end != text.len() {
        return err(end, "end of line after the JSON value");
    }
    Ok(())
}

/// The end of the one value starting at `b[i]`, strictly checked, UTF-8 included: for
/// checking the part of a line that is kept when the rest is only skipped.
pub fn value_end_strict(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    let end = value_end_within(b, i, usize::MAX)?;
    match std::str::from_utf8(&b[i..end]) {
        Ok(_) => Ok(end),
        Err(e) => err(i + e.valid_up_to(), "valid UTF-8"),
    }
}

/// The end of the one value starting at `b[i]`, strictly checked but not as UTF-8 (its
/// reader checks the parts it keeps), and nesting at most `room` levels below it: for a
/// value at depth `d` of a line, `room` is [`crate::value::MAX_DEPTH`] `- d`, the limit a
/// parse of the whole line enforces.
pub fn value_end_within(b: &[u8], i: usize, room: usize) -> Result<usize, SyntaxError> {
    Validator { b, room }.value(i)
}

/// Strict, iterative validation. UTF-8 is checked once up front by `validate`.
struct Validator<'a> {
    b: &'a [u8],
    /// How many containers may be open at once.
    room: usize,
}

impl Validator<'_> {
    fn value(&self, mut i: usize) -> Result<usize, SyntaxError> {
        // The stack holds one entry per open container: true for an object.
        let mut stack: Vec<bool> = Vec::new();
        loop {
            // Expect a value at i.
            i = skip_ws(self.b, i);
            match self.b.get(i) {
                Some(b'{') => {
                    i = skip_ws(self.b, i + 1);
                    if self.b.get(i) == Some(&b'}') {
                        i += 1;
                    } else {
                        self.open(&mut stack, true, i)?;
                        i = self.key_colon(i)?;
                        continue;
                    }
                }
                Some(b'[') => {
                    i = skip_ws(self.b, i + 1);
                    if self.b.get(i) == Some(&b']') {
                        i += 1;
                    } else {
                        self.open(&mut stack, false, i)?;
                        continue;
                    }
                }
                Some(b'"') => i = self.string(i)?,
                Some(b't') => i = self.literal(i, b"true")?,
                Some(b'f') => i = self.literal(i, b"false")?,
                Some(b'n') => i = self.literal(i, b"null")?,
                Some(b'-' | b'0'..=b'9') => i = number_end(self.b, i)?,
                _ => return err(i, "a JSON value"),
            }
            // After a value: close containers or move to the next member.
            loop {
                let Some(&in_object) = stack.last() else {
                    return Ok(i);
                };
                i = skip_ws(self.b, i);
                match self.b.get(i) {
                    Some(b',') => {
                        i += 1;
                        if in_object {
                            i = self.key_colon(skip_ws(self.b, i))?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {
                        stack.pop();
                        i += 1;
                    }
                    Some(b']') if !in_object => {
                        stack.pop();
                        i += 1;
                    }
                    _ if in_object => return err(i, "',' or '}'"),
                    _ => return err(i, "',' or ']'"),
                }
            }
        }
    }

    /// Opens a container (`true` for an object) whose first member is at `b[i]`.
    fn open(&self, stack: &mut Vec<bool>, object: bool, i: usize) -> Result<(), SyntaxError> {
        if stack.len() == self.room {
            return err(i, "nesting no deeper than 1000");
        }
        stack.push(object);
        Ok(())
    }

    fn key_colon(&self, i: usize) -> Result<usize, SyntaxError> {
        if self.b.get(i) != Some(&b'"') {
            return err(i, "a string key");
        }
        let i = skip_ws(self.b, self.string(i)?);
        if self.b.get(i) != Some(&b':') {
            return err(i, "':'");
        }
        Ok(i + 1)
    }

    fn literal(&self, i: usize, word: &[u8]) -> Result<usize, SyntaxError> {
        if self.b[i..].starts_with(word) {
            Ok(i + word.len())
        } else {
            err(i, "a JSON value")
        }
    }

    fn string(&self, i: usize) -> Result<usize, SyntaxError> {
        string_end_strict(self.b, i)
    }
}

/// `i` is at an opening quote; returns the index after the closing quote, checking escapes
/// and raw control characters (not UTF-8: `validate` checks that once per line).
pub fn string_end_strict(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    let mut j = i + 1;
    loop {
        let Some(k) = memchr::memchr2(b'"', b'\\', &b[j..]) else {
            return err(b.len(), "a closing '\"'");
        };
        if let Some(c) = find_control(&b[j..j + k]) {
            return err(j + c, "no raw control character in a string (escape it)");
        }
        j += k;
        if b[j] == b'"' {
            return Ok(j + 1);
        }
        j = escape_end(b, j)?;
    }
}

/// The first byte below 0x20, eight bytes at a time: a byte below 0x20 borrows when 0x20 is
/// subtracted from it and has its high bit clear; the lowest such byte is always a true
/// hit (borrows only travel upwards).
pub fn find_control(b: &[u8]) -> Option<usize> {
    const LOW: u64 = 0x2020_2020_2020_2020;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(8);
    for (n, chunk) in chunks.by_ref().enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let hit = x.wrapping_sub(LOW) & !x & HIGH;
        if hit != 0 {
            return Some(n * 8 + (hit.trailing_zeros() / 8) as usize);
        }
    }
    let done = b.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .position(|&c| c < 0x20)
        .map(|k| done + k)
}

/// `i` is at a backslash; returns the index after the escape.
fn escape_end(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let hex = b.get(i + 2..i + 6).unwrap_or(&[]);
            if hex.len() == 4 && hex.iter().all(u8::is_ascii_hexdigit) {
                Ok(i + 6)
            } else {
                err(i, "four hex digits after \\u")
            }
        }
        _ => err(i, "a valid escape"),
    }
}

/// Returns the end of a strict JSON number starting at `i`.
pub fn number_end(b: &[u8], mut i: usize) -> Result<usize, SyntaxError> {
    let digits = |b: &[u8], mut i: usize| {
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, i - s)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(b, i).0,
        _ => return err(i, "a digit"),
    }
    if b.get(i) == Some(&b'.') {
        let (j, n) = digits(b, i + 1);
        if n == 0 {
            return err(j, "a digit after '.'");
        }
        i = j;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (j, n) = digits(b, i);
        if n == 0 {
            return err(j, "a digit in the exponent");
        }
        i = j;
    }
    Ok(i)
}

/// Skips one value starting at `i` (after whitespace) without validating it fully.
/// Fast path for field lookup; returns `None` on text that is not JSON-shaped.
pub fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    let i = skip_ws(b, i);
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => blocks::container_end(b, i),
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !is_ws(b[j]) {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// `i` is at an opening quote; returns the index after the closing quote.
pub fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', &b[j..])?;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
        if j > b.len() {
            return None;
        }
    }
}

/// Iterates the members of the top-level object in `b` as (raw key content, raw value).
/// The key is the text between the quotes, escapes undecoded. Stops at the first
/// malformed member; callers that need certainty validate first.
pub fn members(b: &[u8]) -> Members<'_> {
    let i = skip_ws(b, 0);
    let ok = b.get(i) == Some(&b'{');
    Members {
        b,
        i: if ok { i + 1 } else { b.len() },
        done: !ok,
    }
}

pub struct Members<'a> {
    b: &'a [u8],
    i: usize,
    done: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let member = member_head(self.b, self.i)
            .and_then(|(key, vstart)| Some((key, vstart, skip_value(self.b, vstart)?)));
        match member {
            Some((key, vstart, vend)) => {
                self.i = vend;
                Some((key, &self.b[vstart..vend]))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

/// Iterates the elements of the top-level array in `b`, raw. Stops at the first malformed
/// element; callers that need certainty validate first.
pub fn elements(b: &[u8]) -> Elements<'_> {
    let i = skip_ws(b, 0);
    let ok = b.get(i) == Some(&b'[');
    Elements {
        b,
        i: if ok { i + 1 } else { b.len() },
    }
}

/// Walks the array that starts at `b[i]` (after whitespace): `visit` is called with the
/// start of each element and returns where that element ends, having read it as it
/// needed (so nested arrays are walked in one pass). Returns where the array ends, after
/// its `]`, or `None` if it is not a well-formed array of elements `visit` accepted.
pub fn each_element(
    b: &[u8],
    i: usize,
    visit: &mut dyn FnMut(&[u8], usize) -> Option<usize>,
) -> Option<usize> {
    let mut i = skip_ws(b, i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(i + 1);
    }
    each_element_from(b, i, visit)
}

/// [`each_element`] from the element that starts at `b[i]` to the array's end: a walk that
/// has passed by the elements before it goes on without reading them again.
pub fn each_element_from(
    b: &[u8],
    mut i: usize,
    visit: &mut dyn FnMut(&[u8], usize) -> Option<usize>,
) -> Option<usize> {
    loop {
        i = skip_ws(b, visit(b, i)?);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(i + 1),
            _ => return None,
        }
    }
}

pub struct Elements<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let mut i = skip_ws(self.b, self.i);
        if self.b.get(i) == Some(&b',') {
            i = skip_ws(self.b, i + 1);
        }
        let end = match self.b.get(i) {
            None | Some(b']') => None,
            Some(_) => skip_value(self.b, i),
        };
        let Some(end) = end else {
            self.i = self.b.len();
            return None;
        };
        self.i = end;
        Some(&self.b[i..end])
    }
}

/// The member starting at `i` (after whitespace and a comma, if any): its raw key content
/// and where its value starts. `None` at the object's end or at anything malformed.
pub fn member_head(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let mut i = skip_ws(b, i);
    if b.get(i) == Some(&b',') {
        i = skip_ws(b, i + 1);
    }
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let key_end = string_end(b, i)?;
    let colon = skip_ws(b, key_end);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some((&b[i + 1..key_end - 1], skip_ws(b, colon + 1)))
}

/// The raw value of a top-level field, found without looking past it: only the members
/// before it are skipped. A key that repeats (no producer writes one) is read at its first
/// occurrence. Keys spelled with escapes are compared decoded.
pub fn field<'a>(line: &'a [u8], key: &str) -> Option<&'a [u8]> {
    Lookup::new(line).field(key)
}

/// The bytes from where the value of the top-level member `key` begins to the end of the
/// line, its end not looked for: for reading into a value that may be cut short (the first
/// bytes of a long line).
pub fn from_field<'a>(line: &'a [u8], key: &str) -> Option<&'a [u8]> {
    Lookup::new(line).value_start(0, key).map(|at| &line[at..])
}

/// The raw value at a dotted path of object keys (`assistantMessageEvent.partial`). The
/// objects on the way are entered, not skipped: the answer is the same (their members are
/// read up to the one named), without walking what follows it.
pub fn path<'a>(line: &'a [u8], dotted: &str) -> Option<&'a [u8]> {
    Lookup::new(line).path(dotted)
}

/// Lookups of several fields of one line ([`field`], [`path`]) that walk a long value
/// once: each long value skipped on the way is remembered by where it starts. Claude
/// Code's `data.type` and `data.agentId` both lie after a `data.normalizedMessages` of
/// megabytes, and reading the two walked those bytes twice (a tenth of the packing thread
/// of a Claude Code pack).
pub struct Lookup<'a> {
    line: &'a [u8],
    /// Values of `long` bytes or more skipped so far: where each starts and ends.
    skipped: Vec<(usize, usize)>,
    long: usize,
}

impl<'a> Lookup<'a> {
    pub fn new(line: &'a [u8]) -> Lookup<'a> {
        // Shorter values are walked again: remembering them would cost more.
        Lookup::remembering(line, 4096)
    }

    fn remembering(line: &'a [u8], long: usize) -> Lookup<'a> {
        Lookup {
            line,
            skipped: Vec::new(),
            long,
        }
    }

    pub fn line(&self) -> &'a [u8] {
        self.line
    }

    /// [`field`] of the line.
    pub fn field(&mut self, key: &str) -> Option<&'a [u8]> {
        self.path_from(0, "", key)
    }

    /// [`path`] of the line.
    pub fn path(&mut self, dotted: &str) -> Option<&'a [u8]> {
        let (parents, last) = dotted.rsplit_once('.').unwrap_or(("", dotted));
        self.path_from(0, parents, last)
    }

    fn path_from(&mut self, mut obj: usize, parents: &str, last: &str) -> Option<&'a [u8]> {
        for seg in parents.split('.').filter(|_| !parents.is_empty()) {
            obj = self.value_start(obj, seg)?;
        }
        let start = self.value_start(obj, last)?;
        Some(&self.line[start..self.skip(start)?])
    }

    /// Where the value of the member `key` of the object at `obj` starts. Unlike
    /// [`Lookup::field`], it does not skip that value, which is what a path through a huge
    /// object needs: skipping `data` to reach `data.type`, and then its members, walked
    /// those bytes twice.
    fn value_start(&mut self, obj: usize, key: &str) -> Option<usize> {
        let b = self.line;
        let i = skip_ws(b, obj);
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut i = i + 1;
        loop {
            let (k, vstart) = member_head(b, i)?;
            if key_is(k, key) {
                return Some(vstart);
            }
            i = self.skip(vstart)?;
        }
    }

    /// [`skip_value`], remembered for long values.
    fn skip(&mut self, start: usize) -> Option<usize> {
        if let Some(&(_, end)) = self.skipped.iter().find(|(s, _)| *s == start) {
            return Some(end);
        }
        let end = skip_value(self.line, start)?;
        if end - start >= self.long {
            self.skipped.push((start, end));
        }
        Some(end)
    }
}

/// Whether a raw key (text between the quotes) spells `key`.
pub fn key_is(raw: &[u8], key: &str) -> bool {
    if raw == key.as_bytes() {
        return true;
    }
    raw.contains(&b'\\') && decode_string(raw).is_some_and(|k| k == key)
}

/// Decodes a raw JSON string value (with its quotes). Borrowed when it holds no escape.
/// Lone surrogate escapes decode to U+FFFD; use this for decisions, never for output.
pub fn str_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    decode_string(inner).map(Cow::Owned)
}

/// Decodes the content of a JSON string (between the quotes), replacing lone surrogates.
pub fn decode_string(inner: &[u8]) -> Option<String> {
    let units = decode_utf16_units(inner)?;
    Some(String::from_utf16_lossy(&units))
}

/// Decodes the content of a JSON string into UTF-16 code units, exactly as JavaScript holds
/// it: lone surrogates stay lone.
pub fn decode_utf16_units(inner: &[u8]) -> Option<Vec<u16>> {
    std::str::from_utf8(inner).ok()?;
    decode_valid(inner).map(|(units, _)| units)
}

/// The UTF-16 code units of the content of a JSON string already known to be valid UTF-8,
/// and whether it is spelled as `JSON.stringify` spells it ([`is_canonical_string`]),
/// told in the same pass. `None` for a bad escape.
pub fn decode_valid(inner: &[u8]) -> Option<(Vec<u16>, bool)> {
    let mut out = Vec::with_capacity(inner.len());
    let mut canonical = true;
    let mut at = 0;
    while at < inner.len() {
        // Runs of ASCII without an escape are most of any text: copied a run at a time.
        let run = inner[at..]
            .iter()
            .take_while(|&&b| b < 0x80 && b != b'\\')
            .count();
        out.extend(inner[at..at + run].iter().map(|&b| u16::from(b)));
        at += run;
        let Some(&b) = inner.get(at) else { break };
        if b != b'\\' {
            let (c, len) = utf8_char(&inner[at..]);
            let mut buf = [0u16; 2];
            out.extend_from_slice(char::from_u32(c)?.encode_utf16(&mut buf));
            at += len;
            continue;
        }
        let (unit, len) = unescape(inner, at)?;
        // `\/` is never how `JSON.stringify` spells `/`; a `\u` escape only for some units.
        canonical &= match inner[at + 1] {
            b'/' => false,
            b'u' => canonical_escape_len(inner, at).is_some(),
            _ => true,
        };
        out.push(unit);
        at += len;
    }
    Some((out, canonical))
}

/// The string at `b[i]` (its opening quote), strictly checked as [`validate`] checks it,
/// UTF-8 included, and decoded as [`decode_valid`] decodes it, in one pass, onto the end
/// of `out`: the index after its closing quote. `None` for anything wrong (`out` then
/// holds some of the string).
pub fn decode_strict(b: &[u8], i: usize, out: &mut Vec<u16>) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut at = i + 1;
    loop {
        let run = b[at..]
            .iter()
            .take_while(|&&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
            .count();
        out.extend(b[at..at + run].iter().map(|&c| u16::from(c)));
        at += run;
        match *b.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => {
                let (unit, len) = unescape(b, at)?;
                out.push(unit);
                at += len;
            }
            c if c < 0x20 => return None,
            _ => {
                // A UTF-8 sequence holds no ASCII byte: the run up to the next one is
                // checked whole.
                let end = b[at..]
                    .iter()
                    .position(|&c| c < 0x80)
                    .map_or(b.len(), |n| at + n);
                out.extend(std::str::from_utf8(&b[at..end]).ok()?.encode_utf16());
                at = end;
            }
        }
    }
}

/// The escape at `b[at]` (a backslash): its UTF-16 unit and its length. `None` for a bad
/// escape.
fn unescape(b: &[u8], at: usize) -> Option<(u16, usize)> {
    Some(match b.get(at + 1)? {
        b'"' => (0x22, 2),
        b'\\' => (0x5C, 2),
        b'/' => (0x2F, 2),
        b'b' => (0x08, 2),
        b'f' => (0x0C, 2),
        b'n' => (0x0A, 2),
        b'r' => (0x0D, 2),
        b't' => (0x09, 2),
        b'u' => {
            let hex = b.get(at + 2..at + 6)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            (hex.iter().fold(0u16, |u, &h| u << 4 | hex_value(h)), 6)
        }
        _ => return None,
    })
}

fn hex_value(h: u8) -> u16 {
    u16::from(match h {
        b'0'..=b'9' => h - b'0',
        b'a'..=b'f' => h - b'a' + 10,
        _ => h - b'A' + 10,
    })
}

/// The scalar value of the UTF-8 sequence `b` starts with (valid UTF-8), and its length.
fn utf8_char(b: &[u8]) -> (u32, usize) {
    let cont = |k: usize| u32::from(b[k] & 0x3F);
    match b[0] {
        0xC0..=0xDF => ((u32::from(b[0] & 0x1F) << 6) | cont(1), 2),
        0xE0..=0xEF => ((u32::from(b[0] & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3),
        _ => (
            (u32::from(b[0] & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_read_raw_and_stop_at_the_end_or_at_damage() {
        let got: Vec<&[u8]> = elements(br#" [ 1, "a,]" ,[2,[3]], {"k":[]} ,null ] "#).collect();
        let want: Vec<&[u8]> = vec![b"1", br#""a,]""#, b"[2,[3]]", br#"{"k":[]}"#, b"null"];
        assert_eq!(got, want);
        assert_eq!(elements(b"[]").count(), 0);
        assert_eq!(elements(b"{}").count(), 0);
        assert_eq!(elements(br#"[1,"open"#).count(), 1);
    }

    #[test]
    fn each_element_walks_nested_arrays_in_one_pass() {
        let b = br#" [ [1, [2]] , [] ,[ "x" ] ] "#;
        let mut seen = Vec::new();
        let end = each_element(b, 0, &mut |b, at| {
            each_element(b, at, &mut |b, at| {
                let end = skip_value(b, at)?;
                seen.push(b[at..end].to_vec());
                Some(end)
            })
        });
        assert_eq!(end, Some(b.len() - 1));
        assert_eq!(seen, [b"1".to_vec(), b"[2]".to_vec(), br#""x""#.to_vec()]);
        for bad in [&b"[1 2]"[..], b"[1,", b"{}", b"[[1],x]"] {
            let end = each_element(bad, 0, &mut |b, at| {
                each_element(b, at, &mut |b, at| skip_value(b, at))
            });
            assert_eq!(end, None, "{}", String::from_utf8_lossy(bad));
        }
    }
    use proptest::prelude::*;

    #[test]
    fn validates_good_json() {
        for s in [
            "{}",
            "[]",
            " {\"a\":[1,2.5e-3,-0,true,false,null,\"x\\u00e9\\ud800\"]} ",
            "\"\"",
            "0",
            "{\"a\":{\"b\":{\"c\":[[]]}}}",
        ] {
            validate(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"));
        }
    }

    #[test]
    fn rejects_bad_json_with_offsets() {
        let cases: &[(&str, usize)] = &[
            ("", 0),
            ("{", 1),
            ("{\"a\" 1}", 5),
            ("{\"a\":1,}", 7),
            ("[1,]", 3),
            ("[01]", 2),
            ("[1.]", 3),
            ("\"a\tb\"", 2),
            ("\"\\x\"", 1),
            ("\"\\u12\"", 1),
            ("{} x", 3),
            ("tru", 0),
            ("[1 2]", 3),
        ];
        for (s, off) in cases {
            let e = validate(s.as_bytes()).expect_err(s);
            assert_eq!(e.offset, *off, "{s}: {e:?}");
        }
    }

    #[test]
    fn finds_control_bytes_exactly() {
        for len in 0..40 {
            for at in 0..=len {
                let mut b: Vec<u8> = (0..len).map(|i| b"a \x7f\xff~!"[i % 6]).collect();
                if at < len {
                    b[at] = 0x1f;
                    if at + 1 < len {
                        b[at + 1] = 0x00;
                    }
                }
                let want = b.iter().position(|&c| c < 0x20);
                assert_eq!(find_control(&b), want, "len {len} at {at}");
            }
        }
    }

    #[test]
    fn rejects_invalid_utf8() {
        let e = validate(b"\"ab\xff\"").unwrap_err();
        assert_eq!(e.offset, 3);
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = "[".repeat(1_000_000) + &"]".repeat(1_000_000);
        validate(deep.as_bytes()).unwrap();
        assert!(validate(&deep.as_bytes()[1..]).is_err());
        assert_eq!(skip_value(deep.as_bytes(), 0), Some(deep.len()));
    }

    #[test]
    fn finds_fields() {
        let line = br#"{"a":{"type":"inner"},"s":"x\"}","type":"message_end","z":[1,{"q":2}]}"#;
        assert_eq!(field(line, "type"), Some(&br#""message_end""#[..]));
        assert_eq!(field(line, "z"), Some(&br#"[1,{"q":2}]"#[..]));
        assert_eq!(field(line, "missing"), None);
        assert_eq!(field(b"[1,2]", "type"), None);
        assert_eq!(field(b"{\"type\":", "type"), None);
    }

    #[test]
    fn decodes_strings() {
        assert_eq!(str_value(br#""plain""#).unwrap(), "plain");
        assert_eq!(str_value(br#""a\nb\u00e9""#).unwrap(), "a\nb\u{e9}");
        assert_eq!(
            decode_utf16_units(br"\ud800x").unwrap(),
            vec![0xd800, b'x' as u16]
        );
        assert_eq!(str_value(b"12"), None);
    }
    /// What `path` answered before it entered objects instead of skipping them: each
    /// object on the way read whole, member by member.
    fn path_by_members<'a>(line: &'a [u8], dotted: &str) -> Option<&'a [u8]> {
        dotted.split('.').try_fold(line, |obj, key| {
            members(obj).find(|(k, _)| key_is(k, key)).map(|(_, v)| v)
        })
    }

    #[test]
    fn paths_read_through_objects() {
        let line =
            br#"{"a":1,"data":{"big":[{"x":"}"}],"type":"agent_progress","k\u0065y":2},"t":3}"#;
        assert_eq!(path(line, "data.type"), Some(&br#""agent_progress""#[..]));
        assert_eq!(path(line, "data.key"), Some(&b"2"[..]));
        assert_eq!(path(line, "t"), Some(&b"3"[..]));
        assert_eq!(path(line, "data.nope"), None);
        assert_eq!(path(line, "a.type"), None);
        assert_eq!(path(line, "nope.type"), None);
        assert_eq!(path(line, "data.big.x"), None);
        // A member after the object named is not looked for inside it.
        assert_eq!(path(br#"{"data":{"a":1},"type":"x"}"#, "data.type"), None);
        // Only what comes before the member named is read: a line cut after it still
        // answers (it did not before; no decision depends on the difference, since a cut
        // line is kept whole).
        assert_eq!(
            path(br#"{"data":{"type":"x","big":[1,"#, "data.type"),
            Some(&br#""x""#[..])
        );
    }

    fn nested() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i32>().prop_map(serde_json::Value::from),
            "[a-c\\\"}{ ]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::vec(("[abc]", inner), 0..5)
                    .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Two lookups past the same long member walk it once: the second finds its end.
    #[test]
    fn a_long_member_is_walked_once_for_two_lookups() {
        let big = format!("[{}1]", "1,".repeat(5000));
        let line = format!(
            r#"{{"type":"progress","data":{{"msgs":{big},"type":"agent_progress","agentId":"a1"}}}}"#
        );
        let look = &mut Lookup::new(line.as_bytes());
        assert_eq!(look.field("type"), Some(&br#""progress""#[..]));
        assert_eq!(look.path("data.type"), Some(&br#""agent_progress""#[..]));
        assert_eq!(look.path("data.agentId"), Some(&br#""a1""#[..]));
        assert_eq!(look.path("data.nope"), None);
        let at = line.find("[1,").unwrap();
        assert_eq!(look.skipped, vec![(at, at + big.len())]);
    }

    proptest! {
        /// Lookups one after another on one line, each value remembered, answer as each
        /// alone does.
        #[test]
        fn lookups_in_turn_agree_with_folding_fields(
            v in nested(),
            paths in prop::collection::vec(prop::collection::vec("[abc]", 1..4), 1..6),
            pretty: bool,
        ) {
            let line = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let look = &mut Lookup::remembering(&line, 0);
            for keys in paths {
                let dotted = keys.join(".");
                prop_assert_eq!(look.path(&dotted), path_by_members(&line, &dotted));
            }
        }

        #[test]
        fn paths_agree_with_folding_fields(
            v in nested(),
            keys in prop::collection::vec("[abc]", 1..4),
            pretty: bool,
        ) {
            let line = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let dotted = keys.join(".");
            prop_assert_eq!(path(&line, &dotted), path_by_members(&line, &dotted));
        }
    }
}

/// The largest integer a JavaScript number holds exactly (2^53 - 1).
pub const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// Parses a raw JSON number as JavaScript does (`1e400` is infinite, `-0` is negative zero).
pub fn number_value(raw: &[u8]) -> Option<f64> {
    let end = number_end(raw, 0).ok()?;
    if end != raw.len() {
        return None;
    }
    std::str::from_utf8(raw).ok()?.parse::<f64>().ok()
}

/// The value of plain integer text `-?(0|[1-9][0-9]*)` of at most 15 digits. Every such
/// integer is exact in a double, and JavaScript prints it back in the same digits (except
/// `-0`). The fast path for the numbers logs are full of.
pub fn small_int(raw: &[u8]) -> Option<i64> {
    let (neg, digits) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    if digits.is_empty() || digits.len() > 15 || (digits[0] == b'0' && digits.len() > 1) {
        return None;
    }
    let mut v = 0i64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}

/// The value of a raw JSON number if it is a JavaScript safe integer (`Number.isSafeInteger`,
/// where `-0` counts and is 0).
pub fn safe_integer(raw: &[u8]) -> Option<i64> {
    if let Some(v) = small_int(raw) {
        return Some(v);
    }
    let v = number_value(raw)?;
    (v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_SAFE as f64).then_some(v as i64)
}

/// Writes a number as [`js_number`] formats it; a safe integer (most numbers in a log)
/// without going through the general formatting.
pub fn write_js_number(v: f64, out: &mut Vec<u8>) {
    if v.fract() == 0.0 && v.abs() <= MAX_SAFE as f64 && v != 0.0 {
        let mut n = (v as i64).unsigned_abs();
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        while n > 0 {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        if v < 0.0 {
            out.push(b'-');
        }
        out.extend_from_slice(&digits[at..]);
    } else if (1e-6..1e21).contains(&v.abs()) {
        // In this range JavaScript writes plain decimals, as Rust's shortest round-trip
        // `Display` does.
        use std::io::Write;
        write!(out, "{v}").expect("writing to a Vec cannot fail");
    } else {
        out.extend_from_slice(js_number(v).as_bytes());
    }
}

/// Formats a number as JavaScript's `JSON.stringify` does: shortest round-trip digits,
/// exponent form below 1e-6 and from 1e21, `-0` as `0`, non-finite as `null`.
pub fn js_number(v: f64) -> String {
    if !v.is_finite() {
        return "null".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    // `{:e}` gives the shortest digits that round-trip, as d.ddde±x.
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').expect("LowerExp has an exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().expect("LowerExp exponent is an integer") + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let esign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{esign}{}", e.abs())
        } else {
            format!("{}.{}e{esign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

/// Whether a raw JSON number is spelled exactly as `JSON.stringify` would spell its value.
pub fn is_canonical_number(raw: &[u8]) -> bool {
    if small_int(raw).is_some() {
        return raw != b"-0";
    }
    number_value(raw).is_some_and(|v| {
        let mut spelled = Vec::with_capacity(24);
        write_js_number(v, &mut spelled);
        v.is_finite() && spelled == raw
    })
}

/// Whether the content of a JSON string (between the quotes) is spelled exactly as
/// JavaScript's well-formed `JSON.stringify` spells it: the short escapes, `\u00xx` (lower
/// case) for other control characters, `\udxxx` for lone surrogates, everything else raw.
/// Invalid UTF-8 is not canonical.
pub fn is_canonical_string(inner: &[u8]) -> bool {
    let mut i = 0;
    let mut ascii = true;
    while i < inner.len() {
        match inner[i] {
            b'"' => return false,
            c if c < 0x20 => return false,
            b'\\' => match canonical_escape_len(inner, i) {
                Some(len) => i += len,
                None => return false,
            },
            c => {
                ascii &= c < 0x80;
                i += 1;
            }
        }
    }
    ascii || std::str::from_utf8(inner).is_ok()
}

/// The length of the escape that begins at `b[at]` (a backslash), if `JSON.stringify`
/// writes it so: a short escape, or `\u` in lower case for a control character without a
/// short form or a lone surrogate (a high one not followed by the escape of a low one).
pub fn canonical_escape_len(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at + 1)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(2),
        b'u' => {
            let unit = lower_hex4(b, at + 2)?;
            let short_form = matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
            let lone = match unit {
                0xD800..=0xDBFF => {
                    // A pair, which JSON.stringify writes raw.
                    !(b.get(at + 6..at + 8) == Some(b"\\u")
                        && lower_hex4(b, at + 8).is_some_and(|u| (0xDC00..=0xDFFF).contains(&u)))
                }
                0xDC00..=0xDFFF => true,
                _ => false,
            };
            ((unit < 0x20 && !short_form) || lone).then_some(6)
        }
        _ => None,
    }
}

/// Four lower-case hex digits at `at`, as a code unit.
fn lower_hex4(b: &[u8], at: usize) -> Option<u16> {
    let hex = b.get(at..at + 4)?;
    if !hex
        .iter()
        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

#[cfg(test)]
mod js_tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`decode_utf16_units`] decoded before its fast path: char by char.
    fn decode_slowly(inner: &[u8]) -> Option<Vec<u16>> {
        let text = std::str::from_utf8(inner).ok()?;
        let mut out = Vec::new();
        let mut chars = text.char_indices();
        while let Some((at, c)) = chars.next() {
            if c != '\\' {
                let mut buf = [0u16; 2];
                out.extend_from_slice(c.encode_utf16(&mut buf));
                continue;
            }
            let unit = match chars.next()?.1 {
                '"' => 0x22,
                '\\' => 0x5C,
                '/' => 0x2F,
                'b' => 0x08,
                'f' => 0x0C,
                'n' => 0x0A,
                'r' => 0x0D,
                't' => 0x09,
                'u' => {
                    let hex = text.get(at + 2..at + 6)?;
                    for _ in 0..4 {
                        chars.next();
                    }
                    hex.bytes().all(|h| h.is_ascii_hexdigit()).then_some(())?;
                    u16::from_str_radix(hex, 16).ok()?
                }
                _ => return None,
            };
            out.push(unit);
        }
        Some(out)
    }

    proptest! {
        #[test]
        fn the_fast_string_decoder_agrees_with_the_char_walk(
            parts in prop::collection::vec(prop_oneof![
                "[a-z \"/]{0,12}",
                Just("\\".to_string()), Just("\\n".to_string()), Just("\\\"".to_string()),
                Just("\\u00e9".to_string()), Just("\\ud83d\\ude00".to_string()),
                Just("\\udc00".to_string()), Just("\\u12".to_string()), Just("\\x".to_string()),
                Just("\\uD83D\\uDE00".to_string()), Just("\\u001F".to_string()), Just("\\u001f".to_string()),
                Just("\\u000a".to_string()), Just("\\/".to_string()), Just("\\ud800\\u0041".to_string()),
                Just("é文🦀".to_string()), "\\PC{0,3}",
            ], 0..12),
        ) {
            let text = parts.concat();
            prop_assert_eq!(decode_utf16_units(text.as_bytes()), decode_slowly(text.as_bytes()));
            // The spelling told while decoding is the one the scan tells.
            let quoted = format!("\"{text}\"");
            if validate(quoted.as_bytes()).is_ok()
                && let Some((_, canonical)) = decode_valid(text.as_bytes())
            {
                prop_assert_eq!(canonical, is_canonical_string(text.as_bytes()), "{}", text);
            }
        }

        #[test]
        fn the_fast_paths_write_numbers_as_js_number_does(
            v in prop_oneof![
                any::<i64>().prop_map(|i| i as f64),
                (-(MAX_SAFE + 2)..=MAX_SAFE + 2).prop_map(|i| i as f64),
                any::<f64>(),
                (-30i32..30, any::<u32>()).prop_map(|(e, m)| f64::from(m) * 10f64.powi(e)),
                (-1e-5..1e-5f64), (1e20..1e22f64), (-1e-6..-1e-7f64),
                Just(1e-6), Just(-1e-6), Just(9.999999999999999e20),
                Just(-0.0), Just(f64::NAN), Just(f64::INFINITY), Just(1e21), Just(-1e300),
            ],
        ) {
            let mut out = Vec::new();
            write_js_number(v, &mut out);
            prop_assert_eq!(String::from_utf8(out).unwrap(), js_number(v));
        }
    }

    #[test]
    fn formats_numbers_like_javascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-5.0, "-5"),
            (1.5, "1.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (2f64.powi(60), "1152921504606847000"),
            (9007199254740991.0, "9007199254740991"),
            (123456.789, "123456.789"),
            (f64::INFINITY, "null"),
        ];
        for (v, want) in cases {
            assert_eq!(js_number(*v), *want, "{v:e}");
        }
    }

    #[test]
    fn canonical_numbers() {
        for ok in [
            "0",
            "1",
            "-1",
            "1.5",
            "1e+21",
            "5e-324",
            "1152921504606847000",
        ] {
            assert!(is_canonical_number(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "-0",
            "1.0",
            "1e0",
            "01",
            "1E+21",
            "1e21",
            "1152921504606846977",
            "1e400",
            "x",
        ] {
            assert!(!is_canonical_number(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn safe_integers() {
        assert_eq!(safe_integer(b"12"), Some(12));
        assert_eq!(safe_integer(b"-0"), Some(0));
        assert_eq!(safe_integer(b"1e1"), Some(10));
        assert_eq!(safe_integer(b"9007199254740991"), Some(MAX_SAFE));
        assert_eq!(safe_integer(b"-9007199254740991"), Some(-MAX_SAFE));
        assert_eq!(safe_integer(b"9007199254740992"), None);
        assert_eq!(safe_integer(b"1.5"), None);
        assert_eq!(safe_integer(b"1e400"), None);
        assert_eq!(safe_integer(b"null"), None);
    }

    #[test]
    fn canonical_strings() {
        for ok in [
            "",
            "plain",
            "a\\\"b",
            "\\\\",
            "\\n\\t\\r\\b\\f",
            "\\u0000",
            "\\u001f",
            "\\ud800",
            "\\udfff",
            "x\\ud800y",
            "\\ud800\\ud800",
            "é🦀\u{2028}\u{7f}/",
        ] {
            assert!(is_canonical_string(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "\\u0041",
            "\\/",
            "\\u000a",
            "\\u001F",
            "\\uD800",
            "\\ud83d\\ude00",
            "\t",
            "\\x",
            "\\u00",
        ] {
            assert!(!is_canonical_string(bad.as_bytes()), "{bad}");
        }
    }
}
