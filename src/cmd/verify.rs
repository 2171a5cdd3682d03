//! `sess verify`: check that a log is well-formed.

use std::io::Write;

use anyhow::{Result, bail};

use std::sync::Mutex;

use super::is_broken_pipe;
use crate::cli::{Global, Inputs};
use sess::frames::Recovery;
use sess::frames::reader::Health;
use sess::input::{Flow, Input, OpenOptions};
use sess::io::Sink;
use sess::verify::{self, Container, LineChecks};

const ABOUT: &str = "Check a log: valid JSON, valid packed rows, contiguous seq, no torn line";

const LONG_ABOUT: &str = "Check one or more logs. Every line must be one valid JSON value (RFC 8259, \
UTF-8; escapes of lone surrogates are accepted as JavaScript writes them); every packed row \
must pass the strict row checks; where events carry a top-level seq, it must rise by exactly \
1 from one event to the next (members of packed rows included); and the last line must end \
with a newline. Each problem is printed as FILE:LINE[:COLUMN] with the byte offset and what \
was expected, then a summary. Exits 1 if any problem was found.\n\n\
A compressed file is first checked against its frame index without decompressing it (each \
frame's place and crc32), then read through: each damaged stretch is a problem naming the \
lines of the original it cost (when the index says), and so is each later line that cannot \
be rebuilt because a value it refers to was stored in a lost frame.";

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

/// One input's problems, printed as they are found.
struct Checker<'o> {
    out: &'o mut Sink,
    problems: u64,
    lines: LineChecks,
}

impl Checker<'_> {
    fn problem(&mut self, msg: &str) -> Result<()> {
        self.problems += 1;
        writeln!(self.out, "{msg}")?;
        Ok(())
    }

    /// The reader's warnings not reported yet, as problems.
    fn notices(&mut self, health: &Mutex<Health>) -> Result<()> {
        let found = std::mem::take(&mut Health::lock(health).notices);
        if !found.is_empty() {
            self.lines.lost();
        }
        for n in found {
            self.problem(&n)?;
        }
        Ok(())
    }

    /// Reads one input through, checking every line. A damaged frame is a problem, and so
    /// is each later line that needed a value defined in it; the rest is read on.
    fn read(&mut self, input: &Input, opts: OpenOptions, lines: &mut u64) -> Result<()> {
        let src = sess::input::open(input, opts)?;
        let name = src.name.clone();
        let health = src.health.clone();
        let read = super::each_line_of(src, &mut |name, line| {
            // Damage skipped and lines lost with it, reported where reading found them.
            self.notices(&health)?;
            *lines += 1;
            for p in self.lines.line(name, &line) {
                self.problem(&p)?;
            }
            Ok(Flow::More)
        });
        if let Err(e) = read {
            if is_broken_pipe(&e) {
                return Err(e);
            }
            self.problem(&format!("{e:#}"))?;
        }
        self.notices(&health)?;
        let unchecked = Health::lock(&health).unchecked;
        if let Some(p) = verify::unchecked_frames(&name, unchecked) {
            self.problem(&p)?;
        }
        Ok(())
    }
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.inputs.list();
    let mut out = Sink::stdout();
    let mut lines = 0u64;
    let mut problems = 0u64;
    // A checker tolerates nothing, and reads past damage to report all of it.
    let opts = OpenOptions {
        recovery: Recovery::SkipCorrupt,
        collect_warnings: true,
        // Every line is checked strictly below, and each bad one is a problem.
        check: sess::syntax::LineCheck::Off,
        ..crate::cli::default_open(g)
    };
    for input in &inputs {
        let mut check = Checker {
            out: &mut out,
            problems: 0,
            lines: LineChecks::default(),
        };
        let container = match input {
            Input::Path(p) => verify::container(p)?,
            Input::Stdin => Container::Unchecked,
        };
        let checked = match container {
            Container::Checked(problems) => {
                for p in &problems {
                    check.problem(p)?;
                }
                true
            }
            Container::NoIndex(warning) => {
                eprintln!("sess: warning: {warning}");
                false
            }
            Container::Unchecked => false,
        };
        if args.index_only && !checked {
            check.problem(&format!(
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
