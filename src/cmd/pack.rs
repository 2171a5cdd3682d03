//! `sess pack`: store runs of chunk deltas as packed rows, losslessly.

use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Global;
use crate::event;
use crate::io::{Flow, Input, OpenOptions, Sink};
use crate::rows::Packer;

const ABOUT: &str = "Pack runs of chunk deltas into rows (lossless, DSH-compatible)";

const LONG_ABOUT: &str = "Pack runs of three or more consecutive DeepSeek Harness assistant/chunk \
deltas (text, reasoning, tool-call arguments) into text-chunks, reasoning-chunks and \
tool-call-chunks rows, the layout DSH itself writes and reads. Every other line is copied \
byte for byte.\n\n\
Byte-exact: 'sess unpack' of the output reproduces the input byte for byte. An event is \
packed only when it is spelled exactly as the unpacker will spell it back (the canonical \
JSON.stringify form); anything else (other key orders, whitespace, number spellings, \
escapes) stays verbatim. Input rows are read as the events they hold, so packing a packed \
file packs its events again.\n\n\
Output is plain packed JSONL.";

const EXAMPLES: &str = "Examples:
  sess pack --plain session.jsonl -o session.packed.jsonl
  sess unpack session.packed.jsonl | cmp - session.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

    /// Write plain packed JSONL (the only output layout for now).
    #[arg(long)]
    pub plain: bool,

    /// Print how many events were packed into how many rows on stderr.
    #[arg(long)]
    pub stats: bool,

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut sink = Sink::open(args.output.as_deref())?;
    let mut packer = Packer::default();
    let mut events = 0u64;
    event::each_event(&inputs, OpenOptions { quiet: g.quiet }, |name, ev| {
        events += 1;
        if !ev.line.terminated && ev.member.is_none() {
            super::unpack::warn_unterminated(name, &ev.line);
        }
        packer.event(
            ev.bytes,
            ev.line.terminated || ev.member.is_some(),
            &mut sink,
        )?;
        Ok(Flow::More)
    })?;
    packer.finish(&mut sink)?;
    sink.finish()?;
    if args.stats {
        eprintln!(
            "sess pack: {events} events in, {} of them packed into {} rows",
            packer.packed_events, packer.rows
        );
    }
    Ok(())
}
