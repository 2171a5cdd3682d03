//! Writes JSONL as independent zstd frames, each holding whole lines and the content
//! checksum, followed by the frame index. Stock `zstd -dc` reads the result as plain JSONL.

use std::io::{self, Read, Write};

use zstd::stream::raw::CParameter;

use super::decode::FIRST_LINE_PREFIX;
use super::index::{Entry, Index};

/// How frames are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Frames cut by size (and by the window when streaming), then the index.
    Sess,
    /// DeepSeek Harness's layout: the header line alone in the first frame, one frame per
    /// batch, no skippable frames.
    Dsh,
}

#[derive(Debug, Clone, Copy)]
pub struct FrameOptions {
    pub level: i32,
    /// A frame is cut at the last line end once this many uncompressed bytes are pending.
    pub frame_size: usize,
    pub layout: Layout,
    /// Reads the seq the index records for a frame from the frame's first line. The
    /// container knows nothing of what lines hold: its caller does (`sess pack` passes
    /// `event::line_seq`).
    pub first_seq: fn(&[u8]) -> Option<i64>,
    /// Compress frames on a thread of their own while the caller goes on writing (the
    /// output is the same bytes either way).
    pub compress_thread: bool,
    /// Each frame reaches the output in one write, whole: for a file written in place as
    /// a stream comes, which a reader may follow and a crash may cut. A long line's frame
    /// ([`LONG_LINE`]) is then held compressed until the line ends, rather than written
    /// as it is compressed (the same bytes either way).
    pub frames_at_once: bool,
}

impl FrameOptions {
    /// Frames of `frame_size` at `level`, sess's layout, no seqs in the index.
    pub fn new(level: i32, frame_size: usize) -> FrameOptions {
        FrameOptions {
            level,
            frame_size,
            layout: Layout::Sess,
            first_seq: |_| None,
            compress_thread: false,
            frames_at_once: false,
        }
    }
}

/// The default frame size, chosen by measurement at level 3 on 256 MiB generated logs
/// (`bench/frames.sh` prints the same table). Output size relative to one `zstd -3` stream:
///
/// | frame size | DSH log (packed) | pi 0.73 log |
/// |---|---|---|
/// | 64 KiB | 0.457 | 1.902 |
/// | 256 KiB | 0.434 | 1.213 |
/// | 1 MiB | 0.421 | 1.080 |
/// | 4 MiB | 0.417 | 1.019 |
///
/// The curve flattens at 1 MiB for logs made of many small events; 4 MiB is where a log
/// split into frames loses nothing against one `zstd -3` stream, whose window is 2 MiB,
/// and where the real Claude Code, Codex and Gemini CLI logs of 1 to 3 MB stay one frame
/// (in 1 MiB frames all seven packed larger than `zstd -3`). `cat --tail` decodes one
/// frame, about 5 ms at 4 MiB.
pub const DEFAULT_FRAME_SIZE: usize = 4 << 20;

/// Where frames are cut from pending bytes: frames of about `size` bytes, each ending at a
/// line end: the last one within the size, or the one after a line longer than the size.
/// It remembers how far such a line has been searched for its end, so that a long line
/// written in many pieces is scanned once, not once a piece.
#[derive(Debug, Clone, Copy)]
pub struct Cutter {
    size: usize,
    /// Bytes of pending known to hold no line end past the size (0: none known).
    searched: usize,
}

impl Cutter {
    pub fn new(size: usize) -> Cutter {
        Cutter { size, searched: 0 }
    }

    /// The length of the next frame to cut from `pending`, if one is due. Call
    /// [`Cutter::reset`] whenever bytes are taken from the front of `pending`.
    pub fn next(&mut self, pending: &[u8]) -> Option<usize> {
        let size = self.size;
        if pending.len() < size {
            return None;
        }
        let within = match self.searched {
            0 => memchr::memrchr(b'\n', &pending[..size]),
            _ => None,
        };
        let k = within.or_else(|| {
            let from = self.searched.max(size);
            let k = memchr::memchr(b'\n', &pending[from..]).map(|k| k + from);
            self.searched = if k.is_none() { pending.len() } else { 0 };
            k
        })?;
        Some(k + 1)
    }

    /// Bytes were taken from the front of pending: what was searched is unknown again.
    pub fn reset(&mut self) {
        self.searched = 0;
    }
}

/// Counts the frames [`FrameWriter`] would cut from the same bytes, for output that is not
/// framed (`sess pack --plain`) but must hold the same lines as the frames do. It keeps
/// where the pending lines end, not their bytes: a long line is not held for it.
pub struct FrameCount {
    size: usize,
    /// Where the pending bytes begin, counted from the first byte added.
    start: u64,
    pending: usize,
    /// Where each line end in the pending bytes is, in the same count, in order.
    ends: std::collections::VecDeque<u64>,
    pub frames: u64,
}

impl FrameCount {
    pub fn new(size: usize) -> FrameCount {
        FrameCount {
            size,
            start: 0,
            pending: 0,
            ends: std::collections::VecDeque::new(),
            frames: 0,
        }
    }

    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Cuts as [`Cutter::next`] does: once `size` bytes are pending, after the last line
    /// end within them, or else after the first one past them.
    pub fn add(&mut self, buf: &[u8]) {
        let at = self.start + self.pending as u64;
        self.ends
            .extend(memchr::memchr_iter(b'\n', buf).map(|k| at + k as u64));
        self.pending += buf.len();
        while self.pending >= self.size {
            let within = self
                .ends
                .partition_point(|&e| e < self.start + self.size as u64);
            let Some(&end) = self.ends.get(within.saturating_sub(1)) else {
                break;
            };
            self.ends.drain(..within.max(1));
            let n = (end + 1 - self.start) as usize;
            self.start += n as u64;
            self.pending -= n;
            self.frames += 1;
        }
    }
}

/// The level a log that fits in one frame is also tried at.
pub const ONLY_FRAME_LEVEL: i32 = 9;

/// Frames at most being compressed while the next one fills: one keeps the thread busy
/// (frames are cut far faster than they compress), and each costs a frame's room.
const IN_FLIGHT: usize = 1;

/// A frame's bytes, compressed, and what it holds (the frame's own bytes come back too,
/// for their buffer to hold the next frame), or why compressing failed.
type Compressed = io::Result<Done>;

struct Done {
    plain: Vec<u8>,
    z: Vec<u8>,
    meta: FrameMeta,
}

/// The thread that compresses frames, in the order they are cut. Buffers go round: a frame
/// goes out with a buffer for its compressed bytes, and both come back, so that no frame
/// costs fresh memory (the page faults of 8 MiB a frame were a tenth of packing's thread).
struct Worker {
    jobs: std::sync::mpsc::SyncSender<(Vec<u8>, Vec<u8>)>,
    done: std::sync::mpsc::Receiver<Compressed>,
    in_flight: usize,
    /// Buffers back from the thread, to be used again: for frames, and for their
    /// compressed bytes apart. Mixed, every buffer ended up filled with a whole frame (8 MB
    /// where a 4 MB line crosses a frame's end), where a compressed frame touches only a
    /// fraction of its room: 20 MB more at peak on the 1 GiB Codex log.
    spare_plain: Vec<Vec<u8>>,
    spare_z: Vec<Vec<u8>>,
}

impl Worker {
    fn start(level: i32, first_seq: fn(&[u8]) -> Option<i64>) -> io::Result<Worker> {
        let mut compressor = compressor(level)?;
        let (jobs, todo) = std::sync::mpsc::sync_channel::<(Vec<u8>, Vec<u8>)>(IN_FLIGHT);
        let (finished, done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("sess-compress".into())
            .spawn(move || {
                for (plain, mut z) in todo {
                    let meta = FrameMeta::of(&plain, first_seq);
                    z.clear();
                    z.reserve(zstd::zstd_safe::compress_bound(plain.len()));
                    let done = compressor.compress_to_buffer(&plain, &mut z).map(|_| Done {
                        plain,
                        z,
                        meta,
                    });
                    if finished.send(done).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            jobs,
            done,
            in_flight: 0,
            spare_plain: Vec::new(),
            spare_z: Vec::new(),
        })
    }

    /// A buffer for a frame's bytes, emptied.
    fn plain_buffer(&mut self) -> Vec<u8> {
        emptied(self.spare_plain.pop())
    }

    /// A buffer for a compressed frame, emptied.
    fn z_buffer(&mut self) -> Vec<u8> {
        emptied(self.spare_z.pop())
    }

    /// The next frame compressed, in order.
    fn next(&mut self) -> Compressed {
        let z = self
            .done
            .recv()
            .map_err(|_| io::Error::other("the compression thread stopped"))?;
        self.in_flight -= 1;
        z
    }
}

fn emptied(b: Option<Vec<u8>>) -> Vec<u8> {
    let mut b = b.unwrap_or_default();
    b.clear();
    b
}

/// A compressor at `level` that writes each frame's content checksum and size.
fn compressor(level: i32) -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.set_parameter(CParameter::ChecksumFlag(true))?;
    c.set_parameter(CParameter::ContentSizeFlag(true))?;
    Ok(c)
}

pub struct FrameWriter<W: Write> {
    out: W,
    opts: FrameOptions,
    compressor: zstd::bulk::Compressor<'static>,
    /// With [`FrameOptions::compress_thread`]: the thread frames are compressed on.
    worker: Option<Box<Worker>>,
    /// Frames cut so far: written, or in flight to the worker.
    cut: usize,
    /// Uncompressed bytes not yet in a frame; may end inside a line.
    pending: Vec<u8>,
    cutter: Cutter,
    zbuf: Vec<u8>,
    ledger: Ledger,
    /// What [`FrameWriter::offer_same`] offered.
    same: Option<Vec<u8>>,
    /// For each frame, the first frame its lines need ([`FrameWriter::needs`]); `None`
    /// when no writer above said (the index then does not know).
    earliest: Vec<Option<u64>>,
    /// A frame of one long line, compressed as its bytes come ([`Long`]).
    long: Option<Box<Long>>,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(out: W, opts: FrameOptions) -> io::Result<FrameWriter<W>> {
        let worker = match opts.compress_thread {
            true => Some(Box::new(Worker::start(opts.level, opts.first_seq)?)),
            false => None,
        };
        Ok(FrameWriter {
            out,
            opts,
            compressor: compressor(opts.level)?,
            worker,
            cut: 0,
            pending: Vec::new(),
            cutter: Cutter::new(opts.frame_size),
            zbuf: Vec::new(),
            ledger: Ledger::default(),
            same: None,
            earliest: Vec::new(),
            long: None,
        })
    }

    pub fn options(&self) -> &FrameOptions {
        &self.opts
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Frames cut so far (written, or being compressed).
    pub fn frames_written(&self) -> usize {
        self.cut
    }

    /// Bytes written but not yet in a frame.
    pub fn pending(&self) -> usize {
        self.pending.len()
            + self
                .long
                .as_ref()
                .map_or(0, |l| l.meta.uncompressed as usize)
    }

    /// Writes every complete pending line as one frame, and every frame cut before it.
    pub fn flush_frame(&mut self) -> io::Result<()> {
        if let Some(k) = memchr::memrchr(b'\n', &self.pending) {
            self.emit(k + 1)?;
        }
        self.drain()
    }

    /// Writes the frames in flight to the compression thread, waiting for each.
    fn drain(&mut self) -> io::Result<()> {
        while self.worker.as_ref().is_some_and(|w| w.in_flight > 0) {
            self.write_next()?;
        }
        Ok(())
    }

    /// Writes the next frame back from the compression thread, and keeps its buffers.
    fn write_next(&mut self) -> io::Result<()> {
        let w = self.worker.as_mut().expect("a compression thread");
        let Done { plain, z, meta } = w.next()?;
        let written = self.write_compressed(&z, meta);
        let w = self.worker.as_mut().expect("a compression thread");
        w.spare_plain.push(plain);
        w.spare_z.push(z);
        written
    }

    /// Copies a frame compressed elsewhere (by an earlier writer) as it is, after writing
    /// every pending line as its own frame: `len` bytes from `src`, streamed. `meta` says
    /// what the frame holds (its caller has decoded it to check it).
    pub fn copy_frame<R: Read>(
        &mut self,
        src: &mut R,
        len: u64,
        meta: FrameMeta,
    ) -> io::Result<()> {
        self.end_long()?;
        if !self.pending.is_empty() {
            let n = self.pending.len();
            self.emit(n)?;
        }
        self.drain()?;
        self.cut += 1;
        let mut crc = crc32fast::Hasher::new();
        let mut left = len;
        let mut buf = vec![0u8; 64 * 1024];
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            src.read_exact(&mut buf[..want])?;
            crc.update(&buf[..want]);
            self.out.write_all(&buf[..want])?;
            left -= want as u64;
        }
        self.out.flush()?;
        self.ledger.push(len, crc.finalize(), meta)
    }

    /// A line written into `frame` needs the lines of frames `earliest..frame` to be
    /// rebuilt (the definitions its refs name, and theirs in turn), for the index to say
    /// ([`Entry::needs`]). A writer above says it of every line; the index does not know
    /// what a frame needs when it was said of none of its lines.
    pub fn needs(&mut self, frame: u64, earliest: u64) {
        let k = frame as usize;
        if self.earliest.len() <= k {
            self.earliest.resize(k + 1, None);
        }
        let first = &mut self.earliest[k];
        *first = Some(first.unwrap_or(frame).min(earliest));
    }

    /// Writes what is pending (a last line without newline included) and the index.
    pub fn finish(mut self) -> io::Result<(W, Index)> {
        self.end_long()?;
        // An empty log is one empty frame, so that the file is still a zstd stream (stock
        // zstd refuses an empty file), as `zstd` writes it.
        let empty = self.cut == 0 && self.pending.is_empty();
        if self.opts.layout == Layout::Sess && self.cut == 0 && !empty {
            self.emit_only_frame()?;
        } else if !self.pending.is_empty() || empty {
            let n = self.pending.len();
            self.emit(n)?;
        }
        self.drain()?;
        for (k, e) in self.ledger.index.entries.iter_mut().enumerate() {
            let first = self.earliest.get(k).copied().flatten();
            e.needs = first.map(|f| (k - (f as usize).min(k)) as u32);
        }
        // One frame needs no index: there is nothing to seek, and its 72 bytes were most of
        // what a small log packed larger than `zstd -3`.
        if self.opts.layout == Layout::Sess && self.ledger.index.entries.len() > 1 {
            self.out.write_all(&self.ledger.index.encode())?;
        }
        self.out.flush()?;
        Ok((self.out, self.ledger.index))
    }

    /// Compresses the first `n` pending bytes into one frame: here, or on the compression
    /// thread (then it is written once compressed, in order).
    fn emit(&mut self, n: usize) -> io::Result<()> {
        if n > self.long_line() {
            // A frame longer than the frame size is one line (see `Cutter::next`):
            // compressed as a long line written in pieces is, to the same bytes.
            self.begin_long(n, &[])?;
            return self.end_long();
        }
        self.cutter.reset();
        self.cut += 1;
        if self
            .worker
            .as_ref()
            .is_some_and(|w| w.in_flight >= IN_FLIGHT)
        {
            // The frame before comes back first, and its buffer takes what follows this
            // one: handed over before, a third frame's room was held (4 MB more at peak
            // on the 1 GiB Codex log), and the thread gained nothing, as it was busy.
            self.write_next()?;
        }
        if let Some(w) = &mut self.worker {
            // The frame's bytes move to the thread; only what follows them is copied.
            let mut rest = w.plain_buffer();
            rest.extend_from_slice(&self.pending[n..]);
            self.pending.truncate(n);
            let plain = std::mem::replace(&mut self.pending, rest);
            let z = w.z_buffer();
            w.jobs
                .send((plain, z))
                .map_err(|_| io::Error::other("the compression thread stopped"))?;
            w.in_flight += 1;
            return Ok(());
        }
        let data = &self.pending[..n];
        self.zbuf.clear();
        self.zbuf.reserve(zstd::zstd_safe::compress_bound(n));
        self.compressor.compress_to_buffer(data, &mut self.zbuf)?;
        self.write_frame(n)
    }

    /// A log that fits in one frame (most of them) is compressed at [`ONLY_FRAME_LEVEL`]
    /// as well, and the smaller kept: at one frame and level 3 sess and `zstd -3` write
    /// about the same bytes, and a file that packs no smaller than `zstd -3` of itself
    /// gains nothing from sess. Level 9 is enough for that on every real log we have
    /// (`bench/sizes.sh`), at about 40 MB/s; 19 took 0.6 s for one 4 MiB frame.
    fn emit_only_frame(&mut self) -> io::Result<()> {
        let n = self.pending.len();
        if n == 0 {
            return Ok(());
        }
        self.zbuf.clear();
        self.zbuf.reserve(zstd::zstd_safe::compress_bound(n));
        self.compressor
            .compress_to_buffer(&self.pending, &mut self.zbuf)?;
        let mut strong = compressor(ONLY_FRAME_LEVEL.max(self.opts.level))?;
        let better = strong.compress(&self.pending)?;
        if better.len() < self.zbuf.len() {
            self.zbuf = better;
        }
        // A log that packing left as it was is compressed once.
        if let Some(same) = self.same.take().filter(|same| *same != self.pending) {
            let z = strong.compress(&same)?;
            if z.len() < self.zbuf.len() {
                self.zbuf = z;
                self.pending = same;
            }
        }
        let n = self.pending.len();
        self.cut += 1;
        self.write_frame(n)
    }

    /// Offers bytes that read back as the same log as what was written (the input as it
    /// was, before packing): when everything fits in one frame and these compress smaller,
    /// the frame holds them instead. A log whose rows pack no better than they came (rows
    /// DeepSeek Harness wrote in a form sess does not reproduce) then packs no larger than
    /// `zstd` of itself.
    pub fn offer_same(&mut self, same: Vec<u8>) {
        self.same = Some(same);
    }

    /// Writes the frame in `zbuf`, which holds the first `n` pending bytes.
    fn write_frame(&mut self, n: usize) -> io::Result<()> {
        let meta = FrameMeta::of(&self.pending[..n], self.opts.first_seq);
        let z = std::mem::take(&mut self.zbuf);
        let written = self.write_compressed(&z, meta);
        self.zbuf = z;
        self.pending.drain(..n);
        written
    }

    /// The length past which a frame (of one line, being longer than a frame) is
    /// compressed as it comes.
    fn long_line(&self) -> usize {
        match self.opts.layout {
            // DeepSeek Harness's readers may want each frame's content size, which such a
            // frame leaves out.
            Layout::Dsh => usize::MAX,
            Layout::Sess => self.opts.frame_size.max(LONG_LINE),
        }
    }

    /// Where the long line that `buf` goes on (or is all of) begins in `pending`, if it
    /// makes a frame compressed as it comes: its bytes then go to zstd from `buf`, where
    /// copied into `pending` first they were held once more. Only a large write is looked
    /// at, as finding the last line end in `pending` costs a scan of it.
    fn starts_long(&self, buf: &[u8]) -> Option<usize> {
        if buf.len() < DIRECT_WRITE {
            return None;
        }
        // Lines before it are under a frame's size, or the frame would have been cut.
        let begins = memchr::memrchr(b'\n', &self.pending).map_or(0, |k| k + 1);
        let have = self.pending.len() - begins;
        let long = match memchr::memchr(b'\n', buf) {
            Some(k) => have + k + 1 > self.long_line(),
            None => have + buf.len() >= self.long_line(),
        };
        long.then_some(begins)
    }

    /// Starts the frame of the long line that the first `n` bytes of `pending` begin and
    /// `more` goes on (or ends), after the frames before it: they come first in the file.
    fn begin_long(&mut self, n: usize, more: &[u8]) -> io::Result<()> {
        self.drain()?;
        let first_seq = self.long_line_seq(&self.pending[..n], more);
        let at_once = self.opts.frames_at_once;
        let mut long = Box::new(Long::new(self.opts.level, first_seq, at_once)?);
        long.feed(&self.pending[..n], &mut self.out)?;
        self.pending.drain(..n);
        if self.pending.is_empty() {
            self.pending.shrink_to(self.opts.frame_size);
        }
        self.cutter.reset();
        self.long = Some(long);
        Ok(())
    }

    /// The index's seq of a long line that `have` and then `more` begin, read from its
    /// first [`FIRST_LINE_PREFIX`] bytes, as `repair` reads it: the same however the line
    /// came, and its seq is near its start.
    fn long_line_seq(&self, have: &[u8], more: &[u8]) -> Option<i64> {
        let mut head = have[..have.len().min(FIRST_LINE_PREFIX)].to_vec();
        let room = FIRST_LINE_PREFIX - head.len();
        head.extend_from_slice(&more[..more.len().min(room)]);
        let end = memchr::memchr(b'\n', &head).unwrap_or(head.len());
        (self.opts.first_seq)(&head[..end])
    }

    /// Goes on with the long line; returns what follows its end in `buf`, once the frame
    /// is written.
    fn go_on_long<'b>(&mut self, buf: &'b [u8]) -> io::Result<&'b [u8]> {
        let long = self.long.as_mut().expect("a long line");
        let Some(k) = memchr::memchr(b'\n', buf) else {
            long.feed(buf, &mut self.out)?;
            return Ok(&[]);
        };
        long.feed(&buf[..=k], &mut self.out)?;
        self.end_long()?;
        Ok(&buf[k + 1..])
    }

    /// Ends the long line's frame, if one is going on (the input may end without a
    /// newline) and records it.
    fn end_long(&mut self) -> io::Result<()> {
        let Some(mut long) = self.long.take() else {
            return Ok(());
        };
        let (compressed, crc32) = long.end(&mut self.out)?;
        self.out.flush()?;
        self.cut += 1;
        self.ledger.push(compressed, crc32, long.meta)
    }

    /// Writes a compressed frame and records it in the index.
    fn write_compressed(&mut self, z: &[u8], meta: FrameMeta) -> io::Result<()> {
        self.out.write_all(z)?;
        // A frame is written whole, and at once: never left in a buffer below, where a
        // quiet stream would keep it from the file.
        self.out.flush()?;
        self.ledger.record(z, meta)
    }
}

/// The frames written so far and where the next one starts.
#[derive(Default)]
struct Ledger {
    index: Index,
    offset: u64,
}

/// What a frame holds, for its index entry.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameMeta {
    pub uncompressed: u64,
    pub lines: u64,
    pub first_seq: Option<i64>,
}

impl FrameMeta {
    /// Measures a frame's content; `first_seq` reads its first line's seq.
    pub fn of(plain: &[u8], first_seq: fn(&[u8]) -> Option<i64>) -> FrameMeta {
        let lines = memchr::memchr_iter(b'\n', plain).count()
            + usize::from(plain.last().is_some_and(|&b| b != b'\n'));
        let first_line = plain.split(|&b| b == b'\n').next().unwrap_or_default();
        FrameMeta {
            uncompressed: plain.len() as u64,
            lines: lines as u64,
            first_seq: first_seq(first_line),
        }
    }
}

impl Ledger {
    /// Adds the index entry of a frame just written.
    fn record(&mut self, compressed: &[u8], meta: FrameMeta) -> io::Result<()> {
        self.push(compressed.len() as u64, crc32fast::hash(compressed), meta)
    }

    fn push(&mut self, compressed: u64, crc32: u32, meta: FrameMeta) -> io::Result<()> {
        self.index.entries.push(Entry {
            offset: self.offset,
            compressed: to_u32(compressed)?,
            uncompressed: to_u32(meta.uncompressed)?,
            lines: to_u32(meta.lines)?,
            crc32,
            first_seq: meta.first_seq,
            // Known once every line is written ([`FrameWriter::needs`]).
            needs: None,
        });
        self.offset += compressed;
        Ok(())
    }
}

/// A line at least this long (or the frame size, if larger) is compressed as it comes,
/// in a frame of its own, rather than held whole and then compressed: held, a 300 MB line
/// took its room three times over (read, held, compressed), 935 MB in all.
const LONG_LINE: usize = if cfg!(test) { 64 << 10 } else { 32 << 20 };

/// A write at least this large is looked at for the start of a long line
/// ([`FrameWriter::starts_long`]).
const DIRECT_WRITE: usize = if cfg!(test) { 8 << 10 } else { 1 << 20 };

/// The frame of one long line, being compressed: the same frame as [`FrameWriter::emit`]
/// writes, but for the content size, which its header leaves out (it is not known when
/// the frame begins; readers do not need it).
struct Long {
    encoder: zstd::stream::raw::Encoder<'static>,
    out: Vec<u8>,
    /// With [`FrameOptions::frames_at_once`], the frame so far, written when it ends: in an
    /// unlinked temporary file, as in memory it was the line's room once more.
    held: Option<std::fs::File>,
    crc: crc32fast::Hasher,
    compressed: u64,
    /// Lines: 1, the line may end without a newline.
    meta: FrameMeta,
}

impl Long {
    fn new(level: i32, first_seq: Option<i64>, at_once: bool) -> io::Result<Long> {
        let mut encoder = zstd::stream::raw::Encoder::new(level)?;
        encoder.set_parameter(CParameter::ChecksumFlag(true))?;
        Ok(Long {
            encoder,
            out: Vec::with_capacity(zstd::zstd_safe::CCtx::out_size()),
            held: match at_once {
                true => {
                    Some(tempfile::tempfile().map_err(|e| {
                        crate::io::scratch_error(e, "create", "a long line's frame")
                    })?)
                }
                false => None,
            },
            crc: crc32fast::Hasher::new(),
            compressed: 0,
            meta: FrameMeta {
                uncompressed: 0,
                lines: 1,
                first_seq,
            },
        })
    }

    /// Compresses `data` and writes what zstd gives back.
    fn feed<W: Write>(&mut self, data: &[u8], to: &mut W) -> io::Result<()> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let mut input = InBuffer::around(data);
        while input.pos() < data.len() {
            self.out.clear();
            self.encoder
                .run(&mut input, &mut OutBuffer::around(&mut self.out))?;
            self.put(to)?;
        }
        self.meta.uncompressed += data.len() as u64;
        Ok(())
    }

    /// Ends the frame; returns its compressed length and crc32, for the index.
    fn end<W: Write>(&mut self, to: &mut W) -> io::Result<(u64, u32)> {
        use zstd::stream::raw::{Operation, OutBuffer};
        loop {
            self.out.clear();
            let left = self
                .encoder
                .finish(&mut OutBuffer::around(&mut self.out), true)?;
            self.put(to)?;
            if left == 0 {
                if let Some(mut held) = self.held.take() {
                    copy_held(&mut held, to)?;
                }
                let crc = std::mem::take(&mut self.crc);
                return Ok((self.compressed, crc.finalize()));
            }
        }
    }

    fn put<W: Write>(&mut self, to: &mut W) -> io::Result<()> {
        self.crc.update(&self.out);
        self.compressed += self.out.len() as u64;
        match &mut self.held {
            Some(held) => held
                .write_all(&self.out)
                .map_err(|e| crate::io::scratch_error(e, "write", "a long line's frame")),
            None => to.write_all(&self.out),
        }
    }
}

/// Writes the frame held in `held` to `to`, from its start, in large writes.
fn copy_held<W: Write>(held: &mut std::fs::File, to: &mut W) -> io::Result<()> {
    use std::io::Seek;
    held.seek(io::SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match crate::io::read::read_some(held, &mut buf)? {
            0 => return Ok(()),
            n => to.write_all(&buf[..n])?,
        }
    }
}

fn to_u32(n: u64) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::other("a frame larger than 4 GiB"))
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        if self.long.is_some() {
            rest = self.go_on_long(rest)?;
        }
        if self.long.is_none()
            && let Some(begins) = self.starts_long(rest)
        {
            // The lines before it are a frame, as the cutter would cut them.
            if begins > 0 {
                self.emit(begins)?;
            }
            self.begin_long(self.pending.len(), rest)?;
            rest = self.go_on_long(rest)?;
        }
        self.pending.extend_from_slice(rest);
        // DSH's layout keeps the header line alone in the first frame.
        if self.opts.layout == Layout::Dsh
            && self.cut == 0
            && let Some(k) = memchr::memchr(b'\n', &self.pending)
        {
            self.emit(k + 1)?;
        }
        while let Some(n) = self.cutter.next(&self.pending) {
            self.emit(n)?;
        }
        // No frame could be cut from so many bytes: they are all one line, and it is the
        // frame (see `Cutter::next`). It goes to zstd as it comes instead of being held.
        if self.pending.len() >= self.long_line() {
            self.begin_long(self.pending.len(), &[])?;
        }
        Ok(buf.len())
    }

    /// Flushing a frame writer does not cut a frame: frames end where lines end, by size or
    /// window. It writes and flushes the frames already cut.
    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_all(data: &[u8], opts: FrameOptions, chunk: usize) -> (Vec<u8>, Index) {
        let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
        for c in data.chunks(chunk) {
            w.write_all(c).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_frame_writer_on_a_thread_holds_two_frames_room_and_no_more() {
        let opts = FrameOptions {
            compress_thread: true,
            ..FrameOptions::new(3, 4096)
        };
        let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
        for i in 0..2000 {
            writeln!(w, "{{\"seq\":{i},\"x\":\"{}\"}}", "y".repeat(i % 300)).unwrap();
            let worker = w.worker.as_ref().unwrap();
            // The one filling, and the one being compressed (back or not yet).
            let buffers = 1 + worker.in_flight + worker.spare_plain.len();
            assert!(buffers <= 2, "{buffers} frame buffers after line {i}");
        }
        assert!(w.frames_written() > 50);
    }

    #[test]
    fn frames_compressed_on_a_thread_are_the_same_bytes_in_the_same_order() {
        let data: Vec<u8> = (0..4000)
            .flat_map(|i| {
                format!("{{\"seq\":{i},\"x\":\"{}\"}}\n", "z".repeat(i % 90)).into_bytes()
            })
            .collect();
        for layout in [Layout::Sess, Layout::Dsh] {
            for (size, chunk) in [(64, 7), (1000, 333), (1 << 20, 4096), (5000, 1)] {
                let opts = FrameOptions {
                    layout,
                    ..FrameOptions::new(3, size)
                };
                let threaded = FrameOptions {
                    compress_thread: true,
                    ..opts
                };
                let (a, ia) = write_all(&data, opts, chunk);
                let (b, ib) = write_all(&data, threaded, chunk);
                assert!(a == b, "{layout:?} {size} {chunk}");
                assert_eq!(ia, ib);
            }
        }
        // A window flush writes every frame cut, at once, as a stream needs.
        let opts = FrameOptions {
            compress_thread: true,
            ..FrameOptions::new(3, 100)
        };
        let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
        w.write_all(&data[..5000]).unwrap();
        w.flush_frame().unwrap();
        let framed: usize = w.get_ref().len();
        assert_eq!(
            zstd::decode_all(&w.get_ref()[..]).unwrap(),
            &data[..data[..5000].iter().rposition(|&b| b == b'\n').unwrap() + 1]
        );
        assert!(framed > 0);
    }

    #[test]
    fn frames_hold_whole_lines_and_decode_with_stock_zstd() {
        let data: Vec<u8> = (0..5000)
            .flat_map(|i| {
                format!("{{\"seq\":{i},\"x\":\"{}\"}}\n", "y".repeat(i % 50)).into_bytes()
            })
            .collect();
        let opts = FrameOptions {
            first_seq: |l| crate::json::field(l, "seq").and_then(crate::json::safe_integer),
            ..FrameOptions::new(3, 4096)
        };
        let (file, index) = write_all(&data, opts, 777);
        assert!(index.entries.len() > 10);
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), data);
        let mut at = 0;
        let mut lines = 0;
        for e in &index.entries {
            assert_eq!(e.offset, at);
            let frame = &file[at as usize..(at + u64::from(e.compressed)) as usize];
            assert_eq!(crc32fast::hash(frame), e.crc32);
            let plain = zstd::decode_all(frame).unwrap();
            assert_eq!(plain.len() as u32, e.uncompressed);
            assert!(plain.ends_with(b"\n"));
            let first: serde_json::Value =
                serde_json::from_slice(plain.split(|&b| b == b'\n').next().unwrap()).unwrap();
            assert_eq!(Some(first["seq"].as_i64().unwrap()), e.first_seq);
            lines += e.lines;
            at += u64::from(e.compressed);
        }
        assert_eq!(lines, 5000);
    }

    #[test]
    fn long_lines_in_small_pieces_are_cut_as_when_written_whole() {
        // Lines far longer than the frame, between short ones.
        let data: Vec<u8> = (0..40)
            .flat_map(|i| {
                format!("{{\"i\":{i},\"x\":\"{}\"}}\n", "z".repeat(i * 517 % 9000)).into_bytes()
            })
            .collect();
        let opts = FrameOptions::new(3, 2048);
        let (whole, index) = write_all(&data, opts, data.len());
        for chunk in [1, 7, 300, 4096] {
            let (pieces, _) = write_all(&data, opts, chunk);
            assert!(pieces == whole, "in pieces of {chunk}");
            let mut count = FrameCount::new(2048);
            for c in data.chunks(chunk) {
                count.add(c);
            }
            let last = u64::from(count.pending() > 0);
            assert_eq!(count.frames + last, index.entries.len() as u64, "{chunk}");
        }
        let mut at = 0usize;
        for e in &index.entries {
            let frame = &whole[at..at + e.compressed as usize];
            let plain = zstd::decode_all(frame).unwrap();
            assert!(plain.ends_with(b"\n"));
            // A frame holds several lines only while they fit.
            assert!(plain.len() <= 2048 || plain.iter().filter(|&&b| b == b'\n').count() == 1);
            at += e.compressed as usize;
        }
    }

    #[test]
    fn a_long_line_is_compressed_as_it_comes_to_the_same_frames_however_it_comes() {
        // Lines past LONG_LINE (64 KiB in tests) among short ones; the last one long and
        // without a newline. Letters zstd cannot do much with, as in an image.
        let mut x = 88172645463325252u64;
        let mut noise = |n: usize| -> String {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect()
        };
        let mut data = Vec::new();
        for i in 0..12 {
            let n = [10, 70_000, 300, 200_000, 65_536, 5][i % 6];
            writeln!(data, "{{\"seq\":{i},\"x\":\"{}\"}}", noise(n)).unwrap();
        }
        write!(data, "{{\"seq\":12,\"x\":\"{}\"}}", noise(150_000)).unwrap();
        let lines = data.iter().filter(|&&b| b == b'\n').count() + 1;
        for layout in [Layout::Sess, Layout::Dsh] {
            let opts = FrameOptions {
                layout,
                first_seq: |l| crate::json::field(l, "seq").and_then(crate::json::safe_integer),
                ..FrameOptions::new(3, 4096)
            };
            let (whole, index) = write_all(&data, opts, data.len());
            assert_eq!(zstd::decode_all(&whole[..]).unwrap(), data);
            for threaded in [false, true] {
                for chunk in [1000, 7919, 1 << 16] {
                    let o = FrameOptions {
                        compress_thread: threaded,
                        ..opts
                    };
                    let (pieces, _) = write_all(&data, o, chunk);
                    assert!(pieces == whole, "{layout:?}, threaded {threaded}, {chunk}");
                }
            }
            // The frames are where the cutter puts them, each whole and checked.
            let mut count = FrameCount::new(4096);
            count.add(&data);
            // (The first line is alone in its frame anyway, as DSH's layout wants it.)
            assert_eq!(count.frames as usize + 1, index.entries.len());
            let (mut at, mut seen) = (0, 0);
            for e in &index.entries {
                let frame = &whole[at..at + e.compressed as usize];
                assert_eq!(crc32fast::hash(frame), e.crc32);
                let plain = zstd::decode_all(frame).unwrap();
                assert_eq!(plain.len(), e.uncompressed as usize);
                if plain.len() >= LONG_LINE {
                    assert_eq!(e.lines, 1);
                }
                let first = plain.split(|&b| b == b'\n').next().unwrap();
                assert_eq!((opts.first_seq)(first), e.first_seq);
                seen += e.lines;
                at += e.compressed as usize;
            }
            assert_eq!(seen as usize, lines);
        }
    }

    #[test]
    fn a_long_line_written_in_pieces_is_not_held() {
        let mut w = FrameWriter::new(Vec::new(), FrameOptions::new(3, 4096)).unwrap();
        w.write_all(b"{\"x\":\"").unwrap();
        for _ in 0..100 {
            w.write_all(&[b'y'; 10_000]).unwrap();
            assert!(
                w.pending.len() < LONG_LINE,
                "{} bytes held",
                w.pending.len()
            );
        }
        assert_eq!(w.pending(), 1_000_006);
        assert_eq!(w.frames_written(), 0);
        w.write_all(b"\"}\n{}\n").unwrap();
        assert_eq!((w.frames_written(), w.pending()), (1, 3));
        let (file, index) = w.finish().unwrap();
        assert_eq!(index.entries.len(), 2);
        assert_eq!(zstd::decode_all(&file[..]).unwrap().len(), 1_000_012);
    }

    #[test]
    fn a_frame_of_the_long_line_size_holding_several_lines_is_counted_so() {
        // Frames as long as LONG_LINE, the last line end at its last byte: the cutter cuts
        // such a frame of two lines, which is not a long line's frame.
        let mut data = Vec::new();
        for i in 0..6 {
            let a = format!("{{\"seq\":{i}}}\n");
            data.extend_from_slice(a.as_bytes());
            let fill = LONG_LINE - a.len() - "{\"x\":\"\"}\n".len();
            writeln!(data, "{{\"x\":\"{}\"}}", "q".repeat(fill)).unwrap();
        }
        let opts = FrameOptions {
            first_seq: |l| crate::json::field(l, "seq").and_then(crate::json::safe_integer),
            ..FrameOptions::new(3, LONG_LINE)
        };
        for chunk in [data.len(), 1000] {
            let (file, index) = write_all(&data, opts, chunk);
            let mut at = 0;
            for (k, e) in index.entries.iter().enumerate() {
                let plain = zstd::decode_all(&file[at..at + e.compressed as usize]).unwrap();
                assert_eq!(plain.len(), LONG_LINE, "frame {k}");
                let lines = plain.iter().filter(|&&b| b == b'\n').count();
                assert_eq!((e.lines, e.first_seq), (lines as u32, Some(k as i64)));
                at += e.compressed as usize;
            }
            assert_eq!(index.entries.len(), 6);
        }
    }

    #[test]
    fn a_long_line_written_whole_is_not_copied_to_be_held() {
        let mut w = FrameWriter::new(Vec::new(), FrameOptions::new(3, 4096)).unwrap();
        w.write_all(b"{\"seq\":1}\n{\"seq\":2,\"x\":\"ab").unwrap();
        let mut line = vec![b'y'; 3 * LONG_LINE];
        line.extend_from_slice(b"\"}\n{}\n");
        w.write_all(&line).unwrap();
        assert!(w.pending.capacity() < LONG_LINE, "{}", w.pending.capacity());
        assert_eq!((w.frames_written(), w.pending()), (2, 3));
        let (file, index) = w.finish().unwrap();
        assert_eq!(index.entries.len(), 3);
        assert_eq!(index.entries[1].lines, 1);
        let mut want = b"{\"seq\":1}\n{\"seq\":2,\"x\":\"ab".to_vec();
        want.extend_from_slice(&line);
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), want);
    }

    #[test]
    fn only_a_long_line_frame_in_sess_layout_leaves_out_its_content_size() {
        let mut data = b"{}\n".to_vec();
        writeln!(data, "{{\"x\":\"{}\"}}", "z".repeat(2 * LONG_LINE)).unwrap();
        for layout in [Layout::Sess, Layout::Dsh] {
            let opts = FrameOptions {
                layout,
                ..FrameOptions::new(3, 4096)
            };
            let (file, index) = write_all(&data, opts, 5000);
            let e = index.entries[1];
            let frame = &file[e.offset as usize..(e.offset + u64::from(e.compressed)) as usize];
            let size = zstd::zstd_safe::get_frame_content_size(frame).unwrap();
            let want = (layout == Layout::Dsh).then_some(u64::from(e.uncompressed));
            assert_eq!(size, want, "{layout:?}");
        }
    }

    #[test]
    fn a_stream_written_in_place_never_shows_half_a_frame() {
        let write = |at_once: bool| {
            let opts = FrameOptions {
                frames_at_once: at_once,
                ..FrameOptions::new(3, 4096)
            };
            let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
            w.write_all(b"{}\n").unwrap();
            w.flush_frame().unwrap();
            let before = w.get_ref().len();
            w.write_all(b"{\"x\":\"").unwrap();
            let mut grew = false;
            for k in 0..100u32 {
                let noise: Vec<u8> = (0..10_000u32)
                    .map(|i| b'a' + (i.wrapping_mul(2_654_435_761) ^ k) as u8 % 26)
                    .collect();
                w.write_all(&noise).unwrap();
                w.flush_frame().unwrap();
                grew |= w.get_ref().len() > before;
            }
            assert_eq!(grew, !at_once, "frames at once: {at_once}");
            w.write_all(b"\"}\n").unwrap();
            assert!(w.get_ref().len() > before);
            w.finish().unwrap().0
        };
        assert!(write(true) == write(false));
    }

    proptest::proptest! {
        /// The count, which keeps line ends only, cuts where the cutter cuts the bytes.
        #[test]
        fn frame_count_cuts_where_the_cutter_does(
            lines in proptest::collection::vec(0usize..300, 0..60),
            torn in 0usize..50,
            size in 1usize..700,
            chunk in 1usize..500,
        ) {
            let mut data: Vec<u8> = lines
                .iter()
                .flat_map(|&n| std::iter::repeat_n(b'x', n).chain([b'\n']))
                .collect();
            data.extend(std::iter::repeat_n(b'y', torn));
            let mut count = FrameCount::new(size);
            let (mut pending, mut cutter, mut frames) = (Vec::new(), Cutter::new(size), 0);
            for c in data.chunks(chunk) {
                count.add(c);
                pending.extend_from_slice(c);
                while let Some(n) = cutter.next(&pending) {
                    pending.drain(..n);
                    cutter.reset();
                    frames += 1;
                }
                proptest::prop_assert_eq!((count.frames, count.pending()), (frames, pending.len()));
            }
        }
    }

    #[test]
    fn dsh_layout_puts_the_header_alone_and_writes_no_index() {
        let data = b"{\"type\":\"session\",\"version\":0}\n{\"seq\":0}\n{\"seq\":1}\n";
        let opts = FrameOptions {
            layout: Layout::Dsh,
            ..FrameOptions::new(3, 1 << 20)
        };
        let (file, index) = write_all(data, opts, 5);
        assert_eq!(index.entries.len(), 2);
        assert_eq!(index.entries[0].lines, 1);
        assert_eq!(
            file.len() as u64,
            index.entries[1].offset + u64::from(index.entries[1].compressed)
        );
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), data);
    }
}
