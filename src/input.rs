//! Opens inputs: a file or stdin, plain, zstd or gzip (sniffed by magic), and reads them line
//! by line, checking each line as `syntax` says. A file whose magic names another format (an
//! executable, an image, an archive) is refused, saying what it is.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, IoContext, Place, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::frames::reader::{Glues, Health};
pub use crate::frames::walk::is_zstd;
use crate::frames::{FrameReader, Recovery};
use crate::intern;
use crate::io::ahead::{Notes, ReadAhead};
use crate::io::{Line, LineReader};
use crate::syntax::{LineCheck, Tally};

/// Where bytes come from. `-` means stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    Path(PathBuf),
}

impl Input {
    pub fn from_arg(arg: &Path) -> Input {
        if arg.as_os_str() == "-" {
            Input::Stdin
        } else {
            Input::Path(arg.to_path_buf())
        }
    }

    /// The inputs named on a command line; none means stdin.
    pub fn list(args: &[PathBuf]) -> Vec<Input> {
        if args.is_empty() {
            vec![Input::Stdin]
        } else {
            args.iter().map(|a| Input::from_arg(a)).collect()
        }
    }

    /// The file, when the input is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Path(p) => Some(p),
            Input::Stdin => None,
        }
    }

    /// The name used in messages.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_string(),
            Input::Path(p) => p.display().to_string(),
        }
    }

    /// The files among `inputs`, which an output must not replace.
    pub fn paths(inputs: &[Input]) -> Vec<PathBuf> {
        inputs
            .iter()
            .filter_map(|i| match i {
                Input::Path(p) => Some(p.clone()),
                Input::Stdin => None,
            })
            .collect()
    }
}

/// How the bytes of an input are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Plain,
    Zstd,
    /// One or more gzip members (`gzip -c a b` or `cat a.gz b.gz`), read as one stream.
    Gzip,
}

/// Whether `p` is a regular file: one that can be read twice, or seeked in. A pipe named
/// as a path (`<(gzip -dc log.gz)`, a FIFO) is not, and must be read once, from the start.
pub fn is_regular_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// How the file at `p` is stored, from its first bytes; a file in another format is an
/// error saying which. `None` when `p` is not a regular file: reading a pipe's first bytes
/// here would take them from the reader that reads it next (see [`is_regular_file`]).
pub fn file_compression(p: &Path) -> Result<Option<Compression>> {
    if !is_regular_file(p) {
        return Ok(None);
    }
    let name = p.display().to_string();
    let f = File::open(p).at(Place::file(&name), "cannot open")?;
    compression_of(&f, &name).map(Some)
}

/// [`file_compression`] of a regular file already open (`name` for messages), read from
/// its first bytes without moving its position.
pub fn compression_of(f: &File, name: &str) -> Result<Compression> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; SNIFF];
    let mut n = 0;
    while n < SNIFF {
        match f.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).at(Place::file(name), "cannot read"),
        }
    }
    sniff(name, &head[..n])
}

/// Bytes read to tell the format: enough for every magic below, and few enough that a pipe
/// whose first line is short is not kept waiting.
const SNIFF: usize = 4;

/// Formats a log is sometimes mistaken for, by their magic: what reading them as lines
/// would print is garbage.
const NOT_LOGS: &[(&[u8], &str)] = &[
    (b"\x7fELF", "an ELF executable"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xce", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (
        b"\xca\xfe\xba\xbe",
        "a Mach-O universal binary or a Java class file",
    ),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
    (
        b"\xfd7zX",
        "xz-compressed data (decompress it first: xz -dc)",
    ),
    (
        b"BZh",
        "bzip2-compressed data (decompress it first: bzip2 -dc)",
    ),
    (
        b"\x04\x22\x4d\x18",
        "lz4-compressed data (decompress it first: lz4 -dc)",
    ),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"SQLi", "an SQLite database"),
];

/// How an input whose first bytes are `head` is stored.
fn sniff(name: &str, head: &[u8]) -> Result<Compression> {
    if is_zstd(head) {
        return Ok(Compression::Zstd);
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok(Compression::Gzip);
    }
    match NOT_LOGS.iter().find(|(magic, _)| head.starts_with(magic)) {
        Some((_, what)) => Err(Error::invalid(
            Place::file(name),
            format!("{what}, not a JSONL log"),
        )),
        None => Ok(Compression::Plain),
    }
}

/// An opened input, yielding decompressed bytes.
pub struct Source {
    pub name: String,
    pub compression: Compression,
    pub reader: Box<dyn Read + Send>,
    /// What reading found: the frame reader's findings for a compressed input, and (with
    /// [`OpenOptions::collect_warnings`]) the lines skipped.
    pub health: Arc<Mutex<Health>>,
    /// Where interned lines begin inside lines (a concatenated file).
    glues: Arc<Glues>,
    progress: Option<ProgressBar>,
    /// `--recovery skip-corrupt`: a line whose interned values were lost is skipped with a
    /// warning, not an error, and later lines are numbered as in the original.
    skip_corrupt: bool,
    collect: bool,
    check: LineCheck,
    /// A plain regular file's size when it was opened, to tell when it ends short of it.
    plain_size: Option<u64>,
}

impl Source {
    /// The progress bar drawn for this input, if any.
    pub fn progress_bar(&self) -> Option<ProgressBar> {
        self.progress.clone()
    }
}

/// Options shared by every command that reads inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Never draw a progress bar.
    pub quiet: bool,
    /// What to do with damaged zstd input.
    pub recovery: Recovery,
    /// Warnings about damage are collected in [`Source::health`] for the caller to report,
    /// not printed (`verify` makes them problems).
    pub collect_warnings: bool,
    /// How each line is checked for being JSON.
    pub check: LineCheck,
    /// Decompress zstd input on a thread of its own, ahead of the caller (not with
    /// skip-corrupt recovery or collected warnings, whose reports follow the lines read).
    pub read_ahead: bool,
}

pub fn open(input: &Input, opts: OpenOptions) -> Result<Source> {
    let name = input.name();
    let skip_corrupt = opts.recovery == Recovery::SkipCorrupt;
    let mut listed = Vec::new();
    let (raw, size): (Box<dyn Read + Send>, Option<u64>) = match input {
        Input::Stdin => (Box::new(io::stdin()), None),
        Input::Path(p) => {
            let mut f = File::open(p).at(Place::file(&name), "cannot open")?;
            let meta = f.metadata().at(Place::file(&name), "cannot open")?;
            if meta.is_dir() {
                return Err(Error::invalid(Place::file(&name), "is a directory"));
            }
            let size = meta.is_file().then_some(meta.len());
            if skip_corrupt && size.is_some() {
                listed = listed_frames(&mut f).at(Place::file(&name), "cannot read")?;
            }
            (Box::new(f), size)
        }
    };
    let progress = size.and_then(|len| progress_bar(len, &name, opts));
    let raw: Box<dyn Read + Send> = match &progress {
        Some(bar) => Box::new(bar.wrap_read(raw)),
        None => raw,
    };
    let (head, raw) = peek(raw).at(Place::file(&name), "cannot read")?;
    let whole = io::Cursor::new(head.clone()).chain(raw);
    let compression = sniff(&name, &head)?;
    let (reader, health, glues): (Box<dyn Read + Send>, _, _) = match compression {
        Compression::Zstd => {
            let mut frames = FrameReader::new(whole, &name, opts.recovery)
                .with_index(&listed)
                .telling_glues(intern::glued, intern::is_interned);
            if opts.collect_warnings {
                frames = frames.collecting();
            }
            let (health, glues) = (frames.health_handle(), frames.glues_handle());
            let ahead = opts.read_ahead && !opts.collect_warnings && !skip_corrupt;
            let frames: Box<dyn Read + Send> = match ahead {
                true => Box::new(read_ahead(frames, &health, size.is_some())),
                false => Box::new(frames),
            };
            (frames, health, glues)
        }
        Compression::Gzip => {
            let gz = GzMembers::new(BufReader::with_capacity(BUF, whole));
            let gz = BufReader::with_capacity(BUF, gz);
            (Box::new(gz), Arc::default(), Arc::default())
        }
        Compression::Plain => (Box::new(whole), Arc::default(), Arc::default()),
    };
    Ok(Source {
        name,
        compression,
        reader,
        health,
        glues,
        progress,
        skip_corrupt,
        collect: opts.collect_warnings,
        check: opts.check,
        plain_size: size.filter(|_| compression == Compression::Plain),
    })
}

/// `frames` read on a thread of its own. Its warnings are printed as the lines they come
/// with are reached, as they are without the thread, not when the thread meets them.
fn read_ahead<R: Read + Send + 'static>(
    frames: FrameReader<R>,
    health: &Arc<Mutex<Health>>,
    file: bool,
) -> ReadAhead {
    let (counted, shown) = (Arc::clone(health), Arc::clone(health));
    let mut printed = 0;
    let notes = Notes {
        count: Box::new(move || Health::lock(&counted).notices.len()),
        show: Box::new(move |upto| {
            for notice in &Health::lock(&shown).notices[printed..upto] {
                crate::io::tell!("sess: warning: {notice}");
            }
            printed = upto;
        }),
    };
    ReadAhead::new(Box::new(frames.deferring()), Some(notes), file)
}

/// The frames a file's index lists (none when it has no readable index), the file left at
/// its start.
fn listed_frames(f: &mut File) -> io::Result<Vec<crate::frames::index::Entry>> {
    use std::io::{Seek, SeekFrom};
    let listed = match crate::frames::index::Index::read_from(f)? {
        Some(Ok((index, _))) => index.entries,
        _ => Vec::new(),
    };
    f.seek(SeekFrom::Start(0))?;
    Ok(listed)
}

/// Whether a line visitor wants more lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    Stop,
}

/// Calls `f` with every line of every input, in order, until it says [`Flow::Stop`]. `f`
/// gets the input's name for messages. A read error names the input and the byte offset
/// where reading stopped.
pub fn each_line<E: From<Error>>(
    inputs: &[Input],
    opts: OpenOptions,
    mut f: impl FnMut(&str, &Line<'_>) -> Result<Flow, E>,
) -> Result<(), E> {
    for input in inputs {
        let src = open(input, opts)?;
        if each_line_of(src, &mut f)? == Flow::Stop {
            return Ok(());
        }
    }
    Ok(())
}

/// [`each_line`] for one opened source.
pub fn each_line_of<E: From<Error>>(
    src: Source,
    f: &mut impl FnMut(&str, &Line<'_>) -> Result<Flow, E>,
) -> Result<Flow, E> {
    let name = src.name.clone();
    let bar = src.progress_bar();
    let mut lines = LineReader::new(src.reader);
    let mut rebuilder = Rebuilder::default();
    let mut tally = Tally::new(src.check);
    let origin = Origin {
        name: &name,
        glues: &src.glues,
        health: &src.health,
        skip_corrupt: src.skip_corrupt,
        collect: src.collect,
    };
    // The bad lines read are told even when the input then fails.
    let mut read = || -> Result<Flow, E> {
        // Inside, so that the progress bar is cleared on this error too.
        refuse_binary_head(&mut lines, &name)?;
        loop {
            let offset = lines.offset();
            let line = lines.next_line().at_with(
                || Place::file(&name).offset(offset),
                "cannot read (decompressed)",
            )?;
            let Some(line) = line else {
                return Ok(Flow::More);
            };
            // Lines that need no rebuilding (most) skip `Rebuilder::line`, and each way
            // hands its line on by itself: a line returned through memory, or the two ways
            // joined through memory, cost a store-forwarding stall per line.
            let flow = match origin.passes(&line) {
                true => hand_on(&name, line, &mut tally, f)?,
                false => match rebuilder.line(&origin, line)? {
                    Some(line) => hand_on(&name, line, &mut tally, f)?,
                    None => continue,
                },
            };
            if flow == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
    };
    let flow = read();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    tally.warn(&name);
    if let (Ok(Flow::More), Some(size)) = (&flow, src.plain_size)
        && lines.offset() < size
    {
        cut_short(&name, size, lines.offset(), &src.health, src.collect);
    }
    flow
}

/// Checks `line` and hands it to `f`. Always inlined: called, it took the line through
/// memory again.
#[inline(always)]
fn hand_on<E: From<Error>>(
    name: &str,
    line: Line<'_>,
    tally: &mut Tally,
    f: &mut impl FnMut(&str, &Line<'_>) -> Result<Flow, E>,
) -> Result<Flow, E> {
    let number = line.number;
    tally.line(name, &line)?;
    f(name, &line).inspect_err(|_| {
        // The error names the line: it is not told again as a bad one.
        tally.unsay(number);
    })
}

/// What [`Rebuilder::line`] needs of the input its lines come from.
struct Origin<'s> {
    name: &'s str,
    glues: &'s Glues,
    health: &'s Mutex<Health>,
    skip_corrupt: bool,
    collect: bool,
}

impl Origin<'_> {
    /// Whether `line` is handed on as read: not interned, no new file begins inside it,
    /// and no line was skipped before it.
    #[inline]
    fn passes(&self, line: &Line<'_>) -> bool {
        !self.skip_corrupt && !intern::is_interned(line.bytes) && !self.glues.any()
    }
}

/// Interned lines (`sess pack`'s long-range dedup) are rebuilt here, below every reader.
#[derive(Default)]
struct Rebuilder {
    interned: intern::Reader,
    rebuilt: Vec<u8>,
    shift: Shift,
    /// Lines were lost since the last line handed on ([`Health::gaps`]).
    lost: bool,
}

impl Rebuilder {
    /// The line `line` stands for (rebuilt when interned, or glued to a new file's first
    /// line), numbered as in the original; `None` for a line skipped under
    /// `--recovery skip-corrupt`, having lost the values it needs.
    fn line<'a>(
        &'a mut self,
        o: &Origin<'_>,
        mut line: Line<'a>,
    ) -> Result<Option<Line<'a>>, Error> {
        let glue = o.glues.inside(line.offset, line.bytes.len());
        if o.skip_corrupt {
            let skips = self.shift.seen;
            let (lines, bytes) = self.shift.lost_before(o.health, line.offset);
            self.lost |= self.shift.seen > skips;
            line.number += lines;
            line.offset += bytes;
        }
        let (interned, buf) = (&mut self.interned, &mut self.rebuilt);
        let line = match glue {
            Some(at) => rebuild_glued(o.name, line, at, interned, buf),
            None => rebuild(o.name, line, interned, buf),
        };
        let line = match line {
            Ok(line) => line,
            Err(e @ Error::Invalid { .. }) if o.skip_corrupt => {
                if !o.collect {
                    crate::io::tell!(
                        "sess: warning: {e}; the line is skipped (--recovery skip-corrupt)"
                    );
                }
                Health::lock(o.health).notices.push(e.to_string());
                self.lost = true;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        if std::mem::take(&mut self.lost) {
            Health::lock(o.health).gaps += 1;
        }
        Ok(Some(line))
    }
}

/// Tells that a plain file ended before the size it had when opened: another program cut it
/// (a log rotated by truncation) while it was read. What was read is what the command used.
fn cut_short(name: &str, size: u64, read: u64, health: &Mutex<Health>, collect: bool) {
    let notice = format!(
        "{name}: it ended after {read} bytes, short of the {size} it had when opened (cut by \
         another program while it was read?); the lines before are what was read"
    );
    if !collect {
        crate::io::tell!("sess: warning: {notice}");
    }
    Health::lock(health).notices.push(notice);
}

/// The lines and bytes lost in skipped frames before a place in the output, so that lines
/// after a skip keep the numbers and offsets they have in the original (as far as the
/// index can tell).
#[derive(Default)]
struct Shift {
    /// Skips already counted, and what they lost.
    seen: usize,
    lines: u64,
    bytes: u64,
}

impl Shift {
    fn lost_before(&mut self, health: &Mutex<Health>, offset: u64) -> (u64, u64) {
        let h = Health::lock(health);
        for skip in h.skips[self.seen..]
            .iter()
            .take_while(|s| s.output_at <= offset)
        {
            self.lines += skip.lines.unwrap_or(0);
            self.bytes += skip.bytes.unwrap_or(0);
            self.seen += 1;
        }
        (self.lines, self.bytes)
    }
}

/// Fails on an input whose first line is binary data by its first bytes
/// ([`crate::syntax::binary_head`]), before that line is read whole.
pub fn refuse_binary_head<R: Read>(lines: &mut LineReader<R>, name: &str) -> Result<(), Error> {
    let head = lines
        .head()
        .at(Place::file(name), "cannot read (decompressed)")?;
    crate::syntax::binary_head(name, head).map_or(Ok(()), Err)
}

/// The line an interned line stands for (any other line as it is). A torn line is left to
/// the torn-line policy.
pub fn rebuild<'a>(
    name: &str,
    line: Line<'a>,
    interned: &mut intern::Reader,
    buf: &'a mut Vec<u8>,
) -> Result<Line<'a>, Error> {
    if !intern::is_interned(line.bytes) || line.is_torn() {
        return Ok(line);
    }
    interned
        .read(line.bytes, buf)
        .map_err(|e| interned_error(name, &line, e))?;
    Ok(Line { bytes: buf, ..line })
}

/// [`rebuild`] for a line in which a new file begins at `at` ([`Glues`]): each part
/// rebuilt, one after the other.
pub fn rebuild_glued<'a>(
    name: &str,
    line: Line<'a>,
    at: usize,
    interned: &mut intern::Reader,
    buf: &'a mut Vec<u8>,
) -> Result<Line<'a>, Error> {
    if line.is_torn() {
        return Ok(line);
    }
    interned
        .read_glued(line.bytes, at, buf)
        .map_err(|e| interned_error(name, &line, e))?;
    Ok(Line { bytes: buf, ..line })
}

/// An error rebuilding `line`: one that ends reading (the store failed, or memory ran
/// out: [`intern::Error::into_fatal`]) is an I/O error, which even `skip-corrupt` does
/// not pass over; any other is the line's.
fn interned_error(name: &str, line: &Line<'_>, e: intern::Error) -> Error {
    let place = Place::line(name, line.number).offset(line.offset);
    match e.into_fatal() {
        Err(cause) => Error::io(place, "cannot rebuild the interned line", cause),
        Ok(e) => Error::invalid(place, e.to_string()),
    }
}

/// Whether stdin is a regular file (`< file`), which `sess pack` packs as a file, not as a
/// stream.
pub fn stdin_is_file() -> bool {
    std::fs::metadata("/dev/stdin").is_ok_and(|m| m.is_file())
}

/// The read buffers of a gzip input. A plain one has none: its lines are read straight
/// into the line reader's buffer, whose reads (a little under its size, after each move
/// of a partial line) a buffer of this size in between copied once more each (`sess cat`
/// of the 1 GiB DSH log: 0.95-1.12 s -> 0.87-0.89 s).
const BUF: usize = 256 * 1024;

/// Reads the first bytes to sniff the format. A pipe may deliver them one at a time.
fn peek(mut r: Box<dyn Read + Send>) -> io::Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut head = [0u8; SNIFF];
    let got = crate::io::read::read_full(&mut r, &mut head)?;
    Ok((head[..got].to_vec(), r))
}

fn progress_bar(len: u64, name: &str, opts: OpenOptions) -> Option<ProgressBar> {
    if opts.quiet || !io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .ok()?
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(name.to_string());
    Some(bar)
}

/// A gzip stream read member after member (`cat a.gz b.gz` is one stream). Zeros after the
/// last member (the padding some tools write) are ignored, as `gzip -dc` ignores them;
/// other bytes there are an error.
struct GzMembers<R: io::BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: io::BufRead> GzMembers<R> {
    fn new(inner: R) -> GzMembers<R> {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(inner)),
        }
    }
}

impl<R: io::BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(member) = &mut self.member {
            let n = member.read(buf).map_err(damaged_member)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This member ended: another may follow.
            // The buffer may hold as little as one byte of what follows: the first byte
            // decides, and a member whose magic is damaged fails as a member.
            let mut rest = self.member.take().expect("just read").into_inner();
            match rest.fill_buf()?.first() {
                None => {}
                Some(0x1f) => self.member = Some(flate2::bufread::GzDecoder::new(rest)),
                Some(_) => trailing_zeros(&mut rest)?,
            }
        }
        Ok(0)
    }
}

/// A gzip member's error, saying what it means for the lines already read: deflate has no
/// checksum of its own, and a member's crc32 is checked only at its end, so a bit flipped
/// inside it gives wrong bytes until then.
fn damaged_member(e: io::Error) -> io::Error {
    // Other errors are the file's (a read that failed), or a cut, which wrongs no line.
    if !matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
    ) {
        return e;
    }
    io::Error::new(
        e.kind(),
        format!(
            "a damaged gzip member ({e}); gzip checks a member only at its end, so lines read \
             from it before this error may be wrong ('sess verify' or 'gzip -t' checks a file \
             first)"
        ),
    )
}

/// Reads what follows the last gzip member: zeros (padding) are fine; anything else could
/// be a damaged member, whose lines would be lost without a word, so it is an error.
fn trailing_zeros(rest: &mut impl io::BufRead) -> io::Result<()> {
    loop {
        let buf = rest.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if buf.iter().any(|&b| b != 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bytes after a gzip member that are neither a member nor zero padding \
                 (a damaged member?)",
            ));
        }
        let n = buf.len();
        rest.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A plain file cut while it is read (a log rotated by truncation) is told of; one read
    /// whole, with or without a last newline, or empty, is not.
    #[test]
    fn a_plain_file_cut_while_read_is_told_of() {
        let dir = tempfile::tempdir().unwrap();
        let line = b"{\"type\":\"x\",\"text\":\"abcdefghij\"}\n";
        let whole: Vec<u8> = line.repeat(100_000);
        let read = |text: &[u8], cut: Option<u64>| {
            let path = dir.path().join("log.jsonl");
            std::fs::write(&path, text).unwrap();
            let opts = OpenOptions {
                quiet: true,
                collect_warnings: true,
                ..OpenOptions::default()
            };
            let src = open(&Input::Path(path.clone()), opts).unwrap();
            if let Some(len) = cut {
                File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(len)
                    .unwrap();
            }
            let health = Arc::clone(&src.health);
            let mut lines = 0;
            each_line_of::<Error>(src, &mut |_, _| {
                lines += 1;
                Ok(Flow::More)
            })
            .unwrap();
            let said = Health::lock(&health).notices.clone();
            (lines, said)
        };
        let (lines, said) = read(&whole, Some(line.len() as u64 * 10));
        assert!(lines < 100_000, "{lines} lines");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("ended after 330 bytes, short of the 3300000 it had"),
            "{said:?}"
        );
        for text in [&whole[..], &whole[..whole.len() - 1], b""] {
            let (_, said) = read(text, None);
            assert!(said.is_empty(), "{said:?}");
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read(stream: &[u8], buffer: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzMembers::new(io::BufReader::with_capacity(buffer, stream)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn every_member_is_read_wherever_the_read_buffer_ends() {
        // Buffers of a few bytes end inside every member's magic at some point.
        let parts: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("{{\"n\":{i}}}\n").into_bytes())
            .collect();
        let stream: Vec<u8> = parts.iter().flat_map(|p| gzip(p)).collect();
        let whole = parts.concat();
        for buffer in 1..12 {
            assert_eq!(read(&stream, buffer).unwrap(), whole, "buffer {buffer}");
            let padded = [stream.clone(), vec![0; 100]].concat();
            assert_eq!(
                read(&padded, buffer).unwrap(),
                whole,
                "padded, buffer {buffer}"
            );
            let garbage = [stream.clone(), b"\0\0x".to_vec()].concat();
            assert!(read(&garbage, buffer).is_err(), "garbage, buffer {buffer}");
            let cut = [stream.clone(), vec![0x1f]].concat();
            assert!(read(&cut, buffer).is_err(), "cut magic, buffer {buffer}");
        }
    }
}
