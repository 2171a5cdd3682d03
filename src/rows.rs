//! Packed chunk rows: DeepSeek Harness's lossless layout for runs of `assistant/chunk` deltas.
//!
//! A run of three or more consecutive deltas of one block is stored as one row:
//!
//! ```text
//! {"type":"text-chunks","seq0":12,"time0":1783352170000,"data":{"turn":1,"step":1,"index":0,"dt":[0,28,1],"texts":["The"," user"," wants"," me"]}}
//! ```
//!
//! The encoder ([`ChunkPacker`]) and the decoder ([`parse`]) sit side by side so that one can be
//! read against the other. sess is byte-exact where DSH is only value-exact: an event is
//! packed only when [`parse_member`] recognises it in exactly the bytes the decoder writes back,
//! so `unpack(pack(x)) == x` for every input without rows. Strings are copied as raw JSON
//! text in both directions, which is how lone surrogate escapes survive.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

use crate::json::{self, MAX_SAFE};

/// Runs shorter than this stay as individual events (DSH's `MIN_RUN`).
pub const MIN_RUN: usize = 3;

/// The three row kinds and the chunk delta each one packs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Text,
    Reasoning,
    ToolCall,
}

impl RowKind {
    pub const ALL: [RowKind; 3] = [RowKind::Text, RowKind::Reasoning, RowKind::ToolCall];

    pub fn name(self) -> &'static str {
        match self {
            RowKind::Text => "text-chunks",
            RowKind::Reasoning => "reasoning-chunks",
            RowKind::ToolCall => "tool-call-chunks",
        }
    }

    fn delta_type(self) -> &'static str {
        match self {
            RowKind::Text => "text-delta",
            RowKind::Reasoning => "reasoning-delta",
            RowKind::ToolCall => "tool-call-delta",
        }
    }

    fn payload_key(self) -> &'static str {
        match self {
            RowKind::ToolCall => "args",
            _ => "texts",
        }
    }

    fn from_name(name: &str) -> Option<RowKind> {
        RowKind::ALL.into_iter().find(|t| t.name() == name)
    }
}

// ---------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------

/// A row that failed validation, with DSH's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub tag: RowKind,
    pub why: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {} storage row: {}", self.tag.name(), self.why)
    }
}

impl std::error::Error for RowError {}

/// A validated row, borrowing its strings from the line. Expand it with [`Row::write_member`].
#[derive(Debug)]
pub struct Row<'a> {
    pub tag: RowKind,
    /// Each member's seq and time, or `None` for DSH's normalized fixtures, which strip
    /// `seq0`/`time0` (and their events strip `seq`/`time`).
    clock: Option<Vec<(i64, i64)>>,
    /// `"data":{"turn":U,"step":P,"chunk":{"type":"…-delta","index":I`, the same for every
    /// member.
    data_head: Vec<u8>,
    /// Raw JSON strings, quotes included.
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    members: Vec<&'a [u8]>,
}

/// What a line is, as far as packed rows go.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// Not a row: an ordinary event, passed on unvalidated.
    Event,
    Row(Row<'a>),
    /// Names a row but is not valid JSON.
    BadJson(RowKind, json::SyntaxError),
    /// A row that fails the row checks.
    BadRow(RowError),
}

/// Every row tag ends with this text. A line without it is not a row: DSH and sess write
/// tags plainly, and a tag spelled with escapes (`"text-chunk\u0073"`) is not recognised.
static CHUNKS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"-chunks\""));

/// Tells a row from an event and decodes the row. A line is a row when its top-level `type`
/// (the last one, as `JSON.parse` reads duplicates) is a row tag.
/// Whether a raw top-level `type` names a chunk row: a line of such a type is read as a
/// row (or is an error), and every event it holds is an `assistant/chunk`.
pub fn is_row_type(raw: &[u8]) -> bool {
    json::str_value(raw).is_some_and(|t| RowKind::from_name(&t).is_some())
}

/// Whether a line begins as a chunk row is written (its `type` first, a row tag): what
/// `sess pack` and DSH write. Read from the first bytes only, for a caller that asks it of
/// every line; a row spelled otherwise is not told.
pub fn starts_as_row(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(br#"{"type":""#) else {
        return false;
    };
    let tag = rest
        .iter()
        .take(32)
        .position(|&b| b == b'"')
        .map(|end| &rest[..end]);
    tag.and_then(|t| std::str::from_utf8(t).ok())
        .is_some_and(|t| RowKind::from_name(t).is_some())
}

pub fn parse(line: &[u8]) -> Parsed<'_> {
    if CHUNKS.find(line).is_none() {
        return Parsed::Event;
    }
    if let Some(row) = canonical_row(line) {
        return Parsed::Row(row);
    }
    let env = object(line);
    let Some(tag) = get(&env, "type")
        .and_then(json::str_value)
        .and_then(|t| RowKind::from_name(&t))
    else {
        return Parsed::Event;
    };
    if let Err(e) = json::validate(line) {
        return Parsed::BadJson(tag, e);
    }
    match decode_object(&env, tag) {
        Ok(row) => Parsed::Row(row),
        Err(e) => Parsed::BadRow(e),
    }
}

/// The top-level members of an object, duplicates resolved as `JSON.parse` does (the last
/// value wins, at the first key's position). Keys are decoded. Duplicates are found with a
/// map once the object is large, so a line of many keys costs linear time.
fn object(raw: &[u8]) -> Vec<(Cow<'_, str>, &[u8])> {
    let mut out: Vec<(Cow<'_, str>, &[u8])> = Vec::new();
    let mut seen: Option<std::collections::HashMap<String, usize>> = None;
    for (k, v) in json::members(raw) {
        let key = match std::str::from_utf8(k) {
            Ok(s) if !k.contains(&b'\\') => Cow::Borrowed(s),
            _ => Cow::Owned(json::decode_string(k).unwrap_or_default()),
        };
        if seen.is_none() && out.len() > 16 {
            let mut m = std::collections::HashMap::new();
            for (at, (k, _)) in out.iter().enumerate() {
                m.insert(k.to_string(), at);
            }
            seen = Some(m);
        }
        let at = match &seen {
            Some(m) => m.get(key.as_ref()).copied(),
            None => out.iter().position(|(s, _)| *s == key),
        };
        match at {
            Some(at) => out[at].1 = v,
            None => {
                if let Some(m) = &mut seen {
                    m.insert(key.to_string(), out.len());
                }
                out.push((key, v));
            }
        }
    }
    out
}

fn has_exact_keys(obj: &[(Cow<'_, str>, &[u8])], keys: &[&str]) -> bool {
    obj.len() == keys.len() && keys.iter().all(|k| obj.iter().any(|(x, _)| x == k))
}

fn get<'a>(obj: &[(Cow<'_, str>, &'a [u8])], key: &str) -> Option<&'a [u8]> {
    obj.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

fn is_string(raw: &[u8]) -> bool {
    raw.first() == Some(&b'"')
}

fn is_number(raw: &[u8]) -> bool {
    matches!(raw.first(), Some(b'-' | b'0'..=b'9'))
}

/// The elements of a raw JSON array, or `None` if it is not an array.
fn array(raw: &[u8]) -> Option<Vec<&[u8]>> {
    if raw.first() != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = json::skip_ws(raw, 1);
    if raw.get(i) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = json::skip_value(raw, i)?;
        out.push(&raw[i..end]);
        i = json::skip_ws(raw, end);
        match raw.get(i) {
            Some(b',') => i = json::skip_ws(raw, i + 1),
            Some(b']') => return Some(out),
            _ => return None,
        }
    }
}

/// Validates a row in DSH's order of checks, on its envelope's members (valid JSON).
fn decode_object<'a>(env: &[(Cow<'_, str>, &'a [u8])], tag: RowKind) -> Result<Row<'a>, RowError> {
    let fail = |why: &str| RowError {
        tag,
        why: why.to_string(),
    };
    // DSH's normalized fixtures strip seq0/time0; everything else must carry both.
    let stamped = has_exact_keys(env, &["type", "seq0", "time0", "data"]);
    if !stamped && !has_exact_keys(env, &["type", "data"]) {
        return Err(fail("envelope must be exactly {type, seq0, time0, data}"));
    }
    let seq0 = if stamped {
        let v = get(env, "seq0").and_then(json::safe_integer);
        Some(
            v.filter(|s| *s >= 0)
                .ok_or_else(|| fail("seq0 must be a non-negative safe integer"))?,
        )
    } else {
        None
    };
    let time0 = if stamped {
        Some(
            get(env, "time0")
                .and_then(json::safe_integer)
                .ok_or_else(|| fail("time0 must be a safe integer"))?,
        )
    } else {
        None
    };
    let data_raw = get(env, "data").unwrap_or_default();
    if !matches!(data_raw.first(), Some(b'{' | b'[')) {
        return Err(fail("data must be an object"));
    }
    let data = if data_raw[0] == b'{' {
        object(data_raw)
    } else {
        Vec::new()
    };
    let (id, name) = if tag == RowKind::ToolCall {
        let with_name = ["turn", "step", "index", "id", "name", "dt", "args"];
        let named = has_exact_keys(&data, &with_name);
        let without_name = ["turn", "step", "index", "id", "dt", "args"];
        if !named && !has_exact_keys(&data, &without_name) {
            return Err(fail(
                "data must be exactly {turn, step, index, id, name?, dt, args}",
            ));
        }
        let id = get(&data, "id").filter(|v| is_string(v));
        let name = named.then(|| get(&data, "name")).flatten();
        if id.is_none() || (named && !name.is_some_and(is_string)) {
            return Err(fail("id (and name when present) must be strings"));
        }
        (id, name)
    } else {
        if !has_exact_keys(&data, &["turn", "step", "index", "dt", "texts"]) {
            return Err(fail("data must be exactly {turn, step, index, dt, texts}"));
        }
        (None, None)
    };
    let [turn, step, index] = ["turn", "step", "index"].map(|k| get(&data, k).unwrap_or_default());
    if ![turn, step, index].iter().all(|v| is_number(v)) {
        return Err(fail("turn/step/index must be numbers"));
    }
    let payload_key = tag.payload_key();
    let members = get(&data, payload_key)
        .and_then(array)
        .filter(|m| !m.is_empty() && m.iter().all(|v| is_string(v)))
        .ok_or_else(|| fail(&format!("{payload_key} must be a non-empty string array")))?;
    let dt: Vec<i64> = get(&data, "dt")
        .and_then(array)
        .and_then(|a| {
            a.into_iter()
                .map(json::safe_integer)
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| fail("dt must be an array of safe integers"))?;
    let stamp = seq0.zip(time0);
    build(tag, stamp, [turn, step, index], id, name, members, &dt).map_err(|why| fail(&why))
}

/// The checks both decoding paths share (dt length, safe member seqs and times), then the
/// row ready to expand.
fn build<'a>(
    tag: RowKind,
    stamp: Option<(i64, i64)>,
    [turn, step, index]: [&[u8]; 3],
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    members: Vec<&'a [u8]>,
    dt: &[i64],
) -> Result<Row<'a>, String> {
    if dt.len() != members.len() - 1 {
        return Err(format!(
            "dt length {} does not match {} members",
            dt.len(),
            members.len()
        ));
    }
    let clock = match stamp {
        Some((seq0, time0)) => Some(member_clock(seq0, time0, dt).map_err(str::to_string)?),
        None => None,
    };
    // DSH re-serializes turn/step/index from doubles; do the same so values agree.
    let canonical = |raw: &[u8]| {
        if json::is_canonical_number(raw) {
            String::from_utf8_lossy(raw).into_owned()
        } else {
            json::js_number(json::number_value(raw).unwrap_or(f64::NAN))
        }
    };
    let data_head = format!(
        "\"data\":{{\"turn\":{},\"step\":{},\"chunk\":{{\"type\":\"{}\",\"index\":{}",
        canonical(turn),
        canonical(step),
        tag.delta_type(),
        canonical(index)
    )
    .into_bytes();
    Ok(Row {
        tag,
        clock,
        data_head,
        id,
        name,
        members,
    })
}

/// The fast path: a row in exactly the layout DSH and sess write, decoded in one pass.
/// Returns `None` for anything else (or anything wrong), which the general path then
/// decodes or rejects with the right message.
fn canonical_row(line: &[u8]) -> Option<Row<'_>> {
    let mut c = Cursor { b: line, i: 0 };
    c.lit(b"{\"type\":\"")?;
    let tag = RowKind::ALL
        .into_iter()
        .find(|t| c.lit_slice(t.name().as_bytes()).is_some())?;
    c.lit(b"\"")?;
    let stamp = if c.lit(b",\"seq0\":").is_some() {
        let seq0 = c.any_safe_int().filter(|s| *s >= 0)?;
        c.lit(b",\"time0\":")?;
        Some((seq0, c.any_safe_int()?))
    } else {
        None
    };
    c.lit(b",\"data\":{\"turn\":")?;
    let turn = c.number()?;
    c.lit(b",\"step\":")?;
    let step = c.number()?;
    c.lit(b",\"index\":")?;
    let index = c.number()?;
    c.lit(b",\"dt\":[")?;
    let mut dt = Vec::new();
    if c.lit(b"]").is_none() {
        loop {
            dt.push(c.any_safe_int()?);
            if c.lit(b"]").is_some() {
                break;
            }
            c.lit(b",")?;
        }
    }
    let (mut id, mut name) = (None, None);
    if tag == RowKind::ToolCall {
        c.lit(b",\"id\":")?;
        id = Some(c.json_string()?);
        if c.lit(b",\"name\":").is_some() {
            name = Some(c.json_string()?);
        }
        c.lit(b",\"args\":[")?;
    } else {
        c.lit(b",\"texts\":[")?;
    }
    let mut members = Vec::with_capacity(dt.len() + 1);
    loop {
        members.push(c.json_string()?);
        if c.lit(b"]").is_some() {
            break;
        }
        c.lit(b",")?;
    }
    c.lit(b"}}")?;
    if c.i != line.len() || std::str::from_utf8(line).is_err() {
        return None;
    }
    build(tag, stamp, [turn, step, index], id, name, members, &dt).ok()
}

/// Every member's (seq, time), checked with exact arithmetic. Unlike DSH (whose doubles
/// let a last seq of exactly 2^53 through), every seq and time must be a safe integer.
fn member_clock(seq0: i64, time0: i64, dt: &[i64]) -> Result<Vec<(i64, i64)>, &'static str> {
    if seq0 + dt.len() as i64 > MAX_SAFE {
        return Err("member seqs must stay safe integers");
    }
    let mut out = Vec::with_capacity(dt.len() + 1);
    out.push((seq0, time0));
    let mut t = time0;
    for (k, gap) in dt.iter().enumerate() {
        t += gap; // both within ±2^53, so no i64 overflow
        if t.abs() > MAX_SAFE {
            return Err("member times must stay safe integers");
        }
        out.push((seq0 + k as i64 + 1, t));
    }
    Ok(out)
}

impl Row<'_> {
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Each member's seq, or `None`s for a row without `seq0`.
    pub fn seqs(&self) -> impl Iterator<Item = Option<i64>> + '_ {
        (0..self.len()).map(|k| self.clock.as_ref().map(|c| c[k].0))
    }

    /// Appends member `k` as one event line (without newline), in the canonical form that
    /// [`parse_member`] recognises.
    pub fn write_member(&self, k: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":\"assistant/chunk\",");
        if let Some(clock) = &self.clock {
            let (seq, time) = clock[k];
            let mut num = itoa::Buffer::new();
            out.extend_from_slice(b"\"seq\":");
            out.extend_from_slice(num.format(seq).as_bytes());
            out.extend_from_slice(b",\"time\":");
            out.extend_from_slice(num.format(time).as_bytes());
            out.push(b',');
        }
        out.extend_from_slice(&self.data_head);
        if let Some(id) = self.id {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(id);
            if let Some(name) = self.name {
                out.extend_from_slice(b",\"name\":");
                out.extend_from_slice(name);
            }
            out.extend_from_slice(b",\"argumentsDelta\":");
        } else {
            out.extend_from_slice(b",\"text\":");
        }
        out.extend_from_slice(self.members[k]);
        out.extend_from_slice(b"}}}");
    }
}

// ---------------------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------------------

/// A chunk delta event recognised in its canonical bytes. Raw slices borrow the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMember<'a> {
    pub tag: RowKind,
    pub seq: i64,
    pub time: i64,
    pub turn: &'a [u8],
    pub step: &'a [u8],
    pub index: &'a [u8],
    pub id: Option<&'a [u8]>,
    pub name: Option<&'a [u8]>,
    /// The delta: `text` or `argumentsDelta`, a raw JSON string with quotes.
    pub text: &'a [u8],
}

/// A [`ChunkMember`] as places in its line, to travel beside the line's bytes: `sess pack`
/// reads each line as a member on its reading thread (where a member needs no other check
/// of its syntax) and packs it on another, without reading it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberAt {
    tag: RowKind,
    seq: i64,
    time: i64,
    turn: Span,
    step: Span,
    index: Span,
    id: Option<Span>,
    name: Option<Span>,
    text: Span,
}

/// Where a part of a line lies in it: `[start, end)`.
type Span = (u32, u32);

impl<'a> ChunkMember<'a> {
    /// Its places in `line`, the line it was read from; `None` for a line of 4 GiB or more.
    pub fn at(&self, line: &'a [u8]) -> Option<MemberAt> {
        u32::try_from(line.len()).ok()?;
        let span = |part: &[u8]| {
            let start = part.as_ptr() as usize - line.as_ptr() as usize;
            (start as u32, (start + part.len()) as u32)
        };
        Some(MemberAt {
            tag: self.tag,
            seq: self.seq,
            time: self.time,
            turn: span(self.turn),
            step: span(self.step),
            index: span(self.index),
            id: self.id.map(span),
            name: self.name.map(span),
            text: span(self.text),
        })
    }
}

impl MemberAt {
    /// The member in `line`, the line it was found in.
    pub fn member<'a>(&self, line: &'a [u8]) -> ChunkMember<'a> {
        let part = |(start, end): Span| &line[start as usize..end as usize];
        ChunkMember {
            tag: self.tag,
            seq: self.seq,
            time: self.time,
            turn: part(self.turn),
            step: part(self.step),
            index: part(self.index),
            id: self.id.map(part),
            name: self.name.map(part),
            text: part(self.text),
        }
    }
}

/// A cursor over a line that matches literal text and canonical values in order.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Passes literal text. Its length is known when compiling, so the comparison is a few
    /// instructions rather than a call to `memcmp` (rows are read a literal at a time).
    #[inline]
    fn lit<const N: usize>(&mut self, s: &[u8; N]) -> Option<()> {
        let at: &[u8; N] = self.b.get(self.i..self.i + N)?.try_into().ok()?;
        (at == s).then(|| self.i += N)
    }

    /// Passes literal text whose length is known only when running.
    fn lit_slice(&mut self, s: &[u8]) -> Option<()> {
        let at = self.b.get(self.i..self.i + s.len())?;
        short_eq(at, s).then(|| self.i += s.len())
    }

    /// A safe integer in plain digits, as JavaScript prints one: no sign but `-`, no
    /// leading zero, no `-0`, no fraction or exponent. `None` (the cursor where it was)
    /// for any other number, so that a caller may read it the general way.
    #[inline]
    fn plain_int(&mut self) -> Option<i64> {
        let b = self.b;
        let mut j = self.i;
        let neg = b.get(j) == Some(&b'-');
        j += usize::from(neg);
        let start = j;
        let mut v: i64 = 0;
        while let Some(&d) = b.get(j).filter(|d| d.is_ascii_digit()) {
            if j - start == 16 {
                return None;
            }
            v = v * 10 + i64::from(d - b'0');
            j += 1;
        }
        let n = j - start;
        let leading_zero = n > 1 && b[start] == b'0';
        let more = matches!(b.get(j), Some(b'.' | b'e' | b'E'));
        if n == 0 || leading_zero || more || v > json::MAX_SAFE || (neg && v == 0) {
            return None;
        }
        self.i = j;
        Some(if neg { -v } else { v })
    }

    /// A number that is a safe integer, however spelled (`1.0` and `1e3` too, as DSH's
    /// doubles read them).
    fn any_safe_int(&mut self) -> Option<i64> {
        match self.plain_int() {
            Some(v) => Some(v),
            None => json::safe_integer(self.number()?),
        }
    }

    fn number(&mut self) -> Option<&'a [u8]> {
        let end = json::number_end(self.b, self.i).ok()?;
        let raw = &self.b[self.i..end];
        self.i = end;
        Some(raw)
    }

    /// Any valid JSON string (UTF-8 is checked by the caller). Most of a row's members
    /// are printable ASCII without escapes, found in one word-wise pass.
    fn json_string(&mut self) -> Option<&'a [u8]> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let end = match plain_string_end(self.b, self.i + 1) {
            Some(end) => end,
            None => json::string_end_strict(self.b, self.i).ok()?,
        };
        let raw = &self.b[self.i..end];
        self.i = end;
        Some(raw)
    }

    /// A number spelled as `JSON.stringify` spells it. A safe integer in plain digits is
    /// (turn, step and index always are), and is told without the general reading.
    fn canonical_number(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if self.plain_int().is_some() {
            return Some(&self.b[start..self.i]);
        }
        self.number().filter(|raw| json::is_canonical_number(raw))
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        if let Some(end) = plain_string_end(self.b, self.i + 1) {
            let raw = &self.b[self.i..end];
            self.i = end;
            return Some(raw);
        }
        let end = json::string_end(self.b, self.i)?;
        let raw = &self.b[self.i..end];
        self.i = end;
        let inner = &raw[1..raw.len() - 1];
        // Most deltas are ASCII without escapes, canonical as they stand: three word-wise
        // scans instead of two byte-wise ones.
        let plain = inner.is_ascii()
            && memchr::memchr(b'\\', inner).is_none()
            && json::find_control(inner).is_none();
        (plain || (std::str::from_utf8(raw).is_ok() && json::is_canonical_string(inner)))
            .then_some(raw)
    }
}

/// The end (after the closing quote) of a string whose content begins at `from`, when that
/// content is printable ASCII without escapes, canonical as it stands; `None` when it is
/// not, or ends first. Most deltas are a few such bytes: one pass over them, a word at a
/// time, instead of a search for the quote and three scans of what it closes.
fn plain_string_end(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The lowest byte flagged is exact (a borrow only flags bytes above a true one).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = from;
    while let Some(word) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let special = zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH)
            | (x & HIGH);
        if special != 0 {
            let at = i + (special.trailing_zeros() / 8) as usize;
            return (b[at] == b'"').then_some(at + 1);
        }
        i += 8;
    }
    let at = i + b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))?;
    (b[at] == b'"').then_some(at + 1)
}

/// Recognises a packable chunk delta: exactly the bytes `JSON.stringify` writes for a DSH
/// `assistant/chunk` text, reasoning or tool-call delta, which are also exactly the bytes
/// [`Row::write_member`] writes back. Anything else returns `None` and stays verbatim.
pub fn parse_member(line: &[u8]) -> Option<ChunkMember<'_>> {
    let mut c = Cursor { b: line, i: 0 };
    c.lit(b"{\"type\":\"assistant/chunk\",\"seq\":")?;
    let seq = c.plain_int().filter(|s| *s >= 0)?;
    c.lit(b",\"time\":")?;
    let time = c.plain_int()?;
    c.lit(b",\"data\":{\"turn\":")?;
    let turn = c.canonical_number()?;
    c.lit(b",\"step\":")?;
    let step = c.canonical_number()?;
    c.lit(b",\"chunk\":{\"type\":\"")?;
    let tag = RowKind::ALL
        .into_iter()
        .find(|t| c.lit_slice(t.delta_type().as_bytes()).is_some())?;
    c.lit(b"\",\"index\":")?;
    let index = c.canonical_number()?;
    let (mut id, mut name) = (None, None);
    if tag == RowKind::ToolCall {
        c.lit(b",\"id\":")?;
        id = Some(c.string()?);
        if c.lit(b",\"name\":").is_some() {
            name = Some(c.string()?);
        }
        c.lit(b",\"argumentsDelta\":")?;
    } else {
        c.lit(b",\"text\":")?;
    }
    let text = c.string()?;
    c.lit(b"}}}")?;
    (c.i == line.len()).then_some(ChunkMember {
        tag,
        seq,
        time,
        turn,
        step,
        index,
        id,
        name,
        text,
    })
}

/// The open run. Only the first two members' lines are kept whole (a run shorter than
/// [`MIN_RUN`] is written back verbatim); after that only what the row needs.
#[derive(Default)]
struct ChunkRun {
    n: usize,
    /// Lines of the first members, each followed by `\n`.
    head: Vec<u8>,
    /// The first member's row fields, rendered: `{"type":..,"seq0":..,...,"index":I`
    prefix: Vec<u8>,
    /// `,"id":..[,"name":..]` for tool rows, written after `dt`.
    ident: Vec<u8>,
    dt: Vec<u8>,
    texts: Vec<u8>,
}

/// What the continuation test needs of the run's last member.
struct Last {
    tag: RowKind,
    seq: i64,
    time: i64,
    /// turn, step, index, id and name, each followed by a 0xff byte (never in UTF-8 text);
    /// raw text equality is value equality because both sides are canonical.
    key: Vec<u8>,
}

impl Default for Last {
    /// Read only once a run is open, which sets every field.
    fn default() -> Last {
        Last {
            tag: RowKind::Text,
            seq: 0,
            time: 0,
            key: Vec::new(),
        }
    }
}

impl ChunkMember<'_> {
    /// turn, step, index, id and name (0xfe when absent), in [`Last::key`]'s order.
    fn key_parts(&self) -> [&[u8]; 5] {
        let absent = b"\xfe".as_slice();
        [
            self.turn,
            self.step,
            self.index,
            self.id.unwrap_or(absent),
            self.name.unwrap_or(absent),
        ]
    }

    fn write_key(&self, key: &mut Vec<u8>) {
        key.clear();
        for part in self.key_parts() {
            key.extend_from_slice(part);
            key.push(0xff);
        }
    }

    /// Whether `key` is this member's, compared where the parts lie: most members continue
    /// a run, and gathering each one's key first (a copy a part) was about 3% of the
    /// samples of a DSH pack.
    fn has_key(&self, key: &[u8]) -> bool {
        let mut rest = key;
        for part in self.key_parts() {
            match rest.split_at_checked(part.len()) {
                Some((head, [0xff, r @ ..])) if short_eq(head, part) => rest = r,
                _ => return false,
            }
        }
        rest.is_empty()
    }
}

/// Whether `a == b`, compared here rather than by a call to `memcmp`: a member's parts are
/// mostly a digit or two. The calls for them were 5% of a DSH pack's samples, and the
/// comparisons with them 6.3%; compared here, 3.9%.
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    // A fold, not `all`: a loop that stops at the first difference is compiled back into
    // a call to `bcmp`.
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Packs a stream of events into rows. Feed every event in order with [`ChunkPacker::event`],
/// then call [`ChunkPacker::finish`].
#[derive(Default)]
pub struct ChunkPacker {
    run: ChunkRun,
    /// The open run's last member, when a run is open (`run.n > 0`); its key's buffer is
    /// kept from run to run.
    last: Last,
    /// Counters for `--stats`-style reporting.
    pub rows: u64,
    pub packed_events: u64,
}

impl ChunkPacker {
    /// One logical event (a line without its newline). `terminated` is false only for a
    /// last line without newline, which is written back exactly so. `known`: its places
    /// in `line` when its reader already read it as a member; `None` reads it here.
    pub fn event<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        terminated: bool,
        known: Option<&MemberAt>,
        out: &mut W,
    ) -> io::Result<()> {
        let m = match known {
            Some(at) => Some(at.member(line)),
            None => parse_member(line),
        };
        match m.filter(|_| terminated) {
            Some(m) => self.member(line, &m, out),
            None => {
                self.flush(out)?;
                crate::io::write_line(out, line, terminated)
            }
        }
    }

    fn member<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        m: &ChunkMember<'_>,
        out: &mut W,
    ) -> io::Result<()> {
        // DSH's rule: same kind and block, seq + 1, a time gap that is a safe integer.
        let l = &self.last;
        let continues = self.run.n > 0
            && l.tag == m.tag
            && m.seq == l.seq + 1
            && (m.time - l.time).abs() <= MAX_SAFE
            && m.has_key(&l.key);
        if continues {
            if self.run.n > 1 {
                self.run.dt.push(b',');
            }
            let dt = m.time - l.time;
            self.run
                .dt
                .extend_from_slice(itoa::Buffer::new().format(dt).as_bytes());
            self.run.texts.push(b',');
        } else {
            self.flush(out)?;
            self.start(m);
        }
        self.run.texts.extend_from_slice(m.text);
        if self.run.n < MIN_RUN - 1 {
            self.run.head.extend_from_slice(line);
            self.run.head.push(b'\n');
        }
        self.run.n += 1;
        let last = &mut self.last;
        (last.tag, last.seq, last.time) = (m.tag, m.seq, m.time);
        if !continues {
            m.write_key(&mut last.key);
        }
        Ok(())
    }

    fn start(&mut self, m: &ChunkMember<'_>) {
        let run = &mut self.run;
        let _ = write!(
            run.prefix,
            "{{\"type\":\"{}\",\"seq0\":{},\"time0\":{},\"data\":{{\"turn\":",
            m.tag.name(),
            m.seq,
            m.time
        );
        run.prefix.extend_from_slice(m.turn);
        run.prefix.extend_from_slice(b",\"step\":");
        run.prefix.extend_from_slice(m.step);
        run.prefix.extend_from_slice(b",\"index\":");
        run.prefix.extend_from_slice(m.index);
        if let Some(id) = m.id {
            run.ident.extend_from_slice(b",\"id\":");
            run.ident.extend_from_slice(id);
            if let Some(name) = m.name {
                run.ident.extend_from_slice(b",\"name\":");
                run.ident.extend_from_slice(name);
            }
        }
    }

    /// Writes the open run: a row if it is long enough, else its events verbatim.
    fn flush<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        if self.run.n == 0 {
            return Ok(());
        }
        // The buffers stay for the next run: a DSH log opens a run every few lines.
        let run = &mut self.run;
        let n = std::mem::take(&mut run.n);
        let written = write_run(run, n, self.last.tag, out);
        for buf in [
            &mut run.head,
            &mut run.prefix,
            &mut run.ident,
            &mut run.dt,
            &mut run.texts,
        ] {
            buf.clear();
        }
        written?;
        if n >= MIN_RUN {
            self.rows += 1;
            self.packed_events += n as u64;
        }
        Ok(())
    }

    /// Flushes the open run. Call once at the end of the input.
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.flush(out)
    }
}

/// Writes a run of `n` members of kind `tag`: a row if it is long enough, else its events
/// verbatim.
fn write_run<W: Write + ?Sized>(
    run: &ChunkRun,
    n: usize,
    tag: RowKind,
    out: &mut W,
) -> io::Result<()> {
    if n < MIN_RUN {
        return out.write_all(&run.head);
    }
    out.write_all(&run.prefix)?;
    out.write_all(b",\"dt\":[")?;
    out.write_all(&run.dt)?;
    out.write_all(b"]")?;
    out.write_all(&run.ident)?;
    write!(out, ",\"{}\":[", tag.payload_key())?;
    out.write_all(&run.texts)?;
    out.write_all(b"]}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: i64, time: i64, text: &str) -> String {
        format!(
            r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{text}"}}}}}}"#
        )
    }

    fn pack(lines: &[String]) -> String {
        let mut p = ChunkPacker::default();
        let mut out = Vec::new();
        for l in lines {
            p.event(l.as_bytes(), true, None, &mut out).unwrap();
        }
        p.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn unpack(text: &str) -> String {
        let mut out = Vec::new();
        for line in text.lines() {
            match parse(line.as_bytes()) {
                Parsed::Row(row) => {
                    for k in 0..row.len() {
                        row.write_member(k, &mut out);
                        out.push(b'\n');
                    }
                }
                Parsed::Event => {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
                other => panic!("{other:?}"),
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn decoded(s: &str) -> Result<usize, String> {
        match parse(s.as_bytes()) {
            Parsed::Row(r) => Ok(r.len()),
            Parsed::BadRow(e) => Err(e.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn plain_strings_end_where_the_general_reading_says() {
        // Around word sizes, each byte class at each place: plain, a quote (the end), a
        // backslash, a control byte, DEL, and a byte of UTF-8 beyond ASCII.
        for len in 0..20 {
            for at in 0..=len {
                for special in [b'a', b'"', b'\\', 0x01, 0x1f, 0x7f, 0xc3] {
                    let mut b = vec![b'"'];
                    b.extend((0..len).map(|k| {
                        if k == at {
                            special
                        } else {
                            b'a' + (k % 26) as u8
                        }
                    }));
                    b.extend_from_slice(b"\",");
                    let plain = b[1..].iter().position(|&c| c == b'"').filter(|&q| {
                        b[1..1 + q]
                            .iter()
                            .all(|&c| (0x20..0x80).contains(&c) && c != b'\\')
                    });
                    assert_eq!(plain_string_end(&b, 1), plain.map(|q| q + 2), "{b:?}");
                }
            }
        }
    }

    #[test]
    fn recognises_canonical_members_only() {
        let ok = chunk(3, 10, "hi");
        let m = parse_member(ok.as_bytes()).unwrap();
        assert_eq!(
            (m.tag, m.seq, m.time, m.text),
            (RowKind::Text, 3, 10, &b"\"hi\""[..])
        );
        // The member with its time spelled `t`.
        let time = |t: &str| ok.replace("\"time\":10", &format!("\"time\":{t}"));
        // The member with its text (`"hi"`) spelled `t`.
        let text = |t: &str| ok.replace("\"hi\"", t);
        for bad in [
            ok.replace("\"seq\":3", "\"seq\":3.0"),
            ok.replace("\"seq\":3", "\"seq\":-1"),
            ok.replace("\"turn\":1", "\"turn\":1.0"),
            text("\"\\u0068i\""),
            ok.replace(
                "\"type\":\"assistant/chunk\",",
                "\"type\":\"assistant/chunk\", ",
            ),
            ok.clone() + " ",
            ok.replace("text-delta", "block-start"),
            // Numbers JavaScript never prints so, or that are not safe integers.
            time("-0"),
            time("010"),
            time("1e1"),
            time("10E0"),
            time("9007199254740992"),
            time("-9007199254740992"),
            time("12345678901234567"),
            time("-"),
            // Strings JSON.stringify never writes so.
            text("\"h\ti\""),
            text("\"h\\/i\""),
            text("\"h\\u00e9\""),
        ] {
            assert!(parse_member(bad.as_bytes()).is_none(), "{bad}");
        }
        for good in [
            time("9007199254740991"),
            time("-9007199254740991"),
            time("0"),
            text("\"h\\ni é \\\"\""),
            text("\"h\\u0001\""),
        ] {
            assert!(parse_member(good.as_bytes()).is_some(), "{good}");
        }
        let mut not_utf8 = ok.clone().into_bytes();
        let h = ok.find("\"hi\"").unwrap() + 1;
        not_utf8[h] = 0xff;
        assert!(parse_member(&not_utf8).is_none());
        let tool = r#"{"type":"assistant/chunk","seq":0,"time":-5,"data":{"turn":1.5,"step":2,"chunk":{"type":"tool-call-delta","index":1,"id":"c","argumentsDelta":"{"}}}"#;
        let m = parse_member(tool.as_bytes()).unwrap();
        assert_eq!(
            (m.tag, m.id, m.name, m.turn),
            (RowKind::ToolCall, Some(&b"\"c\""[..]), None, &b"1.5"[..])
        );
    }

    #[test]
    fn rows_as_written_are_told_from_their_first_bytes() {
        let lines: Vec<String> = (0..4).map(|i| chunk(i, i, "t")).collect();
        let row = pack(&lines);
        assert!(starts_as_row(row.as_bytes()), "{row}");
        for kind in RowKind::ALL {
            let line = format!(r#"{{"type":"{}","seq0":1}}"#, kind.name());
            assert!(starts_as_row(line.as_bytes()), "{line}");
        }
        for other in [
            lines[0].as_str(),
            r#"{"type":"other-chunks","seq0":1}"#,
            r#"{"type":"text-chunk","seq0":1}"#,
            r#"{"seq0":1,"type":"text-chunks"}"#,
            r#"{"type": "text-chunks"}"#,
            r#"{"type":"text-chunks"#,
            "",
        ] {
            assert!(!starts_as_row(other.as_bytes()), "{other}");
        }
    }

    #[test]
    fn packs_runs_of_three_or_more() {
        let lines: Vec<String> = (0..4)
            .map(|i| chunk(i, 100 + i * 7, &format!("t{i}")))
            .collect();
        let packed = pack(&lines);
        assert_eq!(
            packed,
            "{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":100,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[7,7,7],\"texts\":[\"t0\",\"t1\",\"t2\",\"t3\"]}}\n"
        );
        assert_eq!(unpack(&packed), lines.join("\n") + "\n");
        let two = &lines[..2];
        assert_eq!(pack(two), two.join("\n") + "\n");
    }

    #[test]
    fn seq_gaps_split_runs() {
        let lines = vec![
            chunk(0, 0, "a"),
            chunk(1, 0, "b"),
            chunk(3, 0, "c"),
            chunk(4, 0, "d"),
            chunk(5, 0, "e"),
        ];
        let packed = pack(&lines);
        assert_eq!(packed.lines().count(), 3, "{packed}");
        assert_eq!(unpack(&packed), lines.join("\n") + "\n");
    }

    #[test]
    fn a_change_of_block_splits_runs() {
        // Three tool-call deltas of one block, then three that differ from them in one part
        // of the block only (by a byte, or by a prefix of it), then three more.
        let tool = |seq: i64, turn: &str, step: &str, index: &str, id: &str, name: &str| {
            let name = match name {
                "" => String::new(),
                n => format!(r#","name":"{n}""#),
            };
            format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":0,"data":{{"turn":{turn},"step":{step},"chunk":{{"type":"tool-call-delta","index":{index},"id":"{id}"{name},"argumentsDelta":"x"}}}}}}"#
            )
        };
        let base = ["1", "1", "1", "c", "bash"];
        let others = [
            (0, "12"),
            (0, "2"),
            (1, "12"),
            (1, "2"),
            (2, "12"),
            (2, "2"),
            (3, "c1"),
            (3, "d"),
            (4, ""),
            (4, "bask"),
        ];
        for (part, value) in others {
            let mut other = base;
            other[part] = value;
            let mut lines = Vec::new();
            for (k, p) in [base, other, base].iter().enumerate() {
                for j in 0..3 {
                    lines.push(tool((3 * k + j) as i64, p[0], p[1], p[2], p[3], p[4]));
                }
            }
            let packed = pack(&lines);
            assert_eq!(packed.lines().count(), 3, "part {part}: {packed}");
            assert_eq!(unpack(&packed), lines.join("\n") + "\n");
        }
    }

    #[test]
    fn decoder_errors_use_dsh_wording() {
        let row = decoded;
        let err = |s: &str| row(s).unwrap_err();
        assert_eq!(
            err(
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b","c"]}}"#
            ),
            "malformed text-chunks storage row: dt length 1 does not match 3 members"
        );
        assert_eq!(
            err(r#"{"type":"text-chunks","seq0":-1,"time0":0,"data":{}}"#),
            "malformed text-chunks storage row: seq0 must be a non-negative safe integer"
        );
        assert_eq!(
            err(
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"x","name":5,"dt":[],"args":["a"]}}"#
            ),
            "malformed tool-call-chunks storage row: id (and name when present) must be strings"
        );
        assert_eq!(
            err(
                r#"{"type":"text-chunks","seq0":9007199254740990,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}"#
            ),
            "malformed text-chunks storage row: member seqs must stay safe integers"
        );
        assert_eq!(
            row(
                r#"{"type":"reasoning-chunks","data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}"#
            ),
            Ok(2)
        );
    }

    fn expand(row: &Row<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        for k in 0..row.len() {
            row.write_member(k, &mut out);
            out.push(b'\n');
        }
        out
    }

    #[test]
    fn fast_and_general_paths_agree() {
        let rows = [
            r#"{"type":"text-chunks","seq0":4,"time0":-3,"data":{"turn":1,"step":2,"index":0,"dt":[1,-2],"texts":["a","\ud800","é\n"]}}"#,
            r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1.5,"step":1e+21,"index":0,"dt":[0],"id":"c","name":"bash","args":["{","}"]}}"#,
            r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1.0,"step":1,"index":-0,"dt":[],"id":"c","args":[""]}}"#,
            r#"{"type":"reasoning-chunks","data":{"turn":1,"step":1,"index":0,"dt":[5,5],"texts":["x","y","\u0041"]}}"#,
        ];
        for line in rows {
            let fast = canonical_row(line.as_bytes()).expect(line);
            let env = object(line.as_bytes());
            let tag =
                RowKind::from_name(&json::str_value(get(&env, "type").unwrap()).unwrap()).unwrap();
            let general = decode_object(&env, tag).unwrap();
            assert_eq!(expand(&fast), expand(&general), "{line}");
        }
        // Not the canonical layout: the general path decodes it.
        let spaced = r#"{"type":"text-chunks", "seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#;
        assert!(canonical_row(spaced.as_bytes()).is_none());
        assert_eq!(decoded(spaced), Ok(1));
        // Wrong in a way the fast path cannot word: it defers to the general path.
        let bad = r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a"]}}"#;
        assert!(canonical_row(bad.as_bytes()).is_none());
        assert!(
            decoded(bad)
                .unwrap_err()
                .contains("dt length 1 does not match 1 members")
        );
    }
}
