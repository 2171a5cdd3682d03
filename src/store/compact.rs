//! `sess compact`: replaces cold logs by their packed form, losslessly, and puts them back.
//!
//! For each log, in this order, so that a crash or a signal at any point leaves it either
//! as it was or compacted and verified (never missing, never half-written):
//!
//! 1. skip it when it is recent, open for writing in another process, or already there
//!    in packed form (then only finish what an interrupted run left);
//! 2. pack it to a temporary file beside it (one without a name on Linux, see
//!    [`crate::io::temp`]; `.sess-compact-*.tmp` elsewhere), sync that;
//! 3. verify: unpack the temporary file and compare every byte with the log;
//! 4. check that the log did not change meanwhile and nobody opened it for writing;
//! 5. link the temporary file to its name (never over a file there), sync the folder;
//! 6. append the compaction to the journal ([`super::journal`]), synced;
//! 7. rename the log aside (a producer that opens it by name from then on makes a new
//!    one), scan the writers again, check its size and time once more, then remove it and
//!    sync the folder; on a change, put it back and take the packed form away.
//!
//! A run that finds a log beside its packed form (a run interrupted between 5 and 7)
//! verifies the packed form against the log again before it removes the log. Undo runs
//! the same steps the other way, from the journal: the packed form is unpacked beside it,
//! checked against the size and crc32 the journal holds, linked into place, and only then
//! removed.

use std::fs::{self, File, FileTimes};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::journal::{self, Journal, Op, Record};
use super::{Log, OWN_PREFIX, Stored};
use crate::event::{self, LastLine};
use crate::frames::reader::Recovery;
use crate::frames::writer::{DEFAULT_FRAME_SIZE, FrameOptions, FrameWriter};
use crate::input::{Flow, Input, OpenOptions};
use crate::intern;
use crate::io::sink::sync_dir;
use crate::io::temp::{self, same_owner};
use crate::io::writers::{self, Writers, changed};
use crate::pack::{self, Interning, Out, Packer};
use crate::stats::ByteCount;
use crate::syntax::LineCheck;

/// The prefix of compact's temporary files; a run removes the ones a crash left.
pub const TEMP_PREFIX: &str = ".sess-compact-";

const _: () = assert!(TEMP_PREFIX.len() > OWN_PREFIX.len());

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// What a log is replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// Full sess packing: rows, interning, frames and index (`FILE.sess.zst`).
    Sess,
    /// Plain zstd frames of the log's own lines, no rows (`FILE.zst`): what a producer
    /// that reads zstd reads.
    Compat,
}

impl Form {
    pub fn suffix(self) -> &'static str {
        match self {
            Form::Sess => ".sess.zst",
            Form::Compat => ".zst",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Form::Sess => "sess",
            Form::Compat => "compat",
        }
    }

    fn from_name(name: &str) -> Option<Form> {
        [Form::Sess, Form::Compat]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub form: Form,
    /// Logs modified more recently than this are left alone.
    pub older_than: Duration,
    /// zstd level.
    pub level: i32,
    /// Do it; otherwise only say what would be done (nothing is written).
    pub apply: bool,
    /// Compress frames on a second thread.
    pub compress_thread: bool,
    pub now: SystemTime,
}

/// What happened to one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Compacted,
    WouldCompact,
    /// An interrupted run had put the packed form in place; the log is now removed.
    Finished,
    Restored,
    Skipped,
    Failed,
}

/// Why a log was skipped, as reports count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    Recent,
    OpenForWriting,
    /// It is compressed already (its name says so).
    Compressed,
    /// Packed, it would not be smaller.
    NoGain,
    /// Something else has the packed form's name.
    TargetExists,
    /// It changed while it was packed.
    Changed,
    /// Its packed form would not unpack to the same bytes (it holds packed rows itself).
    NotExact,
    /// It has other names (hard links), which a packed form in its place would split off.
    HardLinked,
    /// Its name is not UTF-8, so the journal could not name it exactly.
    Name,
    /// Another run is at work on a folder inside this one that holds it.
    Busy,
}

/// Why a log is left alone as [`Why::NotExact`].
const NOT_EXACT: &str = "its packed form would not unpack to the same bytes";

/// One log's outcome, as printed.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    #[serde(serialize_with = "lossy")]
    pub into: PathBuf,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<Why>,
    /// What it says in words (the reason, the error).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    pub bytes: u64,
    pub packed_bytes: Option<u64>,
}

/// A path in a report, as text (a name that is not UTF-8 gets U+FFFD where it is not).
fn lossy<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// One root's run: its journal (when applying), and who writes what.
struct Run<'a> {
    root: &'a Path,
    opts: &'a Options,
    journal: Option<Journal>,
    roots: Vec<PathBuf>,
    writers: Writers,
    scanned: Instant,
}

/// How long a scan of `/proc` is trusted before a log is packed; the last check before a
/// log is removed always scans again.
const SCAN_AGE: Duration = Duration::from_millis(500);

/// Compacts the `logs` found under `root`, calling `each` with every outcome; an error
/// from `each` (its output failed) stops the run after the log it was called for.
pub fn compact(
    root: &Path,
    logs: &[Log],
    opts: &Options,
    mut each: impl FnMut(&Step) -> io::Result<()>,
) -> io::Result<()> {
    let journal = if opts.apply {
        let j = Journal::open(root, true)?.expect("created");
        remove_stale_temps(root, &j);
        Some(j)
    } else {
        None
    };
    let roots = writers::canonical(&[root.to_path_buf()]);
    let mut run = Run {
        root,
        opts,
        journal,
        writers: Writers::scan(&roots),
        roots,
        scanned: Instant::now(),
    };
    for log in logs {
        each(&run.one(log))?;
    }
    // A journal nothing was written to is not left behind.
    if let Some(j) = &run.journal
        && j.is_empty()
    {
        fs::remove_file(j.path())?;
    }
    Ok(())
}

impl Run<'_> {
    fn one(&mut self, log: &Log) -> Step {
        let into = packed_name(&log.path, self.opts.form);
        let mut step = Step {
            path: log.path.clone(),
            into: into.clone(),
            action: Action::Skipped,
            why: None,
            message: String::new(),
            bytes: log.size,
            packed_bytes: None,
        };
        match self.try_one(log, &into, &mut step) {
            Ok(()) => {}
            Err(e) => {
                step.action = Action::Failed;
                step.message = e.to_string();
            }
        }
        step
    }

    fn try_one(&mut self, log: &Log, into: &Path, step: &mut Step) -> Result<(), Failure> {
        match log.stored() {
            Stored::Plain => {}
            Stored::Compressed => {
                return skip(step, Why::Compressed, "compressed already");
            }
            Stored::Misnamed => {
                let why = "named as compressed, but plain text (rename it to compact it)";
                return skip(step, Why::Compressed, why);
            }
        }
        if self.journal.is_some()
            && let Some(folder) = busy_below(self.root, &log.path)
        {
            return skip(step, Why::Busy, &busy_message(folder));
        }
        if log
            .path
            .strip_prefix(self.root)
            .unwrap_or(&log.path)
            .to_str()
            .is_none()
        {
            return skip(step, Why::Name, "its name is not UTF-8");
        }
        let meta = fs::symlink_metadata(&log.path)?;
        if links(&meta) > 1 {
            return skip(step, Why::HardLinked, "it has other names (hard links)");
        }
        let age = self
            .opts
            .now
            .duration_since(meta.modified()?)
            .unwrap_or_default();
        if age < self.opts.older_than {
            let days = age.as_secs_f64() / 86_400.0;
            return skip(step, Why::Recent, &format!("modified {days:.1} days ago"));
        }
        let other = packed_name(&log.path, other_form(self.opts.form));
        if into.exists() || other.exists() {
            let there = if into.exists() { into } else { &other };
            return self.resume(log, there, step);
        }
        if let Some(pid) = self.writer(&meta, false) {
            return skip(
                step,
                Why::OpenForWriting,
                &format!("open for writing by process {pid}"),
            );
        }
        if !self.opts.apply {
            let (packed, unpacks_to) = pack_to(&log.path, ByteCount::default(), self.opts)?;
            let packed = packed.0;
            step.packed_bytes = Some(packed);
            // What --apply finds unpacking the packed form, told without writing it.
            if unpacks_to != log.size {
                return skip(step, Why::NotExact, NOT_EXACT);
            }
            if packed >= log.size {
                return skip(step, Why::NoGain, "would not be smaller");
            }
            step.action = Action::WouldCompact;
            return Ok(());
        }
        self.replace(log, &meta, into, step)
    }

    /// Steps 2 to 7 of the module's list.
    fn replace(
        &mut self,
        log: &Log,
        meta: &fs::Metadata,
        into: &Path,
        step: &mut Step,
    ) -> Result<(), Failure> {
        let (file, temp) = temp::beside(into, Some(meta), &temp_prefix())?;
        let file = pack_to(&log.path, file, self.opts)?.0;
        file.sync_all()?;
        let packed = file.metadata()?.len();
        step.packed_bytes = Some(packed);
        let Some(crc) = same_bytes(&temp.path(), self.opts.form, &log.path)? else {
            if let Some((why, message)) = self.unchanged(log, meta)? {
                return skip(step, why, &message);
            }
            return skip(step, Why::NotExact, NOT_EXACT);
        };
        if packed >= log.size {
            return skip(step, Why::NoGain, "would not be smaller");
        }
        file.set_times(FileTimes::new().set_modified(meta.modified()?))?;
        same_owner(&file, meta);
        if let Some(why) = self.unchanged(log, meta)? {
            return skip(step, why.0, &why.1);
        }
        temp.persist_noclobber(file, into)?;
        sync_dir(into);
        if let Err(e) = self.record(log, meta, into, crc, packed) {
            // Not journalled, so not compacted: the packed form goes again.
            let _ = fs::remove_file(into);
            sync_dir(into);
            return Err(e.into());
        }
        if let Some((why, message)) = self.remove_log(log, meta)? {
            // Compacted and recorded, but the log moved on: the packed form goes.
            fs::remove_file(into)?;
            sync_dir(into);
            self.record_undo(log)?;
            return skip(step, why, &message);
        }
        step.action = Action::Compacted;
        Ok(())
    }

    /// A log found beside a packed form: an interrupted run's, when it unpacks to the log.
    fn resume(&mut self, log: &Log, there: &Path, step: &mut Step) -> Result<(), Failure> {
        step.into = there.to_path_buf();
        let form = form_of(there);
        let meta = fs::symlink_metadata(&log.path)?;
        let exists = || {
            format!(
                "{} exists and is not this log's packed form",
                there.display()
            )
        };
        if !is_packed_file(there, &meta)? {
            return skip(step, Why::TargetExists, &exists());
        }
        let Some(crc) = same_bytes(there, form, &log.path)? else {
            return skip(step, Why::TargetExists, &exists());
        };
        let packed = fs::metadata(there)?.len();
        step.packed_bytes = Some(packed);
        if !self.opts.apply {
            step.action = Action::WouldCompact;
            step.message = "an interrupted run left it beside its packed form".into();
            return Ok(());
        }
        if let Some(pid) = self.writer(&meta, true) {
            return skip(
                step,
                Why::OpenForWriting,
                &format!("open for writing by process {pid}"),
            );
        }
        if self.journal_last(log).is_none_or(|r| r.op != Op::Compact) {
            self.record(log, &meta, there, crc, packed)?;
        }
        if let Some((why, message)) = self.remove_log(log, &meta)? {
            // It changed since it was compared: the packed form is not its own any more.
            self.record_undo(log)?;
            step.message = message;
            step.why = Some(why);
            return Ok(());
        }
        step.action = Action::Finished;
        Ok(())
    }

    /// Removes the log unless it changed since `before` or a process holds it open for
    /// writing; says why when it does not. The log is first renamed aside, so that a
    /// producer that opens it by name from then on makes a new log instead of writing
    /// into the one removed; then the writers are scanned and the log, aside, checked
    /// against `before`; only then is it unlinked. On a change it is put back.
    fn remove_log(
        &mut self,
        log: &Log,
        before: &fs::Metadata,
    ) -> Result<Option<(Why, String)>, Failure> {
        if let Some(why) = self.unchanged(log, before)? {
            return Ok(Some(why));
        }
        let aside = aside_name(&log.path);
        fs::rename(&log.path, &aside)?;
        // Writers first, then the size: a producer that opened the log before the rename
        // either holds it still (the scan sees it) or has written and closed (the size
        // shows it).
        let writer = self.writer(before, true);
        let now = fs::symlink_metadata(&aside)?;
        let why = match writer {
            Some(pid) => Some((
                Why::OpenForWriting,
                format!("open for writing by process {pid}"),
            )),
            None if changed(&now, before)? => {
                Some((Why::Changed, "it changed while it was packed".into()))
            }
            None => None,
        };
        let Some(why) = why else {
            fs::remove_file(&aside)?;
            sync_dir(&log.path);
            return Ok(None);
        };
        // Back in place; a new log the producer made meanwhile is never replaced.
        match fs::hard_link(&aside, &log.path) {
            Ok(()) => fs::remove_file(&aside)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let kept = PathBuf::from(format!("{}.before-compact", log.path.display()));
                fs::hard_link(&aside, &kept)?;
                fs::remove_file(&aside)?;
                sync_dir(&log.path);
                return Err(format!(
                    "it was written to while it was removed: a new {} holds what came after, \
                     and {} what came before",
                    log.path.display(),
                    kept.display()
                )
                .into());
            }
            Err(e) => return Err(e.into()),
        }
        sync_dir(&log.path);
        Ok(Some(why))
    }

    /// Why the log may no longer be removed: it changed since `before`, or a process now
    /// holds it open for writing.
    fn unchanged(
        &mut self,
        log: &Log,
        before: &fs::Metadata,
    ) -> Result<Option<(Why, String)>, Failure> {
        let now = fs::symlink_metadata(&log.path)?;
        if writers::id_of(&now) != writers::id_of(before) || changed(&now, before)? {
            return Ok(Some((
                Why::Changed,
                "it changed while it was packed".into(),
            )));
        }
        Ok(self.writer(&now, true).map(|pid| {
            (
                Why::OpenForWriting,
                format!("open for writing by process {pid}"),
            )
        }))
    }

    fn writer(&mut self, meta: &fs::Metadata, fresh: bool) -> Option<u32> {
        if fresh || self.scanned.elapsed() > SCAN_AGE {
            self.writers = Writers::scan(&self.roots);
            self.scanned = Instant::now();
        }
        self.writers.writer_of(meta)
    }

    fn rel(&self, p: &Path) -> String {
        relative(self.root, p)
    }

    fn journal_last(&self, log: &Log) -> Option<&Record> {
        self.journal.as_ref()?.last(&self.rel(&log.path))
    }

    fn record(
        &mut self,
        log: &Log,
        meta: &fs::Metadata,
        into: &Path,
        crc32: u32,
        packed_bytes: u64,
    ) -> io::Result<()> {
        let r = Record {
            schema: journal::SCHEMA.into(),
            op: Op::Compact,
            path: self.rel(&log.path),
            into: self.rel(into),
            bytes: meta.len(),
            crc32,
            mtime_ns: nanos(meta.modified()?),
            packed_bytes,
            form: form_of(into).name().into(),
            at: journal::now(),
        };
        self.journal.as_mut().expect("applying").append(r)
    }

    fn record_undo(&mut self, log: &Log) -> io::Result<()> {
        let rel = self.rel(&log.path);
        let j = self.journal.as_mut().expect("applying");
        let r = j.last(&rel).expect("recorded").undone();
        j.append(r)
    }
}

/// Restores every log the journal of `root` says is compacted. When all are back, the
/// journal goes too, and the folder is as it was before the first run. False when `root`
/// has no journal (nothing was compacted with it as the folder).
pub fn undo(root: &Path, mut each: impl FnMut(&Step) -> io::Result<()>) -> io::Result<bool> {
    let Some(mut journal) = Journal::open(root, false)? else {
        return Ok(false);
    };
    remove_stale_temps(root, &journal);
    for line in journal.unreadable.clone() {
        each(&Step {
            path: journal.path().to_path_buf(),
            into: PathBuf::new(),
            action: Action::Failed,
            why: None,
            message: format!(
                "line {line} cannot be read: a log it recorded may still be packed (a \
                 FILE.jsonl.sess.zst or FILE.jsonl.zst with no FILE.jsonl beside it; \
                 'sess unpack' gives it back); the journal is kept"
            ),
            bytes: 0,
            packed_bytes: None,
        })?;
    }
    for record in journal.compacted() {
        let mut step = Step {
            path: root.join(&record.path),
            into: root.join(&record.into),
            action: Action::Restored,
            why: None,
            message: String::new(),
            bytes: record.bytes,
            packed_bytes: Some(record.packed_bytes),
        };
        if let Some(folder) = busy_below(root, &step.path) {
            step.action = Action::Skipped;
            step.why = Some(Why::Busy);
            step.message = busy_message(folder) + "; it stays packed until --undo runs again";
        } else if let Err(e) = restore(&step.path, &step.into, &record, &mut step.message) {
            step.action = Action::Failed;
            step.message = e.to_string();
        } else {
            journal.append(record.undone())?;
        }
        each(&step)?;
    }
    // Everything back as it was: so is the folder, without its journal.
    if journal.compacted().is_empty() && journal.unreadable.is_empty() {
        fs::remove_file(journal.path())?;
        sync_dir(journal.path());
    }
    Ok(true)
}

/// The folder below `root` holding `path` that another run is at work on, if any: its logs
/// are that run's.
fn busy_below<'a>(root: &Path, path: &'a Path) -> Option<&'a Path> {
    path.ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root) && *a != root)
        .find(|a| journal::busy(a))
}

fn busy_message(folder: &Path) -> String {
    format!("another sess compact is at work on {}", folder.display())
}

/// Puts the log back from its packed form (see the module docs for the order).
fn restore(log: &Path, packed: &Path, r: &Record, note: &mut String) -> Result<(), Failure> {
    let form = Form::from_name(&r.form).ok_or("the journal names an unknown form")?;
    match (log.exists(), packed.exists()) {
        (true, true) => {
            let (bytes, crc) = hash_file(log)?;
            if (bytes, crc) != (r.bytes, r.crc32) {
                return Err(
                    "the log and its packed form are both there, and the log is not \
                            the one compacted; both are left as they are"
                        .into(),
                );
            }
            *note = "the log was still there; its packed form is removed".into();
        }
        (true, false) => {
            *note = "already in place".into();
            return Ok(());
        }
        (false, false) => return Err("neither the log nor its packed form is there".into()),
        (false, true) => {
            let meta = fs::metadata(packed)?;
            let (file, temp) = temp::beside(log, Some(&meta), &temp_prefix())?;
            let mut out = Hashing::new(io::BufWriter::new(file));
            expand(packed, form, &mut out)?;
            let (w, bytes, crc) = out.finish();
            let file = w.into_inner().map_err(|e| e.into_error())?;
            if (bytes, crc) != (r.bytes, r.crc32) {
                return Err(format!(
                    "{} unpacks to {bytes} bytes with crc32 {crc:08x}, not the {} bytes with \
                     crc32 {:08x} compacted; the packed form is left as it is",
                    packed.display(),
                    r.bytes,
                    r.crc32
                )
                .into());
            }
            file.set_times(FileTimes::new().set_modified(from_nanos(r.mtime_ns)))?;
            same_owner(&file, &meta);
            file.sync_all()?;
            temp.persist_noclobber(file, log)?;
            sync_dir(log);
        }
    }
    fs::remove_file(packed)?;
    sync_dir(packed);
    Ok(())
}

/// Whether a file's size or modification time differs from `before`'s.
#[cfg(unix)]
fn links(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn links(_meta: &fs::Metadata) -> u64 {
    1
}

/// Whether `p` is a packed form: a regular file of its own (not a link to the log, nor
/// the log under another name) that starts as zstd does.
fn is_packed_file(p: &Path, log: &fs::Metadata) -> io::Result<bool> {
    let meta = fs::symlink_metadata(p)?;
    if !meta.is_file() || writers::id_of(&meta) == writers::id_of(log) {
        return Ok(false);
    }
    let mut head = [0u8; 4];
    let n = File::open(p)?.read(&mut head)?;
    Ok(n == 4 && crate::frames::walk::is_zstd(&head))
}

/// A name beside the log for it to wait under before it is removed: a temporary file's,
/// so that a crash leaves nothing a rerun does not remove.
fn aside_name(log: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = log.parent().unwrap_or(Path::new("."));
    dir.join(format!("{}aside-{n}.tmp", temp_prefix()))
}

/// The prefix of this process's temporary files: [`TEMP_PREFIX`] and the pid, so that a
/// run can tell the leftovers of a dead run from the files of a live one.
fn temp_prefix() -> String {
    format!("{TEMP_PREFIX}{}-", std::process::id())
}

fn skip(step: &mut Step, why: Why, message: &str) -> Result<(), Failure> {
    step.action = Action::Skipped;
    step.why = Some(why);
    step.message = message.to_string();
    Ok(())
}

fn other_form(form: Form) -> Form {
    match form {
        Form::Sess => Form::Compat,
        Form::Compat => Form::Sess,
    }
}

fn form_of(packed: &Path) -> Form {
    if packed.to_string_lossy().ends_with(Form::Sess.suffix()) {
        Form::Sess
    } else {
        Form::Compat
    }
}

/// `FILE` + the form's suffix.
pub fn packed_name(log: &Path, form: Form) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(form.suffix());
    PathBuf::from(name)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `p` relative to `root` (`root` itself a file: its name).
fn relative(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(r) if !r.as_os_str().is_empty() => r.to_string_lossy().into_owned(),
        _ => file_name(p),
    }
}

/// Removes the temporary files a crash left in `root`: only compact makes files of this
/// name, and one whose process still runs (a run on a folder inside this one) is left.
/// A log set aside (step 7) goes only when it is the log the journal recorded; else it
/// holds bytes written after it was packed, and is kept ([`keep_aside`]).
fn remove_stale_temps(root: &Path, journal: &Journal) {
    let walk = walkdir::WalkDir::new(root).follow_links(false);
    for e in walk.into_iter().flatten() {
        let name = e.file_name().to_string_lossy();
        let Some(rest) = name
            .strip_prefix(TEMP_PREFIX)
            .filter(|_| name.ends_with(".tmp"))
        else {
            continue;
        };
        if !e.file_type().is_file() || owner_runs(rest) {
            continue;
        }
        if rest.contains("-aside-") && !as_recorded(root, e.path(), journal) {
            keep_aside(e.path());
            continue;
        }
        let _ = fs::remove_file(e.path());
    }
}

/// Whether a log set aside holds what the journal recorded of a log compacted in its
/// folder (its packed form then holds every byte of it).
fn as_recorded(root: &Path, aside: &Path, journal: &Journal) -> bool {
    let Ok(found) = hash_file(aside) else {
        return false;
    };
    journal
        .compacted()
        .iter()
        .any(|r| root.join(&r.path).parent() == aside.parent() && (r.bytes, r.crc32) == found)
}

/// Keeps a log set aside that is not the one compacted, under a name no run removes
/// (never over a file there), and says so.
fn keep_aside(aside: &Path) {
    let name = aside.file_name().unwrap_or_default().to_string_lossy();
    let kept_name = format!(
        "{}.jsonl",
        name.trim_start_matches('.').trim_end_matches(".tmp")
    );
    let kept = aside.with_file_name(kept_name);
    if fs::hard_link(aside, &kept).is_ok() && fs::remove_file(aside).is_ok() {
        crate::io::tell!(
            "sess: warning: {}: a log an interrupted run set aside holds bytes the journal does \
             not know (written after it was packed?): kept as {}",
            aside.display(),
            kept.display()
        );
    }
}

/// Whether the process whose pid starts `rest` (`PID-...`) runs, as `/proc` says; a name
/// without one, or a system without `/proc`, says no.
fn owner_runs(rest: &str) -> bool {
    let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
    pid.is_some_and(|pid| pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists())
}

fn reading() -> OpenOptions {
    OpenOptions {
        quiet: true,
        recovery: Recovery::Absolute,
        collect_warnings: true,
        check: LineCheck::Off,
        read_ahead: false,
    }
}

/// Packs the log at `src` into `w` in `opts.form`.
/// Packs `src` into `w`; with the bytes its packed form unpacks to (the events read, each
/// with its newline): a log that holds packed rows or interned lines itself unpacks to
/// more than it is.
fn pack_to<W: Write + Send + 'static>(
    src: &Path,
    w: W,
    opts: &Options,
) -> Result<(W, u64), Failure> {
    let frames = FrameOptions {
        compress_thread: opts.compress_thread,
        ..FrameOptions::new(opts.level, DEFAULT_FRAME_SIZE)
    };
    let mut fw = FrameWriter::new(w, frames)?;
    match opts.form {
        Form::Compat => {
            let copied = io::copy(&mut File::open(src)?, &mut fw)?;
            Ok((fw.finish()?.0, copied))
        }
        Form::Sess => {
            let interning = Interning {
                min: intern::DEFAULT_MIN,
                window: intern::DEFAULT_WINDOW,
            };
            let mut out = Out::frames(fw, interning);
            let mut packer = Packer::default();
            let input = [Input::Path(src.to_path_buf())];
            pack::pack_files::<_, Failure>(
                &input,
                reading(),
                DEFAULT_FRAME_SIZE,
                1,
                &mut packer,
                &mut out,
            )?;
            Ok((out.finish()?, packer.counts().bytes))
        }
    }
}

/// Writes what the packed file `packed` holds: its events (`sess`), its bytes (`compat`).
fn expand(packed: &Path, form: Form, out: &mut impl Write) -> Result<(), Failure> {
    match form {
        Form::Compat => {
            let mut d = zstd::stream::read::Decoder::new(File::open(packed)?)?;
            io::copy(&mut d, out)?;
        }
        Form::Sess => {
            let input = [Input::Path(packed.to_path_buf())];
            // Its last line without a newline was told of, naming the log, when it packed.
            event::each_event::<Failure>(&input, reading(), LastLine::Rechecked, |_, ev| {
                out.write_all(ev.bytes)?;
                if ev.newline {
                    out.write_all(b"\n")?;
                }
                Ok(Flow::More)
            })?;
        }
    }
    Ok(())
}

/// Whether `packed` unpacks to exactly the bytes of `log`: the log's crc32 when it does.
fn same_bytes(packed: &Path, form: Form, log: &Path) -> Result<Option<u32>, Failure> {
    let mut cmp = Compare {
        log: BufReader::with_capacity(1 << 20, File::open(log)?),
        buf: Vec::new(),
        crc: crc32fast::Hasher::new(),
        differs: false,
    };
    match expand(packed, form, &mut cmp) {
        Err(_) if cmp.differs => return Ok(None),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let mut rest = [0u8; 1];
    if cmp.log.read(&mut rest)? != 0 {
        return Ok(None);
    }
    Ok(Some(cmp.crc.finalize()))
}

/// The bytes of the log [`Compare`] reads at once.
const COMPARED: usize = 1 << 20;

/// A writer that compares what it is given with a file, byte for byte.
struct Compare {
    log: BufReader<File>,
    buf: Vec<u8>,
    crc: crc32fast::Hasher,
    differs: bool,
}

impl Write for Compare {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // A piece at a time: an event of hundreds of megabytes is not held twice.
        for piece in data.chunks(COMPARED) {
            self.buf.resize(piece.len(), 0);
            let read = self.log.read_exact(&mut self.buf);
            if read.is_err() || self.buf != piece {
                self.differs = true;
                return Err(io::Error::other("the packed form differs from the log"));
            }
        }
        self.crc.update(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that counts and hashes what passes through it.
struct Hashing<W: Write> {
    inner: W,
    bytes: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Hashing<W> {
        Hashing {
            inner,
            bytes: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    fn finish(self) -> (W, u64, u32) {
        (self.inner, self.bytes, self.crc.finalize())
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(data)?;
        self.crc.update(&data[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Size and crc32 of a file.
fn hash_file(p: &Path) -> io::Result<(u64, u32)> {
    let mut h = Hashing::new(io::sink());
    io::copy(&mut File::open(p)?, &mut h)?;
    let (_, bytes, crc) = h.finish();
    Ok((bytes, crc))
}

fn nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

fn from_nanos(n: i128) -> SystemTime {
    let d = Duration::from_nanos(n.unsigned_abs() as u64);
    if n >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long event is compared with the log a piece at a time, never held whole, and a
    /// difference in its last piece is found.
    #[test]
    fn a_long_event_is_compared_a_piece_at_a_time() {
        let log: Vec<u8> = (0..3 * COMPARED + 17).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&log).unwrap();
        let compare = || Compare {
            log: BufReader::new(File::open(file.path()).unwrap()),
            buf: Vec::new(),
            crc: crc32fast::Hasher::new(),
            differs: false,
        };
        let mut same = compare();
        same.write_all(&log).unwrap();
        assert!(!same.differs);
        assert!(same.buf.capacity() <= COMPARED, "{}", same.buf.capacity());
        assert_eq!(same.crc.finalize(), crc32fast::hash(&log));
        let mut other = log.clone();
        *other.last_mut().unwrap() ^= 1;
        let mut differs = compare();
        assert!(differs.write_all(&other).is_err());
        assert!(differs.differs);
    }

    #[test]
    fn times_go_through_nanoseconds_and_back() {
        for t in [
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789),
        ] {
            assert_eq!(from_nanos(nanos(t)), t);
        }
        assert_eq!(
            packed_name(Path::new("a/b.jsonl"), Form::Sess),
            Path::new("a/b.jsonl.sess.zst")
        );
        assert_eq!(
            relative(Path::new("r"), Path::new("r/x/y.jsonl")),
            "x/y.jsonl"
        );
        assert_eq!(
            relative(Path::new("r/y.jsonl"), Path::new("r/y.jsonl")),
            "y.jsonl"
        );
    }
}
