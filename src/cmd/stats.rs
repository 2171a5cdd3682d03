//! `sess stats`: where the bytes of a log go.

use std::io::Write;

use anyhow::Result;

use crate::cli::{Global, IoArgs};
use sess::event::LastLine;
use sess::input::Flow;
use sess::stats::{Stats, StatsReport};

const ABOUT: &str = "Show where the bytes of a log go, per event type";

const LONG_ABOUT: &str = "Show where the bytes of a log go: for each top-level event type its count, \
bytes (with the newline), share of all bytes and largest line, then totals, and the dialect \
of the log (pi session file, pi --mode json old or new generation, DeepSeek Harness, op list) \
told from its header and type vocabulary. Packed rows are counted as lines of their own \
type; the number of logical events they hold, and the bytes 'sess filter' and 'sess pack' \
would write, follow the table. What 'sess pack' would write is found by packing as the log \
is read (rows, interned repeats, zstd frames at level 3): exact for a log from a pipe, a \
little above what it writes for a file, which it reads twice. Each input gets its own \
section, with its own dialect, and several inputs end with their totals.";

const EXAMPLES: &str = "Examples:
  sess stats run.jsonl
  sess stats --json run.jsonl.zst | jq '.files[0].types[] | select(.share > 0.1) | .type'";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub io: IoArgs,

    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.io.inputs();
    let mut files = Vec::new();
    for input in &inputs {
        let mut stats = Stats::new(&input.name(), input.path());
        // Verbatim: stats counts a torn last line as what it is rather than dropping it.
        super::each_event(
            std::slice::from_ref(input),
            args.io.open_options(g),
            LastLine::Verbatim,
            |_, ev| {
                stats.add_event(ev);
                Ok(Flow::More)
            },
        )?;
        files.push(stats.report());
    }
    let report = StatsReport::new(files);
    let mut out = args.io.sink()?;
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(report.render().as_bytes())?;
    }
    Ok(out.finish()?)
}
