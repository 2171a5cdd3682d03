//! `sess pack`: store runs of chunk deltas as packed rows, in checksummed zstd frames.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cli::Global;
use crate::event;
use crate::frames::writer::{self, DEFAULT_FRAME_SIZE, FrameWriter, Layout};
use crate::io::{Flow, Input, OpenOptions, Sink};
use crate::pack::Packer;

const ABOUT: &str = "Pack a log: chunk rows (lossless, DSH-compatible) in checksummed zstd frames";

const LONG_ABOUT: &str = "Pack runs of three or more consecutive DeepSeek Harness assistant/chunk \
deltas (text, reasoning, tool-call arguments) into text-chunks, reasoning-chunks and \
tool-call-chunks rows, the layout DSH itself writes and reads; pack runs of snapshot frames \
(pi message_update carrying the whole message, tool_execution_update carrying the whole \
output so far) into snapshot-deltas rows: the first event plus the op batch to each next \
one. Write the result as \
independent zstd frames, each holding whole lines and a content checksum, followed by an \
index of the frames (crc32 of each) in a zstd skippable frame. Stock 'zstd -dc' reads the \
output as plain packed JSONL. --plain writes packed JSONL instead.\n\n\
Byte-exact: 'sess unpack' of the output reproduces the input byte for byte. An event is \
packed only when it is spelled exactly as the unpacker will spell it back (the canonical \
JSON.stringify form); anything else stays verbatim. Input rows are read as the events they \
hold, so packing a packed file packs its events again.\n\n\
Streaming (input on a pipe): a frame is written when the window opened by its first pending \
line expires (it does not reset on later lines), or when it reaches --frame-size, and the \
output file is written in place (not through a temporary file), so a crash loses at most \
one window: every frame written before it reads back. Runs are packed per window, as DSH \
packs per batch.";

const EXAMPLES: &str = "Examples:
  sess pack session.jsonl -o session.jsonl.zst
  agent --mode json | sess pack --fsync -o run.jsonl.zst
  sess pack --layout dsh events.jsonl -o session.jsonl.zstd
  sess pack --plain session.jsonl | sess unpack | cmp - session.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

    /// Write plain packed JSONL instead of zstd frames.
    #[arg(long)]
    pub plain: bool,

    /// zstd compression level.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub level: i32,

    /// Cut a frame once this many uncompressed bytes are pending (at a line end).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_FRAME_SIZE as u64,
          value_parser = clap::value_parser!(u64).range(1..=(1 << 30)))]
    pub frame_size: u64,

    /// The frame layout: sess (frames and an index) or dsh (DeepSeek Harness's: the header
    /// line alone first, one frame per batch, no index).
    #[arg(long, value_name = "LAYOUT", default_value = "sess")]
    pub layout: Layout,

    /// Streaming: flush a frame this many milliseconds after its first pending line.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub window: u64,

    /// Sync the output file after every frame.
    #[arg(long)]
    pub fsync: bool,

    /// Print how many events were packed into how many rows on stderr.
    #[arg(long)]
    pub stats: bool,

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Where packed lines go: plain, or through the frame writer.
enum Out {
    Plain(Sink),
    Frames(FrameWriter<Sink>),
}

impl Out {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Out::Plain(s) => s,
            Out::Frames(f) => f,
        }
    }

    /// The window expired: write what is pending now, through to the file.
    fn flush_window(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(s) => s.flush(),
            Out::Frames(f) => {
                f.flush_frame()?;
                f.flush()
            }
        }
    }

    fn deadline(&self, window: Duration) -> Option<Instant> {
        match self {
            Out::Plain(_) => None,
            Out::Frames(f) => f.deadline(window),
        }
    }

    fn sync_if_written(&mut self) -> Result<()> {
        if let Out::Frames(f) = self
            && f.take_written()
            && let Some(file) = f.get_mut().file()
        {
            file.sync_data().context("cannot sync the output")?;
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
        match self {
            Out::Plain(s) => s.finish(),
            Out::Frames(f) => f.finish()?.0.finish(),
        }
    }
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = Input::list(&args.files);
    let streaming =
        inputs.contains(&Input::Stdin) && !io::stdin().is_terminal() && !stdin_is_file();
    // A stream's frames must survive a crash as they are written, so its output file is
    // written in place; anything else goes through a temporary file and a rename.
    let sink = match (&args.output, streaming && !args.plain) {
        (Some(p), true) if p.as_os_str() != "-" => Sink::open_in_place(p)?,
        (p, _) => Sink::open(p.as_deref())?,
    };
    let mut out = if args.plain {
        Out::Plain(sink)
    } else {
        sink.refuse_terminal("compressed output")?;
        let opts = writer::Options {
            level: args.level,
            frame_size: args.frame_size as usize,
            layout: args.layout,
        };
        Out::Frames(FrameWriter::new(sink, opts)?)
    };
    let mut packer = Packer::default();
    let mut events = 0u64;
    let window = Duration::from_millis(args.window);
    let streaming =
        inputs.contains(&Input::Stdin) && !io::stdin().is_terminal() && !stdin_is_file();
    if streaming {
        pack_stream(
            &inputs,
            g.open_options(),
            window,
            args.fsync,
            &mut packer,
            &mut out,
            &mut events,
        )?;
    } else {
        event::each_event(&inputs, g.open_options(), |name, ev| {
            events += 1;
            if !ev.terminated() {
                super::unpack::warn_unterminated(name, &ev.line);
            }
            packer.event(ev.bytes, ev.terminated(), out.writer())?;
            if args.fsync {
                out.sync_if_written()?;
            }
            Ok(Flow::More)
        })?;
    }
    packer.finish(out.writer())?;
    out.finish()?;
    if args.stats {
        let (rows, packed) = packer.counts();
        eprintln!("sess pack: {events} events in, {packed} of them packed into {rows} rows");
    }
    Ok(())
}

fn stdin_is_file() -> bool {
    std::fs::metadata("/dev/stdin").is_ok_and(|m| m.is_file())
}

/// Reads on a thread so that a window can expire while the input is quiet.
fn pack_stream(
    inputs: &[Input],
    opts: OpenOptions,
    window: Duration,
    fsync: bool,
    packer: &mut Packer,
    out: &mut Out,
    events: &mut u64,
) -> Result<()> {
    let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, bool)>(4096);
    let inputs = inputs.to_vec();
    let reader = std::thread::spawn(move || {
        event::each_event(&inputs, opts, |name, ev| {
            if !ev.terminated() {
                super::unpack::warn_unterminated(name, &ev.line);
            }
            let terminated = ev.terminated();
            // A closed channel means the writer failed; it reports why.
            Ok(if tx.send((ev.bytes.to_vec(), terminated)).is_ok() {
                Flow::More
            } else {
                Flow::Stop
            })
        })
    });
    loop {
        let next = match out.deadline(window) {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok((line, terminated)) => {
                *events += 1;
                packer.event(&line, terminated, out.writer())?;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Runs are packed per window, as DSH packs per batch.
                packer.finish(out.writer())?;
                out.flush_window()?;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if fsync {
            out.sync_if_written()?;
        }
    }
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reading thread panicked"))??;
    Ok(())
}
