//! Durable op lists: one batch per line, as a bare `WireOp[]` or a record
//! `{"seq":N,"tag":"base"|null,"ops":[...],"address":"..."}` (`value` is accepted for `ops`).
//! Recovery starts at the last base batch, found by reading the file backwards, and decodes
//! forward with a fresh decoder.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use super::apply::{self, apply};
use super::raw;
use super::wire::{self, Decoder};
use super::{Op, OpError};
use crate::json;
use crate::value::Value;

/// A record's `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchTag {
    Absent,
    Null,
    Base,
}

/// One batch of an op list.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: Option<u64>,
    pub tag: BatchTag,
    pub ops: Value,
    pub address: Option<String>,
}

/// Parses one line into a record, checking the record's own shape and that its tag agrees
/// with its first op.
pub fn parse_record(line: &[u8]) -> Result<Record, String> {
    let mut v = Value::parse(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let rec = match v {
        Value::Array(_) => Record {
            seq: None,
            tag: BatchTag::Absent,
            ops: v,
            address: None,
        },
        Value::Object(_) => {
            let ops = match (v.get("ops"), v.get("value")) {
                (Some(_), None) => take(&mut v, "ops"),
                (None, Some(_)) => take(&mut v, "value"),
                (Some(_), Some(_)) => return Err("a record has both \"ops\" and \"value\"".into()),
                (None, None) => return Err("a record needs \"ops\" (or \"value\")".into()),
            };
            let seq = match v.get("seq") {
                None => None,
                Some(s) => Some(super::count(s).ok_or("\"seq\" must be a non-negative integer")?),
            };
            let tag = match v.get("tag") {
                None => BatchTag::Absent,
                Some(Value::Null) => BatchTag::Null,
                Some(Value::String(t)) if crate::value::eq_str(t, "base") => BatchTag::Base,
                Some(_) => return Err("\"tag\" must be \"base\", null or absent".into()),
            };
            let address = match v.get("address") {
                None => None,
                Some(a) => Some(a.as_str().ok_or("\"address\" must be a string")?),
            };
            Record {
                seq,
                tag,
                ops,
                address,
            }
        }
        _ => return Err("a batch is an array of ops or a record object".into()),
    };
    let base = matches!(&rec.ops, Value::Array(ops) if matches!(ops.first(), Some(Value::Array(t)) if matches!(t.first(), Some(Value::String(v)) if crate::value::eq_str(v, "r"))));
    match rec.tag {
        BatchTag::Base if !base => {
            Err("the record is tagged \"base\" but its first op is not r".into())
        }
        BatchTag::Null if base => {
            Err("the record's first op is r but it is not tagged \"base\"".into())
        }
        _ => Ok(rec),
    }
}

/// The value of the first member named `key` of an object, taken out of it (the record's
/// ops are moved, not copied: a base batch holds a whole snapshot).
fn take(v: &mut Value, key: &str) -> Value {
    match v {
        Value::Object(m) => match m.iter_mut().find(|(k, _)| crate::value::eq_str(k, key)) {
            Some((_, value)) => std::mem::replace(value, Value::Null),
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

/// Whether a line looks like a batch: a bare `WireOp[]`, or a record whose `ops` (or
/// `value`) is an array. Read from the raw bytes, for telling op lists from other logs.
pub fn is_batch(line: &[u8]) -> bool {
    let i = json::skip_ws(line, 0);
    match line.get(i) {
        Some(b'[') => true,
        Some(b'{') => json::field(line, "ops")
            .or_else(|| json::field(line, "value"))
            .is_some_and(|v| v.starts_with(b"[")),
        _ => false,
    }
}

/// What a backwards scan needs of a line, read from its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peek<'a> {
    pub base: bool,
    pub seq: Option<u64>,
    /// The raw JSON of the record's address.
    pub address: Option<&'a [u8]>,
}

pub fn peek(line: &[u8]) -> Peek<'_> {
    let i = json::skip_ws(line, 0);
    if line.get(i) == Some(&b'[') {
        return Peek {
            base: wire::first_verb(line) == Some(b"r"),
            seq: None,
            address: None,
        };
    }
    let ops = json::field(line, "ops").or_else(|| json::field(line, "value"));
    let tagged = json::field(line, "tag") == Some(b"\"base\"");
    Peek {
        base: tagged || ops.and_then(wire::first_verb) == Some(b"r"),
        seq: json::field(line, "seq")
            .and_then(json::safe_integer)
            .and_then(|s| u64::try_from(s).ok()),
        address: json::field(line, "address"),
    }
}

/// Decodes and applies batches in order: one decoder, one value.
#[derive(Debug, Default)]
pub struct Replay {
    decoder: Decoder,
    pub value: Option<Value>,
}

/// A record's ops: parsed, or as [`raw::record`] read them: their JSON (valid), and the
/// batch it read their tuples into, when it read them.
pub enum Ops<'a> {
    Parsed(Value),
    Raw(&'a [u8], Option<&'a mut raw::Batch>),
}

/// A batch that failed: the op index (when known) and why.
pub type BatchError = (Option<usize>, OpError);

impl Replay {
    /// Applies one batch, returning its decoded ops when `keep` (else none: each op is
    /// moved into the value, not copied).
    pub fn batch(&mut self, ops: Ops<'_>, keep: bool) -> Result<Vec<Op>, BatchError> {
        let decoded = match ops {
            Ops::Parsed(ops) => self.decoder.decode_owned(ops)?,
            // Ops read from their bytes whose paths all resolve: applied as they are
            // resolved, unless kept.
            Ops::Raw(_, Some(batch)) if self.decoder.resolves(batch) => {
                if !keep {
                    let value = &mut self.value;
                    self.decoder.each_op(batch, |k, path, edit| {
                        apply::edit(value, path, edit).map_err(|e| (Some(k), e))
                    })?;
                    return Ok(Vec::new());
                }
                self.decoder.ops_of(batch)
            }
            Ops::Raw(raw, _) => {
                let ops = Value::parse(raw).expect("a raw record's ops are valid JSON");
                self.decoder.decode_owned(ops)?
            }
        };
        let mut kept = Vec::with_capacity(if keep { decoded.len() } else { 0 });
        for (k, op) in decoded.into_iter().enumerate() {
            if keep {
                kept.push(op.clone());
            }
            apply(&mut self.value, op).map_err(|e| (Some(k), e))?;
        }
        Ok(kept)
    }
}

/// Reads a file's lines from the end: each line with the offset of its first byte. The
/// bytes are read in chunks into the front of one buffer that doubles when full, and each
/// byte is searched for a newline once, so a line of any length costs linear time.
pub struct ReverseLines<'f> {
    file: &'f mut File,
    /// File offset of `buf[start]`.
    pos: u64,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`; they end where the next line ends.
    start: usize,
    end: usize,
    /// `buf[clean..end]` holds no newline.
    clean: usize,
    done: bool,
}

const CHUNK: usize = 64 * 1024;

impl<'f> ReverseLines<'f> {
    /// Also says whether the file's last line ends with a newline.
    pub fn new(file: &'f mut File) -> io::Result<(ReverseLines<'f>, bool)> {
        let len = file.seek(SeekFrom::End(0))?;
        let mut r = ReverseLines {
            file,
            pos: len,
            buf: Vec::new(),
            start: 0,
            end: 0,
            clean: 0,
            done: len == 0,
        };
        let mut terminated = true;
        if len > 0 {
            r.load()?;
            if r.buf[r.end - 1] == b'\n' {
                r.end -= 1;
            } else {
                terminated = false;
            }
            r.clean = r.end;
        }
        Ok((r, terminated))
    }

    /// Reads the chunk before `start`, making room at the front of the buffer if need be.
    fn load(&mut self) -> io::Result<()> {
        let n = self.pos.min(CHUNK as u64) as usize;
        if self.start < n {
            let used = self.end - self.start;
            let cap = (self.buf.len() * 2).max(used + n + CHUNK);
            let mut grown = vec![0u8; cap];
            let at = cap - used;
            grown[at..].copy_from_slice(&self.buf[self.start..self.end]);
            let shift = at - self.start;
            self.buf = grown;
            self.start += shift;
            self.end += shift;
            self.clean += shift;
        }
        self.pos -= n as u64;
        self.start -= n;
        self.file.seek(SeekFrom::Start(self.pos))?;
        self.file
            .read_exact(&mut self.buf[self.start..self.start + n])
    }

    pub fn next_line(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(k) = memchr::memrchr(b'\n', &self.buf[self.start..self.clean]) {
                let nl = self.start + k;
                let line = self.buf[nl + 1..self.end].to_vec();
                let offset = self.pos + (nl + 1 - self.start) as u64;
                self.end = nl;
                self.clean = nl;
                return Ok(Some((offset, line)));
            }
            self.clean = self.start;
            if self.pos == 0 {
                self.done = true;
                return Ok(Some((0, self.buf[self.start..self.end].to_vec())));
            }
            self.load()?;
        }
    }
}

/// 1-based line number of the line starting at `offset` (counts newlines before it: only
/// on the error path, so recovery time still depends on the tail).
pub fn line_number(file: &mut File, offset: u64) -> io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut left = offset;
    let mut n = 1;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        file.read_exact(&mut buf[..want])?;
        n += memchr::memchr_iter(b'\n', &buf[..want]).count() as u64;
        left -= want as u64;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_and_checks_tags() {
        let r = parse_record(br#"{"seq":3,"tag":"base","ops":[["r",1]]}"#).unwrap();
        assert_eq!((r.seq, r.tag), (Some(3), BatchTag::Base));
        assert!(parse_record(br#"[["s",["a"],1]]"#).is_ok());
        assert!(parse_record(br#"{"seq":1,"value":[]}"#).is_ok());
        assert!(
            parse_record(br#"{"seq":2,"tag":"base","ops":[["s",0,4]]}"#)
                .unwrap_err()
                .contains("tagged")
        );
        assert!(
            parse_record(br#"{"seq":2,"tag":null,"ops":[["r",4]]}"#)
                .unwrap_err()
                .contains("not tagged")
        );
        assert!(parse_record(br#"{"seq":2,"tag":"x","ops":[]}"#).is_err());
        assert!(parse_record(br#"{"seq":-1,"ops":[]}"#).is_err());
        assert!(parse_record(b"7").is_err());
    }

    #[test]
    fn peeks_without_parsing() {
        assert!(peek(br#"{"seq":3,"tag":"base","ops":[["r",1]]}"#).base);
        assert!(peek(br#"[["r",{}],["s",["a"],1]]"#).base);
        assert!(!peek(br#"{"seq":4,"tag":null,"ops":[["a",["s"],"x"]]}"#).base);
        assert_eq!(
            peek(br#"{"seq":4,"address":"x","ops":[]}"#).address,
            Some(&b"\"x\""[..])
        );
    }

    #[test]
    fn reads_lines_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut text = String::new();
        for i in 0..5000 {
            text += &format!("line {i} {}\n", "x".repeat(i % 97));
        }
        std::fs::write(&p, &text).unwrap();
        let mut f = File::open(&p).unwrap();
        let (mut r, terminated) = ReverseLines::new(&mut f).unwrap();
        assert!(terminated);
        let mut got = Vec::new();
        while let Some((off, line)) = r.next_line().unwrap() {
            assert_eq!(
                &text.as_bytes()[off as usize..off as usize + line.len()],
                &line[..]
            );
            got.push(String::from_utf8(line).unwrap());
        }
        got.reverse();
        assert_eq!(got, text.lines().collect::<Vec<_>>());
        assert_eq!(
            line_number(
                &mut f,
                text.lines().take(10).map(|l| l.len() + 1).sum::<usize>() as u64
            )
            .unwrap(),
            11
        );
    }
}

/// What to recover.
#[derive(Debug, Clone, Default)]
pub struct RecoverOptions {
    /// The value after the last batch whose seq is at most this (replay starts at the last
    /// base at or before it). Every record must then carry a seq.
    pub at: Option<u64>,
    /// Start at the first batch instead of the last base.
    pub from_start: bool,
    /// Only the records of this address.
    pub address: Option<String>,
    /// A torn last line is an error rather than a warning.
    pub strict: bool,
}

impl RecoverOptions {
    /// Whether records are replayed per address: the list's first record carries an
    /// address and no `address` picks one. Such a list is replayed whole.
    pub fn by_address(&self, first: &Peek<'_>) -> bool {
        self.address.is_none() && first.address.is_some()
    }

    /// Whether the record belongs to the chosen list.
    pub fn chooses(&self, address: Option<&[u8]>) -> bool {
        match &self.address {
            None => true,
            Some(want) => address
                .and_then(json::str_value)
                .is_some_and(|a| a == want.as_str()),
        }
    }

    /// Whether the record is one replay would apply: of the chosen list, and not past `at`.
    pub fn applies(&self, p: &Peek<'_>) -> bool {
        self.chooses(p.address) && self.at.is_none_or(|at| p.seq.is_none_or(|seq| seq <= at))
    }

    /// Whether replay may start at this record: a base batch of the chosen list at or
    /// before `at`. The one rule both the backward and the forward finder use.
    pub fn starts_replay(&self, p: &Peek<'_>, by_address: bool) -> bool {
        if self.from_start || by_address || !self.chooses(p.address) {
            return false;
        }
        let in_range = match (self.at, p.seq) {
            (Some(at), Some(seq)) => seq <= at,
            (Some(_), None) => false,
            (None, _) => true,
        };
        p.base && in_range
    }
}

/// Where replay starts in a plain file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub offset: u64,
    pub by_address: bool,
}

/// Where the replay must start in a plain file: the offset of the last record that
/// [`RecoverOptions::starts_replay`], found reading backwards, or 0 if there is none or the list
/// is replayed whole.
pub fn find_start(file: &mut File, opts: &RecoverOptions) -> io::Result<Start> {
    let first = first_record(file)?;
    let by_address = first.as_deref().is_some_and(|l| opts.by_address(&peek(l)));
    let whole = Start {
        offset: 0,
        by_address,
    };
    if opts.from_start || by_address {
        return Ok(whole);
    }
    let (mut lines, terminated) = ReverseLines::new(file)?;
    let mut last = !terminated;
    while let Some((offset, line)) = lines.next_line()? {
        // A last line without newline that is not JSON is torn, as every reader tells one,
        // and replay passes over it: it never starts replay, though a cut base batch looks
        // like one by its first bytes.
        let torn = std::mem::take(&mut last) && json::validate(&line).is_err();
        if !torn && !is_blank(&line) && opts.starts_replay(&peek(&line), false) {
            return Ok(Start { offset, ..whole });
        }
    }
    Ok(whole)
}

/// The first line of a file that is not blank.
fn first_record(file: &mut File) -> io::Result<Option<Vec<u8>>> {
    file.seek(SeekFrom::Start(0))?;
    let mut lines = crate::io::LineReader::new(&mut *file);
    while let Some(line) = lines.next_line()? {
        if !is_blank(line.bytes) {
            return Ok(Some(line.bytes.to_vec()));
        }
    }
    Ok(None)
}

/// Whether a line holds nothing but whitespace (skipped everywhere in op lists).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| json::is_ws(b))
}

/// The forward finder, for input that cannot be read backwards (stdin, compressed files):
/// keeps the lines since the last record that [`RecoverOptions::starts_replay`].
#[derive(Debug, Default)]
pub struct Tail {
    by_address: Option<bool>,
    /// Line number, offset and bytes of each line kept.
    pub lines: Vec<(u64, u64, Vec<u8>)>,
    /// Since lines were last lost ([`Tail::gap`]), if they were.
    gap: Option<Gap>,
}

/// What followed lost lines. A batch after them builds on batches that may have been lost
/// with them: applied to what came before, it gives a value that never was. So each list's
/// batches are dropped until its next base batch.
#[derive(Debug, Default)]
pub struct Gap {
    /// The raw addresses of the lists that have had a base since (`""`: no address).
    rebased: std::collections::HashSet<Vec<u8>>,
    /// The batches dropped (after this loss and any before it since replay began).
    pub dropped: u64,
    /// The line of the first one dropped.
    pub first_dropped: Option<u64>,
}

impl Tail {
    pub fn push(&mut self, opts: &RecoverOptions, number: u64, offset: u64, line: &[u8]) {
        if is_blank(line) {
            return;
        }
        let p = peek(line);
        let by_address = *self.by_address.get_or_insert_with(|| opts.by_address(&p));
        if opts.starts_replay(&p, by_address) {
            // One list, replayed from here: nothing lost before matters.
            self.lines.clear();
            self.gap = None;
        }
        // Records that would not be applied anyway (another list's, or past --at) are
        // neither dropped nor counted.
        if let Some(gap) = self.gap.as_mut().filter(|_| opts.applies(&p)) {
            let list = p.address.unwrap_or_default().to_vec();
            if p.base {
                gap.rebased.insert(list);
            } else if !gap.rebased.contains(&list) {
                gap.dropped += 1;
                gap.first_dropped.get_or_insert(number);
                return;
            }
        }
        self.lines.push((number, offset, line.to_vec()));
    }

    /// Lines were lost before the next one pushed (`--recovery skip-corrupt`).
    pub fn gap(&mut self) {
        let before = self.gap.take().unwrap_or_default();
        self.gap = Some(Gap {
            rebased: Default::default(),
            ..before
        });
    }

    /// The last loss, when batches after it were dropped.
    pub fn dropped(&self) -> Option<&Gap> {
        self.gap.as_ref().filter(|g| g.dropped > 0)
    }

    pub fn by_address(&self) -> bool {
        self.by_address.unwrap_or(false)
    }
}

/// One batch applied, for printing.
#[derive(Debug)]
pub struct Applied<'a> {
    pub seq: Option<u64>,
    /// The batch's ops, when the replayer keeps them ([`Replayer::keeping_ops`]).
    pub ops: Vec<Op>,
    /// The value of the batch's list after it.
    pub value: Option<&'a Value>,
}

/// Applies the records of the replayed part, in order: the one replay engine behind every
/// way of reading a list.
#[derive(Debug)]
pub struct Replayer {
    opts: RecoverOptions,
    by_address: bool,
    /// One replay per address other than "", when by address.
    lists: std::collections::BTreeMap<String, Replay>,
    /// The replay of records without an address (or with ""), or of every record when not
    /// by address: kept apart, because looking up "" in the map was a tenth of `sess
    /// recover` (`memcmp` of zero bytes at a dangling pointer takes a slow path).
    plain: Option<Replay>,
    applied: u64,
    /// Whether each [`Applied`] carries its batch's ops (copies of them).
    keep_ops: bool,
    /// Where records are read from their bytes, record after record.
    batch: raw::Batch,
}

impl Replayer {
    pub fn new(opts: RecoverOptions, by_address: bool) -> Replayer {
        Replayer {
            opts,
            by_address,
            lists: Default::default(),
            plain: None,
            applied: 0,
            keep_ops: false,
            batch: raw::Batch::default(),
        }
    }

    /// Each [`Applied`] then carries its batch's ops.
    pub fn keeping_ops(mut self, keep: bool) -> Replayer {
        self.keep_ops = keep;
        self
    }

    /// One record. `Ok(None)`: it is not part of the value asked for (another address,
    /// a seq past `at`, a blank line). An error is the record's, for the caller to place.
    pub fn record(&mut self, line: &[u8]) -> Result<Option<Applied<'_>>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        // The common shapes are read from the bytes; the rest, and every error, the
        // general way.
        let (seq, address, ops) = match raw::record(line, &mut self.batch) {
            Some(r) => (
                r.seq,
                r.address,
                Ops::Raw(r.ops, r.read.then_some(&mut self.batch)),
            ),
            None => {
                let rec = parse_record(line)?;
                (rec.seq, rec.address, Ops::Parsed(rec.ops))
            }
        };
        // (The batch is borrowed: what is asked of the options reads them alone.)
        if !address_matches(&self.opts, address.as_deref()) {
            return Ok(None);
        }
        if let Some(at) = self.opts.at {
            match seq {
                None => {
                    return Err(format!(
                        "--at {at} reads records by their seq, and this one has none"
                    ));
                }
                Some(seq) if seq > at => return Ok(None),
                Some(_) => {}
            }
        }
        let replay = match address {
            Some(a) if self.by_address && !a.is_empty() => self.lists.entry(a).or_default(),
            _ => self.plain.get_or_insert_with(Replay::default),
        };
        let ops = replay.batch(ops, self.keep_ops).map_err(|(k, e)| {
            let seq = seq.map_or(String::new(), |s| format!("batch seq {s}, "));
            let op = k.map_or(String::new(), |k| format!("op {k}: "));
            format!("{seq}{op}{e}")
        })?;
        self.applied += 1;
        Ok(Some(Applied {
            seq,
            ops,
            value: replay.value.as_ref(),
        }))
    }

    /// The value (or, by address, one object of the values keyed by address). An error
    /// when nothing was applied: an empty list, or an address no record has.
    pub fn finish(self) -> Result<Value, String> {
        if self.applied == 0 {
            return Err(match (&self.opts.address, self.opts.at) {
                (Some(a), _) => format!("no record has address {a:?}"),
                (None, Some(at)) => format!("no batch has a seq at or before {at}"),
                (None, None) => "the op list holds no batch".to_string(),
            });
        }
        if self.by_address {
            // "" first, as in the order of the keys.
            let plain = self.plain.map(|r| (String::new(), r));
            return Ok(Value::Object(
                plain
                    .into_iter()
                    .chain(self.lists)
                    .map(|(k, r)| (k.encode_utf16().collect(), r.value.unwrap_or(Value::Null)))
                    .collect(),
            ));
        }
        Ok(self.plain.and_then(|r| r.value).unwrap_or(Value::Null))
    }
}

/// Whether a record with `address` is one `opts` asks for.
fn address_matches(opts: &RecoverOptions, address: Option<&str>) -> bool {
    match &opts.address {
        None => true,
        Some(want) => address == Some(want.as_str()),
    }
}

/// How deep the values of a record's ops lie in its line (the record, its `ops`, the op):
/// a snapshot nesting more than [`crate::value::MAX_DEPTH`] less this makes a record
/// that readers refuse.
pub const OP_VALUE_DEPTH: usize = 3;

/// A line of `sess diff` output: `{"seq":N,"tag":"base"|null,"ops":[...]}`.
pub fn diff_record(seq: u64, base: bool, wire: Value) -> Vec<u8> {
    let tag = if base {
        Value::string("base")
    } else {
        Value::Null
    };
    Value::Object(vec![
        ("seq".encode_utf16().collect(), Value::Number(seq as f64)),
        ("tag".encode_utf16().collect(), tag),
        ("ops".encode_utf16().collect(), wire),
    ])
    .to_json()
}

/// A line of `sess recover --states` or `--ops` output: `{"seq":N,"KEY":V}`.
/// Written around `v` where it lies: a value of 200 MB was cloned into the record first
/// (`recover --states` held 8 times it).
pub fn state_record(seq: Option<u64>, key: &str, v: &Value) -> Vec<u8> {
    let mut out = b"{\"seq\":".to_vec();
    match seq {
        Some(s) => crate::json::write_js_number(s as f64, &mut out),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b',');
    Value::string(key).write_json(&mut out);
    out.push(b':');
    v.write_json(&mut out);
    out.push(b'}');
    out
}
