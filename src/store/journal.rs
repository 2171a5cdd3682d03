//! The journal of `sess compact`: one JSONL file per root (`.sess-compact.jsonl`), a line
//! appended and synced for every log compacted or restored, so that an interrupted run can
//! be resumed and any run undone (`docs/FORMAT.md`, "The compact journal").
//!
//! The journal is also the lock: a run holds an exclusive lock on it, so two runs on one
//! root cannot interleave. Nor can runs on nested roots: a run does not start inside the
//! root of a run at work, and passes by the logs under the root of one ([`busy`]).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The journal's name in a root.
pub const NAME: &str = ".sess-compact.jsonl";

/// The version of its lines.
pub const SCHEMA: &str = "sess-compact/1";

/// What was done to a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Replaced by its packed form.
    Compact,
    /// Restored from it.
    Undo,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub schema: String,
    pub op: Op,
    /// The log, and its packed form, relative to the root.
    pub path: String,
    pub into: String,
    /// The log's size, crc32 and modification time (nanoseconds since 1970), which its
    /// restored copy gets back.
    pub bytes: u64,
    pub crc32: u32,
    pub mtime_ns: i128,
    pub packed_bytes: u64,
    /// `sess` (rows, interning) or `compat` (plain zstd frames).
    pub form: String,
    /// When it was done (seconds since 1970).
    pub at: u64,
}

/// Whether a run is at work on `folder`: it holds the lock of the folder's journal. (Not
/// to be asked of the folder of this process's own run, whose lock it holds itself.)
pub fn busy(folder: &Path) -> bool {
    let Ok(file) = File::open(folder.join(NAME)) else {
        return false;
    };
    // Shared: two runs asking at once do not stop each other.
    matches!(file.try_lock_shared(), Err(fs::TryLockError::WouldBlock))
}

/// Whether `path` names a file under the root: relative, every part a name (no `..`).
fn within(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

impl Record {
    /// The record of undoing this one, made now.
    pub fn undone(&self) -> Record {
        Record {
            op: Op::Undo,
            at: now(),
            ..self.clone()
        }
    }
}

/// Seconds since 1970, for `at`.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A root's journal, open and locked.
pub struct Journal {
    file: File,
    path: PathBuf,
    /// The last record of each log (by `path`), as read when opened and appended since.
    last: BTreeMap<String, Record>,
    /// Lines that could not be read (a line torn by a crash), with their line numbers.
    pub unreadable: Vec<u64>,
}

impl Journal {
    /// Opens (creating it when `create`) and locks the journal of `root`. `None` when there
    /// is none and none is to be made.
    pub fn open(root: &Path, create: bool) -> io::Result<Option<Journal>> {
        let path = root.join(NAME);
        let file = match fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "another sess compact is at work on this folder (it holds the journal's \
                     lock)",
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        // A run on a folder holding this one may reach any log in it. (Checked once this
        // run holds its lock: a run on a folder inside it passes by its logs from then on.)
        let real = fs::canonicalize(root)?;
        if let Some(outer) = real.ancestors().skip(1).find(|a| busy(a)) {
            // Not left behind when this run made it (it holds nothing yet).
            if file.metadata()?.len() == 0 {
                let _ = fs::remove_file(&path);
            }
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "another sess compact is at work on {}, which holds this folder",
                    outer.display()
                ),
            ));
        }
        let mut j = Journal {
            file,
            path,
            last: BTreeMap::new(),
            unreadable: Vec::new(),
        };
        j.read()?;
        Ok(Some(j))
    }

    fn read(&mut self) -> io::Result<()> {
        let mut text = Vec::new();
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_to_end(&mut text)?;
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        let torn = lines.len() - 1;
        for (n, line) in lines.iter().enumerate() {
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(r) if within(&r.path) && within(&r.into) => {
                    self.last.insert(r.path.clone(), r);
                }
                // A journal written by sess names files under its root only: one naming
                // another place (`..`, an absolute path) is not acted on.
                Ok(_) => self.unreadable.push(n as u64 + 1),
                // A last line without its newline was being appended when a crash came:
                // its log was not removed yet (that comes after the line is synced).
                Err(_) if n == torn => {}
                Err(_) => self.unreadable.push(n as u64 + 1),
            }
        }
        // A line torn by a crash is cut off (or, when it is whole but for its newline,
        // ended), so that the next record starts a line of its own.
        if text.last().is_some_and(|&b| b != b'\n') {
            let start = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            if serde_json::from_slice::<Record>(&text[start..]).is_ok() {
                self.file.write_all(b"\n")?;
            } else {
                self.file.set_len(start as u64)?;
            }
        }
        Ok(())
    }

    /// Whether no record was ever read or written.
    pub fn is_empty(&self) -> bool {
        self.last.is_empty() && self.unreadable.is_empty()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last record of the log at `path` (relative to the root).
    pub fn last(&self, path: &str) -> Option<&Record> {
        self.last.get(path)
    }

    /// Every log whose last record is a compaction, by path.
    pub fn compacted(&self) -> Vec<Record> {
        self.last
            .values()
            .filter(|r| r.op == Op::Compact)
            .cloned()
            .collect()
    }

    /// Appends a record and syncs it to disk before returning.
    pub fn append(&mut self, record: Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(&record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()?;
        self.last.insert(record.path.clone(), record);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(op: Op, path: &str) -> Record {
        Record {
            schema: SCHEMA.into(),
            op,
            path: path.into(),
            into: format!("{path}.sess.zst"),
            bytes: 10,
            crc32: 7,
            mtime_ns: 1_700_000_000_123_456_789,
            packed_bytes: 5,
            form: "sess".into(),
            at: 1,
        }
    }

    #[test]
    fn keeps_the_last_record_of_each_log_across_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Journal::open(dir.path(), false).unwrap().is_none());
        {
            let mut j = Journal::open(dir.path(), true).unwrap().unwrap();
            j.append(record(Op::Compact, "a.jsonl")).unwrap();
            j.append(record(Op::Compact, "b.jsonl")).unwrap();
            j.append(record(Op::Undo, "a.jsonl")).unwrap();
        }
        // A crash in the middle of an append.
        fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(NAME))
            .unwrap()
            .write_all(br#"{"schema":"sess-comp"#)
            .unwrap();
        let mut j = Journal::open(dir.path(), false).unwrap().unwrap();
        assert!(
            j.unreadable.is_empty(),
            "a torn last line is a crash's, not damage"
        );
        assert_eq!(j.compacted(), vec![record(Op::Compact, "b.jsonl")]);
        j.append(record(Op::Compact, "c.jsonl")).unwrap();
        drop(j);
        let j = Journal::open(dir.path(), false).unwrap().unwrap();
        assert_eq!(j.compacted().len(), 2);
        assert_eq!(j.last("a.jsonl").unwrap().op, Op::Undo);
        drop(j);
        // Damage inside the journal, though, is named.
        let path = dir.path().join(NAME);
        let text = fs::read_to_string(&path)
            .unwrap()
            .replacen("\"op\"", "\"xx\"", 1);
        fs::write(&path, text).unwrap();
        let j = Journal::open(dir.path(), false).unwrap().unwrap();
        assert_eq!(j.unreadable, vec![1]);
    }

    #[test]
    fn a_record_naming_a_file_outside_the_root_is_not_acted_on() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut j = Journal::open(dir.path(), true).unwrap().unwrap();
            j.append(record(Op::Compact, "p/a.jsonl")).unwrap();
            for outside in ["../a.jsonl", "/tmp/a.jsonl", "p/../../a.jsonl", ""] {
                j.append(record(Op::Compact, outside)).unwrap();
            }
            let mut into = record(Op::Compact, "b.jsonl");
            into.into = "../b.jsonl.zst".into();
            j.append(into).unwrap();
        }
        let j = Journal::open(dir.path(), false).unwrap().unwrap();
        assert_eq!(j.compacted(), vec![record(Op::Compact, "p/a.jsonl")]);
        assert_eq!(j.unreadable, vec![2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_second_run_on_a_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Journal::open(dir.path(), true).unwrap().unwrap();
        let second = Journal::open(dir.path(), true).err().unwrap();
        assert!(
            second.to_string().contains("another sess compact"),
            "{second}"
        );
    }
}
