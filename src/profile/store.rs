//! Where a producer keeps its logs on disk: which paths are its session logs, which part of
//! a path names the session, and whether it reads its logs back zstd-compressed. `sess stats
//! DIR` and `sess compact` read this; the engine knows no producer's folders.

use std::path::Path;

use serde::Deserialize;

use super::detect::glob;

/// A profile's `store` section (`docs/FORMAT.md`, "Profile files").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Store {
    /// Where the producer keeps its logs, under the home folder (`.codex/sessions`): named
    /// in reports and docs, never searched on its own.
    #[serde(default)]
    pub home: Vec<String>,
    /// Paths of its logs, matched against the end of a path one `/`-separated part at a
    /// time. In a part, `*` stands for any text and `{session}` for the text that names
    /// the session the log belongs to (a subagent's log belongs to its parent's session).
    /// A compressed log (`.zst`, `.gz`, `.sess.zst`) is matched without its suffix.
    #[serde(default)]
    pub sessions: Vec<String>,
    /// The producer reads `FILE.zst`, plain zstd, in place of `FILE` (Codex since 0.137).
    #[serde(default)]
    pub reads_zstd: bool,
}

/// The suffixes a compressed log may carry after its own name, longest first.
pub const COMPRESSED: [&str; 4] = [".sess.zst", ".zstd", ".zst", ".gz"];

/// The name of a log without the suffix of its compression.
pub fn logical_name(name: &str) -> &str {
    COMPRESSED
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

impl Store {
    /// The session a log at `path` belongs to, when one of the patterns matches it. A
    /// pattern without `{session}` names the log's own name (without `.jsonl`).
    pub fn session_of(&self, path: &Path) -> Option<String> {
        let text = path.to_string_lossy();
        let mut parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
        let last = parts.pop()?;
        parts.push(logical_name(last));
        self.sessions
            .iter()
            .find_map(|pattern| session_in(pattern, &parts))
    }
}

/// Matches `pattern` against the end of `parts`; the session it names on a match.
fn session_in(pattern: &str, parts: &[&str]) -> Option<String> {
    let pats: Vec<&str> = pattern.split('/').collect();
    if pats.len() > parts.len() {
        return None;
    }
    let tail = &parts[parts.len() - pats.len()..];
    let mut session = None;
    for (p, part) in pats.iter().zip(tail) {
        match p.split_once("{session}") {
            None if glob(p, part) => {}
            None => return None,
            Some((before, after)) => {
                let inner = part.strip_prefix(before)?.strip_suffix(after)?;
                if inner.is_empty() {
                    return None;
                }
                session = Some(inner.to_string());
            }
        }
    }
    let name = tail.last()?;
    Some(session.unwrap_or_else(|| name.strip_suffix(".jsonl").unwrap_or(name).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(patterns: &[&str]) -> Store {
        Store {
            sessions: patterns.iter().map(|p| p.to_string()).collect(),
            ..Store::default()
        }
    }

    #[test]
    fn names_the_session_a_path_belongs_to() {
        let s = store(&[
            "projects/*/{session}.jsonl",
            "projects/*/{session}/subagents/*.jsonl",
        ]);
        let at = |p: &str| s.session_of(Path::new(p));
        assert_eq!(
            at("/h/.claude/projects/-w/abc.jsonl").as_deref(),
            Some("abc")
        );
        assert_eq!(
            at("/h/.claude/projects/-w/abc/subagents/agent-1.jsonl").as_deref(),
            Some("abc")
        );
        assert_eq!(
            at("/h/.claude/projects/-w/abc.jsonl.sess.zst").as_deref(),
            Some("abc")
        );
        assert_eq!(at("/h/.claude/projects/-w/abc.json"), None);
        assert_eq!(at("/h/other/-w/abc.jsonl"), None);
        assert_eq!(at("abc.jsonl"), None);
    }

    #[test]
    fn a_session_is_found_inside_a_name() {
        let s = store(&["sessions/*/*/*/rollout-{session}.jsonl", "rollout-*.jsonl"]);
        let at = |p: &str| s.session_of(Path::new(p));
        assert_eq!(
            at("/c/sessions/2026/12/01/rollout-x-1.jsonl.zst").as_deref(),
            Some("x-1")
        );
        assert_eq!(
            at("/c/sessions/2026/12/rollout-x-1.jsonl").as_deref(),
            Some("rollout-x-1")
        );
        assert_eq!(
            at("/c/sessions/2026/12/01/rollout-.jsonl").as_deref(),
            Some("rollout-")
        );
        assert_eq!(logical_name("a.jsonl.gz"), "a.jsonl");
        assert_eq!(logical_name("a.jsonl"), "a.jsonl");
    }
}
