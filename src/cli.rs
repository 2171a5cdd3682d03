//! The command line: global options, the arguments commands share, and the subcommand list.
//! Each subcommand's own arguments live next to its code in `cmd/`. The library knows
//! nothing of clap: the enums a flag chooses from are mapped to the library's here.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use sess::frames::{Layout, Recovery};
use sess::input::{Input, OpenOptions};
use sess::io::sink::Existing;
use sess::profile::Class;
use sess::syntax::LineCheck;

use crate::cmd;

#[derive(Debug, Parser)]
#[command(
    name = "sess",
    version,
    about = "Make agent session logs small, safe and easy to read",
    long_about = "sess reads the JSONL session logs that AI coding agents (Claude Code, Codex, \
Gemini CLI, pi, DeepSeek Harness) write: plain, zstd-compressed or packed. Every command reads files or stdin ('-' or no file; 'sess repair', which seeks, \
takes stdin only when it is a file) and writes JSONL to stdout unless -o FILE is given; output files are written atomically \
(but for 'sess pack' of a stream, which writes its file in place, frame by frame, so that a \
crash keeps every frame written).\n\n\
Exit status: 0 on success, 1 on an error (bad input, I/O), 2 on a usage error.",
    after_help = "Examples:
  sess stats ~/.claude/projects/*/*.jsonl
  sess filter run.jsonl | jq -c 'select(.type == \"assistant\")'
  sess pack run.jsonl -o run.jsonl.zst

Run 'sess COMMAND --help' for a command's options and examples."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Clone, Copy, Args)]
pub struct Global {
    /// Never draw a progress bar (one is drawn on stderr only when it is a terminal).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// What a command that reads logs and writes events takes: its inputs, its output and how
/// damaged compressed input is read. One struct, flattened into each such command.
#[derive(Debug, Args)]
pub struct IoArgs {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,

    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace FILE if it exists (without -f an existing file is refused, as zstd does).
    #[arg(short, long, requires = "output")]
    pub force: bool,

    #[command(flatten)]
    pub damage: Damage,

    /// Check every line strictly (RFC 8259, UTF-8) and stop at the first that is not one
    /// JSON value. Without it, lines whose brackets do not close where they end are passed
    /// through as read, and counted in one warning per input.
    #[arg(long)]
    pub strict: bool,

    /// Threads to use (default: every core; 1 keeps all on one). With two or more, a zstd
    /// input is decompressed on a thread of its own, ahead of the rest, and output is
    /// written on another; unpack, and cat with nothing to select, expand packed rows of
    /// files on N helpers (at most one per core); pack reads files on one thread, packs on another and compresses frames on
    /// a third (its first pass reads on one and surveys on another); stats of folders reads
    /// that many logs at once. The output is the same bytes.
    #[arg(long, value_name = "N", default_value_t = all_cores(),
          hide_default_value = true, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,
}

impl IoArgs {
    pub fn inputs(&self) -> Vec<Input> {
        Input::list(&self.files)
    }

    pub fn open_options(&self, g: Global) -> OpenOptions {
        OpenOptions {
            check: if self.strict {
                LineCheck::Strict
            } else {
                LineCheck::Warn
            },
            read_ahead: self.threads > 1,
            ..self.damage.open_options(g)
        }
    }

    /// The output, refused when it is one of the inputs (or exists, without --force);
    /// written on a thread of its own when there are threads to spare.
    pub fn sink(&self) -> sess::error::Result<sess::io::Sink> {
        let sink = self.sink_here()?;
        match self.threads > 1 {
            true => sink.behind(),
            false => Ok(sink),
        }
    }

    /// [`IoArgs::sink`] written on the calling thread, for output much smaller than the
    /// input (`pack`): a write there fails as it is made.
    pub fn sink_here(&self) -> sess::error::Result<sess::io::Sink> {
        let inputs = Input::paths(&self.inputs());
        sess::io::Sink::open(self.output.as_deref(), &inputs, existing(self.force))
    }
}

/// What `-f` (`--force`) says of an output file that exists.
pub fn existing(force: bool) -> Existing {
    if force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
}

/// The inputs of a command that reads several and writes no events.
#[derive(Debug, Args)]
pub struct Inputs {
    /// Input files ('-' or none for stdin).
    pub files: Vec<PathBuf>,
}

impl Inputs {
    pub fn list(&self) -> Vec<Input> {
        Input::list(&self.files)
    }
}

/// Where a command's output goes.
#[derive(Debug, Args)]
pub struct Output {
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace FILE if it exists (without -f an existing file is refused, as zstd does).
    #[arg(short, long, requires = "output")]
    pub force: bool,
}

impl Output {
    /// The output, refused when it is one of `inputs` (or exists, without --force).
    pub fn sink(&self, inputs: &[PathBuf]) -> sess::error::Result<sess::io::Sink> {
        sess::io::Sink::open(self.output.as_deref(), inputs, existing(self.force))
    }
}

/// How a command that reads compressed input treats damage.
#[derive(Debug, Clone, Copy, Args)]
pub struct Damage {
    /// What to do with damaged zstd input: tolerate-tail keeps every complete frame and the
    /// complete lines of a torn final frame; absolute fails on any damage; point-in-time
    /// stops at the first damage; skip-corrupt skips damaged frames.
    #[arg(long, value_name = "MODE", default_value = "tolerate-tail")]
    pub recovery: RecoveryMode,
}

impl Damage {
    /// How a command that parses every line it uses opens its inputs (`recover`): a bad line
    /// is its error to report, so lines are not checked on the way.
    pub fn open_options(&self, g: Global) -> OpenOptions {
        OpenOptions {
            quiet: g.quiet,
            recovery: self.recovery.into(),
            collect_warnings: false,
            check: LineCheck::Off,
            read_ahead: all_cores() > 1,
        }
    }
}

/// How inputs are opened by a command that offers no `--recovery` (`diff`, `verify`), each
/// of which parses every line itself.
pub fn default_open(g: Global) -> OpenOptions {
    OpenOptions {
        quiet: g.quiet,
        recovery: Recovery::default(),
        collect_warnings: false,
        check: LineCheck::Off,
        read_ahead: all_cores() > 1,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecoveryMode {
    TolerateTail,
    Absolute,
    PointInTime,
    SkipCorrupt,
}

impl From<RecoveryMode> for Recovery {
    fn from(m: RecoveryMode) -> Recovery {
        match m {
            RecoveryMode::TolerateTail => Recovery::TolerateTail,
            RecoveryMode::Absolute => Recovery::Absolute,
            RecoveryMode::PointInTime => Recovery::PointInTime,
            RecoveryMode::SkipCorrupt => Recovery::SkipCorrupt,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// Frames cut by size (and by the window when streaming), then the index.
    Sess,
    /// DeepSeek Harness's layout: the header line alone in the first frame, one frame per
    /// batch, no index.
    Dsh,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Layout {
        match l {
            LayoutArg::Sess => Layout::Sess,
            LayoutArg::Dsh => Layout::Dsh,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClassArg {
    Fact,
    Frame,
    Mirror,
    Boundary,
}

impl From<ClassArg> for Class {
    fn from(c: ClassArg) -> Class {
        match c {
            ClassArg::Fact => Class::Fact,
            ClassArg::Frame => Class::Frame,
            ClassArg::Mirror => Class::Mirror,
            ClassArg::Boundary => Class::Boundary,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Cat(cmd::cat::Args),
    Stats(cmd::stats::Args),
    Filter(cmd::filter::Args),
    Pack(cmd::pack::Args),
    Unpack(cmd::unpack::Args),
    Repair(cmd::repair::Args),
    Recover(cmd::recover::Args),
    Diff(cmd::diff::Args),
    Verify(cmd::verify::Args),
    Compact(cmd::compact::Args),
    Profiles(cmd::profiles::Args),
    Completions(cmd::completions::Args),
    /// Write the man pages into a folder (for packagers and the man-page test).
    #[command(hide = true)]
    GenerateMan(cmd::completions::ManArgs),
}

/// The clap command tree, for man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Renders one man page per command: `sess.1` and `sess-NAME.1`. A command's synopsis reads
/// `sess NAME` as it is typed, its options include those every command takes (`--quiet`),
/// and its examples are under EXAMPLES.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    // No `sess help` page: `sess COMMAND --help` and these pages say the same. Building
    // the tree gives each command the global options.
    let mut root = command().disable_help_subcommand(true);
    root.build();
    let mut pages = vec![("sess.1".to_string(), render_man(root.clone()))];
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("sess-{}", sub.get_name());
        let sub = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("sess {}", sub.get_name()));
        pages.push((format!("{name}.1"), render_man(sub)));
    }
    pages
}

/// One of clap_mangen's section renderers.
type Section = fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>;

fn render_man(cmd: clap::Command) -> Vec<u8> {
    let examples = cmd.get_after_help().map(|h| h.to_string());
    // The examples get a section of their own below.
    let man = clap_mangen::Man::new(cmd.clone().after_help(None::<&str>));
    let mut out = Vec::new();
    let sections: [Section; 5] = [
        clap_mangen::Man::render_title,
        clap_mangen::Man::render_name_section,
        clap_mangen::Man::render_synopsis_section,
        clap_mangen::Man::render_description_section,
        clap_mangen::Man::render_options_section,
    ];
    for section in sections {
        section(&man, &mut out).expect("rendering to a Vec cannot fail");
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)
            .expect("rendering to a Vec cannot fail");
    }
    if let Some(text) = examples {
        let (heading, body) = match text.strip_prefix("Examples:\n") {
            Some(body) => ("EXAMPLES", body),
            None => ("NOTES", text.as_str()),
        };
        let mut part = Vec::new();
        clap_mangen::Man::new(clap::Command::new("x").after_help(body.to_string()))
            .render_extra_section(&mut part)
            .expect("rendering to a Vec cannot fail");
        let text =
            String::from_utf8_lossy(&part).replacen(".SH EXTRA", &format!(".SH {heading}"), 1);
        out.extend(text.into_bytes());
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)
            .expect("rendering to a Vec cannot fail");
    }
    out
}

/// The progress bar of a walk over a store: bytes done, and logs in the message.
pub fn store_bar(total: u64) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {msg} ({eta} left)")
    {
        b.set_style(style);
    }
    b
}

/// The default of `--threads` where every core can be used. It depends on the machine, so
/// help and man pages say it in words, never as a number (a page written on one machine
/// must read the same as one generated on another: `tests/man.rs`).
pub fn all_cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// `--threads` of compact: two (reading and packing on one, compressing frames on
/// the other) on a machine with two cores or more; more are not used.
pub fn default_threads() -> u64 {
    all_cores().min(2)
}
