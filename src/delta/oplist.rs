//! Durable op lists: one batch per line, as a bare `WireOp[]` or a record
//! `{"seq":N,"tag":"base"|null,"ops":[...],"address":"..."}` (`value` is accepted for `ops`).
//! Recovery starts at the last base batch, found by reading the file backwards, and decodes
//! forward with a fresh decoder.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use super::apply::apply;
use super::wire::{self, Decoder};
use super::{Error, Op};
use crate::json;
use crate::value::Value;

/// A record's `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Absent,
    Null,
    Base,
}

/// One batch of an op list.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: Option<u64>,
    pub tag: Tag,
    pub ops: Value,
    pub address: Option<String>,
}

/// Parses one line into a record, checking the record's own shape and that its tag agrees
/// with its first op.
pub fn parse_record(line: &[u8]) -> Result<Record, String> {
    let v = Value::parse(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let rec = match v {
        Value::Array(_) => Record {
            seq: None,
            tag: Tag::Absent,
            ops: v,
            address: None,
        },
        Value::Object(_) => {
            let ops = match (v.get("ops"), v.get("value")) {
                (Some(o), None) | (None, Some(o)) => o.clone(),
                (Some(_), Some(_)) => return Err("a record has both \"ops\" and \"value\"".into()),
                (None, None) => return Err("a record needs \"ops\" (or \"value\")".into()),
            };
            let seq = match v.get("seq") {
                None => None,
                Some(s) => Some(super::count(s).ok_or("\"seq\" must be a non-negative integer")?),
            };
            let tag = match v.get("tag") {
                None => Tag::Absent,
                Some(Value::Null) => Tag::Null,
                Some(t) if t.as_str().as_deref() == Some("base") => Tag::Base,
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
    let base = matches!(&rec.ops, Value::Array(ops) if matches!(ops.first(), Some(Value::Array(t)) if t.first().and_then(Value::as_str).as_deref() == Some("r")));
    match rec.tag {
        Tag::Base if !base => Err("the record is tagged \"base\" but its first op is not r".into()),
        Tag::Null if base => Err("the record's first op is r but it is not tagged \"base\"".into()),
        _ => Ok(rec),
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

/// A batch that failed: the op index (when known) and why.
pub type BatchError = (Option<usize>, Error);

impl Replay {
    /// Applies one batch, returning its decoded ops.
    pub fn batch(&mut self, ops: &Value) -> Result<Vec<Op>, BatchError> {
        let decoded = self.decoder.decode(ops)?;
        for (k, op) in decoded.iter().enumerate() {
            apply(&mut self.value, op.clone()).map_err(|e| (Some(k), e))?;
        }
        Ok(decoded)
    }
}

/// Reads a file's lines from the end: each line with the offset of its first byte.
pub struct ReverseLines<'f> {
    file: &'f mut File,
    /// File offset of `buf[0]`; the bytes in `buf` end where the next line (from the end)
    /// ends.
    pos: u64,
    buf: Vec<u8>,
    done: bool,
}

impl<'f> ReverseLines<'f> {
    /// Also says whether the file's last line ends with a newline.
    pub fn new(file: &'f mut File) -> io::Result<(ReverseLines<'f>, bool)> {
        let len = file.seek(SeekFrom::End(0))?;
        let mut r = ReverseLines {
            file,
            pos: len,
            buf: Vec::new(),
            done: len == 0,
        };
        let mut terminated = true;
        if len > 0 {
            r.load()?;
            if r.buf.last() == Some(&b'\n') {
                r.buf.pop();
            } else {
                terminated = false;
            }
        }
        Ok((r, terminated))
    }

    fn load(&mut self) -> io::Result<()> {
        let n = self.pos.min(64 * 1024);
        self.pos -= n;
        let mut chunk = vec![0u8; n as usize];
        self.file.seek(SeekFrom::Start(self.pos))?;
        self.file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&self.buf);
        self.buf = chunk;
        Ok(())
    }

    pub fn next_line(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if let Some(k) = memchr::memrchr(b'\n', &self.buf) {
                let line = self.buf[k + 1..].to_vec();
                self.buf.truncate(k);
                return Ok(Some((self.pos + k as u64 + 1, line)));
            }
            if self.pos == 0 {
                self.done = true;
                return Ok(Some((0, std::mem::take(&mut self.buf))));
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
        assert_eq!((r.seq, r.tag), (Some(3), Tag::Base));
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
pub struct Options {
    /// Stop after the batch with this seq (and start at the last base at or before it).
    pub at: Option<u64>,
    /// Start at the first batch instead of the last base.
    pub from_start: bool,
    /// Only the records of this address.
    pub address: Option<String>,
    /// A torn last line is an error rather than a warning.
    pub strict: bool,
}

/// Where the replay must start in a plain file: the offset of the last base batch (for the
/// address, at or before `at`), found reading backwards; 0 if there is none. Also says
/// whether the list holds several addresses (then it is replayed whole, per address).
pub fn find_start(file: &mut File, opts: &Options) -> io::Result<(u64, bool)> {
    if opts.from_start {
        return Ok((0, false));
    }
    let want = opts.address.as_ref().map(|a| {
        let mut raw = Vec::new();
        crate::value::write_string(&a.encode_utf16().collect::<Vec<_>>(), &mut raw);
        raw
    });
    let (mut lines, _) = ReverseLines::new(file)?;
    while let Some((offset, line)) = lines.next_line()? {
        if line.iter().all(|&b| json::is_ws(b)) {
            continue;
        }
        let p = peek(&line);
        match (&want, p.address) {
            (None, Some(_)) => return Ok((0, true)),
            (Some(w), a) if a.map(|a| a == &w[..]) != Some(true) => continue,
            _ => {}
        }
        let in_range = match (opts.at, p.seq) {
            (Some(at), Some(seq)) => seq <= at,
            (Some(_), None) => false,
            (None, _) => true,
        };
        if p.base && in_range {
            return Ok((offset, false));
        }
    }
    Ok((0, false))
}
