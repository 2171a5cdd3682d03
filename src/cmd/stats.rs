//! `sess stats`: where the bytes of a log go.

use std::io::{IsTerminal, Write};
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::cli::{Global, IoArgs};
use crate::units;
use sess::event::LastLine;
use sess::input::Flow;
use sess::stats::{Accuracy, Stats, StatsReport};
use sess::store::report;

const ABOUT: &str = "Show where the bytes of a log go, per event type";

const LONG_ABOUT: &str = "Show where the bytes of a log go: for each top-level event type its count, \
bytes (with the newline), share of all bytes and largest line, then totals, and the dialect \
of the log (pi session file, pi --mode json old or new generation, DeepSeek Harness, op list) \
told from its header and type vocabulary. Packed rows are counted as lines of their own \
type; the number of logical events they hold, and the bytes 'sess filter' and 'sess pack' \
would write, follow the table. What 'sess pack' would write is found by packing as the log \
is read (rows, interned repeats, zstd frames at level 3), except that snapshot rows are \
estimated from the bytes that changed between frames rather than diffed and checked (a \
fraction of the cost; --exact builds them). Exact builds are exact for a log from a pipe, \
and a little above what pack writes for a file, which it reads twice. Each input gets its \
own section, with its own dialect, and several inputs end with their totals.\n\n\
Given folders, it reports on the whole store instead: every log under them (JSONL, plain or \
compressed; symbolic links are not followed), told apart by the layouts the profiles describe \
(Claude Code project folders and their subagents, Codex sessions/YYYY/MM/DD, Gemini CLI \
chats, pi session folders; any other log by its lines), with bytes by producer, the largest \
sessions (--top), the largest kinds, a histogram of bytes by age (last modified), and what \
filter, pack and compact (logs older than --older-than days) would write. Logs are read on \
--threads threads with memory bounded per thread; a log that cannot be read is listed, and \
the command then exits 1.";

const EXAMPLES: &str = "Examples:
  sess stats run.jsonl
  sess stats --json run.jsonl.zst | jq '.files[0].types[] | select(.share > 0.1) | .type'
  sess stats ~/.claude/projects ~/.codex/sessions
  sess stats --json --top 5 ~/.codex | jq '.sessions[] | [.session, .bytes]'";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub io: IoArgs,

    /// Print one JSON object instead of a table (schema sess-stats/1, or sess-store/1 for
    /// folders; docs/FORMAT.md).
    #[arg(long)]
    pub json: bool,

    /// With folders: how many sessions and kinds to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Build snapshot rows as pack does, diffed and checked, instead of estimating their
    /// size from the bytes that changed (slower; the estimate's rule is in docs/FORMAT.md).
    /// With folders too: every log's pack_bytes.
    #[arg(long)]
    pub exact: bool,

    /// With folders: what compact would take, logs older than DAYS.
    #[arg(long, value_name = "DAYS", default_value_t = 7.0, value_parser = units::parse_days)]
    pub older_than: f64,
}

impl Args {
    fn accuracy(&self) -> Accuracy {
        match self.exact {
            true => Accuracy::Exact,
            false => Accuracy::Estimate,
        }
    }
}

/// `sess stats DIR...`: the whole store.
fn run_store(args: Args, g: Global) -> Result<()> {
    let roots = args.io.files.clone();
    let found = sess::store::walk(&roots);
    let opts = report::Options {
        threads: args.io.threads as usize,
        top: args.top,
        older_than: Duration::from_secs_f64(args.older_than * 86_400.0),
        now: SystemTime::now(),
        accuracy: args.accuracy(),
    };
    let total: u64 = found.logs.iter().map(|l| l.size).sum();
    let bar = (!g.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} ({eta} left)")
        {
            b.set_style(style);
        }
        b
    });
    let report = report::report(&roots, &found, &opts, &|n| {
        if let Some(b) = &bar {
            b.inc(n);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut out = args.io.sink()?;
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(report.render(args.top).as_bytes())?;
    }
    out.finish()?;
    if !report.errors.is_empty() {
        anyhow::bail!(
            "{} logs or folders could not be read (listed above)",
            report.errors.len()
        );
    }
    Ok(())
}

pub fn run(args: Args, g: Global) -> Result<()> {
    if args.io.files.iter().any(|f| f.is_dir()) {
        return run_store(args, g);
    }
    let inputs = args.io.inputs();
    let mut files = Vec::new();
    for input in &inputs {
        let mut stats = Stats::new(&input.name(), input.path(), args.accuracy());
        // As `sess pack` tells a stream.
        if input.path().is_none() && !sess::input::stdin_is_file() {
            stats = stats.streamed();
        }
        if args.io.threads > 1 {
            stats = stats.pack_on_a_thread();
        }
        // Verbatim: stats counts a torn last line as what it is rather than dropping it.
        super::each_event(
            std::slice::from_ref(input),
            args.io.open_options(g),
            LastLine::Verbatim,
            |name, ev| {
                stats.add_event(ev).map_err(|e| e.at(name, ev.line))?;
                Ok(Flow::More)
            },
        )?;
        files.push(stats.report().map_err(|e| e.in_file(&input.name()))?);
    }
    let report = StatsReport::new(files);
    let mut out = args.io.sink()?;
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(report.render().as_bytes())?;
    }
    Ok(out.finish()?)
}
