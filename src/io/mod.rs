//! Bytes in and bytes out, below any format: reads that signals cannot cut short, the line
//! splitter, outputs (stdout, atomic files, streams written in place), what a signal
//! does to them, and which files other processes hold open.

pub mod ahead;
pub mod behind;
pub mod lend;
pub mod lines;
pub mod memory;
pub mod read;
pub mod signals;
pub mod sink;
pub mod temp;
pub mod writers;

pub use lines::{Ending, Line, LineReader};
pub use sink::Sink;

/// [`eprintln!`], except that a closed stderr (`sess repair log 2>&1 | head -2`) is not a
/// panic: what a command writes matters more than what it says, and the panic lost it
/// (`repair` wrote no file).
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// [`tell!`](crate::tell!) where the layers see it: in `io`, below every module that speaks.
pub use tell;

/// The first bytes of a line held in two parts, `a` and then `b`: up to 64 of each, what a
/// test of how a line begins (its tag) reads.
pub fn head_of(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut head = a[..a.len().min(64)].to_vec();
    head.extend_from_slice(&b[..b.len().min(64)]);
    head
}

/// Writes `line` and, when `newline`, its newline: in one vectored write where `out` takes
/// both at once (a writer that looks at whole lines then reads the line where it lies,
/// without gathering a copy of it first), the rest as [`Write::write_all`] would.
pub fn write_line<W: std::io::Write + ?Sized>(
    out: &mut W,
    line: &[u8],
    newline: bool,
) -> std::io::Result<()> {
    write_ended(out, line, if newline { b"\n" } else { b"" })
}

/// Writes `line` and then `end` (`\n`, `\r\n`, or nothing) as [`write_line`] does.
pub fn write_ended<W: std::io::Write + ?Sized>(
    out: &mut W,
    line: &[u8],
    end: &[u8],
) -> std::io::Result<()> {
    let parts = [std::io::IoSlice::new(line), std::io::IoSlice::new(end)];
    let n = out.write_vectored(&parts)?;
    if n < line.len() {
        out.write_all(&line[n..])?;
        out.write_all(end)
    } else {
        out.write_all(&end[n - line.len()..])
    }
}

/// Grows `buf`, a buffer of zeroed room for bytes (a line, a frame) that do not fit in
/// it. Its new room is zeroed, so it is memory in use at once: doubling, a 300 MB line
/// held 512 MiB. Past 32 MiB it grows by an eighth, to exactly that (`resize` alone would
/// reserve double), so a line costs at most about 1.125 times its length; the copies stay
/// few, as glibc remaps a block that large rather than copy it.
pub fn grow(buf: &mut Vec<u8>) {
    let len = buf.len();
    let grown = match len < 32 << 20 {
        true => len * 2,
        false => len + len / 8,
    };
    buf.reserve_exact(grown - len);
    buf.resize(grown, 0);
}

/// An error of a temporary file sess keeps while it works (the values interning refers
/// to, the frames filter holds), saying which: it is in `$TMPDIR`, not beside the output,
/// and that is where space (or a size limit) ran out. `what` names the file, `doing` the
/// operation that failed.
pub fn scratch_error(e: std::io::Error, doing: &str, what: &str) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!(
            "cannot {doing} the temporary file of {what} (in {}; TMPDIR sets where): {e}",
            std::env::temp_dir().display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// Takes at most three bytes a write, vectored or not.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_is_written_whole_whatever_a_writer_takes_at_once() {
        for (line, end) in [
            (&b"abcdefg"[..], &b"\n"[..]),
            (b"ab", b"\n"),
            (b"", b"\n"),
            (b"xyz", b""),
            (b"abcdefg", b"\r\n"),
            (b"a", b"\r\n"),
        ] {
            let mut out = Trickle(Vec::new());
            super::write_ended(&mut out, line, end).unwrap();
            let mut want = line.to_vec();
            want.extend_from_slice(end);
            assert_eq!(out.0, want);
            let mut v = Vec::new();
            super::write_ended(&mut v, line, end).unwrap();
            assert_eq!(v, want);
        }
    }
}
