//! `sess verify`: check that a log is well-formed.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::is_broken_pipe;
use crate::cli::{Global, Inputs};
use sess::frames::Recovery;
use sess::frames::audit::{self, Audit};
use sess::input::{self, Flow, Input, OpenOptions};
use sess::io::{Ending, Line, Sink};
use sess::json;
use sess::rows;
use sess::snapshots;

const ABOUT: &str = "Check a log: valid JSON, valid packed rows, contiguous seq, no torn line";

const LONG_ABOUT: &str = "Check one or more logs. Every line must be one valid JSON value (RFC 8259, \
UTF-8; escapes of lone surrogates are accepted as JavaScript writes them); every packed row \
must pass the strict row checks; where events carry a top-level seq, it must rise by exactly \
1 from one event to the next (members of packed rows included); and the last line must end \
with a newline. Each problem is printed as FILE:LINE[:COLUMN] with the byte offset and what \
was expected, then a summary. Exits 1 if any problem was found.\n\n\
A compressed file is first checked against its frame index without decompressing it (each \
frame's place and crc32), then read with --recovery absolute: any damage is a problem.";

const EXAMPLES: &str = "Examples:
  sess verify run.jsonl
  sess verify logs/*.jsonl.zst && echo all good";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub inputs: Inputs,

    /// For compressed files, check only the frames against the index (crc32 of the
    /// compressed bytes), without decompressing.
    #[arg(long)]
    pub index_only: bool,
}

/// What verify has seen so far in one input.
struct Checker<'o> {
    out: &'o mut Sink,
    problems: u64,
    /// The seq the next seq-carrying event must have.
    next_seq: Option<i64>,
}

impl Checker<'_> {
    /// Checks a compressed file's frames against its index, without decompressing them.
    /// Returns whether there was an index to check.
    fn container(&mut self, path: &Path) -> Result<bool> {
        let name = path.display().to_string();
        if !input::file_is_zstd(path)? {
            return Ok(false);
        }
        let mut f = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        match audit::audit(&mut f).with_context(|| format!("{name}: cannot read"))? {
            Audit::NoIndex => Ok(false),
            Audit::Checked { problems, .. } => {
                for p in problems {
                    self.problem(format_args!("{name}: {p}"))?;
                }
                Ok(true)
            }
        }
    }

    fn problem(&mut self, msg: std::fmt::Arguments<'_>) -> Result<()> {
        self.problems += 1;
        writeln!(self.out, "{msg}")?;
        Ok(())
    }

    fn line(&mut self, name: &str, line: &Line<'_>) -> Result<()> {
        let at = line.place(name);
        let (len, offset) = (line.bytes.len(), line.offset);
        match line.ending {
            Ending::Newline => {}
            Ending::Unterminated => self.problem(format_args!(
                "{at}: the last line has no final newline ({len} bytes at byte offset {offset}); \
                 it is a whole JSON value ('sess repair' adds the newline)"
            ))?,
            Ending::Torn => self.problem(format_args!(
                "{at}: torn last line: no final newline and not a JSON value ({len} bytes at \
                 byte offset {offset}; 'sess repair' removes it)"
            ))?,
        }
        if line.is_torn() {
            return Ok(());
        }
        if snapshots::is_row(line.bytes) {
            // Rebuilding every event checks every batch.
            let expanded = snapshots::expand::<()>(line.bytes, &mut |_, _, _| Ok(true));
            return match expanded {
                Err(snapshots::ExpandError::Row(why)) => self.problem(format_args!("{at}: {why}")),
                _ => Ok(()),
            };
        }
        // Rows are told apart first, so a valid row is scanned once.
        let row = match rows::parse(line.bytes) {
            rows::Parsed::Row(row) => row,
            rows::Parsed::BadRow(e) => return self.problem(format_args!("{at}: {e}")),
            rows::Parsed::BadJson(_, e) => return self.json_problem(&at, line, &e),
            rows::Parsed::Event => {
                if let Err(e) = json::validate(line.bytes) {
                    return self.json_problem(&at, line, &e);
                }
                let seq = json::field(line.bytes, "seq").and_then(json::safe_integer);
                return self.seq(&at, seq);
            }
        };
        for seq in row.seqs() {
            self.seq(&at, seq)?;
        }
        Ok(())
    }

    fn json_problem(&mut self, at: &str, line: &Line<'_>, e: &json::SyntaxError) -> Result<()> {
        let col = e.offset + 1;
        let offset = line.offset + e.offset as u64;
        self.problem(format_args!(
            "{at}:{col}: invalid JSON: {e} (byte offset {offset})"
        ))
    }

    fn seq(&mut self, at: &str, seq: Option<i64>) -> Result<()> {
        let Some(seq) = seq else { return Ok(()) };
        if let Some(want) = self.next_seq
            && seq != want
        {
            self.problem(format_args!(
                "{at}: seq {seq} where {want} was expected (seq must rise by 1)"
            ))?;
        }
        self.next_seq = Some(seq + 1);
        Ok(())
    }

    /// Reads one input through, checking every line; damage ends the reading and is a
    /// problem like the others.
    fn read(&mut self, input: &Input, opts: OpenOptions, lines: &mut u64) -> Result<()> {
        let src = input::open(input, opts)?;
        let name = src.name.clone();
        let health = src.health.clone();
        let read = super::each_line_of(src, &mut |name, line| {
            *lines += 1;
            self.line(name, &line)?;
            Ok(Flow::More)
        });
        if let Err(e) = read {
            if is_broken_pipe(&e) {
                return Err(e);
            }
            self.problem(format_args!("{e:#}"))?;
        }
        let unchecked = health.map_or(0, |h| h.lock().unwrap_or_else(|e| e.into_inner()).unchecked);
        if unchecked > 0 {
            self.problem(format_args!(
                "{name}: {unchecked} zstd frame(s) have no content checksum, so their lines \
                 cannot be verified"
            ))?;
        }
        Ok(())
    }
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.inputs.list();
    let mut out = Sink::stdout();
    let mut lines = 0u64;
    let mut problems = 0u64;
    // A checker tolerates nothing: any damage to a compressed input is reported.
    let opts = OpenOptions {
        recovery: Recovery::Absolute,
        ..crate::cli::default_open(g)
    };
    for input in &inputs {
        let mut check = Checker {
            out: &mut out,
            problems: 0,
            next_seq: None,
        };
        let indexed = match input {
            Input::Path(p) => check.container(p)?,
            Input::Stdin => false,
        };
        if args.index_only && !indexed {
            check.problem(format_args!(
                "{}: no frame index to check (--index-only checks the index of a file \
                 'sess pack' wrote: this is not one, or its index is gone)",
                input.name()
            ))?;
        }
        if !args.index_only {
            check.read(input, opts, &mut lines)?;
        }
        problems += check.problems;
    }
    writeln!(
        out,
        "{} {lines} lines in {} input(s), {problems} problem(s)",
        if problems == 0 { "ok:" } else { "FAILED:" },
        inputs.len()
    )?;
    out.finish()?;
    if problems > 0 {
        bail!("verify found {problems} problem(s)");
    }
    Ok(())
}
