//! Which producer wrote a log, told per input from its lines by the profiles' `recognise`
//! rules:
//!
//! - a file name pattern, or a first-line `header` test, decides at once;
//! - otherwise each line whose kind is in a profile's vocabulary (`kinds`, `kind_patterns`)
//!   is a vote for it, and so is a first line passing one of its `header_hints`.
//!
//! A stream is decided by the first line that decides or votes ([`Detector::early`]): the
//! lines before it are facts. A whole input is decided by the most votes, ties going to the
//! profile listed first in the registry ([`Detector::finish`]). With no vote at all, a log
//! whose every line is an op batch is an op list (sess's own format, not a producer's), and
//! anything else is unknown.

use std::path::Path;

use super::{Condition, Profile};
use crate::delta::oplist;
use crate::json;

/// What a log was found to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    /// The profile, when a producer was recognised.
    pub profile: Option<Profile>,
    /// The format's name (`pi-stream-old`, `dsh`, `op-list`, `unknown`).
    pub dialect: String,
    pub describe: String,
}

impl Detected {
    fn of(p: &Profile, dialect: &str, describe: &str) -> Detected {
        Detected {
            profile: Some(p.clone()),
            dialect: dialect.to_string(),
            describe: describe.to_string(),
        }
    }

    fn without(dialect: &str, describe: &str) -> Detected {
        Detected {
            profile: None,
            dialect: dialect.to_string(),
            describe: describe.to_string(),
        }
    }
}

/// Whether a variant's condition has been decided yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Pending,
    Held,
    Failed,
}

/// Watches the lines of one input go by.
#[derive(Debug)]
pub struct Detector<'p> {
    profiles: &'p [Profile],
    lines: u64,
    votes: Vec<u64>,
    /// Decided at once, by the file name or the first line.
    decided: Option<usize>,
    /// The profile of the first line that decided or voted.
    first_vote: Option<usize>,
    /// Per profile, per variant.
    variants: Vec<Vec<Seen>>,
    op_batches: u64,
}

impl<'p> Detector<'p> {
    /// A detector trying `profiles` in order; `path` is the input's, if it is a file.
    pub fn new(profiles: &'p [Profile], path: Option<&Path>) -> Detector<'p> {
        let decided = path.and_then(|p| {
            profiles
                .iter()
                .position(|pr| pr.recognise.files.iter().any(|g| name_matches(g, p)))
        });
        Detector {
            profiles,
            lines: 0,
            votes: vec![0; profiles.len()],
            decided,
            first_vote: decided,
            variants: profiles
                .iter()
                .map(|p| vec![Seen::Pending; p.variants.len()])
                .collect(),
            op_batches: 0,
        }
    }

    /// Looks at one physical line.
    pub fn observe(&mut self, line: &[u8]) {
        let top = json::field(line, "type").and_then(json::str_value);
        self.observe_kind(line, top.as_deref());
    }

    /// [`Detector::observe`], for a caller that has read the line's top-level `type`.
    pub fn observe_kind(&mut self, line: &[u8], kind: Option<&str>) {
        self.lines += 1;
        if self.lines == 1 {
            self.first_line(line, kind);
        } else if self.decided.is_none()
            && let Some(k) = kind
        {
            // Votes only matter until something decides.
            for (i, p) in self.profiles.iter().enumerate() {
                if p.recognise.votes_for(k) {
                    self.votes[i] += 1;
                    self.first_vote.get_or_insert(i);
                }
            }
        }
        for (i, p) in self.profiles.iter().enumerate() {
            if self.decided.is_some_and(|d| d != i) {
                continue;
            }
            for (v, seen) in p.variants.iter().zip(self.variants[i].iter_mut()) {
                if *seen == Seen::Pending {
                    *seen = variant_seen(&v.when, line, kind);
                }
            }
        }
        if kind.is_none() && oplist::is_batch(line) {
            self.op_batches += 1;
        }
    }

    /// The first line: headers decide, hints and kinds vote (a hint alone does not decide
    /// a stream, because the header is shared).
    fn first_line(&mut self, line: &[u8], kind: Option<&str>) {
        for (i, p) in self.profiles.iter().enumerate() {
            let r = &p.recognise;
            if self.decided.is_none() && r.header.iter().any(|c| c.holds(line, kind)) {
                self.decided = Some(i);
                self.first_vote.get_or_insert(i);
            }
            let by_kind = kind.is_some_and(|k| r.votes_for(k));
            if by_kind {
                self.first_vote.get_or_insert(i);
            }
            if by_kind || r.header_hints.iter().any(|c| c.holds(line, kind)) {
                self.votes[i] += 1;
            }
        }
    }

    /// The profile a stream is decided by, once a line has told.
    pub fn early(&self) -> Option<&'p Profile> {
        self.decided.or(self.first_vote).map(|i| &self.profiles[i])
    }

    /// What the whole input was.
    pub fn finish(&self) -> Detected {
        let best = self.decided.or_else(|| {
            let max = *self.votes.iter().max()?;
            (max > 0).then(|| self.votes.iter().position(|&v| v == max))?
        });
        match best {
            Some(i) => {
                let p = &self.profiles[i];
                let variant = p
                    .variants
                    .iter()
                    .zip(&self.variants[i])
                    .find(|(_, s)| **s == Seen::Held)
                    .map(|(v, _)| v);
                match variant {
                    Some(v) => Detected::of(p, &v.name, &v.describe),
                    None => Detected::of(p, &p.dialect, &p.describe),
                }
            }
            None if self.lines > 0 && self.op_batches == self.lines => {
                Detected::without("op-list", "op list (Chord batches)")
            }
            None => Detected::without("unknown", "unknown JSONL"),
        }
    }
}

/// A variant condition on one line: `first` conditions are decided by the first line of
/// their kind; `kind` conditions hold once any line passes.
fn variant_seen(c: &Condition, line: &[u8], kind: Option<&str>) -> Seen {
    if let Some(first) = &c.first {
        if kind != Some(first.as_str()) {
            return Seen::Pending;
        }
        return if c.fields_hold(line) {
            Seen::Held
        } else {
            Seen::Failed
        };
    }
    if c.holds(line, kind) {
        Seen::Held
    } else {
        Seen::Pending
    }
}

/// Whether a file-name pattern matches: against the file name, or, for a pattern with a
/// `/`, against the end of the path.
fn name_matches(pattern: &str, path: &Path) -> bool {
    let text = path.to_string_lossy();
    if pattern.contains('/') {
        let parts = pattern.matches('/').count() + 1;
        let tail: Vec<&str> = text.rsplit('/').take(parts).collect();
        let tail: String = tail.into_iter().rev().collect::<Vec<_>>().join("/");
        glob(pattern, &tail)
    } else {
        path.file_name()
            .is_some_and(|n| glob(pattern, &n.to_string_lossy()))
    }
}

/// `*` matches any text (`/` included); everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut text) = text.strip_prefix(first) else {
        return false;
    };
    let mut parts = rest.split('*').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            return text.ends_with(part);
        }
        match text.find(part) {
            Some(at) => text = &text[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::registry;

    fn detect(lines: &[&str]) -> String {
        let mut d = Detector::new(registry::all(), None);
        for l in lines {
            d.observe(l.as_bytes());
        }
        d.finish().dialect
    }

    #[test]
    fn tells_formats_apart() {
        let pi = r#"{"type":"session","version":3,"id":"x"}"#;
        let old = r#"{"type":"message_update","message":{},"assistantMessageEvent":{}}"#;
        let new = r#"{"type":"message_update","usage":{},"assistantMessageEvent":{}}"#;
        assert_eq!(detect(&[pi, old]), "pi-stream-old");
        assert_eq!(detect(&[pi, new]), "pi-stream-new");
        assert_eq!(detect(&[pi, new, old]), "pi-stream-new");
        assert_eq!(detect(&[pi, r#"{"type":"turn_start"}"#]), "pi-stream");
        assert_eq!(
            detect(&[pi, r#"{"type":"agent_settled"}"#]),
            "pi-stream-new"
        );
        assert_eq!(
            detect(&[
                r#"{"type":"session","id":"x"}"#,
                r#"{"type":"message","id":"a"}"#
            ]),
            "pi-session"
        );
        assert_eq!(
            detect(&[r#"{"type":"session","version":0,"delegationDepth":0}"#]),
            "dsh"
        );
        assert_eq!(detect(&[r#"{"type":"turn/start","data":{}}"#]), "dsh");
        // DSH's vocabulary wins over a header that every producer shares.
        assert_eq!(
            detect(&[
                r#"{"type":"session","id":"x"}"#,
                r#"{"type":"request/header"}"#
            ]),
            "dsh"
        );
        assert_eq!(
            detect(&[
                r#"{"seq":0,"tag":"base","ops":[["r",1]]}"#,
                r#"[["s",["a"],1]]"#
            ]),
            "op-list"
        );
        assert_eq!(detect(&[r#"{"a":1}"#]), "unknown");
        assert_eq!(detect(&[]), "unknown");
    }

    #[test]
    fn a_stream_is_decided_by_its_first_telling_line() {
        let mut d = Detector::new(registry::all(), None);
        d.observe(br#"{"type":"session","version":3}"#);
        assert!(d.early().is_none(), "a shared header does not decide");
        d.observe(br#"{"type":"agent_start"}"#);
        assert_eq!(d.early().map(|p| p.name.as_str()), Some("pi"));
        let mut d = Detector::new(registry::all(), None);
        d.observe(br#"{"type":"session","version":0}"#);
        assert_eq!(d.early().map(|p| p.name.as_str()), Some("dsh"));
    }

    #[test]
    fn patterns() {
        assert!(glob("*/*", "turn/start"));
        assert!(!glob("*/*", "turn_start"));
        assert!(glob("*-chunks", "text-chunks"));
        assert!(glob(
            "rollout-*.jsonl",
            "rollout-2026-01-01T00-00-00-abc.jsonl"
        ));
        assert!(!glob("rollout-*.jsonl", "rollout.json"));
        assert!(name_matches(
            "subagents/agent-*.jsonl",
            Path::new("/h/.claude/projects/p/s/subagents/agent-a1.jsonl")
        ));
        assert!(!name_matches(
            "subagents/agent-*.jsonl",
            Path::new("/x/agent-a1.jsonl")
        ));
    }
}
