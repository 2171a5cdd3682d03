//! `sess verify`: check that a log is well-formed.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cli::Global;
use crate::frames::{Index, Recovery, walk};
use crate::io::source::is_zstd;
use crate::io::{self, Flow, Input, Line, OpenOptions, Sink};
use crate::json;
use crate::rows;
use crate::snapshots;

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
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

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
    /// Checks a compressed file's frames against its index without decompressing them:
    /// the frames found by walking their headers must be the ones the index lists, each with
    /// the crc32 it records.
    fn container(&mut self, path: &Path) -> Result<()> {
        let name = path.display().to_string();
        let mut f = File::open(path).with_context(|| format!("{name}: cannot open"))?;
        let mut head = [0u8; 4];
        let n = f
            .read(&mut head)
            .with_context(|| format!("{name}: cannot read"))?;
        if !is_zstd(&head[..n]) {
            return Ok(());
        }
        let (index, index_at) = match Index::read_from(&mut f)? {
            None => return Ok(()),
            Some(Err(e)) => return self.problem(format_args!("{name}: frame index: {e}")),
            Some(Ok(found)) => found,
        };
        let (spans, end) = walk::walk(&mut f, 0, index_at)?;
        let data: Vec<_> = spans
            .iter()
            .filter(|s| matches!(s.kind, walk::Kind::Zstd { .. }))
            .collect();
        if end != walk::End::Clean {
            self.problem(format_args!(
                "{name}: the frames before the index do not end cleanly: {end:?}"
            ))?;
        }
        if data.len() != index.entries.len() {
            self.problem(format_args!(
                "{name}: the index lists {} frames, the file holds {}",
                index.entries.len(),
                data.len()
            ))?;
        }
        let mut bytes = Vec::new();
        for (k, (e, s)) in index.entries.iter().zip(&data).enumerate() {
            if (e.offset, u64::from(e.compressed)) != (s.offset, s.len) {
                self.problem(format_args!(
                    "{name}: frame {k}: the index says bytes {}..{}, the frame is at {}..{}",
                    e.offset,
                    e.offset + u64::from(e.compressed),
                    s.offset,
                    s.offset + s.len
                ))?;
                continue;
            }
            bytes.resize(e.compressed as usize, 0);
            f.seek(SeekFrom::Start(e.offset))?;
            f.read_exact(&mut bytes)?;
            let crc = crc32fast::hash(&bytes);
            if crc != e.crc32 {
                self.problem(format_args!(
                    "{name}: frame {k} at byte {}: crc32 {crc:08x} does not match the index ({:08x})",
                    e.offset, e.crc32
                ))?;
            }
        }
        Ok(())
    }

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
        if snapshots::is_row(line.bytes) {
            // Rebuilding every event checks every batch.
            let expanded = snapshots::expand(line.bytes, &mut |_, _, _| Ok(true));
            return match expanded {
                Ok(()) => Ok(()),
                Err(e) => self.problem(format_args!("{at}: {e:#}")),
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
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let mut out = Sink::open(None)?;
    let mut lines = 0u64;
    let mut problems = 0u64;
    // A checker tolerates nothing: any damage to a compressed input is reported.
    let opts = OpenOptions {
        recovery: Recovery::Absolute,
        ..g.open_options()
    };
    for input in &inputs {
        let mut check = Checker {
            out: &mut out,
            problems: 0,
            next_seq: None,
        };
        if let Input::Path(p) = input {
            check.container(p)?;
        }
        if !args.index_only {
            let read = io::each_line(std::slice::from_ref(input), opts, |name, line| {
                lines += 1;
                check.line(name, &line)?;
                Ok(Flow::More)
            });
            // Damage ends the reading of this input; it is a problem like the others.
            if let Err(e) = read {
                if crate::io::sink::is_broken_pipe(&e) {
                    return Err(e);
                }
                check.problem(format_args!("{e:#}"))?;
            }
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
