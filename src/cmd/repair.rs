//! `sess repair`: salvage a damaged or torn log, keeping every complete record.

use std::fs::File;
use std::io::Seek;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use sess::frames::writer::{self, DEFAULT_FRAME_SIZE, FrameWriter};
use sess::input::{self, Compression};
use sess::io::Sink;
use sess::io::writers;
use sess::repair::{self, RepairReport};

const ABOUT: &str = "Salvage a damaged or torn log: keep every complete record, report the rest";

const LONG_ABOUT: &str = "Salvage a damaged or torn log and report, by byte range and line range, what \
was lost.\n\n\
A compressed log: every zstd frame that decodes (its checksum included) is kept byte for byte; \
the complete lines of a torn final frame are compressed into a new frame; damaged frames and \
bytes that are not frames are dropped; a new frame index is written. Line ranges of lost \
frames come from the old index when it survived. A packed line that refers to a value stored \
in a lost frame can never be rebuilt: it is dropped and named as well (its frame written \
again without it), so the output reads back whole. A file that begins with three of the \
four bytes of zstd's magic is one whose magic was damaged: it is salvaged as compressed, \
from the first frame after the damage.\n\n\
A plain log: every line that is valid JSON is kept byte for byte (a first line behind a \
UTF-8 byte-order mark too, with it); other lines (damaged, or a torn last line) are dropped \
and reported.\n\n\
In both, a last line without a newline is kept, with the newline added, when it is one whole \
JSON value, and dropped as torn when it is not.\n\n\
The output has the layout of the input. With --in-place the file is replaced atomically \
(a temporary file renamed over it), unless it is still being written: when another process \
has it open for writing, or it changes while it is repaired, repair fails and changes \
nothing (the writer's next records would go to the replaced file). When nothing survives, \
repair fails and writes nothing: the input stays as it was and no output file is created.";

const EXAMPLES: &str = "Examples:
  sess repair crashed.jsonl.zst -o fixed.jsonl.zst
  sess repair --in-place session.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// The damaged log ('-' for stdin when it is a file, as in `< log`: repair seeks in it).
    pub file: PathBuf,

    /// Write the repaired log to FILE (atomically).
    #[arg(short, long, value_name = "FILE", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,

    /// Replace FILE if it exists (without -f an existing file is refused, as zstd does).
    #[arg(short, long, requires = "output")]
    pub force: bool,

    /// Replace FILE with the repaired log, atomically.
    #[arg(long)]
    pub in_place: bool,

    /// Print the report on stderr as one JSON object (schema sess-repair/1, docs/FORMAT.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut args: Args) -> Result<()> {
    let stdin = args.file.as_os_str() == "-";
    if stdin {
        if args.in_place {
            bail!("--in-place replaces a file by its name: name the log, not '-'");
        }
        // For the check that the output is not the input.
        args.file = PathBuf::from("/dev/stdin");
    }
    let name = match stdin {
        true => "<stdin>".to_string(),
        false => args.file.display().to_string(),
    };
    // --in-place replaces the input on purpose; -o must name another file.
    let (target, inputs) = if args.in_place {
        (Some(args.file.clone()), Vec::new())
    } else {
        (args.output.clone(), vec![args.file.clone()])
    };
    // A file given as stdin (`< log`) is that file, read through its descriptor (a file
    // the user may not open by name, `sudo ... < log`, is still read).
    let mut f = match stdin {
        true => std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(File::from),
        false => File::open(&args.file),
    }
    .with_context(|| format!("{name}: cannot open"))?;
    let regular = f.metadata().is_ok_and(|m| m.is_file());
    if regular && stdin {
        // From its first byte, wherever the shell left the offset it shares.
        f.seek(std::io::SeekFrom::Start(0))
            .with_context(|| format!("{name}: cannot read"))?;
    }
    let compression = match regular
        .then(|| input::compression_of(&f, &name))
        .transpose()?
    {
        // Salvage seeks back and forth in its input.
        None => bail!(
            "{name}: not a regular file: repair reads a file it can seek in (save the stream to a file first)"
        ),
        // gzip has no frames to keep or drop; its own tools say where it is damaged.
        Some(Compression::Gzip) => {
            bail!("{name}: a gzip file: repair reads plain and zstd logs (gzip -dc it first)")
        }
        Some(Compression::Plain) if magic_took_a_flip(&f) => Compression::Zstd,
        Some(c) => c,
    };
    // A log still being written is not replaced (checked again before it would be).
    let before = match args.in_place {
        true => Some(
            f.metadata()
                .with_context(|| format!("{name}: cannot read"))?,
        ),
        false => None,
    };
    refuse_live(&args.file, before.as_ref())?;
    // --in-place replaces its file by definition.
    let existing = crate::cli::existing(args.force || args.in_place);
    let mut sink = Sink::open(target.as_deref(), &inputs, existing)?;
    let report = if compression == Compression::Zstd {
        sink.refuse_terminal("compressed output")?;
        let opts = writer::FrameOptions {
            first_seq: sess::event::line_seq,
            ..writer::FrameOptions::new(3, DEFAULT_FRAME_SIZE)
        };
        let mut out = FrameWriter::new(sink, opts)?;
        let report = repair::salvage_zstd(&mut f, &mut out)
            .with_context(|| format!("{name}: cannot read"))?;
        sink = out.finish()?.0;
        report
    } else {
        repair::salvage_plain(&mut f, &mut sink).with_context(|| format!("{name}: cannot read"))?
    };
    if !args.json {
        print_report(&name, &report);
    }
    // Decided before the output is finished: a failed repair writes nothing.
    let done = match report.nothing_survived() {
        true => Err(anyhow::anyhow!(
            "{name}: no complete record survived; nothing was written"
        )),
        false => refuse_live(&args.file, before.as_ref()).and_then(|()| Ok(sink.finish()?)),
    };
    if !args.json {
        return done;
    }
    let done = super::told_before_report(done);
    sess::io::tell!("{}", report_json(&name, &report));
    done
}

/// Whether the file begins with three of the four bytes of zstd's magic: a zstd file whose
/// magic took a flip, which would read as plain text, and the plain salvage would keep
/// the bits of compressed data that parse as JSON (lines `3`, `9E3`). Its salvage as zstd
/// finds the frames after the damage. No text log begins so (0xb5 and 0xfd are not UTF-8
/// there).
fn magic_took_a_flip(f: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 4];
    let magic = sess::frames::walk::ZSTD_MAGIC.to_le_bytes();
    f.read_exact_at(&mut head, 0).is_ok()
        && head.iter().zip(magic).filter(|(a, b)| **a == *b).count() == 3
}

/// For `--in-place` (`before`: the file as it was opened): fails when the file is being
/// written, as a log that looks torn usually is. Replaced, its writer's next records would
/// go to the old file, which no name reaches any more.
fn refuse_live(path: &Path, before: Option<&std::fs::Metadata>) -> Result<()> {
    let Some(before) = before else {
        return Ok(());
    };
    let name = path.display();
    if let Some(why) =
        writers::why_busy(path, before).with_context(|| format!("{name}: cannot read"))?
    {
        bail!(
            "{name}: {why}: a log still being written is not repaired in place (its next \
             records would be lost); stop its writer first, or repair it to another file with -o"
        );
    }
    Ok(())
}

/// The report for scripts: what was kept, and each loss with its bytes and lines.
fn report_json(name: &str, r: &RepairReport) -> serde_json::Value {
    let lost: Vec<_> = r
        .losses
        .iter()
        .map(|l| {
            serde_json::json!({
                "bytes": [l.from, l.to],
                "after_line": l.after_line,
                "lines": l.lines,
                "why": l.why,
            })
        })
        .collect();
    serde_json::json!({
        "schema": "sess-repair/1",
        "file": name,
        "frames_kept": r.frames_kept,
        "lines_kept": r.lines_kept,
        "torn_lines_kept": r.torn_lines_kept,
        "unchecked_frames": r.unchecked_frames,
        "newline_added": r.newline_added,
        "lost": lost,
    })
}

fn print_report(name: &str, report: &RepairReport) {
    let mut kept = format!("sess repair: {name}: kept {} line(s)", report.lines_kept);
    if report.frames_kept > 0 {
        kept = format!(
            "sess repair: {name}: kept {} frame(s) and {} line(s)",
            report.frames_kept, report.lines_kept
        );
    }
    if report.torn_lines_kept > 0 {
        kept += &format!(
            ", {} of them from a torn final frame (not covered by a checksum)",
            report.torn_lines_kept
        );
    }
    sess::io::tell!("{kept}");
    if report.unchecked_frames > 0 {
        sess::io::tell!(
            "sess repair: {name}: {} frame(s) have no content checksum: kept, but nothing \
             vouches for their bytes",
            report.unchecked_frames
        );
    }
    if let Some(line) = report.newline_added {
        sess::io::tell!(
            "sess repair: {name}: line {line} had no final newline; it is a whole JSON value, \
             so it was kept and the newline added"
        );
    }
    if report.losses.is_empty() {
        sess::io::tell!("sess repair: {name}: nothing was lost");
    }
    for loss in &report.losses {
        sess::io::tell!("sess repair: {name}: lost {loss}");
    }
}
