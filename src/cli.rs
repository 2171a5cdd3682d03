//! The command line: global options and the subcommand list. Each subcommand's own
//! arguments live next to its code in `cmd/`.

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::cmd;
use crate::frames::Recovery;
use crate::input::OpenOptions;

#[derive(Debug, Parser)]
#[command(
    name = "sess",
    version,
    about = "Make agent session logs small, safe and easy to read",
    long_about = "sess reads the JSONL session logs that AI coding agents (pi, DeepSeek Harness) \
write: plain, zstd-compressed or packed. Every command reads files or stdin ('-' or no file) \
and writes JSONL to stdout unless -o FILE is given; output files are written atomically.\n\n\
Exit status: 0 on success, 1 on an error (bad input, I/O), 2 on a usage error.",
    after_help = "Run 'sess COMMAND --help' for a command's options and examples."
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

    /// What to do with damaged zstd input: tolerate-tail keeps every complete frame and the
    /// complete lines of a torn final frame; absolute fails on any damage; point-in-time
    /// stops at the first damage; skip-corrupt skips damaged frames.
    #[arg(
        long,
        global = true,
        value_name = "MODE",
        default_value = "tolerate-tail"
    )]
    pub recovery: Recovery,
}

impl Global {
    /// How inputs are opened under these options.
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            quiet: self.quiet,
            recovery: self.recovery,
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
    Completions(cmd::completions::Args),
}

/// The clap command tree, for man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Renders one man page per command: `sess.1` and `sess-NAME.1`.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let root = command();
    let mut pages = vec![("sess.1".to_string(), render_man(root.clone()))];
    for sub in root.get_subcommands() {
        let name = format!("sess-{}", sub.get_name());
        let sub = sub.clone().name(name.clone());
        pages.push((format!("{name}.1"), render_man(sub)));
    }
    pages
}

fn render_man(cmd: clap::Command) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .expect("rendering to a Vec cannot fail");
    out
}
