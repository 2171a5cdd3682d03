//! `sess unpack`: expand packed rows back into the events they hold.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Global;
use crate::event::{self, LastLine};
use crate::input::{Flow, Input};
use crate::io::Sink;

const ABOUT: &str = "Expand packed rows (chunk rows, snapshot-delta rows) back into events";

const LONG_ABOUT: &str = "Expand packed rows back into the events they hold; every other line is \
copied byte for byte. text-chunks, reasoning-chunks and tool-call-chunks rows give back DSH's \
assistant/chunk events; snapshot-deltas rows give back each snapshot frame, rebuilt from the \
first one and its op batches. Rows are validated strictly (exact key sets, types, dt length, \
non-empty members, every member's seq and time a safe integer, every batch valid); a bad row \
is an error naming its file and line. Chunk rows without seq0/time0 (DSH's normalized test \
fixtures) expand to events without seq/time.\n\n\
A last line without a final newline is written back as it is, so that 'sess unpack' of what \
'sess pack' wrote is its input byte for byte.";

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
    let mut sink = Sink::open(args.output.as_deref(), &Input::paths(&inputs))?;
    // Verbatim: a last line without newline comes back as it went in, so that unpacking
    // what `pack` wrote gives its input back byte for byte.
    event::each_event(&inputs, g.open_options(), LastLine::Verbatim, |_, ev| {
        sink.write_all(ev.bytes)?;
        if ev.newline {
            sink.write_all(b"\n")?;
        }
        Ok(Flow::More)
    })?;
    sink.finish()
}
