//! The profiles sess knows: the built-in ones, one file each in `profiles/` embedded in the
//! binary, and any `*.json` profile files in the folders named by `SESS_PROFILES`
//! (separated by `:`), which are tried first. This table is the one place that lists the
//! built-ins; its order is the order detection tries them in, and breaks ties with.
//!
//! To add a producer: write `profiles/NAME.json`, add its line here, and add a fixture.

use std::path::Path;
use std::sync::LazyLock;

use super::Profile;

/// (name, the profile file's text).
const BUILTIN: &[(&str, &str)] = &[
    ("pi-session", include_str!("../../profiles/pi-session.json")),
    ("pi", include_str!("../../profiles/pi.json")),
    ("dsh", include_str!("../../profiles/dsh.json")),
    (
        "claude-code",
        include_str!("../../profiles/claude-code.json"),
    ),
    (
        "claude-code-stream",
        include_str!("../../profiles/claude-code-stream.json"),
    ),
    ("codex", include_str!("../../profiles/codex.json")),
    ("codex-exec", include_str!("../../profiles/codex-exec.json")),
    ("gemini-cli", include_str!("../../profiles/gemini-cli.json")),
    (
        "gemini-cli-stream",
        include_str!("../../profiles/gemini-cli-stream.json"),
    ),
];

/// The environment variable naming folders of more profiles.
pub const PATH_VAR: &str = "SESS_PROFILES";

struct Registry {
    profiles: Vec<Profile>,
    /// Profile files in `SESS_PROFILES` that could not be used, each with why.
    problems: Vec<String>,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let builtin: Vec<Profile> = BUILTIN
        .iter()
        .map(|(name, text)| {
            // A built-in profile that does not parse is a bug in this crate, caught by the
            // tests below.
            let mut p = Profile::from_json_over(text.as_bytes(), name, &[])
                .unwrap_or_else(|e| panic!("built-in profile {name}: {e}"));
            p.origin = "built-in".into();
            p
        })
        .collect();
    let mut profiles = Vec::new();
    let mut problems = Vec::new();
    for dir in std::env::var_os(PATH_VAR)
        .map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        for file in profile_files(&dir, &mut problems) {
            let origin = file.display().to_string();
            match std::fs::read(&file) {
                Ok(text) => match Profile::from_json_over(&text, &origin, &builtin) {
                    // A name picks one profile: the first of it in the path, as a name in
                    // the path picks it over the built-in one of that name.
                    Ok(p) => match profiles.iter().find(|q: &&Profile| q.name == p.name) {
                        Some(first) => problems.push(format!(
                            "{origin}: not used: profile '{}' is {} already",
                            p.name, first.origin
                        )),
                        None => profiles.push(p),
                    },
                    Err(e) => problems.push(e.to_string()),
                },
                Err(e) => problems.push(format!("{origin}: cannot read: {e}")),
            }
        }
    }
    // A profile in the path takes the place of the built-in one of its name.
    let replaced = |b: &Profile| profiles.iter().any(|p: &Profile| p.name == b.name);
    let builtin: Vec<Profile> = builtin.into_iter().filter(|b| !replaced(b)).collect();
    profiles.extend(builtin);
    Registry { profiles, problems }
});

/// The `*.json` files of a folder, sorted.
fn profile_files(dir: &Path, problems: &mut Vec<String>) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut v: Vec<_> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            v.sort();
            v
        }
        Err(e) => {
            problems.push(format!(
                "{}: cannot read the folder ({PATH_VAR}): {e}",
                dir.display()
            ));
            Vec::new()
        }
    }
}

/// Every profile, in detection order.
pub fn all() -> &'static [Profile] {
    &REGISTRY.profiles
}

/// The profile files in `SESS_PROFILES` that could not be used.
pub fn problems() -> &'static [String] {
    &REGISTRY.problems
}

/// The profile with this name.
pub fn builtin(name: &str) -> Option<Profile> {
    all().iter().find(|p| p.name == name).cloned()
}

/// The text of a built-in profile's file.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The names of every profile.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_under_its_own_name() {
        for (name, _) in BUILTIN {
            assert_eq!(builtin(name).map(|p| p.name), Some(name.to_string()));
        }
    }
}
