//! `sess recover`: the value an op list holds, rebuilt from its last base batch.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::Global;
use crate::delta::Op;
use crate::delta::oplist::{self, Options, Replay};
use crate::io::source::is_zstd;
use crate::io::{self, Flow, Input, LineReader, Sink};
use crate::json;
use crate::value::Value;

const ABOUT: &str = "Rebuild the value an op list holds, from its last base batch";

const LONG_ABOUT: &str = "Read an op list (one batch of Chord ops per line: a bare WireOp[] or a record \
{\"seq\":N,\"tag\":\"base\"|null,\"ops\":[...]}, \"value\" accepted for \"ops\"; plain or zstd) and \
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
    /// The op list ('-' for stdin).
    pub file: PathBuf,

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

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let input = Input::from_arg(&args.file);
    let name = input.name();
    let mut state = State {
        opts: Options {
            at: args.at,
            from_start: args.from_start,
            address: args.address.clone(),
            strict: args.strict,
        },
        args: &args,
        name: name.clone(),
        lists: BTreeMap::new(),
        multi: false,
        sink: Sink::open(args.output.as_deref())?,
    };
    match &input {
        Input::Path(p) if !starts_zstd(p)? => state.plain_file(p)?,
        _ => state.stream(&input, g)?,
    }
    state.finish()
}

/// The lists being recovered and where their output goes.
struct State<'a> {
    opts: Options,
    args: &'a Args,
    name: String,
    /// One replay per address ("" when the file holds one list).
    lists: BTreeMap<String, Replay>,
    /// The file holds several addressed lists and no --address was given.
    multi: bool,
    sink: Sink,
}

impl State<'_> {
    /// A plain file: find the last base reading backwards, then replay forward from it.
    fn plain_file(&mut self, p: &std::path::Path) -> Result<()> {
        let name = self.name.clone();
        let mut file = File::open(p).with_context(|| format!("{name}: cannot open"))?;
        let (start, several) = oplist::find_start(&mut file, &self.opts)
            .with_context(|| format!("{name}: cannot read"))?;
        self.multi = several;
        file.seek(SeekFrom::Start(start))?;
        let mut failed = None;
        {
            let mut lines = LineReader::new(&mut file);
            while let Some(line) = lines.next_line()? {
                let offset = start + line.offset;
                match self.step(line.bytes, line.terminated, offset) {
                    Ok(false) => {}
                    Ok(true) => break,
                    Err(e) => {
                        failed = Some((offset, e));
                        break;
                    }
                }
            }
        }
        if let Some((offset, e)) = failed {
            // Counting lines is paid only on the way to an error.
            let n = oplist::line_number(&mut file, offset)?;
            bail!("{name}:{n}: {e:#}");
        }
        Ok(())
    }

    /// Stdin or a compressed file: read forward, keeping the lines since the last base.
    fn stream(&mut self, input: &Input, g: Global) -> Result<()> {
        let mut tail: Vec<(u64, u64, Vec<u8>, bool)> = Vec::new();
        let (address, at, from_start) = (
            self.opts.address.clone(),
            self.opts.at,
            self.opts.from_start,
        );
        let mut multi = false;
        io::each_line(std::slice::from_ref(input), g.open_options(), |_, line| {
            let p = oplist::peek(line.bytes);
            multi |= p.address.is_some() && address.is_none();
            let ours = match (&address, p.address) {
                (Some(a), Some(raw)) => json::str_value(raw).is_some_and(|r| r == a.as_str()),
                (Some(_), None) => false,
                (None, _) => true,
            };
            let in_range = at.is_none_or(|at| p.seq.is_some_and(|s| s <= at));
            if ours && p.base && in_range && !from_start && !multi {
                tail.clear();
            }
            tail.push((
                line.number,
                line.offset,
                line.bytes.to_vec(),
                line.terminated,
            ));
            Ok(Flow::More)
        })?;
        self.multi = multi;
        for (number, offset, bytes, terminated) in &tail {
            let stop = self
                .step(bytes, *terminated, *offset)
                .map_err(|e| anyhow!("{}:{number}: {e:#}", self.name))?;
            if stop {
                break;
            }
        }
        Ok(())
    }

    /// One line of the replayed part: skip blank lines and other addresses, handle a torn
    /// last line, then decode, apply and print. Returns whether to stop.
    fn step(&mut self, bytes: &[u8], terminated: bool, offset: u64) -> Result<bool> {
        if bytes.iter().all(|&b| json::is_ws(b)) {
            return Ok(false);
        }
        if !terminated && json::validate(bytes).is_err() {
            if self.opts.strict {
                bail!(
                    "a torn last line: no final newline and not valid JSON (byte offset {offset})"
                );
            }
            eprintln!(
                "sess: warning: {}: ignored a torn last line ({} bytes at byte offset {offset}); the value is the one before it",
                self.name,
                bytes.len()
            );
            return Ok(true);
        }
        let rec = oplist::parse_record(bytes).map_err(|e| anyhow!(e))?;
        if !self.multi && self.opts.address.is_some() && rec.address != self.opts.address {
            return Ok(false);
        }
        let key = if self.multi {
            rec.address.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let replay = self.lists.entry(key).or_default();
        let ops = replay.batch(&rec.ops).map_err(|(k, e)| {
            let seq = rec
                .seq
                .map_or(String::new(), |s| format!("batch seq {s}, "));
            let op = k.map_or(String::new(), |k| format!("op {k}: "));
            anyhow!("{seq}{op}{e}")
        })?;
        let seq = rec.seq.map_or(Value::Null, |s| Value::Number(s as f64));
        let line = if self.args.ops {
            Some(record(
                "ops",
                seq,
                Value::Array(ops.iter().map(Op::to_value).collect()),
            ))
        } else if self.args.states {
            Some(record(
                "value",
                seq,
                replay.value.clone().unwrap_or(Value::Null),
            ))
        } else {
            None
        };
        if let Some(l) = line {
            self.sink.write_all(&l.to_json())?;
            self.sink.write_all(b"\n")?;
        }
        Ok(self.opts.at.is_some() && rec.seq == self.opts.at)
    }

    /// Prints the value (or the values by address) unless states or ops were printed.
    fn finish(mut self) -> Result<()> {
        if !self.args.states && !self.args.ops {
            let value = if self.multi {
                Value::Object(
                    std::mem::take(&mut self.lists)
                        .into_iter()
                        .map(|(k, r)| (k.encode_utf16().collect(), r.value.unwrap_or(Value::Null)))
                        .collect(),
                )
            } else {
                std::mem::take(&mut self.lists)
                    .into_values()
                    .next()
                    .and_then(|r| r.value)
                    .unwrap_or(Value::Null)
            };
            self.sink.write_all(&value.to_json())?;
            self.sink.write_all(b"\n")?;
        }
        self.sink.finish()
    }
}

fn starts_zstd(p: &std::path::Path) -> Result<bool> {
    let mut head = [0u8; 4];
    let n = File::open(p)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .with_context(|| format!("{}: cannot open", p.display()))?;
    Ok(is_zstd(&head[..n]))
}

fn record(key: &str, seq: Value, v: Value) -> Value {
    Value::Object(vec![
        ("seq".encode_utf16().collect(), seq),
        (key.encode_utf16().collect(), v),
    ])
}
