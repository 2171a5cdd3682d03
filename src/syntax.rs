//! Which lines are JSON. Readers pass every line through as it is, but a malformed line in
//! the middle of a log must not go by without a word, and neither may a binary file read as
//! lines of garbage. Each reader checks every line cheaply (its brackets and strings close
//! exactly where the line ends: the same 64-byte-block walk that skips values) and says
//! once, at the end of an input, how many lines were not JSON and where the first one is.
//! `--strict` checks every byte (RFC 8259, UTF-8, as `sess verify` does) and stops at the
//! first bad line.

use crate::error::{Error, Place, Result};
use crate::io::Line;
use crate::json;

/// How a reader checks its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineCheck {
    /// Not at all (`verify` checks strictly on its own; `pack`'s first pass of two).
    Off,
    /// Cheaply, with one warning at the end of each input that had bad lines.
    #[default]
    Warn,
    /// Strictly, and the first bad line is an error.
    Strict,
}

/// The bad lines of one input so far.
#[derive(Debug)]
pub struct Tally {
    check: LineCheck,
    bad: u64,
    /// The first bad line: `file:line:col: invalid JSON: expected … (byte offset N)`.
    first: Option<String>,
    /// The number of the last bad line.
    last: u64,
    /// Whether a line that is not blank has been read.
    content: bool,
}

impl Tally {
    pub fn new(check: LineCheck) -> Tally {
        Tally {
            check,
            bad: 0,
            first: None,
            last: 0,
            content: false,
        }
    }

    /// Checks one line of input `name`. A torn last line is left to the torn-line policy,
    /// which warns about it on its own. A first line that is not blank, is not JSON, and
    /// holds a NUL byte (which JSON text never holds) or is not UTF-8, is binary input: an
    /// error in any mode but [`LineCheck::Off`]; so is a first line that is torn (an input
    /// without a newline: a file of NUL bytes, an executable that holds none).
    ///
    /// Inlined for its first question: a reader that checks nothing (a pack's) asks it of
    /// every line, and a call with the line's place in memory cost a stall a line.
    #[inline]
    pub fn line(&mut self, name: &str, line: &Line<'_>) -> Result<()> {
        match self.check {
            LineCheck::Off => Ok(()),
            _ => self.check_line(name, line),
        }
    }

    fn check_line(&mut self, name: &str, line: &Line<'_>) -> Result<()> {
        let blank = line.bytes.trim_ascii().is_empty();
        let first = !blank && !self.content;
        self.content |= !blank;
        if line.is_torn() {
            return match binary(line.bytes).filter(|_| first) {
                Some((at, why)) => Err(binary_input(name, line, at, why)),
                None => Ok(()),
            };
        }
        let text = line.json_text();
        let bad = match self.check {
            LineCheck::Strict => json::validate(text).err(),
            _ if looks_whole(text) => None,
            // The cheap check failed: the strict one says where and why.
            _ => json::validate(text).err(),
        };
        let Some(e) = bad else { return Ok(()) };
        let place = Place::line(name, line.number)
            .column(e.offset as u64 + 1)
            .offset(line.offset + e.offset as u64);
        if first && let Some((at, why)) = binary(line.bytes) {
            return Err(binary_input(name, line, at, why));
        }
        let what = format!("invalid JSON: {e}");
        if self.check == LineCheck::Strict {
            return Err(Error::invalid(place, format!("{what} (--strict)")));
        }
        self.bad += 1;
        self.last = line.number;
        if self.first.is_none() {
            self.first = Some(Error::invalid(place, what).to_string());
        }
        Ok(())
    }

    /// Line `number`, the last one checked, is not counted as bad after all: a reader
    /// failed on it with an error of its own, which names it.
    pub fn unsay(&mut self, number: u64) {
        if self.bad > 0 && self.last == number {
            self.bad -= 1;
            self.last = 0;
            if self.bad == 0 {
                self.first = None;
            }
        }
    }

    /// A line its reader proved JSON on its own (as `sess pack` does a chunk delta, which it
    /// reads in full): it is not looked at again, but it is content.
    pub fn proven(&mut self) {
        self.content = true;
    }

    /// Says the input's bad lines, if it had any, on stderr.
    pub fn warn(&self, name: &str) {
        if let Some(warning) = self.summary(name) {
            crate::io::tell!("sess: warning: {warning}");
        }
    }

    /// The warning for the input's bad lines, if it had any.
    pub fn summary(&self, name: &str) -> Option<String> {
        let first = self.first.as_ref()?;
        let lines = match self.bad {
            1 => "1 line is".to_string(),
            n => format!("{n} lines are"),
        };
        Some(format!(
            "{name}: {lines} not JSON (kept as read); the first: {first} \
             (--strict makes this an error)"
        ))
    }
}

/// The error for an input whose first line holds a NUL byte within `head`, its first bytes
/// read, when they hold no newline: that line is binary data, however long, and reading it
/// whole to find out (a file of zeros, `/dev/zero`) would take memory without end.
pub fn binary_head(name: &str, head: &[u8]) -> Option<Error> {
    if memchr::memchr(b'\n', head).is_some() {
        return None;
    }
    let nul = memchr::memchr(0, head)?;
    Some(Error::invalid(
        Place::file(name).offset(nul as u64),
        "binary data, not a JSONL log (a NUL byte; JSON text never holds one)".to_string(),
    ))
}

fn binary_input(name: &str, line: &Line<'_>, at: usize, why: &str) -> Error {
    let at = Place::file(name).offset(line.offset + at as u64);
    Error::invalid(at, format!("binary data, not a JSONL log ({why})"))
}

/// Where and why a line that is not JSON is binary data rather than text.
fn binary(b: &[u8]) -> Option<(usize, &'static str)> {
    if let Some(nul) = memchr::memchr(0, b) {
        return Some((nul, "a NUL byte; JSON text never holds one"));
    }
    let bad = std::str::from_utf8(b).err()?;
    Some((bad.valid_up_to(), "not UTF-8 text"))
}

/// Whether a line is one JSON value as far as its brackets and strings tell: an object or
/// an array whose end is the line's end. Anything else (a scalar, a blank line, garbage) is
/// short or rare, and checked strictly.
fn looks_whole(b: &[u8]) -> bool {
    let i = json::skip_ws(b, 0);
    match b.get(i) {
        Some(b'{' | b'[') => {
            json::blocks::container_end(b, i).is_some_and(|end| json::skip_ws(b, end) == b.len())
        }
        _ => json::validate(b).is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Ending;

    fn line(bytes: &[u8], number: u64) -> Line<'_> {
        Line {
            bytes,
            number,
            offset: 100,
            ending: Ending::Newline,
        }
    }

    #[test]
    fn whole_lines_pass_and_the_first_bad_one_is_named() {
        let mut t = Tally::new(LineCheck::Warn);
        for ok in [
            &b"{\"a\":[1,{\"b\":\"}\"}]}"[..],
            b" [1] \r",
            b"\"s\"",
            b"-1.5e3",
        ] {
            t.line("f", &line(ok, 2)).unwrap();
        }
        assert_eq!(t.summary("f"), None);
        // Cut, concatenated, garbage, blank.
        t.line("f", &line(b"{\"type\":\"b\",\"x\":[", 3)).unwrap();
        t.line("f", &line(b"{\"a\":1}{\"a\":2}", 4)).unwrap();
        t.line("f", &line(b"not json", 5)).unwrap();
        t.line("f", &line(b"", 6)).unwrap();
        let s = t.summary("f").unwrap();
        assert!(
            s.starts_with("f: 4 lines are not JSON (kept as read)"),
            "{s}"
        );
        assert!(
            s.contains("the first: f:3:18: invalid JSON: expected a JSON value (byte offset 117)"),
            "{s}"
        );
    }

    #[test]
    fn the_cheap_check_sees_structure_and_strict_sees_every_byte() {
        // Brackets close but a value is missing: only the strict check sees it.
        let subtle = b"{\"a\":}";
        let mut warn = Tally::new(LineCheck::Warn);
        warn.line("f", &line(subtle, 2)).unwrap();
        assert_eq!(warn.summary("f"), None);
        let mut strict = Tally::new(LineCheck::Strict);
        let e = strict.line("f", &line(subtle, 2)).unwrap_err().to_string();
        assert_eq!(
            e,
            "f:2:6: invalid JSON: expected a JSON value (--strict) (byte offset 105)"
        );
        // A cut object fails both.
        assert!(strict.line("f", &line(b"{\"a\":[1", 3)).is_err());
        let mut off = Tally::new(LineCheck::Off);
        off.line("f", &line(b"{", 3)).unwrap();
        assert_eq!(off.summary("f"), None);
    }

    #[test]
    fn a_first_line_with_a_nul_byte_is_binary_input() {
        let mut t = Tally::new(LineCheck::Warn);
        let e = t
            .line("a.out", &line(b"\x7fELF\x02\x01\x01\0\0", 1))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.out: binary data, not a JSONL log"), "{e}");
        assert!(e.contains("(byte offset 107)"), "{e}");
        // Later, the same line is one more bad line.
        t.line("a.out", &line(b"\x7fELF\0", 2)).unwrap();
        assert!(t.summary("a.out").unwrap().contains("1 line is not JSON"));
        // Blank lines first do not hide it, and bytes that are not UTF-8 are binary too.
        let mut t = Tally::new(LineCheck::Warn);
        t.line("b", &line(b"", 1)).unwrap();
        t.line("b", &line(b" \r", 2)).unwrap();
        let e = t
            .line("b", &line(b"ab\xff\xfe", 3))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("binary data, not a JSONL log (not UTF-8 text) (byte offset 102)"),
            "{e}"
        );
        // A first line that is JSON is never binary, whatever follows.
        let mut t = Tally::new(LineCheck::Warn);
        t.line("c", &line(b"{}", 1)).unwrap();
        t.line("c", &line(b"\xff\0", 2)).unwrap();
        assert!(t.summary("c").unwrap().contains("1 line is not JSON"));
    }

    #[test]
    fn a_torn_last_line_is_left_to_the_torn_line_policy() {
        let mut t = Tally::new(LineCheck::Strict);
        let torn = Line {
            ending: Ending::Torn,
            ..line(b"{\"a\":", 9)
        };
        t.line("f", &torn).unwrap();
        assert_eq!(t.summary("f"), None);
        // Unless it is the first line, and binary: an input without a newline.
        for (bytes, why) in [
            (&b"\0\0\0\0"[..], "a NUL byte"),
            (b"MZ\x90\xff", "not UTF-8"),
        ] {
            let mut t = Tally::new(LineCheck::Warn);
            t.line("g", &line(b" ", 1)).unwrap();
            let first = Line {
                ending: Ending::Torn,
                ..line(bytes, 2)
            };
            let e = t.line("g", &first).unwrap_err().to_string();
            assert!(
                e.contains("binary data, not a JSONL log") && e.contains(why),
                "{e}"
            );
        }
        let mut t = Tally::new(LineCheck::Warn);
        let text = Line {
            ending: Ending::Torn,
            ..line(b"{\"a\":\"cut", 1)
        };
        t.line("h", &text).unwrap();
        // A zero-filled tail after lines is a torn last line, as before.
        let tail = Line {
            ending: Ending::Torn,
            ..line(b"\0\0\0", 2)
        };
        t.line("h", &tail).unwrap();
    }
}
