//! `sess compact`: replace cold logs in a store by their packed form, and put them back.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::cli::Global;
use crate::units;
use sess::stats::human_bytes;
use sess::store::compact::{self, Action, Form, Options, Step, Why};

const ABOUT: &str =
    "Replace cold logs in folders by their packed form, losslessly (dry run unless --apply)";

const LONG_ABOUT: &str = "Replace the cold logs under each folder by their packed form. A log is \
cold when it has not been modified for --older-than days and no process holds it open for \
writing (read from /proc where there is one). A log compressed already (by its name, or gzip \
or zstd bytes under any name) is left alone, and so is one whose packed form would not unpack \
to its bytes (a log of packed rows: sess unpack expands them). Without --apply nothing is \
written: each log is packed in memory and the command prints what it would do and save.\n\n\
With --apply, each log is packed to a temporary file beside it, synced, unpacked again and \
compared with the log byte for byte, renamed into place (never over a file), and only then is \
the log removed, after checking once more that it did not change and that nobody opened it \
for writing. Each compaction is appended to the folder's journal, .sess-compact.jsonl, and \
synced before the log is removed. An interrupted run (a crash, kill -9, a full disk) leaves \
every log either as it was or compacted and verified; running the command again finishes the \
job and removes the temporary files it left.\n\n\
The default form is FILE.jsonl.sess.zst, full sess packing, which sess reads and stock \
'zstd -dc' turns into packed JSONL. --compat writes FILE.jsonl.zst, plain zstd frames of the \
log's own lines, which any zstd reader gives back as the log: Codex reads its rollouts in this \
form. Claude Code, Gemini CLI and pi read neither: a compacted session is gone from their \
lists until --undo puts it back.\n\n\
--undo restores every log the journal says is compacted, byte for byte, with its modification \
time: unpacked beside its packed form, checked against the size and crc32 the journal holds, \
renamed into place, and only then is the packed form removed.";

const EXAMPLES: &str = "Examples:
  sess compact ~/.claude/projects
  sess compact --apply --older-than 30 ~/.claude/projects
  sess compact --apply --compat ~/.codex/sessions
  sess compact --undo ~/.claude/projects";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// The folders whose logs to compact (each gets its own journal).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Do it: replace the logs (without it, only say what would be done).
    #[arg(long, conflicts_with = "undo")]
    pub apply: bool,

    /// Restore every log the journal says was compacted.
    #[arg(long)]
    pub undo: bool,

    /// Write plain zstd frames of the log's lines (FILE.jsonl.zst), which Codex and any
    /// zstd reader read, instead of full sess packing (FILE.jsonl.sess.zst).
    #[arg(long, conflicts_with = "undo")]
    pub compat: bool,

    /// Leave logs modified in the last DAYS days alone (fractions allowed; 0 takes every log
    /// that no process holds open for writing).
    #[arg(long, value_name = "DAYS", default_value_t = 7.0,
          value_parser = units::parse_days)]
    pub older_than: f64,

    /// zstd compression level.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub level: i32,

    /// Threads: 2 (the default on two cores or more) compresses frames on a second one.
    #[arg(long, value_name = "N", default_value_t = crate::cli::default_threads(),
          hide_default_value = true, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,

    /// Also list the logs left alone because they are recent, compressed already or would
    /// not get smaller.
    #[arg(short, long)]
    pub verbose: bool,

    /// Print one JSON object (schema sess-compact-report/1, docs/FORMAT.md) instead of a
    /// line per log and the summary.
    #[arg(long)]
    pub json: bool,
}

/// The totals a run ends with.
#[derive(Debug, Default, Serialize)]
struct Totals {
    logs: u64,
    /// Logs compacted (or that would be), their bytes and their packed bytes.
    compacted: u64,
    bytes: u64,
    packed_bytes: u64,
    restored: u64,
    failed: u64,
    /// Logs left alone, by why.
    skipped: std::collections::BTreeMap<String, u64>,
}

impl Totals {
    fn add(&mut self, s: &Step) {
        self.logs += 1;
        match s.action {
            Action::Compacted | Action::WouldCompact | Action::Finished => {
                self.compacted += 1;
                self.bytes += s.bytes;
                self.packed_bytes += s.packed_bytes.unwrap_or(0);
            }
            Action::Restored => self.restored += 1,
            Action::Failed => self.failed += 1,
            Action::Skipped => {
                let why = s.why.map_or("other".into(), why_name);
                *self.skipped.entry(why).or_default() += 1;
            }
        }
    }
}

fn why_name(w: Why) -> String {
    serde_json::to_value(w)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn run(args: Args, g: Global) -> Result<()> {
    for d in &args.dirs {
        if !d.is_dir() {
            bail!(
                "{}: not a folder (sess compact works on folders of logs)",
                d.display()
            );
        }
    }
    let opts = Options {
        form: if args.compat {
            Form::Compat
        } else {
            Form::Sess
        },
        older_than: Duration::from_secs_f64(args.older_than * 86_400.0),
        level: args.level,
        apply: args.apply,
        compress_thread: args.threads > 1,
        now: SystemTime::now(),
    };
    let mut totals = Totals::default();
    let mut steps = Vec::new();
    let mut out = sess::io::Sink::stdout();
    let progress = !g.quiet && !args.json && std::io::stderr().is_terminal();
    // A folder given twice (by any path to it) is worked on once: the second pass found
    // the first's packed forms and counted them again as left alone.
    let mut seen = Vec::new();
    for dir in &args.dirs {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if seen.contains(&real) {
            continue;
        }
        seen.push(real);
        let mut each = |s: &Step| -> std::io::Result<()> {
            totals.add(s);
            if args.json {
                steps.push(s.clone());
            } else if shown(s, args.verbose) {
                writeln!(out, "{}", line(s))?;
            }
            Ok(())
        };
        if args.undo {
            let had = compact::undo(dir, &mut each);
            if let Ok(false) = had {
                sess::io::tell!(
                    "sess: warning: {}: no journal ({}): nothing was compacted with this folder \
                     given to compact --apply",
                    dir.display(),
                    sess::store::journal::NAME
                );
            }
            had.map(|_| ())
        } else {
            let found = sess::store::walk(std::slice::from_ref(dir));
            for e in &found.errors {
                sess::io::tell!("sess: warning: {e}");
            }
            let bar =
                progress.then(|| crate::cli::store_bar(found.logs.iter().map(|l| l.size).sum()));
            let mut done = 0;
            let result = compact::compact(dir, &found.logs, &opts, |s| {
                if let Some(b) = &bar {
                    b.inc(s.bytes);
                    done += 1;
                    b.set_message(format!("{done}/{} logs", found.logs.len()));
                }
                each(s)
            });
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            result
        }
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    }
    if args.json {
        let report = serde_json::json!({
            "schema": "sess-compact-report/1",
            "apply": args.apply,
            "undo": args.undo,
            "form": opts.form,
            "logs": steps,
            "total": totals,
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "{}", summary(&totals, &args))?;
    }
    out.finish()?;
    if totals.failed > 0 {
        bail!(
            "{} logs could not be handled (see above); each is as it was",
            totals.failed
        );
    }
    Ok(())
}

/// Whether a step gets a line of its own: always, but for the usual reasons to skip.
fn shown(s: &Step, verbose: bool) -> bool {
    let usual = matches!(s.why, Some(Why::Recent | Why::Compressed | Why::NoGain));
    verbose || s.action != Action::Skipped || !usual
}

fn line(s: &Step) -> String {
    use sess::error::about;
    let path = s.path.display();
    let sizes = || {
        let packed = s.packed_bytes.unwrap_or(0);
        format!("{} -> {}", human_bytes(s.bytes), human_bytes(packed))
    };
    match s.action {
        Action::Compacted => format!("compacted      {path}  {}", sizes()),
        Action::WouldCompact => format!("would compact  {path}  {}", sizes()),
        Action::Finished => format!("finished       {path}  {} (an interrupted run's)", sizes()),
        Action::Restored => format!("restored       {path}  {}", human_bytes(s.bytes)),
        Action::Skipped => format!("left alone     {}", about(&path.to_string(), &s.message)),
        Action::Failed => format!("failed         {}", about(&path.to_string(), &s.message)),
    }
}

fn summary(t: &Totals, args: &Args) -> String {
    if args.undo {
        return format!(
            "sess compact: {} logs restored, {} failed",
            t.restored, t.failed
        );
    }
    let verb = if args.apply {
        "compacted"
    } else {
        "would be compacted"
    };
    let saved = t.bytes.saturating_sub(t.packed_bytes);
    let mut s = format!(
        "sess compact: {} of {} logs {verb}: {} -> {} ({} saved)",
        t.compacted,
        t.logs,
        human_bytes(t.bytes),
        human_bytes(t.packed_bytes),
        human_bytes(saved)
    );
    if !t.skipped.is_empty() {
        let parts: Vec<String> = t
            .skipped
            .iter()
            .map(|(w, n)| format!("{n} {}", w.replace('_', " ")))
            .collect();
        s += &format!("; left alone: {}", parts.join(", "));
    }
    if t.failed > 0 {
        s += &format!("; {} failed", t.failed);
    }
    if !args.apply {
        s += "\n(a dry run: nothing was written; --apply does it)";
    }
    s
}
