//! `sess pack`: store runs of chunk deltas as packed rows, in checksummed zstd frames.

use std::io::{self, IsTerminal};
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use anyhow::Result;

use crate::cli::{Global, IoArgs, LayoutArg};
use crate::units;
use sess::error::Place;
use sess::event::LastLine;
use sess::frames::writer::{self, DEFAULT_FRAME_SIZE, FrameWriter};
use sess::input::{Flow, Input, OpenOptions};
use sess::intern;
use sess::io::Sink;
use sess::io::lend::lend;
use sess::io::read::FirstThen;
use sess::io::signals::{self, Interrupted};
use sess::pack::{self, Ended, Events, Msg, Out, Packer};

const ABOUT: &str = "Pack a log: chunk rows (lossless, DSH-compatible) in checksummed zstd frames";

const LONG_ABOUT: &str = "Pack runs of three or more consecutive DeepSeek Harness assistant/chunk \
deltas (text, reasoning, tool-call arguments) into text-chunks, reasoning-chunks and \
tool-call-chunks rows, the layout DSH itself writes and reads; pack runs of snapshot frames \
(pi message_update carrying the whole message, tool_execution_update carrying the whole \
output so far) into snapshot-deltas rows: the first event plus the op batch to each next \
one. Write any JSON string, array or object of --intern-min bytes or more that occurred \
earlier, a frame or more back, as a reference to it (an interned line; a history that grows \
by one message a step as a reference to the last one plus the new message; with --plain only \
when --intern-min is given, so that plain output stays DeepSeek Harness's). Write the \
result as independent zstd frames, each holding whole lines and a content checksum, \
followed by an index of the frames (crc32 of each) in a zstd skippable frame; a log that \
fits in one frame is that frame alone, at the better of --level and level 9, and holds \
the input as it was when that is smaller. Stock 'zstd -dc' reads the output as plain \
packed JSONL. --plain writes packed JSONL instead.\n\n\
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

// The --frame-size default is written "4M" for the help text.
const _: () = assert!(DEFAULT_FRAME_SIZE == 4 << 20);

// The --intern-window default is written "1G".
const _: () = assert!(intern::DEFAULT_WINDOW == 1 << 30);

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub io: IoArgs,

    /// Write plain packed JSONL instead of zstd frames.
    #[arg(long)]
    pub plain: bool,

    /// zstd compression level.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub level: i32,

    /// Cut a frame once this many uncompressed bytes are pending (at a line end; K, M
    /// suffixes, 1024-based). At most 64M: a reader holds a frame's lines until its
    /// checksum has passed, up to that much (only a single line longer than that makes a
    /// larger frame).
    #[arg(long, value_name = "BYTES", default_value = "4M",
          value_parser = units::bytes_in(1, sess::frames::reader::HOLD_LIMIT as u64))]
    pub frame_size: u64,

    /// The frame layout: sess (frames and an index) or dsh (DeepSeek Harness's: the header
    /// line alone first, one frame per batch, no index).
    #[arg(long, value_name = "LAYOUT", default_value = "sess")]
    pub layout: LayoutArg,

    /// Streaming: flush a frame this long after its first pending line (milliseconds, or
    /// with ms, s or m).
    #[arg(long, value_name = "MS", default_value = "200ms", value_parser = units::parse_millis)]
    pub window: u64,

    /// Write a JSON string, array or object of at least this many bytes (as written) that
    /// occurred earlier in the file as a reference to its earlier copy, across frames
    /// (zstd sees repeats only within a frame). 0 turns it off. Default: 256 in frames;
    /// none with --plain (DeepSeek Harness's packed JSONL) or --layout dsh.
    #[arg(long, value_name = "BYTES", value_parser = units::bytes_in(0, u32::MAX as u64))]
    pub intern_min: Option<u64>,

    /// The most bytes of distinct values remembered for --intern-min (then it starts over;
    /// bytes a reference stands for and values no longer needed do not count, and a value
    /// smaller than 256 bytes counts as 256, which bounds the tables).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = units::parse_bytes)]
    pub intern_window: u64,

    /// Sync the output file after every frame.
    #[arg(long)]
    pub fsync: bool,

    /// Print how many events were packed into how many rows on stderr.
    #[arg(long)]
    pub stats: bool,

    /// With --stats, print them as one JSON object (schema sess-pack-stats/1,
    /// docs/FORMAT.md).
    #[arg(long, requires = "stats")]
    pub json: bool,
}

pub fn run(args: Args, g: Global) -> Result<()> {
    // Its threads pass long lines around: what they free must not stay theirs.
    sess::io::memory::return_large_frees();
    let inputs = args.io.inputs();
    let streaming = inputs.contains(&Input::Stdin)
        && !io::stdin().is_terminal()
        && !sess::input::stdin_is_file();
    let paths = Input::paths(&inputs);
    // A stream's frames must survive a crash as they are written, so its output file is
    // written in place; anything else goes through a temporary file and a rename.
    let sink = if streaming {
        let existing = crate::cli::existing(args.io.force);
        Sink::streaming(args.io.output.as_deref(), &paths, existing, args.fsync)?
    } else {
        args.io.sink_here()?
    };
    // DeepSeek Harness reads its own layout, which holds no interned lines.
    let interning = match (args.layout, args.plain, args.intern_min) {
        (LayoutArg::Dsh, ..) => pack::Interning::NONE,
        (_, true, None) => pack::Interning::NONE,
        (_, _, min) => pack::Interning {
            min: min.map_or(intern::DEFAULT_MIN, |m| m as usize),
            window: args.intern_window,
        },
    };
    let mut out = if args.plain {
        Out::plain(sink, args.frame_size as usize, interning)
    } else {
        sink.refuse_terminal("compressed output")?;
        let opts = writer::FrameOptions {
            level: args.level,
            frame_size: args.frame_size as usize,
            layout: args.layout.into(),
            first_seq: sess::event::line_seq,
            // A stream's frames are written as it goes, each at once: one thread. Frames
            // under 64 KiB cost more to hand over than they take to compress.
            compress_thread: args.io.threads > 1 && !streaming && args.frame_size >= 64 * 1024,
            frames_at_once: streaming,
        };
        Out::frames(FrameWriter::new(sink, opts)?, interning)
    };
    let mut packer = Packer::default();
    let (out_interned, written) = if streaming {
        pack_stream(&inputs, args.io.open_options(g), &args, &mut packer, out)?
    } else {
        pack::pack_files::<_, anyhow::Error>(
            &inputs,
            args.io.open_options(g),
            args.frame_size as usize,
            args.io.threads as usize,
            &mut packer,
            &mut out,
        )?;
        let interned = out.interned();
        let sink = out.finish()?;
        let written = sink.written();
        sink.finish()?;
        (interned, written)
    };
    let c = packer.counts();
    let pack::Interned {
        refs,
        bytes,
        index_bytes,
    } = out_interned;
    if args.json {
        let report = serde_json::json!({
            "schema": "sess-pack-stats/1",
            "events": c.events,
            "bytes_in": c.bytes,
            "rows": c.rows,
            "packed_events": c.packed_events,
            "references": refs,
            "referenced_bytes": bytes,
            "index_bytes": index_bytes,
            "bytes_out": written,
        });
        sess::io::tell!("{report}");
    } else if args.stats {
        sess::io::tell!(
            "sess pack: {} events in, {} of them packed into {} rows; \
             {refs} repeated values ({bytes} bytes) written as references",
            c.events,
            c.packed_events,
            c.rows
        );
    }
    Ok(())
}

/// The reading side of [`pack_stream`]: sends the events of `inputs` in batches, each as
/// soon as it is full or the input is about to be read again (which may wait for a quiet
/// producer), a long event lent alone ([`long_event`]), then `Done`. Returns how reading
/// ended.
fn read_stream(
    inputs: &[Input],
    opts: OpenOptions,
    pending: &Arc<Mutex<Events>>,
    tx: &mpsc::SyncSender<Msg>,
) -> Result<()> {
    let mut read = Ok(());
    for (k, input) in inputs.iter().enumerate() {
        hand_over(pending, tx);
        let _ = tx.send(Msg::Input(input.path().map(Path::to_path_buf)));
        let mut src = match sess::input::open(input, opts) {
            Ok(src) => src,
            Err(e) => {
                read = Err(e.into());
                break;
            }
        };
        let (before, to) = (Arc::clone(pending), tx.clone());
        let first = Box::new(move || {
            hand_over(&before, &to);
        });
        src.reader = Box::new(FirstThen::new(src.reader, first));
        let events = sess::event::each_event_in(
            src,
            LastLine::Verbatim.for_input(k, inputs.len()),
            &mut (),
            &mut |_, _, _| Ok::<_, anyhow::Error>(false),
            &mut |_, name, ev| {
                if ev.bytes.len() >= sess::pack::LONG_EVENT {
                    let place = pack::line_at(name, ev.line);
                    return Ok(long_event(ev.bytes, ev.newline, place, pending, tx));
                }
                let full = {
                    let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
                    (p.push(ev.bytes, ev.newline)).map_err(|e| e.at(name, ev.line))?;
                    p.is_full()
                };
                Ok(match !full || hand_over(pending, tx) {
                    true => Flow::More,
                    false => Flow::Stop,
                })
            },
        );
        if let Err(e) = events {
            read = Err(e);
            break;
        }
    }
    hand_over(pending, tx);
    let _ = tx.send(Msg::Done);
    read
}

/// Lends a long event alone, after the events before it, and waits until it is packed:
/// copied and queued, a few long lines were held several times over, where issue 12's
/// bound is twice the longest line.
fn long_event(
    line: &[u8],
    newline: bool,
    place: Place,
    pending: &Mutex<Events>,
    tx: &mpsc::SyncSender<Msg>,
) -> Flow {
    let lent = |line| {
        let long = pack::Long::new(line, newline, None, place);
        tx.send(Msg::Long(long)).is_ok()
    };
    match hand_over(pending, tx) && lend(line, lent) {
        true => Flow::More,
        false => Flow::Stop,
    }
}

/// Hands over the events gathered, if any; false when the packing side is gone (it failed,
/// and reports why). The batch is sent while it is held, so that batches (from the reading
/// thread, or from a signal's handler) arrive in the order their events were read.
fn hand_over(pending: &Mutex<Events>, tx: &mpsc::SyncSender<Msg>) -> bool {
    let mut gathered = pending.lock().unwrap_or_else(|e| e.into_inner());
    let batch = std::mem::take(&mut *gathered);
    batch.is_empty() || tx.send(Msg::Events(batch)).is_ok()
}

/// Packs stdin as it arrives. The input is read on a thread of its own, so that a window
/// can expire while the input is quiet. When the input fails (a bad row), or a signal
/// comes, everything read before is still written out, with the index, and the output
/// finished; then the failure is reported.
fn pack_stream(
    inputs: &[Input],
    opts: OpenOptions,
    args: &Args,
    packer: &mut Packer,
    mut out: Out<Sink>,
) -> Result<(pack::Interned, u64)> {
    // Batches of up to 256 KiB: a few in flight bound the memory.
    let (tx, rx) = mpsc::sync_channel::<Msg>(8);
    let pending = Arc::new(Mutex::new(Events::default()));
    let (on_signal, gathered) = (tx.clone(), Arc::clone(&pending));
    signals::on_interrupt(move |sig| {
        // The lines read before the signal go first, whatever batch they were in.
        hand_over(&gathered, &on_signal);
        let _ = on_signal.send(Msg::Interrupt(sig));
    });
    let inputs = inputs.to_vec();
    let reader = std::thread::spawn(move || read_stream(&inputs, opts, &pending, &tx));
    let window = Duration::from_millis(args.window);
    let packed = pack::stream(&rx, window, packer, &mut out);
    // What is written out is finished, and counted.
    let finish = |out: Out<Sink>| -> Result<u64> {
        let sink = out.finish()?;
        let written = sink.written();
        sink.finish()?;
        Ok(written)
    };
    signals::clear_interrupt();
    let (events, ended) = match packed {
        Ok(ended) => ended,
        // Packing failed (memory ran out for a lent line): what was packed before it is
        // written out, with the index, as when reading fails.
        Err(e) => {
            let _ = packer.finish(out.writer()).map(|()| finish(out));
            return Err(e.into());
        }
    };
    if let Ended::Signal(sig) = ended {
        packer.finish(out.writer())?;
        finish(out)?;
        return Err(Interrupted(sig).into());
    }
    let read = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reading thread panicked"))?;
    // Every event read is written, even when the input then fails; but an input that fails
    // before its first event leaves an output nothing has reached as it was.
    let interned = out.interned();
    let mut written = 0;
    if read.is_ok() || events > 0 || out.get_ref().touched() {
        packer.finish(out.writer())?;
        written = finish(out)?;
    }
    read?;
    Ok((interned, written))
}
