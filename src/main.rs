use std::process::ExitCode;

use clap::Parser;
use sess::cli::{Cli, Command};
use sess::cmd;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let g = cli.global;
    let result = match cli.command {
        Command::Cat(args) => cmd::cat::run(args, g),
        Command::Stats(args) => cmd::stats::run(args, g),
        Command::Verify(args) => cmd::verify::run(args, g),
        Command::Filter(args) => cmd::filter::run(args, g),
        Command::Pack(args) => cmd::pack::run(args, g),
        Command::Unpack(args) => cmd::unpack::run(args, g),
        Command::Repair(args) => cmd::repair::run(args, g),
        Command::Recover(args) => cmd::recover::run(args, g),
        Command::Diff(args) => cmd::diff::run(args, g),
        Command::Completions(args) => cmd::completions::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`sess cat big.jsonl | head -1`) is not an error.
        Err(e) if sess::io::sink::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sess: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
