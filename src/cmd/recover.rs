//! `sess recover`: the value an op list holds, rebuilt from its last base batch.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::{self, Damage, Global};
use sess::delta::Op;
use sess::delta::oplist::{self, RecoverOptions, Replayer, Tail};
use sess::frames::reader::Health;
use sess::input::{self, Compression, Flow, Input};
use sess::io::{Ending, LineReader, Sink};
use sess::value::Value;

const ABOUT: &str = "Rebuild the value an op list holds, from its last base batch";

const LONG_ABOUT: &str = "Read an op list (one batch of Chord ops per line: a bare WireOp[] or a record \
{\"seq\":N,\"tag\":\"base\"|null,\"ops\":[...]}, \"value\" accepted for \"ops\"; plain, gzip or zstd) and \
print the value it holds as one JSON line.\n\n\
The last base batch (whose first op is r) is found by reading a plain file backwards, so \
the time taken depends on the tail, not on the length of the list; batches are then \
decoded forward with a fresh decoder and applied. A record whose tag disagrees with its \
first op is an error, and so is an invalid batch (the error names its line and op index). \
A torn last line is dropped with a warning (--strict makes it an error).\n\n\
A record may carry an \"address\" when one file holds several lists: --address picks one; \
without it such a file prints one JSON object keyed by address (read whole).";

const EXAMPLES: &str = "Examples:
  sess recover pending-output.jsonl
  sess recover --states --from-start list.jsonl | jq -c .value
  sess recover --at 42 list.jsonl
  sess recover --ops list.jsonl | jq -c '.ops[]'";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// The op list ('-' or none for stdin).
    pub file: Option<PathBuf>,

    /// The value after the batch with this seq.
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,

    /// Print {"seq":N,"value":V} after every batch, from the base (see --from-start).
    #[arg(long, conflicts_with = "ops")]
    pub states: bool,

    /// Print {"seq":N,"ops":[...]}: each batch's decoded ops, paths inline (a debug view).
    #[arg(long)]
    pub ops: bool,

    /// Start at the first batch rather than the last base.
    #[arg(long)]
    pub from_start: bool,

    /// Only the list with this address.
    #[arg(long, value_name = "A")]
    pub address: Option<String>,

    /// A torn last line is an error.
    #[arg(long)]
    pub strict: bool,

    /// Print one JSON object (schema sess-recover/1, docs/FORMAT.md): the value and what
    /// was replayed to rebuild it.
    #[arg(long, conflicts_with_all = ["states", "ops"])]
    pub json: bool,

    #[command(flatten)]
    pub output: cli::Output,

    #[command(flatten)]
    pub damage: Damage,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let input = args.file.as_deref().map_or(Input::Stdin, Input::from_arg);
    let name = input.name();
    let opts = RecoverOptions {
        at: args.at,
        from_start: args.from_start,
        address: args.address.clone(),
        strict: args.strict,
    };
    let mut out = Printer {
        args: &args,
        replayed: Replayed::default(),
        name: name.clone(),
        sink: args
            .output
            .sink(&Input::paths(std::slice::from_ref(&input)))?,
    };
    let replayer = match &input {
        // Read backwards only where that is possible: a plain regular file.
        Input::Path(p) if input::file_compression(p)? == Some(Compression::Plain) => {
            out.plain_file(p, opts)?
        }
        _ => out.stream(&input, opts, g)?,
    };
    let value = replayer.finish().map_err(|e| anyhow!("{name}: {e}"))?;
    if args.json {
        let r = &out.replayed;
        let report = serde_json::json!({
            "schema": "sess-recover/1",
            "file": name,
            "batches": r.batches,
            "first_seq": r.first_seq,
            "last_seq": r.last_seq,
            "torn_last_line": r.torn,
            "dropped_after_damage": r.dropped,
        });
        // The value is written as recover writes it (JavaScript's spelling), not as
        // serde_json would: spliced in as the last member.
        let mut text = report.to_string();
        text.pop();
        text += ",\"value\":";
        out.sink.write_all(text.as_bytes())?;
        out.sink.write_all(&value.to_json())?;
        out.sink.write_all(b"}\n")?;
    } else if !args.states && !args.ops {
        out.sink.write_all(&value.to_json())?;
        out.sink.write_all(b"\n")?;
    }
    Ok(out.sink.finish()?)
}

/// What was replayed, for `--json`.
#[derive(Default)]
struct Replayed {
    batches: u64,
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    torn: bool,
    /// Batches not applied after lines lost to damage.
    dropped: u64,
}

/// Where the replayed batches go.
struct Printer<'a> {
    args: &'a Args,
    replayed: Replayed,
    name: String,
    sink: Sink,
}

impl Printer<'_> {
    /// A plain file: find the last base reading backwards, then replay forward from it.
    fn plain_file(&mut self, p: &std::path::Path, opts: RecoverOptions) -> Result<Replayer> {
        let name = self.name.clone();
        let mut file = File::open(p).with_context(|| format!("{name}: cannot open"))?;
        // As every reader of lines does: a first line of NUL bytes is never read whole.
        sess::input::refuse_binary_head(&mut LineReader::new(&mut file), &name)?;
        let start =
            oplist::find_start(&mut file, &opts).with_context(|| format!("{name}: cannot read"))?;
        file.seek(SeekFrom::Start(start.offset))?;
        let strict = opts.strict;
        let mut replayer = Replayer::new(opts, start.by_address).keeping_ops(self.args.ops);
        let mut failed = None;
        let mut torn = None;
        let mut unterminated = None;
        {
            let mut lines = LineReader::new(&mut file);
            while let Some(line) = lines
                .next_line()
                .with_context(|| format!("{name}: cannot read"))?
            {
                let offset = start.offset + line.offset;
                if line.is_torn() {
                    torn = Some((offset, line.bytes.len()));
                    break;
                }
                match self.apply(&mut replayer, line.bytes) {
                    Err(e) => {
                        failed = Some((offset, e));
                        break;
                    }
                    // Told of only when it was applied: one left out is not kept.
                    Ok(true) if line.ending == Ending::Unterminated => {
                        unterminated = Some((offset, line.bytes.len()));
                    }
                    Ok(_) => {}
                }
            }
        }
        // Lines are read from the last base on: their numbers in the file are counted only
        // on the way to a message.
        if let Some((offset, e)) = failed {
            let n = oplist::line_number(&mut file, offset)?;
            return Err(placed(e, format!("{name}:{n}")));
        }
        if let Some((offset, len)) = torn {
            let n = oplist::line_number(&mut file, offset)?;
            self.torn_line(n, offset, len, strict)?;
        }
        if let Some((offset, len)) = unterminated {
            let n = oplist::line_number(&mut file, offset)?;
            let place = format!("{name}:{n}");
            sess::event::say_last_line(&place, len, offset, sess::event::KEPT_AS_A_RECORD);
        }
        Ok(replayer)
    }

    /// Stdin or a compressed file: read forward, keeping the lines since the last base.
    fn stream(&mut self, input: &Input, opts: RecoverOptions, g: Global) -> Result<Replayer> {
        let mut tail = Tail::default();
        let mut torn_at = None;
        let mut unterminated = None;
        let src = input::open(input, self.args.damage.open_options(g))?;
        // Only skip-corrupt reads on past lost lines: other modes need no look per line.
        let health = (self.args.damage.recovery == cli::RecoveryMode::SkipCorrupt)
            .then(|| src.health.clone());
        let mut gaps = 0;
        super::each_line_of(src, &mut |_, line| {
            // Lines were lost just before this one.
            if let Some(health) = &health {
                let now = Health::lock(health).gaps;
                if now > gaps {
                    gaps = now;
                    tail.gap();
                }
            }
            if line.is_torn() {
                torn_at = Some((line.number, line.offset, line.bytes.len()));
            } else {
                tail.push(&opts, line.number, line.offset, line.bytes);
            }
            if line.ending == Ending::Unterminated {
                unterminated = Some(line.number);
            }
            Ok(Flow::More)
        })?;
        if let Some(gap) = tail.dropped() {
            let line = gap.first_dropped.unwrap_or_default();
            sess::io::tell!(
                "sess: warning: {}:{line}: {} batch(es) from here on were not applied: lines \
                 before them were lost to damage, and they build on those (each list goes on \
                 at its next base batch)",
                self.name,
                gap.dropped
            );
            self.replayed.dropped = gap.dropped;
        }
        let strict = opts.strict;
        let mut replayer = Replayer::new(opts, tail.by_address()).keeping_ops(self.args.ops);
        for (number, offset, bytes) in &tail.lines {
            let place = format!("{}:{number}", self.name);
            let applied = self
                .apply(&mut replayer, bytes)
                .map_err(|e| placed(e, place.clone()))?;
            // Told of only when it was applied: one left out is not kept.
            if applied && unterminated == Some(*number) {
                let what = sess::event::KEPT_AS_A_RECORD;
                sess::event::say_last_line(&place, bytes.len(), *offset, what);
            }
        }
        if let Some((number, offset, len)) = torn_at {
            self.torn_line(number, offset, len, strict)?;
        }
        Ok(replayer)
    }

    fn torn_line(&mut self, number: u64, offset: u64, len: usize, strict: bool) -> Result<()> {
        self.replayed.torn = true;
        let what = format!(
            "{}:{number}: a torn last line: no final newline and not valid JSON ({len} bytes at \
             byte offset {offset})",
            self.name
        );
        if strict {
            bail!("{what}");
        }
        sess::io::tell!("sess: warning: {what}; ignored, the value is the one before it");
        Ok(())
    }

    /// Applies one record and prints what --states or --ops asks for. A record's error is
    /// placed by the caller; a write error stays one (a closed pipe is not the input's fault).
    /// Whether the record was applied (not one of another address, or past `--at`).
    fn apply(&mut self, replayer: &mut Replayer, bytes: &[u8]) -> Result<bool> {
        let Some(applied) = replayer.record(bytes).map_err(|e| anyhow!(e))? else {
            return Ok(false);
        };
        let r = &mut self.replayed;
        r.batches += 1;
        if r.batches == 1 {
            r.first_seq = applied.seq;
        }
        r.last_seq = applied.seq;
        let line = if self.args.ops {
            let ops = Value::Array(applied.ops.iter().map(Op::to_value).collect());
            Some(oplist::state_record(applied.seq, "ops", &ops))
        } else if self.args.states {
            let value = applied.value.unwrap_or(&Value::Null);
            Some(oplist::state_record(applied.seq, "value", value))
        } else {
            None
        };
        if let Some(l) = line {
            self.sink.write_all(&l).map_err(Written)?;
            self.sink.write_all(b"\n").map_err(Written)?;
        }
        Ok(true)
    }
}

/// Names the input line an error comes from, unless it is a write error.
fn placed(e: anyhow::Error, place: String) -> anyhow::Error {
    if e.is::<Written>() {
        e
    } else {
        e.context(place)
    }
}

/// A write error, kept apart from the input's errors so that it is never blamed on a line.
#[derive(Debug)]
struct Written(std::io::Error);

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Written {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}
