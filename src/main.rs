use std::process::ExitCode;

mod cli;
mod cmd;
mod range;
mod units;

use std::io::Write;

use clap::Parser;
use cli::{Cli, Command};
use sess::io::signals::Interrupted;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    // Temporary output files must not outlive a Ctrl-C; without the handler a signal would
    // kill the process before it could remove them.
    if let Err(e) = sess::io::signals::install() {
        sess::io::tell!("sess: warning: cannot handle signals: {e}");
    }
    let g = cli.global;
    for problem in sess::profile::registry::problems() {
        sess::io::tell!(
            "sess: warning: a profile in ${}: {problem}",
            sess::profile::registry::PATH_VAR
        );
    }
    let result = match cli.command {
        Command::Cat(args) => cmd::cat::run(args, g),
        Command::Stats(args) => cmd::stats::run(args, g),
        Command::Verify(args) => cmd::verify::run(args, g),
        Command::Filter(args) => cmd::filter::run(args, g),
        Command::Pack(args) => cmd::pack::run(args, g),
        Command::Unpack(args) => cmd::unpack::run(args, g),
        Command::Repair(args) => cmd::repair::run(args),
        Command::Recover(args) => cmd::recover::run(args, g),
        Command::Diff(args) => cmd::diff::run(args, g),
        Command::Compact(args) => cmd::compact::run(args, g),
        Command::Profiles(args) => cmd::profiles::run(args),
        Command::Completions(args) => cmd::completions::run(args),
        Command::GenerateMan(args) => cmd::completions::generate_man(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`sess cat big.jsonl | head -1`) is not an error.
        Err(e) if cmd::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.is::<cmd::Reported>() => ExitCode::FAILURE,
        Err(e) if e.is::<Interrupted>() => {
            let sig = e.downcast_ref::<Interrupted>().map_or(2, |i| i.0);
            ExitCode::from(sess::io::signals::exit_status(sig))
        }
        Err(e) => {
            sess::io::tell!("sess: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Help, the version or a usage error, as clap words them; help that cannot be written
/// (`sess --help > /dev/full`) is an error like any other failed write.
fn usage(e: clap::Error) -> ExitCode {
    let to_stdout = !e.use_stderr();
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        // A reader that went away (`sess --help | head -1`) is not an error.
        Err(w) if to_stdout && w.kind() != std::io::ErrorKind::BrokenPipe => {
            sess::io::tell!("sess: error: cannot write to stdout: {w}");
            ExitCode::FAILURE
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
    }
}
