//! Splits a byte stream into raw lines.
//!
//! One buffer is owned here and lines are handed out as slices of it, so a line is copied at
//! most once (when the buffer is compacted or grown). The buffer grows to fit the longest
//! line and no further: memory is bounded by about twice the longest line.

use std::io::{self, Read};

const INITIAL_CAPACITY: usize = 256 * 1024;

/// One line of input, without its `\n`. A `\r` before the `\n` stays part of the line:
/// sess keeps bytes as they were, and JSON treats `\r` as whitespace anyway.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub bytes: &'a [u8],
    /// 1-based line number within its input.
    pub number: u64,
    /// Byte offset of the line's first byte within the (decompressed) input.
    pub offset: u64,
    pub ending: Ending,
}

/// How a line ends. Only the last line of an input can lack its newline, and the policy for
/// such a line is decided here, once, for every command (`docs/FORMAT.md`, "A last line
/// without a newline"):
///
/// - one that is a whole JSON value is a complete record whose newline was never written:
///   readers keep it (adding the newline), `pack` keeps it as it is;
/// - one that is not is a torn write: readers drop it with a warning, `pack` and `unpack`
///   keep its bytes (so the round trip stays byte-exact), `verify` reports it and `repair`
///   removes it.
///
/// A word wide, so that a [`Line`] has no padding: with a byte, every move of a line
/// (through `Result<Option<Line>>`) copied the seven bytes after it as two overlapping
/// words, and the reading thread of a DSH pack stalled on each (store forwarding failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Ending {
    Newline,
    /// No newline, but one whole JSON value.
    Unterminated,
    /// No newline, and not one whole JSON value.
    Torn,
}

impl<'a> Line<'a> {
    /// Whether the line ended with `\n` in the input.
    pub fn terminated(&self) -> bool {
        self.ending == Ending::Newline
    }

    /// Whether the line is a torn write (a last line without newline that is not JSON).
    pub fn is_torn(&self) -> bool {
        self.ending == Ending::Torn
    }

    /// Whether the line is a record: everything but a torn last line.
    pub fn is_record(&self) -> bool {
        !self.is_torn()
    }

    /// The line's JSON text: without the UTF-8 byte-order mark an input's first line may
    /// begin with (an editor's), which RFC 8259 lets a parser pass over. Every check of a
    /// line as JSON reads this; the line's bytes, mark included, are what is kept.
    pub fn json_text(&self) -> &'a [u8] {
        json_text_at(self.bytes, self.offset)
    }

    /// `file:line`, for messages.
    pub fn place(&self, name: &str) -> String {
        format!("{name}:{}", self.number)
    }
}

/// [`Line::json_text`] of the line of `bytes` at `offset` in its input.
fn json_text_at(bytes: &[u8], offset: u64) -> &[u8] {
    match offset {
        0 => crate::json::strip_bom(bytes),
        _ => bytes,
    }
}

pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Bytes in `start..scanned` are known to hold no `\n`.
    scanned: usize,
    eof: bool,
    number: u64,
    offset: u64,
}

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        LineReader::starting_at(inner, 0, 0)
    }

    /// A reader of a part of an input that follows `lines` lines and `offset` bytes, so its
    /// lines get the numbers and offsets they have in the whole.
    pub fn starting_at(inner: R, lines: u64, offset: u64) -> Self {
        LineReader {
            inner,
            buf: vec![0; INITIAL_CAPACITY],
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            number: lines,
            offset,
        }
    }

    /// The first bytes of the input (one read's worth), for a look before any line is
    /// taken; empty for an empty input.
    pub fn head(&mut self) -> io::Result<&[u8]> {
        if self.end == 0 && !self.eof {
            self.fill()?;
        }
        Ok(&self.buf[self.start..self.end])
    }

    /// Byte offset of the next line to be returned.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, `None` at the end. Inlined into the caller, with the refill a call
    /// that returns only where the line ends: a line returned through memory from a call
    /// (or the two ways to a line joined through memory) cost the reading thread of a DSH
    /// pack a store-forwarding stall per line, 5% of it and more.
    #[inline]
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let (end, next, ending) = match memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
            Some(k) => (self.scanned + k, self.scanned + k + 1, Ending::Newline),
            None => match self.refill()? {
                Some(found) => found,
                None => return Ok(None),
            },
        };
        Ok(Some(self.take(end, next, ending)))
    }

    /// Reads until the buffer holds the next line whole: where it ends, where the next
    /// begins, and how it ends; `None` at the end of the input.
    #[inline(never)]
    fn refill(&mut self) -> io::Result<Option<(usize, usize, Ending)>> {
        loop {
            if let Some(k) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let nl = self.scanned + k;
                return Ok(Some((nl, nl + 1, Ending::Newline)));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let end = self.end;
                // A first line behind a byte-order mark is whole as its JSON text is.
                let text = json_text_at(&self.buf[self.start..end], self.offset);
                let ending = match crate::json::validate(text) {
                    Ok(()) => Ending::Unterminated,
                    Err(_) => Ending::Torn,
                };
                return Ok(Some((end, end, ending)));
            }
            self.fill()?;
        }
    }

    #[inline]
    fn take(&mut self, line_end: usize, next: usize, ending: Ending) -> Line<'_> {
        let start = self.start;
        self.start = next;
        self.scanned = next;
        self.number += 1;
        let offset = self.offset;
        self.offset += (next - start) as u64;
        Line {
            bytes: &self.buf[start..line_end],
            number: self.number,
            offset,
            ending,
        }
    }

    /// Reads more bytes, making room by compacting or growing the buffer.
    fn fill(&mut self) -> io::Result<()> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            } else {
                super::grow(&mut self.buf);
            }
        }
        match super::read::read_some(&mut self.inner, &mut self.buf[self.end..])? {
            0 => self.eof = true,
            n => self.end += n,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read, to exercise refills.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn collect(data: &[u8], step: usize) -> Vec<(Vec<u8>, u64, u64, Ending)> {
        let mut r = LineReader::new(Trickle { data, step });
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push((l.bytes.to_vec(), l.number, l.offset, l.ending));
        }
        out
    }

    #[test]
    fn splits_lines_with_positions() {
        for step in [1, 3, 1 << 20] {
            let got = collect(b"a\r\n\nbc\nlast", step);
            assert_eq!(
                got,
                vec![
                    (b"a\r".to_vec(), 1, 0, Ending::Newline),
                    (b"".to_vec(), 2, 3, Ending::Newline),
                    (b"bc".to_vec(), 3, 4, Ending::Newline),
                    (b"last".to_vec(), 4, 7, Ending::Torn),
                ]
            );
        }
        let got = collect(b"1\n{\"a\":[1]} ", 2);
        assert_eq!(got[1].3, Ending::Unterminated);
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(collect(b"", 7).is_empty());
        assert_eq!(collect(b"\n", 7), vec![(vec![], 1, 0, Ending::Newline)]);
    }

    #[test]
    fn long_lines_grow_the_buffer() {
        let long = vec![b'x'; INITIAL_CAPACITY * 3 + 17];
        let mut data = long.clone();
        data.push(b'\n');
        data.extend_from_slice(b"tail\n");
        let got = collect(&data, 100_000);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, long);
        assert_eq!(got[1].0, b"tail");
        assert_eq!(got[1].2, long.len() as u64 + 1);
    }
}
