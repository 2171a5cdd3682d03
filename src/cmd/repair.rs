//! `sess repair`: salvage a damaged or torn log, keeping every complete record.

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::cli::Global;
use crate::frames::repair::{self, Loss};
use crate::frames::writer::{self, DEFAULT_FRAME_SIZE, FrameWriter, Layout};
use crate::io::source::is_zstd;
use crate::io::{self, Flow, Input, Sink};
use crate::json;

const ABOUT: &str = "Salvage a damaged or torn log: keep every complete record, report the rest";

const LONG_ABOUT: &str = "Salvage a damaged or torn log and report, by byte range and line range, what \
was lost.\n\n\
A compressed log: every zstd frame that decodes (its checksum included) is kept byte for byte; \
the complete lines of a torn final frame are compressed into a new frame; damaged frames and \
bytes that are not frames are dropped; a new frame index is written. Line ranges of lost \
frames come from the old index when it survived.\n\n\
A plain log: every line that is valid JSON and ends with a newline is kept byte for byte; \
other lines (damaged, or a torn last line) are dropped and reported.\n\n\
The output has the layout of the input. With --in-place the file is replaced atomically \
(a temporary file renamed over it).";

const EXAMPLES: &str = "Examples:
  sess repair crashed.jsonl.zst -o fixed.jsonl.zst
  sess repair --in-place session.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// The damaged log.
    pub file: PathBuf,

    /// Write the repaired log to FILE (atomically).
    #[arg(short, long, value_name = "FILE", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,

    /// Replace FILE with the repaired log, atomically.
    #[arg(long)]
    pub in_place: bool,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let name = args.file.display().to_string();
    let target = if args.in_place {
        Some(args.file.clone())
    } else {
        args.output.clone()
    };
    let mut head = [0u8; 4];
    let n = File::open(&args.file)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("{name}: cannot open"))?;
    let losses = if is_zstd(&head[..n]) {
        repair_zstd(&args, &name, target)?
    } else {
        repair_plain(&args, &name, target, g)?
    };
    if losses.is_empty() {
        eprintln!("sess repair: {name}: nothing was lost");
    }
    for loss in &losses {
        eprintln!("sess repair: {name}: lost {loss}");
    }
    Ok(())
}

fn repair_zstd(args: &Args, name: &str, target: Option<PathBuf>) -> Result<Vec<Loss>> {
    let mut f = File::open(&args.file).with_context(|| format!("{name}: cannot open"))?;
    let sink = Sink::open(target.as_deref())?;
    sink.refuse_terminal("compressed output")?;
    let opts = writer::Options {
        level: 3,
        frame_size: DEFAULT_FRAME_SIZE,
        layout: Layout::Sess,
    };
    let mut out = FrameWriter::new(sink, opts)?;
    let report =
        repair::salvage(&mut f, &mut out).with_context(|| format!("{name}: cannot read"))?;
    out.finish()?.0.finish()?;
    eprintln!(
        "sess repair: {name}: kept {} frame(s) and {} line(s){}",
        report.frames_kept,
        report.lines_kept,
        if report.torn_lines_kept > 0 {
            format!(
                ", {} of them from a torn final frame (not covered by a checksum)",
                report.torn_lines_kept
            )
        } else {
            String::new()
        }
    );
    Ok(report.losses)
}

fn repair_plain(args: &Args, name: &str, target: Option<PathBuf>, g: Global) -> Result<Vec<Loss>> {
    let mut sink = Sink::open(target.as_deref())?;
    let mut losses = Vec::new();
    let mut kept = 0u64;
    let input = [Input::Path(args.file.clone())];
    io::each_line(&input, g.open_options(), |_, line| {
        let problem = match json::validate(line.bytes) {
            _ if !line.terminated => Some("a torn last line: no final newline".to_string()),
            Err(e) => Some(format!("invalid JSON at column {}: {e}", e.offset + 1)),
            Ok(()) => None,
        };
        match problem {
            None => {
                sink.write_all(line.bytes)?;
                sink.write_all(b"\n")?;
                kept += 1;
            }
            Some(why) => losses.push(Loss {
                from: line.offset,
                to: line.offset + line.bytes.len() as u64 + u64::from(line.terminated),
                after_line: line.number - 1,
                lines: Some(1),
                why,
            }),
        }
        Ok(Flow::More)
    })?;
    sink.finish()?;
    if kept == 0 && !losses.is_empty() {
        bail!("{name}: no complete record survived");
    }
    eprintln!("sess repair: {name}: kept {kept} line(s)");
    Ok(losses)
}
