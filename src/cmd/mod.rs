//! One module per subcommand. Each holds its clap arguments, its usage text and a `run`
//! that wires a source through the engine into a sink.

pub mod cat;
pub mod compact;
pub mod completions;
pub mod diff;
pub mod filter;
pub mod pack;
pub mod profiles;
pub mod recover;
pub mod repair;
pub mod stats;
pub mod unpack;
pub mod verify;

use anyhow::Result;
use sess::event::{Event, LastLine};
use sess::input::{Flow, Input, OpenOptions, Source};
use sess::io::Line;

/// What a command that wrote into `sink` while reading says when reading failed: a write
/// that had failed before, still unsaid on the writing thread, is the error, as it is when
/// one thread writes (so `sess cat bad.zst | head` ends as quietly on two threads).
pub fn settled<T>(sink: &mut sess::io::Sink, read: Result<T>) -> Result<T> {
    if read.is_err() {
        sink.settle()?;
    }
    read
}

/// [`sess::event::each_event`] with the binary's error type, so that a command's closure
/// can use `?` on anything.
pub fn each_event(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    f: impl FnMut(&str, &Event<'_>) -> Result<Flow>,
) -> Result<()> {
    sess::event::each_event(inputs, opts, last, f)
}

/// [`sess::event::each_event_where`] with the binary's error type.
pub fn each_event_where(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    wanted: Option<sess::event::Wanted<'_>>,
    f: impl FnMut(&str, &Event<'_>) -> Result<Flow>,
) -> Result<()> {
    sess::event::each_event_where(inputs, opts, last, wanted, f)
}

/// [`sess::event::each_event_or_row`] with the binary's error type.
pub fn each_event_or_row<S>(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    state: &mut S,
    row: impl FnMut(&mut S, &str, &sess::io::Line<'_>) -> Result<bool>,
    f: impl FnMut(&mut S, &str, &Event<'_>) -> Result<Flow>,
) -> Result<()> {
    sess::event::each_event_or_row(inputs, opts, last, state, row, f)
}

/// [`sess::input::each_line`] with the binary's error type.
pub fn each_line(
    inputs: &[Input],
    opts: OpenOptions,
    f: impl FnMut(&str, &Line<'_>) -> Result<Flow>,
) -> Result<()> {
    sess::input::each_line(inputs, opts, f)
}

/// [`sess::input::each_line_of`] with the binary's error type.
pub fn each_line_of(
    src: Source,
    f: &mut impl FnMut(&str, &Line<'_>) -> Result<Flow>,
) -> Result<Flow> {
    sess::input::each_line_of(src, f)
}

/// [`sess::event::expand`] with the binary's error type.
pub fn expand(
    name: &str,
    line: &Line<'_>,
    newline: bool,
    buf: &mut Vec<u8>,
    f: &mut impl FnMut(&str, &Event<'_>) -> Result<Flow>,
) -> Result<Flow> {
    sess::event::expand(name, line, newline, buf, f)
}

/// `done`, told now when it failed, so that a report printed next is the last line of
/// stderr (README, for scripts): the command then exits 1 through [`Reported`]. A reader
/// gone from stdout is passed on untold, to end the command quietly as it ends any.
pub fn told_before_report(done: Result<()>) -> Result<()> {
    done.map_err(|e| {
        if is_broken_pipe(&e) {
            return e;
        }
        sess::io::tell!("sess: error: {e:#}");
        anyhow::Error::new(Reported)
    })
}

/// A failure already told on stderr (where a report must come after it): the command
/// exits 1 without saying it again.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed (told above)")
    }
}

impl std::error::Error for Reported {}

/// Whether an error comes from writing to a closed pipe (`sess cat x | head -1`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        let io = cause.downcast_ref::<std::io::Error>();
        io.is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<sess::error::Error>()
                .is_some_and(sess::error::Error::is_broken_pipe)
    })
}
