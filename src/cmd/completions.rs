//! `sess completions`: shell completion scripts.

use anyhow::Result;
use clap_complete::Shell;

const EXAMPLES: &str = "Examples:
  sess completions bash > ~/.local/share/bash-completion/completions/sess
  sess completions zsh > ~/.zfunc/_sess";

#[derive(Debug, clap::Args)]
#[command(about = "Print a shell completion script", after_help = EXAMPLES)]
pub struct Args {
    /// The shell to complete for.
    pub shell: Shell,
}

pub fn run(args: Args) -> Result<()> {
    let mut cmd = crate::cli::command();
    let mut out = crate::io::Sink::stdout();
    clap_complete::generate(args.shell, &mut cmd, "sess", &mut out);
    out.finish()
}
