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
    let mut out = sess::io::Sink::stdout();
    clap_complete::generate(args.shell, &mut cmd, "sess", &mut out);
    Ok(out.finish()?)
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The folder to write `sess.1` and `sess-COMMAND.1` into.
    pub dir: std::path::PathBuf,
}

/// Writes every man page into a folder.
pub fn generate_man(args: ManArgs) -> Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("{}: cannot create", args.dir.display()))?;
    for (name, text) in crate::cli::man_pages() {
        let p = args.dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("{}: cannot write", p.display()))?;
    }
    Ok(())
}
