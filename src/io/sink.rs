//! Where output goes: stdout, or the file `-o` names.
//!
//! - A regular file (or a path that does not exist yet) is written to a temporary file
//!   beside it that takes its name only when the command succeeds ([`Sink::finish`]), so
//!   an error or a signal never leaves a half-written output (see [`super::temp`]: on
//!   Linux not even a SIGKILL does).
//! - A symbolic link is followed: its target is replaced, atomically, and the link stays.
//! - A device, FIFO or socket (`-o /dev/null`, a named pipe with a reader) is written
//!   through: no temporary file, no rename.
//! - A file that is also an input is refused: renaming over it would read and replace it
//!   at once.
//! - What was checked at the start is checked again at the rename ([`put_in_place`]): a
//!   file created meanwhile is not replaced without `-f`, and a file a streaming writer
//!   holds locked is never replaced.
//!
//! A streaming sink ([`Sink::streaming`]) writes the file where it stands, because every
//! frame flushed must survive a crash. It takes an exclusive lock on the file, so two
//! writers cannot interleave, and creates (or truncates) it only when the first bytes are
//! ready, so an input that fails at once leaves an existing file untouched.

use std::fs::{self, File};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Place, Result};

use super::behind::Behind;
use super::temp::{self, Temp};

/// One block of [`Behind`]: written here or there, output is written at the same points.
const BUFFER: usize = super::behind::BLOCK;

/// A target's bytes on their way: buffered here, or written behind on a thread of its own
/// ([`Sink::behind`]).
enum Buffered<W: Write + Send + 'static> {
    Here(BufWriter<W>),
    Behind(Behind<W>),
}

impl<W: Write + Send + 'static> Buffered<W> {
    fn new(inner: W) -> Buffered<W> {
        Buffered::Here(BufWriter::with_capacity(BUFFER, inner))
    }

    fn behind(self) -> io::Result<Buffered<W>> {
        Ok(match self {
            Buffered::Here(w) => {
                Buffered::Behind(Behind::new(w.into_inner().map_err(|e| e.into_error())?))
            }
            behind => behind,
        })
    }

    /// Everything written, through to the writer, which is given back.
    fn into_inner(self) -> io::Result<W> {
        match self {
            Buffered::Here(w) => w.into_inner().map_err(|e| e.into_error()),
            Buffered::Behind(w) => w.finish(),
        }
    }

    /// Waits for what was handed over to be written, and says whether that failed (see
    /// [`Behind::settle`]); a `BufWriter` writes as it goes.
    fn settle(&mut self) -> io::Result<()> {
        match self {
            Buffered::Here(_) => Ok(()),
            Buffered::Behind(w) => w.settle(),
        }
    }

    fn as_write(&mut self) -> &mut dyn Write {
        match self {
            Buffered::Here(w) => w,
            Buffered::Behind(w) => w,
        }
    }
}

enum Target {
    Stdout(Buffered<io::Stdout>),
    Atomic {
        writer: Buffered<File>,
        temp: Temp,
        /// The file the temporary file replaces (a symlink's target).
        path: PathBuf,
        existing: Existing,
    },
    Direct(Buffered<File>),
    InPlace(InPlace),
}

/// An output that must be finished with [`Sink::finish`]. Dropping it unfinished leaves the
/// target as it was (for a file written through a temporary file).
pub struct Sink {
    target: Target,
    /// The name used in messages: `stdout`, or the path as given.
    name: String,
    /// Bytes written so far, for reports.
    written: u64,
}

impl Sink {
    /// Stdout.
    pub fn stdout() -> Sink {
        Sink {
            target: Target::Stdout(Buffered::new(io::stdout())),
            name: "stdout".into(),
            written: 0,
        }
    }

    /// `None` or `-` is stdout. `inputs` are the files read, which the output must not be.
    pub fn open(path: Option<&Path>, inputs: &[PathBuf], existing: Existing) -> Result<Sink> {
        let (name, real, meta) = match resolve(path, inputs, existing)? {
            Resolved::Done(sink) => return Ok(sink),
            Resolved::File { name, real, meta } => (name, real, meta),
        };
        let (file, temp) = temp::beside(&real, meta.as_ref(), ".sess-").at(
            Place::file(&name),
            "cannot create a temporary file beside it",
        )?;
        if meta.is_none() {
            narrow_to_inputs(&file, inputs).at(Place::file(&name), "cannot set its permissions")?;
        }
        Ok(Sink {
            target: Target::Atomic {
                writer: Buffered::new(file),
                temp,
                path: real,
                existing,
            },
            name,
            written: 0,
        })
    }

    /// A file written in place for a stream (see the module docs); `None` or `-` is stdout.
    /// With `fsync`, every flush also syncs the file's data to disk.
    pub fn streaming(
        path: Option<&Path>,
        inputs: &[PathBuf],
        existing: Existing,
        fsync: bool,
    ) -> Result<Sink> {
        let (name, real, meta) = match resolve(path, inputs, existing)? {
            Resolved::Done(sink) => return Ok(sink),
            Resolved::File { name, real, meta } => (name, real, meta),
        };
        let mut in_place = InPlace {
            path: real,
            file: None,
            truncated: false,
            fsync,
            inputs: match meta {
                Some(_) => Vec::new(),
                None => inputs.to_vec(),
            },
            new_only: meta.is_none() && existing == Existing::Refuse,
        };
        // An existing file is locked now, so a second writer fails before it reads anything.
        if meta.is_some() {
            in_place.lock().at(Place::file(&name), "cannot lock")?;
        }
        Ok(Sink {
            target: Target::InPlace(in_place),
            name,
            written: 0,
        })
    }

    /// The same output, written on a thread of its own (a file being written in place for
    /// a stream is not: each of its flushes must reach the file before the next line is
    /// read).
    pub fn behind(mut self) -> Result<Sink> {
        let place = Place::file(&self.name);
        self.target = match self.target {
            Target::Stdout(w) => Target::Stdout(w.behind().at(Place::stdout(), "cannot write")?),
            Target::Direct(w) => Target::Direct(w.behind().at(place, "cannot write")?),
            Target::Atomic {
                writer,
                temp,
                path,
                existing,
            } => Target::Atomic {
                writer: writer.behind().at(place, "cannot write")?,
                temp,
                path,
                existing,
            },
            in_place @ Target::InPlace(_) => in_place,
        };
        Ok(self)
    }

    /// For output written behind: waits for what was handed over to be written, and says
    /// whether that failed (see [`Behind::settle`]). Other output is written as it goes.
    pub fn settle(&mut self) -> io::Result<()> {
        let settled = match &mut self.target {
            Target::Stdout(w) => w.settle(),
            Target::Direct(w) | Target::Atomic { writer: w, .. } => w.settle(),
            Target::InPlace(_) => Ok(()),
        };
        settled.map_err(|e| self.named(e))
    }

    /// The bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Whether the output has been touched: false only for a streaming file that no bytes
    /// have reached yet (it is then as it was before the command ran).
    pub fn touched(&self) -> bool {
        match &self.target {
            Target::InPlace(w) => w.truncated,
            _ => true,
        }
    }

    /// The name of the output in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Refuses binary output to a terminal, as zstd does.
    pub fn refuse_terminal(&self, what: &str) -> Result<()> {
        if matches!(self.target, Target::Stdout(_)) && io::stdout().is_terminal() {
            return Err(Error::Output {
                path: "stdout".into(),
                message: format!(
                    "refusing to write {what} to a terminal; use -o FILE or redirect stdout"
                ),
            });
        }
        Ok(())
    }

    /// Flushes and, for a file, syncs and renames it into place.
    pub fn finish(self) -> Result<()> {
        let place = || Place::file(&self.name);
        match self.target {
            Target::Stdout(w) => w
                .into_inner()
                .and_then(|mut out| out.flush())
                .at(Place::stdout(), "cannot write to stdout"),
            Target::Direct(w) => w.into_inner().map(drop).at(place(), "cannot write"),
            Target::Atomic {
                writer,
                temp,
                path,
                existing,
            } => {
                let file = writer.into_inner().at(place(), "cannot write")?;
                file.sync_all().at(place(), "cannot sync")?;
                put_in_place(temp, file, &path, existing).map_err(|message| Error::Output {
                    path: self.name.clone(),
                    message,
                })?;
                sync_dir(&path);
                Ok(())
            }
            Target::InPlace(mut w) => {
                let f = w.open().at(place(), "cannot open")?;
                f.sync_all().at(place(), "cannot sync")
            }
        }
    }

    fn raw(&mut self) -> &mut dyn Write {
        match &mut self.target {
            Target::Stdout(w) => w.as_write(),
            Target::Direct(w) | Target::Atomic { writer: w, .. } => w.as_write(),
            Target::InPlace(w) => w,
        }
    }

    /// Names the output in a write error, keeping its kind (a closed pipe stays one).
    fn named(&self, e: io::Error) -> io::Error {
        let what = if matches!(self.target, Target::Stdout(_)) {
            "cannot write to stdout".to_string()
        } else {
            format!("{}: cannot write", self.name)
        };
        io::Error::new(e.kind(), format!("{what}: {e}"))
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.raw().write(buf).map_err(|e| self.named(e))?;
        self.written += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.raw().write_all(buf).map_err(|e| self.named(e))?;
        self.written += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.raw().flush().map_err(|e| self.named(e))
    }
}

/// Why an output without `-f` fails when another took its name while the command ran.
const MADE_MEANWHILE: &str = "was created while this command ran; not replaced (-f replaces it)";

/// Renames the finished temporary file over `path`, checking again what was checked when the
/// command began, as the name may have changed hands since: without `-f` a file that
/// appeared meanwhile is not replaced (another command's output), and a file that a
/// streaming writer holds locked is never replaced (its later writes would go to a file
/// no name reaches). The lock is held through the rename, so no such writer begins on the
/// old file in between.
fn put_in_place(
    temp: Temp,
    file: File,
    path: &Path,
    existing: Existing,
) -> std::result::Result<(), String> {
    match existing {
        Existing::Refuse => temp
            .persist_noclobber(file, path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => MADE_MEANWHILE.into(),
                _ => format!("cannot put the temporary file in place: {e}"),
            }),
        Existing::Replace => {
            let _held = lock_existing(path).map_err(|e| format!("{e}; not replaced"))?;
            temp.persist(file, path)
                .map_err(|e| format!("cannot put the temporary file in place: {e}"))
        }
    }
}

/// The file at `path` opened and locked as a streaming writer locks its output. `None` when
/// there is no file there, or its lock cannot be tried at all (it cannot be opened, or its
/// file system has no locks): then it is replaced as it was before the lock was looked at.
/// Opened for reading, else for writing (over NFS a lock needs a file open for writing).
fn lock_existing(path: &Path) -> io::Result<Option<File>> {
    for write in [false, true] {
        let Ok(f) = fs::OpenOptions::new().read(!write).write(write).open(path) else {
            continue;
        };
        if try_lock(&f)? {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

/// Takes the exclusive lock a streaming writer holds on its output: true once taken, false
/// when it cannot be tried, an error when another process holds it.
fn try_lock(f: &File) -> io::Result<bool> {
    match f.try_lock() {
        Ok(()) => Ok(true),
        Err(fs::TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "another process is writing this file (it holds a lock on it)",
        )),
        Err(fs::TryLockError::Error(_)) => Ok(false),
    }
}

/// Takes from a new output file any permission for group or others that one of the inputs
/// lacks, as zstd gives its output the input's mode: a log readable by its owner alone stays
/// so once packed (logs hold what agents read and wrote, secrets included). Never adds one.
fn narrow_to_inputs(file: &File, inputs: &[PathBuf]) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode() & 0o7777;
        let allowed = inputs
            .iter()
            .filter_map(|i| fs::metadata(i).ok())
            .filter(fs::Metadata::is_file)
            // The owner's bits are the owner's: a read-only input is no reason for a
            // read-only output.
            .fold(0o7777, |m, meta| m & (meta.permissions().mode() | 0o700));
        if mode & allowed != mode {
            file.set_permissions(fs::Permissions::from_mode(mode & allowed))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, inputs);
    Ok(())
}

/// A file written where it stands, created, locked and truncated at the first write.
struct InPlace {
    path: PathBuf,
    file: Option<File>,
    truncated: bool,
    fsync: bool,
    /// The inputs whose permissions a file created here may not exceed.
    inputs: Vec<PathBuf>,
    /// The file was not there at the start, and may not be replaced (no `-f`).
    new_only: bool,
}

impl InPlace {
    /// Opens the file without truncating it and takes the lock.
    fn lock(&mut self) -> io::Result<()> {
        if self.file.is_some() {
            return Ok(());
        }
        // Without -f, a file that was not there at the start is created here or not at all.
        let f = fs::OpenOptions::new()
            .write(true)
            .create(!self.new_only)
            .create_new(self.new_only)
            .truncate(false)
            .open(&self.path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => io::Error::new(e.kind(), MADE_MEANWHILE),
                _ => e,
            })?;
        try_lock(&f)
            .map_err(|e| io::Error::new(e.kind(), format!("{e}; choose another output")))?;
        narrow_to_inputs(&f, &std::mem::take(&mut self.inputs))?;
        self.file = Some(f);
        Ok(())
    }

    /// Locks and truncates, once: the first bytes are ready.
    fn open(&mut self) -> io::Result<&File> {
        self.lock()?;
        let f = self.file.as_ref().expect("locked above");
        if !self.truncated {
            // Truncating a file another process is reading destroys what it has yet to
            // read: `cat F | sess pack -o F -f` lost F; and a writer's next lines would land
            // after the frames. Once the first bytes are here, a reader that feeds this
            // stream has opened it, and is still short of its end unless all it read is
            // already in the pipe. (A reader that opens it later, as `cat log F | sess pack
            // -o F -f` does, is not seen.)
            if f.metadata()?.len() > 0
                && let Some(pid) = crate::io::writers::unfinished_user_of(&self.path)
            {
                return Err(io::Error::other(format!(
                    "process {pid} is reading or writing it (is it this stream's input, as in \
                     `cat F | sess pack -o F -f`?): a stream is written in place, which would \
                     destroy what that process has yet to read, or mix in what it writes; not \
                     replaced"
                )));
            }
            f.set_len(0)?;
            self.truncated = true;
        }
        Ok(f)
    }
}

impl Write for InPlace {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut f = self.open()?;
        f.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &self.file {
            Some(f) if self.fsync && self.truncated => f.sync_data(),
            _ => Ok(()),
        }
    }
}

/// Where `-o` leads: stdout or a device (a sink already), or a regular file (or none yet)
/// with its name, its real path (links followed) and what is there now.
enum Resolved {
    Done(Sink),
    File {
        name: String,
        real: PathBuf,
        meta: Option<fs::Metadata>,
    },
}

/// Whether a sink may replace a regular file that exists (devices and FIFOs are written to
/// whatever this says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refused, as zstd refuses without `-f`: a typo must not cost a file.
    Refuse,
    Replace,
}

fn resolve(path: Option<&Path>, inputs: &[PathBuf], existing: Existing) -> Result<Resolved> {
    let Some(p) = path.filter(|p| p.as_os_str() != "-") else {
        return Ok(Resolved::Done(Sink::stdout()));
    };
    let name = p.display().to_string();
    let real = resolve_links(p).at(Place::file(&name), "cannot follow the link")?;
    // A link to no path (`/dev/stdout` on a pipe reads `pipe:[N]`) is followed by the
    // kernel only: to a FIFO or a socket, written as it is.
    let meta = fs::metadata(&real).ok().or_else(|| fs::metadata(p).ok());
    if let Some(m) = &meta {
        check_target(&name, m, inputs, existing)?;
        if !m.is_file() {
            let w = Buffered::new(open_direct(p)?);
            return Ok(Resolved::Done(Sink {
                target: Target::Direct(w),
                name,
                written: 0,
            }));
        }
    }
    Ok(Resolved::File { name, real, meta })
}

/// Refuses a target that is a directory or one of the inputs, and an existing file unless
/// it may be replaced.
fn check_target(
    name: &str,
    target: &fs::Metadata,
    inputs: &[PathBuf],
    existing: Existing,
) -> Result<()> {
    let refuse = |message: &str| {
        Err(Error::Output {
            path: name.to_string(),
            message: message.to_string(),
        })
    };
    if target.is_dir() {
        return refuse("is a directory");
    }
    if target.is_file()
        && inputs
            .iter()
            .filter_map(|i| fs::metadata(i).ok())
            .any(|m| same_file(&m, target))
    {
        return refuse(
            "is also an input; write to another file (sess never reads and replaces a file at \
             once)",
        );
    }
    if target.is_file() && existing == Existing::Refuse {
        return refuse("already exists; -f (--force) replaces it");
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.len() == b.len()
        && a.modified().ok() == b.modified().ok()
        && a.created().ok() == b.created().ok()
}

/// A device or FIFO, opened for writing as it is.
fn open_direct(p: &Path) -> Result<File> {
    fs::OpenOptions::new().write(true).open(p).at(
        Place::file(&p.display().to_string()),
        "cannot open for writing",
    )
}

/// Follows symbolic links to the file they name (which may not exist yet).
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Makes a rename durable. Best effort: not every file system lets a directory be synced.
pub fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(path: &Path, existing: Existing) -> Result<()> {
        let mut sink = Sink::open(Some(path), &[], existing)?;
        sink.write_all(b"ours\n").unwrap();
        sink.finish()
    }

    #[test]
    fn without_force_a_file_made_while_writing_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut sink = Sink::open(Some(&path), &[], Existing::Refuse).unwrap();
        sink.write_all(b"ours\n").unwrap();
        // Another command's output takes the name meanwhile.
        fs::write(&path, b"theirs\n").unwrap();
        let e = sink.finish().unwrap_err().to_string();
        assert!(e.contains("was created while this command ran"), "{e}");
        assert_eq!(fs::read(&path).unwrap(), b"theirs\n");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "a temporary file is left"
        );
        // Where nothing took the name, the output takes it.
        let fresh = dir.path().join("fresh");
        finished(&fresh, Existing::Refuse).unwrap();
        assert_eq!(fs::read(&fresh).unwrap(), b"ours\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_new_output_has_no_permission_its_inputs_lack() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private.jsonl");
        fs::write(&private, b"{}\n").unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
        let open = dir.path().join("open.jsonl");
        fs::write(&open, b"{}\n").unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o644)).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for (streaming, out) in [(false, "a.zst"), (true, "b.zst")] {
            let out = dir.path().join(out);
            let inputs = [open.clone(), private.clone()];
            let mut sink = match streaming {
                false => Sink::open(Some(&out), &inputs, Existing::Refuse).unwrap(),
                true => Sink::streaming(Some(&out), &inputs, Existing::Refuse, false).unwrap(),
            };
            sink.write_all(b"ours\n").unwrap();
            sink.finish().unwrap();
            assert_eq!(mode(&out), 0o600, "streaming: {streaming}");
        }
        // The owner's bits are not narrowed: a read-only input gives a writable output.
        let read_only = dir.path().join("read-only.jsonl");
        fs::write(&read_only, b"{}\n").unwrap();
        fs::set_permissions(&read_only, fs::Permissions::from_mode(0o444)).unwrap();
        let out = dir.path().join("c.zst");
        let mut sink = Sink::open(Some(&out), &[read_only], Existing::Refuse).unwrap();
        sink.write_all(b"ours\n").unwrap();
        sink.finish().unwrap();
        assert_eq!(mode(&out) & 0o600, 0o600);
        // A file replaced keeps its own.
        let kept = dir.path().join("kept.zst");
        fs::write(&kept, b"old\n").unwrap();
        fs::set_permissions(&kept, fs::Permissions::from_mode(0o640)).unwrap();
        let mut sink = Sink::open(
            Some(&kept),
            std::slice::from_ref(&private),
            Existing::Replace,
        )
        .unwrap();
        sink.write_all(b"ours\n").unwrap();
        sink.finish().unwrap();
        assert_eq!(mode(&kept), 0o640);
    }

    #[test]
    fn without_force_a_stream_does_not_replace_a_file_made_before_its_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut sink = Sink::streaming(Some(&path), &[], Existing::Refuse, false).unwrap();
        fs::write(&path, b"theirs\n").unwrap();
        // In place, its first bytes go straight to the file.
        let written = sink.write_all(b"ours\n").and_then(|()| sink.flush());
        let e = written.unwrap_err().to_string();
        assert!(e.contains("was created while this command ran"), "{e}");
        assert_eq!(fs::read(&path).unwrap(), b"theirs\n");
    }

    #[test]
    fn a_file_a_streaming_writer_holds_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        fs::write(&path, b"streamed\n").unwrap();
        // Locked as a streaming sink locks its file (a lock of its own open file).
        let writer = File::options().append(true).open(&path).unwrap();
        writer.try_lock().unwrap();
        let e = finished(&path, Existing::Replace).unwrap_err().to_string();
        assert!(e.contains("another process is writing this file"), "{e}");
        assert_eq!(fs::read(&path).unwrap(), b"streamed\n");
        // Once it lets go, -f replaces it.
        writer.unlock().unwrap();
        finished(&path, Existing::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"ours\n");
    }
}
