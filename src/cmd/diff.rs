//! `sess diff`: snapshots in, encoded op batches out (the producer side of `recover`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, anyhow};

use crate::cli::{Global, Output};
use sess::delta::diff::{Limits, diff};
use sess::delta::oplist;
use sess::delta::wire::Encoder;
use sess::delta::{Op, is_base};
use sess::input::{Flow, Input};
use sess::json;
use sess::value::{MAX_DEPTH, Value};

const ABOUT: &str = "Turn a stream of JSON snapshots into an op list";

const LONG_ABOUT: &str = "Read JSON snapshots, one per line, and write the op batch that carries each to \
the next, one record per line: {\"seq\":N,\"tag\":\"base\"|null,\"ops\":[...]}, encoded with one wire \
encoder for the whole stream. The first batch is a base batch (an r). Strings change by \
append, or by a front truncation plus an append when the new text overlaps the end of the \
old (a rolling window, found by a bounded, verified scan), else by a set; arrays by one \
splice between their common prefix and suffix; objects by per-key sets and deletes. Every \
snapshot gets a record, an empty one when nothing changed. 'sess recover' of the output \
gives the last snapshot as a value: equal to it, but not always spelled the same (an object \
keeps the key order it first had, with new keys last, and numbers and strings are written as \
JSON.stringify writes them: 1.50 comes back as 1.5), so compare values, not bytes. A \
snapshot nesting deeper than 997 levels is refused, naming its line: a record holds values 3 \
levels down, and readers of op lists read records nesting at most 1000 levels.";

const EXAMPLES: &str = "Examples:
  sess diff snapshots.jsonl > list.jsonl && sess recover list.jsonl
  sess diff --rebase-every 50 snapshots.jsonl -o list.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Snapshots, one JSON value per line ('-' or none for stdin).
    pub file: Option<PathBuf>,

    /// Write a base batch (the whole value) every N batches, so that recovery replays at
    /// most N-1 batches.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub rebase_every: Option<u64>,

    #[command(flatten)]
    pub output: Output,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(args.file.as_slice());
    let mut sink = args.output.sink(&Input::paths(&inputs))?;
    let mut encoder = Encoder::default();
    let mut prev: Option<Value> = None;
    let mut seq = 0u64;
    super::each_line(&inputs, crate::cli::default_open(g), |name, line| {
        if oplist::is_blank(line.bytes) {
            return Ok(Flow::More);
        }
        let next = Value::parse(line.bytes).map_err(|e| {
            anyhow!(
                "{}:{}: a snapshot must be one JSON value: expected {} (byte offset {})",
                line.place(name),
                e.offset + 1,
                e.expected,
                line.offset + e.offset as u64
            )
        })?;
        // Any snapshot may go out whole in a base record, its values OP_VALUE_DEPTH levels
        // down; readers of the op list refuse a record nesting deeper than MAX_DEPTH.
        let room = MAX_DEPTH - oplist::OP_VALUE_DEPTH;
        if let Err(e) = json::value_end_within(line.bytes, json::skip_ws(line.bytes, 0), room) {
            return Err(anyhow!(
                "{}:{}: the snapshot nests deeper than {room} levels, the most an op list \
                 record can carry ('sess recover' reads records nesting at most {MAX_DEPTH}, \
                 and a record holds values {} levels down) (byte offset {})",
                line.place(name),
                e.offset + 1,
                oplist::OP_VALUE_DEPTH,
                line.offset + e.offset as u64
            ));
        }
        let rebase = args
            .rebase_every
            .is_some_and(|n| seq > 0 && seq.is_multiple_of(n));
        let ops = if rebase {
            vec![Op::Replace(next.clone())]
        } else {
            diff(prev.as_ref(), &next, Limits::default())
        };
        let base = is_base(&ops);
        let wire = encoder.encode(ops);
        sink.write_all(&oplist::diff_record(seq, base, wire))?;
        sink.write_all(b"\n")?;
        prev = Some(next);
        seq += 1;
        Ok(Flow::More)
    })?;
    Ok(sink.finish()?)
}
