//! Packed chunk rows: DeepSeek Harness's lossless layout for runs of `assistant/chunk` deltas.
//!
//! A run of three or more consecutive deltas of one block is stored as one row:
//!
//! ```text
//! {"type":"text-chunks","seq0":12,"time0":1783352170000,"data":{"turn":1,"step":1,"index":0,"dt":[0,28,1],"texts":["The"," user"," wants"," me"]}}
//! ```
//!
//! The encoder ([`Packer`]) and the decoder ([`decode`]) sit side by side so that one can be
//! read against the other. sess is byte-exact where DSH is only value-exact: an event is
//! packed only when [`member`] recognises it in exactly the bytes the decoder writes back,
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
pub enum Tag {
    Text,
    Reasoning,
    ToolCall,
}

impl Tag {
    pub const ALL: [Tag; 3] = [Tag::Text, Tag::Reasoning, Tag::ToolCall];

    pub fn name(self) -> &'static str {
        match self {
            Tag::Text => "text-chunks",
            Tag::Reasoning => "reasoning-chunks",
            Tag::ToolCall => "tool-call-chunks",
        }
    }

    fn delta_type(self) -> &'static str {
        match self {
            Tag::Text => "text-delta",
            Tag::Reasoning => "reasoning-delta",
            Tag::ToolCall => "tool-call-delta",
        }
    }

    fn payload_key(self) -> &'static str {
        match self {
            Tag::ToolCall => "args",
            _ => "texts",
        }
    }

    fn from_name(name: &str) -> Option<Tag> {
        Tag::ALL.into_iter().find(|t| t.name() == name)
    }
}

// ---------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------

/// A row that failed validation, with DSH's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub tag: Tag,
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
    pub tag: Tag,
    /// Each member's seq and time, or `None` for DSH's normalized fixtures, which strip
    /// `seq0`/`time0` (and their events strip `seq`/`time`).
    clock: Option<Vec<(i64, i64)>>,
    turn: String,
    step: String,
    index: String,
    /// Raw JSON strings, quotes included.
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    members: Vec<&'a [u8]>,
}

/// The row tag of a line, if its top-level `type` (the last one, as `JSON.parse` reads
/// duplicates) names a row. Anything else is an ordinary event.
pub fn row_tag(line: &[u8]) -> Option<Tag> {
    // Cheap reject: every row tag contains this text unescaped, or an escape.
    if memchr::memmem::find(line, b"chunks").is_none() && !line.contains(&b'\\') {
        return None;
    }
    let raw = json::field(line, "type")?;
    Tag::from_name(&json::str_value(raw)?)
}

/// The top-level members of an object, duplicates resolved as `JSON.parse` does (the last
/// value wins, at the first key's position). Keys are decoded.
fn object(raw: &[u8]) -> Vec<(Cow<'_, str>, &[u8])> {
    let mut out: Vec<(Cow<'_, str>, &[u8])> = Vec::new();
    for (k, v) in json::members(raw) {
        let key = match std::str::from_utf8(k) {
            Ok(s) if !k.contains(&b'\\') => Cow::Borrowed(s),
            _ => Cow::Owned(json::decode_string(k).unwrap_or_default()),
        };
        match out.iter_mut().find(|(seen, _)| *seen == key) {
            Some(slot) => slot.1 = v,
            None => out.push((key, v)),
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

/// Validates a row in DSH's order of checks and returns it ready to expand. `line` must be
/// a row (see [`row_tag`]) and valid JSON.
pub fn decode(line: &[u8], tag: Tag) -> Result<Row<'_>, RowError> {
    let fail = |why: &str| RowError {
        tag,
        why: why.to_string(),
    };
    let env = object(line);
    // DSH's normalized fixtures strip seq0/time0; everything else must carry both.
    let stamped = has_exact_keys(&env, &["type", "seq0", "time0", "data"]);
    if !stamped && !has_exact_keys(&env, &["type", "data"]) {
        return Err(fail("envelope must be exactly {type, seq0, time0, data}"));
    }
    let seq0 = if stamped {
        let v = get(&env, "seq0").and_then(json::safe_integer);
        Some(
            v.filter(|s| *s >= 0)
                .ok_or_else(|| fail("seq0 must be a non-negative safe integer"))?,
        )
    } else {
        None
    };
    let time0 = if stamped {
        Some(
            get(&env, "time0")
                .and_then(json::safe_integer)
                .ok_or_else(|| fail("time0 must be a safe integer"))?,
        )
    } else {
        None
    };
    let data_raw = get(&env, "data").unwrap_or_default();
    if !matches!(data_raw.first(), Some(b'{' | b'[')) {
        return Err(fail("data must be an object"));
    }
    let data = if data_raw[0] == b'{' {
        object(data_raw)
    } else {
        Vec::new()
    };
    let (id, name) = if tag == Tag::ToolCall {
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
    if dt.len() != members.len() - 1 {
        return Err(fail(&format!(
            "dt length {} does not match {} members",
            dt.len(),
            members.len()
        )));
    }
    let clock = match (seq0, time0) {
        (Some(seq0), Some(time0)) => Some(member_clock(seq0, time0, &dt).map_err(fail)?),
        _ => None,
    };
    // DSH re-serializes turn/step/index from doubles; do the same so values agree.
    let canonical = |raw: &[u8]| json::js_number(json::number_value(raw).unwrap_or(f64::NAN));
    Ok(Row {
        tag,
        clock,
        turn: canonical(turn),
        step: canonical(step),
        index: canonical(index),
        id,
        name,
        members,
    })
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
    /// [`member`] recognises.
    pub fn write_member(&self, k: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":\"assistant/chunk\",");
        if let Some(clock) = &self.clock {
            let (seq, time) = clock[k];
            let _ = write!(out, "\"seq\":{seq},\"time\":{time},");
        }
        let _ = write!(
            out,
            "\"data\":{{\"turn\":{},\"step\":{},\"chunk\":{{\"type\":\"{}\",\"index\":{}",
            self.turn,
            self.step,
            self.tag.delta_type(),
            self.index
        );
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
pub struct Member<'a> {
    pub tag: Tag,
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

/// A cursor over a line that matches literal text and canonical values in order.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(s).then(|| self.i += s.len())
    }

    fn number(&mut self) -> Option<&'a [u8]> {
        let end = json::number_end(self.b, self.i).ok()?;
        let raw = &self.b[self.i..end];
        self.i = end;
        Some(raw)
    }

    /// A safe integer in plain digits (the only way JavaScript prints one).
    fn safe_int(&mut self) -> Option<i64> {
        let raw = self.number()?;
        if raw.contains(&b'.')
            || raw.contains(&b'e')
            || raw == b"-0"
            || !json::is_canonical_number(raw)
        {
            return None;
        }
        json::safe_integer(raw)
    }

    fn canonical_number(&mut self) -> Option<&'a [u8]> {
        self.number().filter(|raw| json::is_canonical_number(raw))
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let end = json::string_end(self.b, self.i)?;
        let raw = &self.b[self.i..end];
        self.i = end;
        (std::str::from_utf8(raw).is_ok() && json::is_canonical_string(&raw[1..raw.len() - 1]))
            .then_some(raw)
    }
}

/// Recognises a packable chunk delta: exactly the bytes `JSON.stringify` writes for a DSH
/// `assistant/chunk` text, reasoning or tool-call delta, which are also exactly the bytes
/// [`Row::write_member`] writes back. Anything else returns `None` and stays verbatim.
pub fn member(line: &[u8]) -> Option<Member<'_>> {
    let mut c = Cursor { b: line, i: 0 };
    c.lit(b"{\"type\":\"assistant/chunk\",\"seq\":")?;
    let seq = c.safe_int().filter(|s| *s >= 0)?;
    c.lit(b",\"time\":")?;
    let time = c.safe_int()?;
    c.lit(b",\"data\":{\"turn\":")?;
    let turn = c.canonical_number()?;
    c.lit(b",\"step\":")?;
    let step = c.canonical_number()?;
    c.lit(b",\"chunk\":{\"type\":\"")?;
    let tag = Tag::ALL
        .into_iter()
        .find(|t| c.lit(t.delta_type().as_bytes()).is_some())?;
    c.lit(b"\",\"index\":")?;
    let index = c.canonical_number()?;
    let (mut id, mut name) = (None, None);
    if tag == Tag::ToolCall {
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
    (c.i == line.len()).then_some(Member {
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
struct Run {
    n: usize,
    /// Lines of the first members, each followed by `\n`.
    head: Vec<u8>,
    /// The first member's row fields, rendered: `"seq0":..,"time0":..,"data":{...,"index":I,`
    prefix: Vec<u8>,
    /// `,"id":..[,"name":..]` for tool rows, written after `dt`.
    ident: Vec<u8>,
    dt: Vec<u8>,
    texts: Vec<u8>,
    /// The last member, owned, for the continuation test.
    last: Option<OwnedMember>,
}

#[derive(Clone, PartialEq, Eq)]
struct OwnedMember {
    tag: Tag,
    seq: i64,
    time: i64,
    key: Vec<u8>,
}

impl OwnedMember {
    fn of(m: &Member<'_>) -> OwnedMember {
        let mut key = Vec::new();
        for part in [Some(m.turn), Some(m.step), Some(m.index), m.id, m.name] {
            match part {
                Some(p) => key.extend_from_slice(p),
                None => key.push(0),
            }
            key.push(0xff); // never inside UTF-8 text: a safe separator
        }
        OwnedMember {
            tag: m.tag,
            seq: m.seq,
            time: m.time,
            key,
        }
    }

    /// Whether `next` continues a run whose last member is `self` (DSH's rule; raw text
    /// equality is value equality because both sides are canonical).
    fn continued_by(&self, next: &OwnedMember) -> bool {
        self.tag == next.tag
            && next.seq == self.seq + 1
            && (next.time - self.time).abs() <= MAX_SAFE
            && self.key == next.key
    }
}

/// Packs a stream of events into rows. Feed every event in order with [`Packer::event`],
/// then call [`Packer::finish`].
#[derive(Default)]
pub struct Packer {
    run: Run,
    /// Counters for `--stats`-style reporting.
    pub rows: u64,
    pub packed_events: u64,
}

impl Packer {
    /// One logical event (a line without its newline). `terminated` is false only for a
    /// last line without newline, which is written back exactly so.
    pub fn event<W: Write>(
        &mut self,
        line: &[u8],
        terminated: bool,
        out: &mut W,
    ) -> io::Result<()> {
        match member(line).filter(|_| terminated) {
            Some(m) => self.member(line, &m, out),
            None => {
                self.flush(out)?;
                out.write_all(line)?;
                if terminated {
                    out.write_all(b"\n")?;
                }
                Ok(())
            }
        }
    }

    fn member<W: Write>(&mut self, line: &[u8], m: &Member<'_>, out: &mut W) -> io::Result<()> {
        let owned = OwnedMember::of(m);
        let continues = self
            .run
            .last
            .as_ref()
            .is_some_and(|last| last.continued_by(&owned));
        if !continues {
            self.flush(out)?;
            self.start(m);
        } else {
            let gap = m.time - self.run.last.as_ref().map_or(0, |l| l.time);
            if self.run.n > 1 {
                self.run.dt.push(b',');
            }
            let _ = write!(self.run.dt, "{gap}");
            self.run.texts.push(b',');
        }
        self.run.texts.extend_from_slice(m.text);
        if self.run.n < MIN_RUN - 1 {
            self.run.head.extend_from_slice(line);
            self.run.head.push(b'\n');
        }
        self.run.n += 1;
        self.run.last = Some(owned);
        Ok(())
    }

    fn start(&mut self, m: &Member<'_>) {
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
    fn flush<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        let run = std::mem::take(&mut self.run);
        if run.n == 0 {
            return Ok(());
        }
        if run.n < MIN_RUN {
            out.write_all(&run.head)?;
        } else {
            let tag = run.last.as_ref().map_or(Tag::Text, |l| l.tag);
            out.write_all(&run.prefix)?;
            out.write_all(b",\"dt\":[")?;
            out.write_all(&run.dt)?;
            out.write_all(b"]")?;
            out.write_all(&run.ident)?;
            write!(out, ",\"{}\":[", tag.payload_key())?;
            out.write_all(&run.texts)?;
            out.write_all(b"]}}\n")?;
            self.rows += 1;
            self.packed_events += run.n as u64;
        }
        Ok(())
    }

    /// Flushes the open run. Call once at the end of the input.
    pub fn finish<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.flush(out)
    }
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
        let mut p = Packer::default();
        let mut out = Vec::new();
        for l in lines {
            p.event(l.as_bytes(), true, &mut out).unwrap();
        }
        p.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn unpack(text: &str) -> String {
        let mut out = Vec::new();
        for line in text.lines() {
            match row_tag(line.as_bytes()) {
                Some(tag) => {
                    let row = decode(line.as_bytes(), tag).unwrap();
                    for k in 0..row.len() {
                        row.write_member(k, &mut out);
                        out.push(b'\n');
                    }
                }
                None => {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn recognises_canonical_members_only() {
        let ok = chunk(3, 10, "hi");
        let m = member(ok.as_bytes()).unwrap();
        assert_eq!(
            (m.tag, m.seq, m.time, m.text),
            (Tag::Text, 3, 10, &b"\"hi\""[..])
        );
        for bad in [
            ok.replace("\"seq\":3", "\"seq\":3.0"),
            ok.replace("\"seq\":3", "\"seq\":-1"),
            ok.replace("\"turn\":1", "\"turn\":1.0"),
            ok.replace("\"hi\"", "\"\\u0068i\""),
            ok.replace(
                "\"type\":\"assistant/chunk\",",
                "\"type\":\"assistant/chunk\", ",
            ),
            ok.clone() + " ",
            ok.replace("text-delta", "block-start"),
        ] {
            assert!(member(bad.as_bytes()).is_none(), "{bad}");
        }
        let tool = r#"{"type":"assistant/chunk","seq":0,"time":-5,"data":{"turn":1.5,"step":2,"chunk":{"type":"tool-call-delta","index":1,"id":"c","argumentsDelta":"{"}}}"#;
        let m = member(tool.as_bytes()).unwrap();
        assert_eq!(
            (m.tag, m.id, m.name, m.turn),
            (Tag::ToolCall, Some(&b"\"c\""[..]), None, &b"1.5"[..])
        );
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
    fn decoder_errors_use_dsh_wording() {
        let row = |s: &str| decode(s.as_bytes(), row_tag(s.as_bytes()).unwrap()).map(|r| r.len());
        let err = |s: &str| row(s).unwrap_err().to_string();
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
}
