//! `sess unpack`: expand packed rows back into the events they hold.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Global;
use crate::event;
use crate::io::{self, Flow, Input, Line, Sink};

const ABOUT: &str = "Expand packed chunk rows back into events";

const LONG_ABOUT: &str = "Expand text-chunks, reasoning-chunks and tool-call-chunks rows into the \
assistant/chunk events they hold; every other line is copied byte for byte. Rows are \
validated strictly (exact key sets, types, dt length, non-empty members, every member's seq \
and time a safe integer); a bad row is an error naming its file and line. Rows without \
seq0/time0 (DSH's normalized test fixtures) expand to events without seq/time.";

const EXAMPLES: &str = "Examples:
  sess unpack session.packed.jsonl > session.jsonl
  sess unpack session.jsonl.zstd | jq -c 'select(.type == \"assistant/chunk\")'";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut sink = Sink::open(args.output.as_deref())?;
    event::each_event(&inputs, g.open_options(), |name, ev| {
        sink.write_all(ev.bytes)?;
        if ev.terminated() {
            sink.write_all(b"\n")?;
        } else {
            warn_unterminated(name, &ev.line);
        }
        Ok(Flow::More)
    })?;
    sink.finish()
}

/// A last line without newline is kept as it is, so the output stays byte-exact.
pub fn warn_unterminated(name: &str, line: &Line<'_>) {
    eprintln!(
        "sess: warning: {}: last line has no final newline ({} bytes at byte offset {}); kept as is",
        io::at(name, line),
        line.bytes.len(),
        line.offset
    );
}
