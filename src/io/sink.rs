//! Where output goes: stdout, or a file written atomically.
//!
//! A file is written to a temporary file in the same directory and renamed over the target
//! only when the command succeeds, so an error never leaves a half-written output.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tempfile::NamedTempFile;

const BUFFER: usize = 256 * 1024;

enum Target {
    Stdout(BufWriter<io::StdoutLock<'static>>),
    File {
        writer: BufWriter<NamedTempFile>,
        path: PathBuf,
    },
    /// Written where it stands, for streams whose every flushed frame must survive a crash.
    InPlace(BufWriter<File>),
}

/// An output that must be finished with [`Sink::finish`]. Dropping it unfinished discards a
/// file output (the temporary file is removed) and leaves the target untouched.
pub struct Sink {
    target: Target,
}

impl Sink {
    /// `None` or `-` is stdout.
    pub fn open(path: Option<&Path>) -> Result<Sink> {
        let target = match path {
            None => Target::Stdout(BufWriter::with_capacity(BUFFER, io::stdout().lock())),
            Some(p) if p.as_os_str() == "-" => {
                Target::Stdout(BufWriter::with_capacity(BUFFER, io::stdout().lock()))
            }
            Some(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                let temp = tempfile::Builder::new()
                    .prefix(".sess-")
                    .suffix(".tmp")
                    .tempfile_in(dir)
                    .with_context(|| format!("{}: cannot create a temporary file", p.display()))?;
                // A temporary file is private (0600); the output gets the target's
                // permissions, or the usual 0644 for a new file.
                let perms = std::fs::metadata(p)
                    .map(|m| m.permissions())
                    .ok()
                    .or_else(new_file_permissions);
                if let Some(perms) = perms {
                    temp.as_file()
                        .set_permissions(perms)
                        .with_context(|| format!("{}: cannot set permissions", p.display()))?;
                }
                Target::File {
                    writer: BufWriter::with_capacity(BUFFER, temp),
                    path: p.to_path_buf(),
                }
            }
        };
        Ok(Sink { target })
    }

    /// Writes `path` in place rather than through a temporary file: what has been flushed is
    /// on disk even if the process dies. For streaming, where each frame must survive a crash
    /// (an atomic rename would only happen at the end).
    pub fn open_in_place(path: &Path) -> Result<Sink> {
        let f = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
        Ok(Sink {
            target: Target::InPlace(BufWriter::with_capacity(BUFFER, f)),
        })
    }

    /// Refuses binary output to a terminal, as zstd does.
    pub fn refuse_terminal(&self, what: &str) -> Result<()> {
        if matches!(self.target, Target::Stdout(_)) && io::stdout().is_terminal() {
            bail!("refusing to write {what} to a terminal; use -o FILE or redirect stdout");
        }
        Ok(())
    }

    /// Flushes and, for a file, syncs and renames it into place.
    pub fn finish(self) -> Result<()> {
        match self.target {
            Target::Stdout(mut w) => w.flush().context("cannot write to stdout"),
            Target::File { writer, path } => {
                let temp = writer
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                temp.as_file()
                    .sync_all()
                    .with_context(|| format!("{}: cannot sync", path.display()))?;
                temp.persist(&path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("{}: cannot rename into place", path.display()))?;
                Ok(())
            }
            Target::InPlace(mut w) => {
                w.flush().context("cannot write the output")?;
                w.get_ref().sync_all().context("cannot sync the output")
            }
        }
    }

    /// The file underneath, for callers that need to sync a frame as they go.
    pub fn file(&mut self) -> Option<&File> {
        match &mut self.target {
            Target::Stdout(_) => None,
            Target::File { writer, .. } => Some(writer.get_ref().as_file()),
            Target::InPlace(w) => Some(w.get_ref()),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.target {
            Target::Stdout(w) => w.write(buf),
            Target::File { writer, .. } => writer.write(buf),
            Target::InPlace(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.target {
            Target::Stdout(w) => w.write_all(buf),
            Target::File { writer, .. } => writer.write_all(buf),
            Target::InPlace(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.target {
            Target::Stdout(w) => w.flush(),
            Target::File { writer, .. } => writer.flush(),
            Target::InPlace(w) => w.flush(),
        }
    }
}

#[cfg(unix)]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn new_file_permissions() -> Option<std::fs::Permissions> {
    None
}

/// Whether an error comes from writing to a closed pipe (`sess cat x | head -1`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
