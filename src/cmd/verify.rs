//! `sess verify`: check that a log is well-formed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::cli::Global;
use crate::io::{self, Flow, Input, OpenOptions, Sink};
use crate::json;

const ABOUT: &str = "Check a log: every line valid JSON, no torn last line";

const LONG_ABOUT: &str = "Check one or more logs. Every line must be one valid JSON value (RFC 8259, \
UTF-8; escapes of lone surrogates are accepted as JavaScript writes them), and the last line \
must end with a newline. Each problem is printed as FILE:LINE:COLUMN with the byte offset \
and what was expected, then a summary. Exits 1 if any problem was found.";

const EXAMPLES: &str = "Examples:
  sess verify run.jsonl
  sess verify logs/*.jsonl.zst && echo all good";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut out = Sink::open(None)?;
    let mut lines = 0u64;
    let mut problems = 0u64;
    io::each_line(&inputs, OpenOptions { quiet: g.quiet }, |name, line| {
        lines += 1;
        if let Err(e) = json::validate(line.bytes) {
            problems += 1;
            writeln!(
                out,
                "{}:{}: invalid JSON: {} (byte offset {})",
                io::at(name, &line),
                e.offset + 1,
                e,
                line.offset + e.offset as u64
            )?;
        }
        if !line.terminated {
            problems += 1;
            writeln!(
                out,
                "{}: torn last line: no final newline ({} bytes at byte offset {})",
                io::at(name, &line),
                line.bytes.len(),
                line.offset
            )?;
        }
        Ok(Flow::More)
    })?;
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
