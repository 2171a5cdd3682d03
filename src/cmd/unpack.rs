//! `sess unpack`: expand packed rows back into the events they hold.

use std::io::Write;

use anyhow::Result;

use crate::cli::{Global, IoArgs};
use sess::event::LastLine;
use sess::input::Flow;

const ABOUT: &str = "Expand packed rows (chunk rows, snapshot-delta rows) back into events";

const LONG_ABOUT: &str = "Expand packed rows back into the events they hold; every other line is \
copied byte for byte. text-chunks, reasoning-chunks and tool-call-chunks rows give back DSH's \
assistant/chunk events; snapshot-deltas rows give back each snapshot frame, rebuilt from the \
first one and its op batches (with their \\r back when the row says \"eol\":\"\\r\\n\"); \
interned lines (sess pack's long-range dedup) give back the line they stand for, their \
references put back and checked by length and crc32. Rows are validated strictly (exact key sets, types, dt length, \
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
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.io.inputs();
    // With threads, rows of files are expanded on helpers and the main thread only writes
    // what they hand back: it writes on its own, without the writing thread's copy.
    let helpers = sess::event::ahead::helpers(args.io.threads, &inputs);
    let mut sink = match helpers {
        None => args.io.sink()?,
        Some(_) => args.io.sink_here()?,
    };
    // Verbatim: a last line without newline comes back as it went in, so that unpacking
    // what `pack` wrote gives its input back byte for byte.
    let opts = args.io.open_options(g);
    let read = match helpers {
        None => super::each_event(&inputs, opts, LastLine::Verbatim, |_, ev| {
            sink.write_all(ev.bytes)?;
            if ev.newline {
                sink.write_all(b"\n")?;
            }
            Ok(Flow::More)
        }),
        Some(n) => {
            sess::event::ahead::write_events(&inputs, opts, LastLine::Verbatim, n, &mut sink)
        }
    };
    super::settled(&mut sink, read)?;
    Ok(sink.finish()?)
}
