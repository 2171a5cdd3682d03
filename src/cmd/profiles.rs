//! `sess profiles`: the producers sess knows, and what it knows of each.

use std::io::Write;

use anyhow::{Context, Result, bail};
use sess::io::Sink;
use sess::profile::{Class, Profile, registry};

const ABOUT: &str = "List the producer profiles sess knows, or show one";

const LONG_ABOUT: &str = "List the producer profiles sess knows: the built-in ones and any profile \
files in the folders named by SESS_PROFILES (separated by ':'), which are tried first. For \
each: its name (what --profile takes), what it reads, the producer versions it was checked \
against, and where it comes from. With a NAME, print that profile's file: the same format \
--profile FILE reads (docs/FORMAT.md, \"Profile files\").";

const EXAMPLES: &str = "Examples:
  sess profiles
  sess profiles pi > my-pi.json
  SESS_PROFILES=~/.config/sess/profiles sess profiles";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    /// Print this profile's file instead of the list.
    #[arg(value_parser = profile_name)]
    pub name: Option<String>,
}

/// A name that is no profile's is a usage error (exit 2), as it is for `--profile`.
fn profile_name(name: &str) -> Result<String, String> {
    match registry::all().iter().any(|p| p.name == name) {
        true => Ok(name.to_string()),
        false => Err(format!(
            "unknown profile '{name}' (one of: {})",
            registry::names().join(", ")
        )),
    }
}

pub fn run(args: Args) -> Result<()> {
    let mut out = Sink::stdout();
    match &args.name {
        Some(name) => {
            let Some(p) = registry::all().iter().find(|p| p.name == *name) else {
                bail!("unknown profile '{name}'");
            };
            let text = match registry::builtin_text(name).filter(|_| p.origin == "built-in") {
                Some(t) => t.to_string(),
                None => std::fs::read_to_string(&p.origin)
                    .with_context(|| format!("{}: cannot read", p.origin))?,
            };
            out.write_all(text.as_bytes())?;
        }
        None => out.write_all(list().as_bytes())?,
    }
    Ok(out.finish()?)
}

fn list() -> String {
    let width = registry::names()
        .iter()
        .map(|n| n.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = String::new();
    for p in registry::all() {
        s += &format!("{:<width$}  {}\n", p.name, p.describe);
        s += &format!("{:<width$}    reads: {}\n", "", dialects(p));
        s += &format!("{:<width$}    classes: {}\n", "", classes(p));
        if !p.checked.is_empty() {
            s += &format!(
                "{:<width$}    checked against: {}\n",
                "",
                p.checked.join("; ")
            );
        }
        s += &format!("{:<width$}    from: {}\n", "", p.origin);
    }
    for problem in registry::problems() {
        s += &format!("(not used) {problem}\n");
    }
    s
}

fn dialects(p: &Profile) -> String {
    let mut names = vec![p.dialect.clone()];
    for v in &p.variants {
        if !names.contains(&v.name) {
            names.push(v.name.clone());
        }
    }
    names.join(", ")
}

fn classes(p: &Profile) -> String {
    let count = |c: Class| match c {
        Class::Frame => p.frames.len(),
        Class::Mirror => p.mirrors.len(),
        Class::Boundary => p.boundaries.len(),
        Class::Fact => 0,
    };
    let parts: Vec<String> = [Class::Frame, Class::Mirror, Class::Boundary]
        .into_iter()
        .filter(|c| count(*c) > 0)
        .map(|c| format!("{} {}", count(c), c.name()))
        .collect();
    if parts.is_empty() {
        "every kind a fact".into()
    } else {
        parts.join(", ") + ", every other kind a fact"
    }
}
