//! A file written beside its target that takes the target's name only when it is complete.
//!
//! On Linux the file is made with `O_TMPFILE`: it has no name while it is written, so no
//! way of dying (SIGKILL, the out-of-memory killer, a power cut) leaves a half-written file
//! behind; the kernel frees it with the last descriptor. It is linked in under its name at
//! the end: straight to the target's name when nothing has it, else to a passing name that
//! is then renamed over the target (a SIGKILL in that moment leaves the passing name). If
//! the link is refused (a sandbox, a file system that links nothing through `/proc`), the
//! bytes are copied to a named file that takes the name instead.
//!
//! Where `O_TMPFILE` is not there (another system, a file system without it, no `/proc` to
//! link it through), the file is named `PREFIX` + random + `.tmp` and is removed when
//! dropped or on SIGINT, SIGTERM or SIGHUP, but a SIGKILL leaves it.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::signals::{self, TempGuard};

/// The name-to-be of a file made by [`beside`]. Drop it, or the file, to throw the file
/// away.
pub struct Temp {
    kind: Kind,
    /// For the name a replacing link goes through (see [`Temp::persist`]).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    prefix: String,
}

enum Kind {
    /// An `O_TMPFILE` file, reached through `/proc/self/fd` until it is linked in.
    #[cfg(target_os = "linux")]
    Unnamed {
        fd: i32,
    },
    Named(Guarded),
}

/// A new file in `target`'s directory, with `meta`'s permissions (or, for a new file, 0666
/// less the umask, as any new file gets), open for reading and writing.
pub fn beside(
    target: &Path,
    meta: Option<&fs::Metadata>,
    prefix: &str,
) -> io::Result<(File, Temp)> {
    made(target, meta, prefix, true)
}

/// [`beside`], where the tests can take the named way on Linux too.
fn made(
    target: &Path,
    meta: Option<&fs::Metadata>,
    prefix: &str,
    try_unnamed: bool,
) -> io::Result<(File, Temp)> {
    let dir = dir_of(target);
    #[cfg(not(target_os = "linux"))]
    let _ = try_unnamed;
    #[cfg(target_os = "linux")]
    let unnamed = try_unnamed.then(|| unnamed(dir)).flatten().map(|file| {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        (file, Kind::Unnamed { fd })
    });
    #[cfg(not(target_os = "linux"))]
    let unnamed = None;
    let (file, kind) = match unnamed {
        Some(made) => made,
        None => {
            let (file, path) = named(dir, prefix)?;
            (file, Kind::Named(Guarded::new(path)))
        }
    };
    if let Some(m) = meta {
        file.set_permissions(m.permissions())?;
    }
    let prefix = prefix.into();
    Ok((file, Temp { kind, prefix }))
}

impl Temp {
    /// A path that opens the file while it is being written (for reading it back).
    pub fn path(&self) -> PathBuf {
        match &self.kind {
            #[cfg(target_os = "linux")]
            Kind::Unnamed { fd } => proc_path(*fd),
            Kind::Named(named) => named.path.to_path_buf(),
        }
    }

    /// Gives `file` the name `to`, replacing whatever is there, atomically: a reader of
    /// `to` sees the old file or the new one, never a part.
    pub fn persist(self, file: File, to: &Path) -> io::Result<()> {
        match self.kind {
            #[cfg(target_os = "linux")]
            Kind::Unnamed { fd } => {
                same_file(&file, fd)?;
                match link(fd, to) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(_) => return copied(&file, &self.prefix, to)?.persist(to),
                    done => return done,
                }
                // Linking cannot replace, and renaming can: the file gets a name of its
                // own first, for the moment until the rename (a SIGKILL then leaves it).
                let step = tempfile::Builder::new()
                    .prefix(&self.prefix)
                    .suffix(".tmp")
                    .make_in(dir_of(to), |name| link(fd, name))?;
                let (_, step) = step.into_parts();
                Guarded::new(step).persist(to)
            }
            Kind::Named(named) => {
                drop(file);
                named.persist(to)
            }
        }
    }

    /// Gives `file` the name `to`, failing with [`io::ErrorKind::AlreadyExists`] if
    /// something has it already.
    pub fn persist_noclobber(self, file: File, to: &Path) -> io::Result<()> {
        match self.kind {
            #[cfg(target_os = "linux")]
            Kind::Unnamed { fd } => {
                same_file(&file, fd)?;
                match link(fd, to) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                        copied(&file, &self.prefix, to)?.persist_noclobber(to)
                    }
                    linked => linked,
                }
            }
            Kind::Named(named) => {
                drop(file);
                named.persist_noclobber(to)
            }
        }
    }
}

/// A named file about to take a target's name, removed on a signal or when dropped.
struct Guarded {
    path: tempfile::TempPath,
    _guard: TempGuard,
}

impl Guarded {
    fn new(path: tempfile::TempPath) -> Guarded {
        let _guard = signals::guard_temp(path.to_path_buf());
        Guarded { path, _guard }
    }

    fn persist(self, to: &Path) -> io::Result<()> {
        self.path.persist(to).map_err(|e| e.error)
    }

    fn persist_noclobber(self, to: &Path) -> io::Result<()> {
        match self.path.persist_noclobber(to) {
            Ok(_) => Ok(()),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => Err(e.error),
            // A file system that can neither rename without replacing nor link (some FUSE
            // ones) still renames: when nothing has the name, as before no-clobber was
            // asked for (a name taken in between is then replaced).
            Err(e) => match to.symlink_metadata() {
                Ok(_) => Err(io::ErrorKind::AlreadyExists.into()),
                Err(_) => e.path.persist(to).map_err(|e| e.error),
            },
        }
    }
}

/// The unnamed `file` could not be linked in (a sandbox, or a file system that refuses a
/// link through `/proc`): a named copy beside `to`, with its bytes, permissions, owner
/// and modification time, to take the name instead.
#[cfg(target_os = "linux")]
fn copied(file: &File, prefix: &str, to: &Path) -> io::Result<Guarded> {
    use std::io::Seek;
    let meta = file.metadata()?;
    let (mut copy, path) = named(dir_of(to), prefix)?;
    let guarded = Guarded::new(path);
    copy.set_permissions(meta.permissions())?;
    same_owner(&copy, &meta);
    let mut from = file;
    from.seek(io::SeekFrom::Start(0))?;
    io::copy(&mut from, &mut copy)?;
    copy.set_times(fs::FileTimes::new().set_modified(meta.modified()?))?;
    copy.sync_all()?;
    Ok(guarded)
}

/// Gives `file` the owner and group of `meta`'s file. Best effort: only root may give a
/// file away, and a user's own files are theirs already.
pub fn same_owner(file: &File, meta: &fs::Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
    }
    #[cfg(not(unix))]
    let _ = (file, meta);
}

/// The folder a file at `path` is in.
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `file` must be the file [`beside`] made, still open: its descriptor's number is what
/// gets linked, and another file may have that number once it is closed.
#[cfg(target_os = "linux")]
fn same_file(file: &File, fd: i32) -> io::Result<()> {
    match std::os::fd::AsRawFd::as_raw_fd(file) == fd {
        true => Ok(()),
        false => Err(io::Error::other("not the temporary file that was made")),
    }
}

/// A named temporary file in `dir`; the caller guards it against signals.
fn named(dir: &Path, prefix: &str) -> io::Result<(File, tempfile::TempPath)> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(fs::Permissions::from_mode(0o666));
    }
    Ok(b.tempfile_in(dir)?.into_parts())
}

/// An `O_TMPFILE` file in `dir`, if the file system makes one and `/proc` shows it. Any
/// failure means the named way is used, which reports its own errors.
#[cfg(target_os = "linux")]
fn unnamed(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o666)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .ok()?;
    fs::metadata(proc_path(std::os::fd::AsRawFd::as_raw_fd(&file))).ok()?;
    Some(file)
}

#[cfg(target_os = "linux")]
fn proc_path(fd: i32) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// Links the open file `fd` in as `to` (linkat(2) through `/proc`, which needs no
/// privilege, unlike `AT_EMPTY_PATH`).
#[cfg(target_os = "linux")]
fn link(fd: i32, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let from = CString::new(proc_path(fd).into_os_string().into_vec()).map_err(io::Error::other)?;
    let to = CString::new(to.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))?;
    // SAFETY: both are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// Whether the unnamed way is tried.
    const WAYS: [bool; 2] = [true, false];

    fn beside(target: &Path, meta: Option<&fs::Metadata>, way: bool) -> (File, Temp) {
        made(target, meta, ".sess-", way).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_file_is_readable_while_written_and_named_only_when_persisted() {
        for way in WAYS {
            let dir = tempfile::tempdir().unwrap();
            let to = dir.path().join("out");
            let (mut file, temp) = beside(&to, None, way);
            file.write_all(b"abc").unwrap();
            let unnamed = names(dir.path()).is_empty();
            // (Where TMPDIR's file system has no O_TMPFILE, the named way is taken.)
            #[cfg(target_os = "linux")]
            assert_eq!(unnamed, way && super::unnamed(dir.path()).is_some());
            assert!(unnamed || names(dir.path())[0].starts_with(".sess-"));
            let mut back = String::new();
            File::open(temp.path())
                .unwrap()
                .read_to_string(&mut back)
                .unwrap();
            assert_eq!(back, "abc");
            temp.persist(file, &to).unwrap();
            assert_eq!(names(dir.path()), ["out"]);
            assert_eq!(fs::read(&to).unwrap(), b"abc");
        }
    }

    #[test]
    fn persisting_replaces_a_file_and_leaves_nothing_else() {
        for way in WAYS {
            let dir = tempfile::tempdir().unwrap();
            let to = dir.path().join("out");
            fs::write(&to, b"old").unwrap();
            let (mut file, temp) = beside(&to, None, way);
            file.write_all(b"new").unwrap();
            temp.persist(file, &to).unwrap();
            assert_eq!(names(dir.path()), ["out"]);
            assert_eq!(fs::read(&to).unwrap(), b"new");
        }
    }

    #[test]
    fn persisting_without_clobbering_refuses_a_name_in_use() {
        for way in WAYS {
            let dir = tempfile::tempdir().unwrap();
            let to = dir.path().join("out");
            fs::write(&to, b"old").unwrap();
            let (file, temp) = beside(&to, None, way);
            let e = temp.persist_noclobber(file, &to).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
            assert_eq!(names(dir.path()), ["out"]);
            assert_eq!(fs::read(&to).unwrap(), b"old");
            let (file, temp) = beside(&to, None, way);
            temp.persist_noclobber(file, &dir.path().join("new"))
                .unwrap();
            assert_eq!(names(dir.path()), ["new", "out"]);
        }
    }

    #[test]
    fn a_dropped_file_leaves_nothing() {
        for way in WAYS {
            let dir = tempfile::tempdir().unwrap();
            let (mut file, temp) = beside(&dir.path().join("out"), None, way);
            file.write_all(b"abc").unwrap();
            drop((file, temp));
            assert_eq!(names(dir.path()), Vec::<String>::new());
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_that_cannot_be_linked_in_is_copied_whole() {
        use std::io::Seek;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("out");
        let (mut file, _temp) = beside(&to, None, true);
        file.write_all(b"all of it").unwrap();
        file.set_permissions(fs::Permissions::from_mode(0o640))
            .unwrap();
        let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        file.set_times(fs::FileTimes::new().set_modified(then))
            .unwrap();
        file.seek(io::SeekFrom::Start(4)).unwrap();
        copied(&file, ".sess-", &to).unwrap().persist(&to).unwrap();
        assert_eq!(fs::read(&to).unwrap(), b"all of it");
        let meta = fs::metadata(&to).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
        assert_eq!(meta.modified().unwrap(), then);
        assert_eq!(names(dir.path()), ["out"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_takes_the_permissions_it_is_given() {
        use std::os::unix::fs::PermissionsExt;
        for way in WAYS {
            let dir = tempfile::tempdir().unwrap();
            let to = dir.path().join("out");
            fs::write(&to, b"old").unwrap();
            fs::set_permissions(&to, fs::Permissions::from_mode(0o640)).unwrap();
            let meta = fs::metadata(&to).unwrap();
            let (file, temp) = beside(&to, Some(&meta), way);
            temp.persist(file, &to).unwrap();
            let mode = fs::metadata(&to).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
    }
}
