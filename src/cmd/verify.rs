//! `sess verify`: check that a log is well-formed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::cli::Global;
use crate::io::{self, Flow, Input, Line, OpenOptions, Sink};
use crate::json;
use crate::rows;

const ABOUT: &str = "Check a log: valid JSON, valid packed rows, contiguous seq, no torn line";

const LONG_ABOUT: &str = "Check one or more logs. Every line must be one valid JSON value (RFC 8259, \
UTF-8; escapes of lone surrogates are accepted as JavaScript writes them); every packed row \
must pass the strict row checks; where events carry a top-level seq, it must rise by exactly \
1 from one event to the next (members of packed rows included); and the last line must end \
with a newline. Each problem is printed as FILE:LINE[:COLUMN] with the byte offset and what \
was expected, then a summary. Exits 1 if any problem was found.";

const EXAMPLES: &str = "Examples:
  sess verify run.jsonl
  sess verify logs/*.jsonl.zst && echo all good";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,
}

/// What verify has seen so far in one input.
struct Checker<'o> {
    out: &'o mut Sink,
    problems: u64,
    /// The seq the next seq-carrying event must have.
    next_seq: Option<i64>,
}

impl Checker<'_> {
    fn problem(&mut self, msg: std::fmt::Arguments<'_>) -> Result<()> {
        self.problems += 1;
        writeln!(self.out, "{msg}")?;
        Ok(())
    }

    fn line(&mut self, name: &str, line: &Line<'_>) -> Result<()> {
        let at = io::at(name, line);
        if !line.terminated {
            self.problem(format_args!(
                "{at}: torn last line: no final newline ({} bytes at byte offset {})",
                line.bytes.len(),
                line.offset
            ))?;
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
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut out = Sink::open(None)?;
    let mut lines = 0u64;
    let mut problems = 0u64;
    for input in &inputs {
        let mut check = Checker {
            out: &mut out,
            problems: 0,
            next_seq: None,
        };
        io::each_line(
            std::slice::from_ref(input),
            OpenOptions { quiet: g.quiet },
            |name, line| {
                lines += 1;
                check.line(name, &line)?;
                Ok(Flow::More)
            },
        )?;
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
