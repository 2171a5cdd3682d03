//! Bytes in and bytes out: sources, line splitting and sinks.

pub mod lines;
pub mod sink;
pub mod source;

use std::io::Read;

use anyhow::{Context, Result};

pub use lines::{Line, LineReader};
pub use sink::Sink;
pub use source::{Input, OpenOptions, Source};

/// Whether a line visitor wants more lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    Stop,
}

/// Calls `f` with every line of every input, in order, until it says [`Flow::Stop`]. `f`
/// gets the input's name for messages. A read error names the input and the byte offset
/// where reading stopped.
pub fn each_line(
    inputs: &[Input],
    opts: OpenOptions,
    mut f: impl FnMut(&str, Line<'_>) -> Result<Flow>,
) -> Result<()> {
    for input in inputs {
        let src = source::open(input, opts)?;
        let name = src.name.clone();
        let bar = src.progress_bar();
        let mut lines = LineReader::new(src.reader);
        loop {
            let offset = lines.offset();
            let line = lines.next_line().with_context(|| {
                format!("{name}: read error at byte offset {offset} (decompressed)")
            })?;
            let Some(line) = line else { break };
            if f(&name, line)? == Flow::Stop {
                return Ok(());
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
    Ok(())
}

/// `file:line` for messages.
pub fn at(name: &str, line: &Line<'_>) -> String {
    format!("{name}:{}", line.number)
}

/// `Read::read`, tried again when a signal interrupts it.
pub fn read_some<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
pub fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(r, &mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}
