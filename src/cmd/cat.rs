//! `sess cat`: logical events from any input, optionally selected by type or position.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::Global;
use crate::event;
use crate::io::{self, Flow, Input, Line, OpenOptions, Sink};
use crate::json;
use crate::range::Range;

const ABOUT: &str = "Print the logical events of a log as JSONL";

const LONG_ABOUT: &str = "Print the logical events of one or more logs as JSONL, one event per line, \
each exactly as it was written. Inputs may be plain JSONL or zstd (detected by magic), \
and packed chunk rows are expanded into the events they hold. Several inputs are read in \
order, as one stream.\n\n\
A last line without a newline that is valid JSON is printed (with a newline added); one that is \
not valid JSON is a torn write and is dropped with a warning on stderr.";

const EXAMPLES: &str = "Examples:
  sess cat run.jsonl.zst > run.jsonl
  sess cat --type message_end run.jsonl | jq -r .message.role
  sess cat --lines 10..20 run.jsonl
  sess cat --tail 5 run.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

    /// Keep only events whose top-level "type" is T (repeatable).
    #[arg(short = 't', long = "type", value_name = "T")]
    pub types: Vec<String>,

    /// Keep only events at these 1-based positions, counted across all inputs (A..B, A.., ..B
    /// or N; inclusive).
    #[arg(long, value_name = "RANGE")]
    pub lines: Option<Range>,

    /// Print only the last N selected events.
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut sink = Sink::open(args.output.as_deref())?;
    let mut position = 0u64;
    let mut tail: VecDeque<Vec<u8>> = VecDeque::new();
    event::each_event(&inputs, OpenOptions { quiet: g.quiet }, |name, ev| {
        if ev.member.is_none() && is_torn(name, &ev.line) {
            return Ok(Flow::More);
        }
        position += 1;
        if let Some(r) = &args.lines
            && !r.contains(position)
        {
            return Ok(if r.is_past(position) {
                Flow::Stop
            } else {
                Flow::More
            });
        }
        if !args.types.is_empty() && !event::kind_is_one_of(ev.bytes, &args.types) {
            return Ok(Flow::More);
        }
        match args.tail {
            Some(0) => {}
            Some(n) => {
                if tail.len() == n {
                    tail.pop_front();
                }
                tail.push_back(ev.bytes.to_vec());
            }
            None => write_line(&mut sink, ev.bytes)?,
        }
        Ok(Flow::More)
    })?;
    for l in &tail {
        write_line(&mut sink, l)?;
    }
    sink.finish()
}

/// A last line without newline that does not parse is a torn write: warn and skip it.
pub fn is_torn(name: &str, line: &Line<'_>) -> bool {
    if line.terminated || json::validate(line.bytes).is_ok() {
        return false;
    }
    eprintln!(
        "sess: warning: {}: dropped a torn last line ({} bytes at byte offset {}, no final newline)",
        io::at(name, line),
        line.bytes.len(),
        line.offset
    );
    true
}

fn write_line(sink: &mut Sink, bytes: &[u8]) -> Result<()> {
    sink.write_all(bytes)?;
    sink.write_all(b"\n")?;
    Ok(())
}
