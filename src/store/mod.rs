//! Whole log stores: the logs under folders (`~/.claude/projects`, `~/.codex`), told apart
//! by the layout their producer's profile describes ([`crate::profile::Store`]), what they
//! hold ([`report`]), and replacing cold ones by their packed form ([`compact`]).

pub mod compact;
pub mod journal;
pub mod report;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::profile::registry;
use crate::profile::store::logical_name;

/// The prefix of every file sess itself makes in a store: temporary files and the
/// journal. Such files are never taken for logs.
pub const OWN_PREFIX: &str = ".sess-";

/// One log found under a root.
#[derive(Debug, Clone)]
pub struct Log {
    pub path: PathBuf,
    /// The root it was found under (an index into the roots walked).
    pub root: usize,
    pub size: u64,
    pub modified: SystemTime,
    /// The producer whose layout the path matches, and the session it names; `None` when
    /// no layout matches (the producer is then told from the log's lines).
    pub layout: Option<Layout>,
}

impl Log {
    /// The log's file name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned())
    }

    /// Whether it is stored compressed already: its name ends in `.zst`, `.gz`..., or its
    /// bytes are gzip or zstd whatever its name says (a packed log renamed `.jsonl`). Reads
    /// the file's first bytes.
    pub fn compressed(&self) -> bool {
        self.stored() != Stored::Plain
    }

    /// How it is stored, by its name and its first bytes.
    pub fn stored(&self) -> Stored {
        use crate::input::{Compression, file_compression};
        let name = self.name();
        let content = file_compression(&self.path).ok().flatten();
        match (logical_name(&name) != name, content) {
            (true, Some(Compression::Plain)) => Stored::Misnamed,
            (true, _) => Stored::Compressed,
            (false, Some(c)) if c != Compression::Plain => Stored::Compressed,
            (false, _) => Stored::Plain,
        }
    }
}

/// How a log is stored ([`Log::stored`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Plain,
    /// gzip or zstd bytes, or a name that says so.
    Compressed,
    /// A name that says compressed (`.zst`, `.gz`...) on plain text: packed under it, the
    /// log would keep the name it has, so it is left alone too.
    Misnamed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub producer: String,
    pub session: String,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Found {
    pub logs: Vec<Log>,
    /// Files that are not logs (by name), and their bytes: counted, not read.
    pub other_files: u64,
    pub other_bytes: u64,
    /// What could not be read (a folder without permission), with its path.
    pub errors: Vec<String>,
}

/// Whether a file name is a log's: JSONL, plain or compressed, and not one of sess's own.
pub fn is_log_name(name: &str) -> bool {
    !name.starts_with(OWN_PREFIX) && logical_name(name).ends_with(".jsonl")
}

/// The layout of the first profile whose store patterns match `path`.
pub fn layout_of(path: &Path) -> Option<Layout> {
    registry::all().iter().find_map(|p| {
        p.store.session_of(path).map(|session| Layout {
            producer: p.name.clone(),
            session,
        })
    })
}

/// Walks `roots` (folders, or files named directly), never following symbolic links.
pub fn walk(roots: &[PathBuf]) -> Found {
    let mut found = Found::default();
    for (i, root) in roots.iter().enumerate() {
        for entry in walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
        {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let at = e.path().unwrap_or(root).display().to_string();
                    let cause = e.io_error().map_or(e.to_string(), |io| io.to_string());
                    found.errors.push(format!("{at}: {cause}"));
                    continue;
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) => {
                    found
                        .errors
                        .push(format!("{}: {e}", entry.path().display()));
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy();
            if !is_log_name(&name) {
                if !name.starts_with(OWN_PREFIX) {
                    found.other_files += 1;
                    found.other_bytes += meta.len();
                }
                continue;
            }
            found.logs.push(Log {
                path: entry.path().to_path_buf(),
                root: i,
                size: meta.len(),
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                layout: layout_of(entry.path()),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_told_by_name_and_layouts_by_path() {
        assert!(is_log_name("a.jsonl"));
        assert!(is_log_name("rollout-1.jsonl.zst"));
        assert!(is_log_name("a.jsonl.sess.zst"));
        assert!(!is_log_name(".sess-compact.jsonl"));
        assert!(!is_log_name(".sess-x1.tmp"));
        assert!(!is_log_name("settings.json"));
        let l = layout_of(Path::new(
            "/h/.codex/sessions/2026/01/02/rollout-2026-x.jsonl",
        ));
        assert_eq!(
            l,
            Some(Layout {
                producer: "codex".into(),
                session: "2026-x".into()
            })
        );
        let c = layout_of(Path::new(
            "/h/.claude/projects/-w/s1/subagents/agent-a.jsonl",
        ));
        assert_eq!(
            c.map(|l| (l.producer, l.session)),
            Some(("claude-code".into(), "s1".into()))
        );
        assert_eq!(layout_of(Path::new("/tmp/run.jsonl")), None);
    }
}
