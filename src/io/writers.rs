//! Which files other processes hold open for writing, read from `/proc/*/fd` and
//! `/proc/*/fdinfo` (Linux). A log a producer is still writing must never be compacted.
//!
//! Only the processes this user may look into are seen (all of them for root), and only
//! descriptors open at the moment of the scan: a producer that opens, appends and closes
//! its log each time (Claude Code does) holds it open only for the instant of a write. The
//! age rule (`--older-than`) and the check that a file did not change while it was packed
//! are what guard those.
//!
//! Files are matched by device and inode, not by path: a process in a container that has
//! the store mounted sees it under another path, as does one that opened it through a
//! hard link or a bind mount.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// A file by device and inode.
pub type FileId = (u64, u64);

/// The files open for writing at one moment, and by which process.
#[derive(Debug, Default)]
pub struct Writers {
    by_file: HashMap<FileId, u32>,
    /// Whether `/proc` could be read at all; when not, nothing is known.
    pub checked: bool,
    /// Which descriptors count.
    wanted: Wanted,
}

/// Which descriptors a scan looks for.
#[derive(Debug, Default, Clone, Copy)]
enum Wanted {
    /// Open for writing.
    #[default]
    Writing,
    /// On the file of this size and inode, open for writing (a writer would go on past
    /// what replaces it) or at a place before its end (a reader with bytes still to read).
    Unfinished { size: u64, ino: u64 },
}

impl Writers {
    /// Scans every process but this one for descriptors open for writing on regular files
    /// under `roots` (canonical paths).
    pub fn scan(roots: &[PathBuf]) -> Writers {
        Writers::scan_for(roots, Wanted::Writing)
    }

    fn scan_for(roots: &[PathBuf], wanted: Wanted) -> Writers {
        let mut w = Writers {
            wanted,
            ..Writers::default()
        };
        let Ok(procs) = fs::read_dir("/proc") else {
            return w;
        };
        w.checked = true;
        let devices: Vec<u64> = roots
            .iter()
            .filter_map(|r| fs::metadata(r).ok())
            .map(|m| id_of(&m).0)
            .collect();
        let me = std::process::id();
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid != me {
                w.scan_process(pid, roots, &devices);
            }
        }
        w
    }

    /// A descriptor whose path is not under a root may still be one of their files: opened
    /// through a hard link, a bind mount, or in another mount namespace (an agent in a
    /// container writing a store mounted into it), where paths differ. Such a file is on
    /// a root's device. The descriptor's fdinfo is read first (procfs, which never
    /// blocks), and only one that counts is stat-ed: a stat onto a hung network mount
    /// would hang the scan.
    fn scan_process(&mut self, pid: u32, roots: &[PathBuf], devices: &[u64]) {
        let dir = PathBuf::from(format!("/proc/{pid}/fd"));
        // A process that ended, or one this user may not look into.
        let Ok(fds) = fs::read_dir(&dir) else {
            return;
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let under = roots.iter().any(|r| target.starts_with(r));
            // Pipes, sockets and the like read `pipe:[N]`; pseudo files lie elsewhere.
            let elsewhere = !target.is_absolute()
                || ["/proc", "/sys", "/dev"]
                    .iter()
                    .any(|p| target.starts_with(p));
            if !under && elsewhere {
                continue;
            }
            let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
            let counts = fs::read_to_string(info).is_ok_and(|t| match self.wanted {
                Wanted::Writing => writes(&t),
                // fdinfo's `ino:` (Linux 5.14 on), where there is one, spares a stat of
                // every other file.
                Wanted::Unfinished { size, ino } => {
                    field(&t, "ino:").is_none_or(|i| i == ino)
                        && (writes(&t) || field(&t, "pos:").is_some_and(|pos| pos < size))
                }
            });
            if !counts {
                continue;
            }
            let Some(meta) = fs::metadata(fd.path()).ok().filter(|m| m.is_file()) else {
                continue;
            };
            let id = id_of(&meta);
            if under || devices.contains(&id.0) {
                self.by_file.insert(id, pid);
            }
        }
    }

    /// The process that holds `path` open for writing, if one does.
    pub fn writer_of(&self, meta: &fs::Metadata) -> Option<u32> {
        self.by_file.get(&id_of(meta)).copied()
    }
}

/// Why a file a command read must not be replaced now: it is not that file any more (a
/// new one took its name, or it grew or was written since `before`), or another process
/// holds it open for writing, so that what it writes next would go to a file no name
/// reaches. `None`: nothing is seen against it.
pub fn why_busy(path: &Path, before: &fs::Metadata) -> std::io::Result<Option<String>> {
    let now = fs::metadata(path)?;
    if id_of(&now) != id_of(before) || changed(&now, before)? {
        return Ok(Some("it changed while it was read".into()));
    }
    let writers = Writers::scan(&canonical(&[path.to_path_buf()]));
    Ok(writers
        .writer_of(&now)
        .map(|pid| format!("process {pid} has it open for writing")))
}

/// A process other than this one that holds `path` open for writing, or at a place before
/// its end (a reader with bytes still to read), if one does and this user may see it. A
/// reader at the end (`tail -f`) loses nothing when the file is cut.
pub fn unfinished_user_of(path: &Path) -> Option<u32> {
    let meta = fs::metadata(path).ok()?;
    let wanted = Wanted::Unfinished {
        size: meta.len(),
        ino: id_of(&meta).1,
    };
    Writers::scan_for(&canonical(&[path.to_path_buf()]), wanted).writer_of(&meta)
}

/// Whether a file's size or modification time differs from `before`'s.
pub fn changed(now: &fs::Metadata, before: &fs::Metadata) -> std::io::Result<bool> {
    Ok(now.len() != before.len() || now.modified()? != before.modified()?)
}

/// A number an fdinfo text gives (`pos:`, the file position; `ino:`, the inode).
fn field(fdinfo: &str, name: &str) -> Option<u64> {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|p| p.trim().parse().ok())
}

/// Whether an fdinfo text says the descriptor was opened for writing (O_WRONLY or O_RDWR
/// in its octal `flags`).
fn writes(fdinfo: &str) -> bool {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & 0o3 != 0)
}

#[cfg(unix)]
pub fn id_of(meta: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
pub fn id_of(_meta: &fs::Metadata) -> FileId {
    (0, 0)
}

/// The canonical form of each root, for comparing with what `/proc` links to.
pub fn canonical(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter_map(|r| fs::canonicalize(r).ok())
        .map(|r| {
            if r.is_file() {
                r.parent().map_or(r.clone(), Path::to_path_buf)
            } else {
                r
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_the_access_mode_from_fdinfo() {
        assert!(writes("pos:\t0\nflags:\t0100001\nmnt_id:\t1\n"));
        assert!(writes("pos:\t0\nflags:\t02102002\n"));
        assert!(!writes("pos:\t0\nflags:\t0100000\n"));
        assert!(!writes("pos:\t0\n"));
        assert_eq!(field("pos:\t123\nflags:\t0100000\n", "pos:"), Some(123));
        assert_eq!(field("flags:\t0100000\nino:\t77\n", "ino:"), Some(77));
        assert_eq!(field("flags:\t0100000\n", "pos:"), None);
    }

    /// Which process a scan under `roots` finds writing the file of `meta`, while a
    /// child appends to it through `path`, the way a producer holds its log; and the
    /// child's pid.
    #[cfg(target_os = "linux")]
    fn writer_while_a_child_appends(
        roots: &[PathBuf],
        meta: &fs::Metadata,
        path: &Path,
    ) -> (Option<u32>, u32) {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3>>\"$1\"; exec sleep 30")
            .arg("sh")
            .arg(path)
            .spawn()
            .unwrap();
        let mut seen = None;
        for _ in 0..100 {
            seen = Writers::scan(roots).writer_of(meta);
            if seen.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        (seen, child.id())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sees_a_file_another_process_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.jsonl");
        fs::File::create(&path).unwrap().write_all(b"{}\n").unwrap();
        let roots = canonical(&[dir.path().to_path_buf()]);
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(Writers::scan(&roots).writer_of(&meta), None);
        let (seen, child) = writer_while_a_child_appends(&roots, &meta, &path);
        assert_eq!(seen, Some(child));
    }

    /// A writer whose path for the file is not under the root (here a hard link; a bind
    /// mount, or a container's own view of a mounted store, are the same to the scan).
    #[cfg(target_os = "linux")]
    #[test]
    fn sees_a_file_written_through_another_path() {
        let dir = tempfile::tempdir().unwrap();
        let (store, elsewhere) = (dir.path().join("store"), dir.path().join("elsewhere"));
        fs::create_dir_all(&store).unwrap();
        fs::create_dir_all(&elsewhere).unwrap();
        let path = store.join("live.jsonl");
        fs::File::create(&path).unwrap().write_all(b"{}\n").unwrap();
        let link = elsewhere.join("link.jsonl");
        fs::hard_link(&path, &link).unwrap();
        let roots = canonical(std::slice::from_ref(&store));
        let meta = fs::metadata(&path).unwrap();
        let (seen, child) = writer_while_a_child_appends(&roots, &meta, &link);
        assert_eq!(seen, Some(child));
    }
}
