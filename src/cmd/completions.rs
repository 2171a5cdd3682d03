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
    let mut cmd = shown(crate::cli::command());
    let mut out = sess::io::Sink::stdout();
    clap_complete::generate(args.shell, &mut cmd, "sess", &mut out);
    Ok(out.finish()?)
}

/// `full` without its hidden subcommands, which the completion scripts would offer (clap
/// has no way to take a subcommand out, so the root is built again around the others).
fn shown(full: clap::Command) -> clap::Command {
    let mut cmd = clap::Command::new(full.get_name().to_string());
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    if let Some(about) = full.get_long_about() {
        cmd = cmd.long_about(about.clone());
    }
    if let Some(v) = full.get_version() {
        cmd = cmd.version(v.to_string());
    }
    for arg in full.get_arguments() {
        cmd = cmd.arg(arg.clone());
    }
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        cmd = cmd.subcommand(sub.clone());
    }
    cmd
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
