//! `sess filter`: keep the facts, drop live frames, project boundaries.

use anyhow::Result;

use crate::cli::{ClassArg, Global, IoArgs};
use crate::units;
use sess::event::LastLine;
use sess::filter::{Filter, FilterOptions};
use sess::input::Flow;
use sess::profile::{Choice, Class, Overrides};
use sess::snapshots;

const ABOUT: &str = "Drop live frames, keep the facts, project boundary events";

const LONG_ABOUT: &str = "Classify every event as a fact, a frame, a mirror or a boundary, and write \
the facts.\n\n\
Facts (every type the profile does not name) are written byte for byte. Frames (pi \
message_update, tool_execution_update) are live snapshots or deltas whose successor \
(message_end, tool_execution_end of the same toolCallId) carries the same value; they are \
dropped. A frame run that never gets its successor (a crash, a torn log, an abort) is the \
only copy of its output, so it is kept as facts, in its original order, as soon as the \
input proves no successor will come (the next message_start, agent_end, or the end of \
input): the last frame of a run of snapshots, every frame of a run of deltas. Mirrors (DSH \
agent/stream-chunk) are dropped. Boundaries are projected so they stop repeating what they \
close over: turn_end keeps {type, messageRole, toolResultCount} and agent_end keeps \
{type, willRetry, messageCount}, with their other top-level fields.\n\n\
With --include-live-events, frames and mirrors are kept, each bounded to --max-frame-bytes: \
a larger one keeps its type, its identifiers (clipped), and the tail of its text after \
'[live output truncated]'. Facts and successors are never bounded, and a run that never gets \
its successor is written whole as well, where it is without the option.\n\n\
Profiles: auto (the default; chosen per input from its header line, type vocabulary or file \
name), none, a profile's name ('sess profiles' lists them), or a profile file (see \
docs/FORMAT.md); --frame, --mirror, --boundary and --fact adjust whichever profile is \
chosen, and none while auto has chosen none.";

const EXAMPLES: &str = "Examples:
  sess filter run.jsonl > run.facts.jsonl
  sess filter --include-live-events --max-frame-bytes 65536 run.jsonl
  sess filter --stats --only frame run.jsonl | jq -c .type | sort | uniq -c
  sess filter --profile my-profile.json --frame progress=done run.jsonl";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub io: IoArgs,

    /// The producer's profile: auto (detected per input), none, one of those 'sess
    /// profiles' lists, or the path of a profile file.
    #[arg(long, value_name = "PROFILE", default_value = "auto", long_help = profile_help(),
          value_parser = profile_arg)]
    pub profile: String,

    /// Treat TYPE as a frame whose successor is SUCCESSOR (repeatable). Such frames are
    /// deltas: an orphaned run is kept whole.
    #[arg(long, value_name = "TYPE=SUCCESSOR", value_parser = frame_pair)]
    pub frame: Vec<String>,

    /// Treat TYPE as a mirror (repeatable).
    #[arg(long, value_name = "TYPE")]
    pub mirror: Vec<String>,

    /// Treat TYPE as a boundary (repeatable); unknown boundaries keep only scalar fields.
    #[arg(long, value_name = "TYPE")]
    pub boundary: Vec<String>,

    /// Treat TYPE as a fact, whatever the profile says (repeatable).
    #[arg(long, value_name = "TYPE")]
    pub fact: Vec<String>,

    /// Keep frames and mirrors too, each bounded to --max-frame-bytes.
    #[arg(long)]
    pub include_live_events: bool,

    /// Write boundaries whole instead of projecting them.
    #[arg(long)]
    pub keep_boundaries: bool,

    /// The most serialized bytes a kept frame may take (at least 1024).
    #[arg(long, value_name = "BYTES", default_value = "256K",
          value_parser = units::bytes_in(1024, u64::MAX))]
    pub max_frame_bytes: u64,

    /// Write only the input events of one class, untouched (for looking into a log).
    #[arg(long, value_name = "CLASS")]
    pub only: Option<ClassArg>,

    /// Print events and bytes in and out per class on stderr.
    #[arg(long)]
    pub stats: bool,

    /// With --stats, print them as one JSON object (schema sess-filter-stats/1,
    /// docs/FORMAT.md).
    #[arg(long, requires = "stats")]
    pub json: bool,
}

/// A name that is no profile's (nor a file's) is a usage error (exit 2). A file is not
/// read here (it may be a pipe, read once): it is read, and its faults reported, as an
/// input (exit 1).
fn profile_arg(s: &str) -> Result<String, String> {
    if Choice::names_a_file(s) {
        return Ok(s.to_string());
    }
    Choice::parse(s)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

/// `--frame` is checked by clap, so a malformed one is a usage error (exit 2).
fn frame_pair(s: &str) -> Result<String, String> {
    match s.split_once('=') {
        Some((t, succ)) if !t.is_empty() && !succ.is_empty() => Ok(s.to_string()),
        _ => Err(format!("'{s}' is not TYPE=SUCCESSOR")),
    }
}

fn profile_help() -> String {
    format!(
        "The producer's profile: auto (the default: detected per input from its first telling \
         line), none (every line a fact), a profile's name ({}; 'sess profiles' describes \
         them), or the path of a profile file (docs/FORMAT.md, \"Profile files\").",
        sess::profile::registry::names().join(", ")
    )
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let overrides = Overrides {
        frames: args.frame,
        mirrors: args.mirror,
        boundaries: args.boundary,
        facts: args.fact,
    };
    let opts = FilterOptions {
        include_live: args.include_live_events,
        keep_boundaries: args.keep_boundaries,
        max_frame_bytes: usize::try_from(args.max_frame_bytes).unwrap_or(usize::MAX),
        only: args.only.map(Class::from),
        // Rows taken whole leave their events uncounted: only when no counts are printed.
        lazy_rows: !args.stats,
        ..FilterOptions::default()
    };
    // The flags are checked before any output is created.
    let mut filter = Filter::new(Choice::parse(&args.profile)?, overrides, opts)?;
    let inputs = args.io.inputs();
    let mut sink = args.io.sink()?;
    let mut used: Vec<(String, String)> = Vec::new();
    let mut read = || -> Result<()> {
        for input in &inputs {
            filter.start_input(input.path());
            super::each_event_or_row(
                std::slice::from_ref(input),
                args.io.open_options(g),
                LastLine::Records,
                &mut (&mut filter, &mut sink),
                |(filter, sink), name, line| {
                    Ok(snapshots::is_row(line.bytes)
                        && filter.row(line.bytes, (name, line.number), sink)?)
                },
                |(filter, sink), _, ev| {
                    filter.event(ev.bytes, ev.newline, sink)?;
                    Ok(Flow::More)
                },
            )?;
            filter.end_input(&mut sink)?;
            let profile = filter
                .profile()
                .map_or("none (undecided)", |p| p.name.as_str());
            used.push((input.name(), profile.to_string()));
        }
        Ok(())
    };
    let read = read();
    let done = super::settled(&mut sink, read).and_then(|()| Ok(sink.finish()?));
    if args.json {
        // What was read before a failure is counted, and the report stays last.
        let done = super::told_before_report(done);
        let mut report = filter.counts_json();
        report["schema"] = "sess-filter-stats/1".into();
        report["inputs"] = used
            .iter()
            .map(|(file, profile)| serde_json::json!({"file": file, "profile": profile}))
            .collect();
        sess::io::tell!("{report}");
        return done;
    }
    done?;
    if args.stats {
        sess::io::tell!(
            "sess filter: profile {}\n{}",
            profiles_used(&used),
            filter.render_counts().trim_end_matches('\n')
        );
    }
    Ok(())
}

/// `pi`, or `pi (a.jsonl), dsh (b.jsonl)` when the inputs differ.
fn profiles_used(used: &[(String, String)]) -> String {
    match used {
        [(_, first), rest @ ..] if rest.iter().all(|(_, p)| p == first) => first.clone(),
        _ => used
            .iter()
            .map(|(input, p)| format!("{p} ({input})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}
