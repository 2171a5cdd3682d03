//! Interned lines: long-range dedup of JSON values, across frames.
//!
//! sess cuts its container into independent frames (4 MiB), and zstd cannot see a repeat that
//! lies in another frame; agent logs are made of such repeats (a subagent's whole history
//! stored again at every step, an image string stored 138 times). The packer finds every
//! JSON string, array or object of at least `min` bytes (raw, as written) that occurred
//! earlier, and writes the later copies as references:
//!
//! ```text
//! {"type":"sess-interned","v":1,"defs":[[AT,LEN,ID],...],"refs":[[AT,ID,LEN,CRC],...],"line":LINE}
//! ```
//!
//! `LINE` is the line with each referenced value replaced by the byte `0` (so a JSON line
//! stays JSON); a ref's `AT` is the offset of that byte in `LINE`, `CRC` the crc32 of the
//! value. Once the refs are put back, each def names the bytes `AT..AT+LEN` of the whole
//! line as value `ID`, for later lines to reference. A value is defined at its second
//! occurrence (the first is only hashed, so nothing is stored for values that never
//! repeat) and referenced from its third; where a first pass over a file found it
//! repeated, at its first. (On a stretch where nothing repeats, only sampled frames are
//! looked into: [`QUIET`].) The bytes are never re-serialized, so the round
//! trip is exact whatever the producer's key order, number spelling or escapes.
//!
//! A reader keeps the definitions it has read (in an unlinked temporary file, so memory
//! holds only their places) until a line's `free` says no later line refers to them (an
//! array superseded by the next one at its path, everything at a window reset), so what it
//! keeps stays near what the writer remembers. A reference whose definition is missing (a damaged frame, a
//! file cut in front) or whose bytes do not match its crc32 is an error naming the line:
//! a line is restored exactly or not at all.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::ops::RangeInclusive;
use std::os::unix::fs::FileExt;

use serde::Deserialize;

use crate::json;

/// How every interned line starts: sess writes them only so, and a line of the input that
/// starts so is wrapped in one (with no refs) to be read back as itself.
pub const PREFIX: &[u8] = br#"{"type":"sess-interned","v":1,"defs":["#;

/// The default smallest value interned, in bytes.
pub const DEFAULT_MIN: usize = 256;

/// The default bytes of distinct values the packer remembers (like `zstd --long=30`).
pub const DEFAULT_WINDOW: u64 = 1 << 30;

/// The longest line a reader rebuilds: refs are small, what they stand for need not be,
/// and a hostile file could make a line of a few bytes stand for terabytes.
pub const MAX_LINE: usize = 1 << 32;

/// The bytes of a line an [`InternWriter`] gathers, when the line is one the writer may
/// pass on as it comes ([`Writer::streaming`]: a snapshot row), before it does so: such a
/// line is not looked into, and this writer never holds it whole.
pub const STREAM_AT: usize = 8 << 20;

/// The smallest array whose beginning is looked for in the last array at its path: each
/// one is defined for the next, which costs its header even when nothing refers to it.
const ARRAY_MIN: usize = 4096;

/// The longest chain of `[0` refs (each to the array before at its path) before an array
/// is written whole again. Each whole copy is a history zstd cannot see again (the last one
/// lies many frames back): on a 1 GiB Claude Code log, 64 instead of 16 wrote 3.8 MB
/// instead of 4.6 MB, and a frame of 4 MiB holds far more than 64 steps anyway.
const CHAIN: u32 = 64;

/// How many frames back a value's definition may lie for a ref to it: an older one is
/// defined again where the value occurs, so that damage reaches this many frames at most
/// through refs to whole values. (Rewriting a hot value every 8 frames, 32 MiB by
/// default, costs little.)
const REFRESH: u64 = 8;

/// The frames of input the survey reads before it judges whether reading on pays
/// ([`Writer::survey_wants_more`]). A log with no repeat so far apart in its first 64 MiB
/// (a DSH log, made of short deltas) was surveyed to its end for nothing: 0.25 s of a
/// 1.8 s pack of the 1 GiB DSH log.
const SURVEY_PROBE: u64 = 16;

/// Frames after which the writer, having found nothing to define or refer to in their
/// lines and told by no survey of a repeat to come, looks into the lines of one frame in
/// [`QUIET_SAMPLE`] only ([`Writer::looks_into_frame`]). On the 1 GiB DSH synth, whose
/// values never repeat a frame apart, looking into every line was about a tenth of the
/// pack's CPU time for no byte saved. A value that begins to repeat in the frames passed
/// over is met in two sampled frames and defined, and from then on every line is looked
/// into again. In frames, as the survey's probe is: a survey that read its probe and found
/// no repeat ([`Writer::surveyed`]) has seen as long a stretch. And at least
/// [`QUIET_BYTES`] of lines: with small frames, sixteen of them are too few to judge by.
const QUIET: u64 = SURVEY_PROBE;

/// The bytes of lines a quiet stretch holds at least ([`QUIET`]): sixteen frames of the
/// default size.
const QUIET_BYTES: u64 = 64 << 20;

/// One frame in this many is looked into on a quiet stretch ([`QUIET`]).
const QUIET_SAMPLE: u64 = 8;

/// Nesting below this depth is not looked into (the scanner recurses).
const MAX_DEPTH: usize = 64;

/// Whether a line is an interned line.
#[inline]
pub fn is_interned(line: &[u8]) -> bool {
    crate::json::starts_with_tag(line, PREFIX)
}

/// Whether the bytes of a line that `carry` begins and `next` (a new zstd frame's output)
/// goes on with are two lines glued: a file that ended without a final newline, then a
/// file joined to it with `cat` (as `zstd -dc` glues them). Within one sess file no frame
/// begins inside a line. It matters only when one of the two is an interned line, which
/// must be read alone to be rebuilt ([`Reader::read_glued`]); an interned `carry` must be
/// whole (one JSON value), so that a line pzstd cut between two frames is not taken for
/// one.
pub fn glued(carry: &[u8], next: &[u8]) -> bool {
    // The `}` first: a long interned line cut into many frames is not validated whole at
    // each of them.
    let whole = |c: &[u8]| c.trim_ascii_end().ends_with(b"}") && crate::json::validate(c).is_ok();
    !carry.is_empty() && (is_interned(next) || is_interned(carry) && whole(carry))
}

/// Values kept on disk by id; memory holds where each one is, the last ones put or read
/// back, up to [`CACHE_BYTES`], and those put but not yet written, up to [`PENDING_BYTES`].
pub struct Store {
    file: Option<File>,
    /// Where the next value goes: the file's bytes, then the pending ones.
    len: u64,
    at: Table<(u64, usize)>,
    /// Bytes of the file that freed values held, reclaimed by [`Store::compact`].
    dead: u64,
    /// The values put since the file was last written, as they would lie in it from
    /// `pending_at` on (`pending_at + pending.len() == len`), and what each is (id, place,
    /// length). Most values are freed soon (a history array once the next one is defined),
    /// and one that is freed here is never written: on a 1 GiB Codex log, writing every
    /// value as it came was 1.5 GB of writes in 715,000 calls, a third of the pack.
    pending: Vec<u8>,
    pending_at: u64,
    pending_ids: Vec<(u64, u64, usize)>,
    /// The bytes it holds pending at most ([`PENDING_BYTES`]); a longer value is written
    /// at once.
    pending_max: usize,
    /// The dead bytes it holds at least before it is compacted.
    compact_min: u64,
    /// Values in memory too: a value repeated once is mostly repeated again soon (a
    /// snapshot log repeats the same ones every frame), and each read of the file is a
    /// system call (a fifth of `sess stats` on a pi 1.6 log).
    cache: Table<Vec<u8>>,
    cached: usize,
    /// The bytes of values it holds in memory at most ([`CACHE_BYTES`]).
    cache_max: usize,
    /// The room a value is compared in ([`Store::pieces`]).
    piece: Vec<u8>,
}

/// The bytes of values a [`Store`] keeps in memory too. When they would be more, the cache
/// starts again empty: cheaper than keeping an order, and a working set that fits is
/// soon back.
const CACHE_BYTES: usize = 8 << 20;

/// The longest value kept in memory: a longer one costs one read of many bytes, not many
/// reads.
const CACHE_VALUE_MAX: usize = 256 << 10;

/// The pieces a stored value is compared in ([`Store::pieces`]).
const PIECE: usize = 1 << 20;

/// The bytes of values a [`Store`] holds before it writes them (those still kept).
const PENDING_BYTES: usize = 8 << 20;

impl Default for Store {
    fn default() -> Store {
        Store {
            file: None,
            len: 0,
            at: Table::default(),
            dead: 0,
            compact_min: 8 << 20,
            cache: Table::default(),
            cached: 0,
            cache_max: CACHE_BYTES,
            piece: Vec::new(),
            pending: Vec::new(),
            pending_at: 0,
            pending_ids: Vec::new(),
            pending_max: PENDING_BYTES,
        }
    }
}

/// The bytes a hash table of `map`'s room takes: a slot per entry and a control byte,
/// for slots an eighth more than its room (the table's load factor).
fn table_bytes<K, V, S>(map: &HashMap<K, V, S>) -> u64 {
    slots_bytes(map.capacity(), std::mem::size_of::<(K, V)>())
}

fn set_bytes<K, S>(set: &HashSet<K, S>) -> u64 {
    slots_bytes(set.capacity(), std::mem::size_of::<K>())
}

fn slots_bytes(capacity: usize, entry: usize) -> u64 {
    (capacity as u64 * 8 / 7) * (entry as u64 + 1)
}

/// A table keyed by a value's crc32 and length ([`key`]), an id or a path hash: keys that
/// are hashes already, which the standard SipHash hashed again at a cost of 3 to 7% of a
/// pack's busiest thread.
type Table<V> = HashMap<u64, V, Keyed>;
type KeySet = HashSet<u64, Keyed>;

/// Hashes a u64 key with a seed drawn at random per table (from the standard library's
/// random seed) and a full mix, so that a file cannot be made to put its keys in a few
/// buckets: crc32 values are easy to choose.
#[derive(Clone, Copy)]
struct Keyed {
    seed: u64,
}

impl Default for Keyed {
    fn default() -> Keyed {
        Keyed {
            seed: std::hash::RandomState::new().hash_one(0u64),
        }
    }
}

impl BuildHasher for Keyed {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher {
            keyed: *self,
            hash: 0,
        }
    }
}

struct KeyHasher {
    keyed: Keyed,
    hash: u64,
}

impl Hasher for KeyHasher {
    /// splitmix64's finish: every bit of the key moves every bit of the hash, and the table
    /// picks a bucket by the low bits (a plain multiply leaves those to the low bits alone).
    fn write_u64(&mut self, k: u64) {
        let mut z = k ^ self.keyed.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.hash = z ^ (z >> 31);
    }

    /// Only u64 keys are hashed here; any other is folded in a word at a time.
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let k = u64::from_le_bytes(word) ^ self.hash.rotate_left(23);
            self.write_u64(k);
        }
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

fn scratch(e: io::Error) -> io::Error {
    crate::io::scratch_error(e, "write", "repeated values")
}

impl Store {
    /// How long value `id` is, if it is kept.
    fn len_of(&self, id: u64) -> Option<usize> {
        self.at.get(&id).map(|&(_, len)| len)
    }

    /// Forgets value `id`.
    fn forget(&mut self, id: u64) -> io::Result<()> {
        self.free(id..=id)
    }

    /// Forgets the values with ids in `ids` (inclusive, so that any id can be named, the
    /// last one too).
    fn free(&mut self, ids: RangeInclusive<u64>) -> io::Result<()> {
        let mut dead = 0;
        // A value still pending is never written.
        let written = self.pending_at;
        remove_ids(&mut self.at, &ids, |&(at, len)| {
            if at < written {
                dead += len as u64;
            }
        });
        let mut uncached = 0;
        remove_ids(&mut self.cache, &ids, |v| uncached += v.len());
        self.cached -= uncached;
        self.dead += dead;
        if self.dead >= self.compact_min && self.dead >= self.len / 2 {
            self.compact()?;
        }
        Ok(())
    }

    /// Copies the values still kept into a new file. Done only when at least half the file
    /// is dead, so the bytes copied are at most the bytes freed since the last time.
    /// Values that lie together are read together, and the new file is written a buffer at
    /// a time: copied value by value, the compactions of the 1 GiB Codex pack made 400,000
    /// reads and as many writes, a fifth of its packing thread.
    fn compact(&mut self) -> io::Result<()> {
        self.write_pending()?;
        let Some(old) = self.file.take() else {
            return Ok(());
        };
        let mut live: Vec<(u64, u64, usize)> = self
            .at
            .iter()
            .map(|(&id, &(at, len))| (at, id, len))
            .collect();
        live.sort_unstable();
        let mut copy = Compaction::new(old, tempfile::tempfile().map_err(scratch)?, 1 << 20);
        // The values not yet read that lie together in the old file: where, how long.
        let mut run = (0, 0);
        let mut pos = 0;
        for (at, id, len) in live {
            if run.0 + run.1 as u64 != at {
                copy.run(run.0, run.1)?;
                run = (at, 0);
            }
            run.1 += len;
            self.at.insert(id, (pos, len));
            pos += len as u64;
        }
        copy.run(run.0, run.1)?;
        self.file = Some(copy.finish()?);
        self.len = pos;
        self.pending_at = pos;
        self.dead = 0;
        Ok(())
    }

    fn put(&mut self, id: u64, bytes: &[u8]) -> io::Result<()> {
        if self.pending.len() + bytes.len() > self.pending_max {
            self.write_pending()?;
        }
        if bytes.len() > self.pending_max {
            write_at(&mut self.file, bytes, self.len)?;
            self.pending_at = self.len + bytes.len() as u64;
        } else {
            // Its room once, exactly: grown by doubling, it reached 16 MiB for 8.
            if self.pending.capacity() == 0 {
                self.pending.reserve_exact(self.pending_max);
            }
            self.pending.extend_from_slice(bytes);
            self.pending_ids.push((id, self.len, bytes.len()));
        }
        // An id defined again (only a damaged or hostile log does that): its old bytes are
        // dead, if they were written.
        if let Some((at, len)) = self.at.insert(id, (self.len, bytes.len()))
            && at < self.pending_at
        {
            self.dead += len as u64;
        }
        self.len += bytes.len() as u64;
        self.keep(id, bytes);
        Ok(())
    }

    /// Writes the pending values still kept, one after another (those freed or put again
    /// meanwhile leave no gap), in as few writes as they are runs. Their places change only
    /// once all is written: a failed write leaves the store as it was.
    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let from = self.pending_at;
        let mut to = from;
        // Runs of pending bytes, and where each goes in the file.
        let mut runs: Vec<(std::ops::Range<usize>, u64)> = Vec::new();
        let mut kept = Vec::new();
        for &(id, at, len) in &self.pending_ids {
            if self.at.get(&id) != Some(&(at, len)) {
                continue;
            }
            let start = (at - from) as usize;
            match runs.last_mut() {
                Some((run, _)) if run.end == start => run.end += len,
                _ => runs.push((start..start + len, to)),
            }
            kept.push((id, (to, len)));
            to += len as u64;
        }
        for (run, at) in runs {
            write_at(&mut self.file, &self.pending[run], at)?;
        }
        self.at.extend(kept);
        self.pending.clear();
        self.pending_ids.clear();
        self.len = to;
        self.pending_at = to;
        Ok(())
    }

    /// Keeps value `id` in memory too, if it is short enough.
    fn keep(&mut self, id: u64, bytes: &[u8]) {
        if let Some(v) = self.cache.remove(&id) {
            self.cached -= v.len();
        }
        if bytes.len() > CACHE_VALUE_MAX {
            return;
        }
        if self.cached + bytes.len() > self.cache_max {
            self.cache.clear();
            self.cached = 0;
        }
        self.cached += bytes.len();
        self.cache.insert(id, bytes.to_vec());
    }

    /// Calls `each` with value `id`'s bytes in order, in pieces of at most [`PIECE`]
    /// bytes from the file, until it returns false; its length, or `None` when there is no
    /// such value. A long value is compared so without being read whole: a 100 MB line
    /// repeated took its room once more (issue 12's bound is twice the longest line).
    fn pieces(
        &mut self,
        id: u64,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Option<usize>> {
        if let Some(v) = self.cache.get(&id) {
            each(v);
            return Ok(Some(v.len()));
        }
        let Some(&(at, len)) = self.at.get(&id) else {
            return Ok(None);
        };
        if at >= self.pending_at {
            let from = (at - self.pending_at) as usize;
            each(&self.pending[from..from + len]);
            return Ok(Some(len));
        }
        let mut piece = std::mem::take(&mut self.piece);
        piece.clear();
        let read = self.read_pieces(id, at, len, &mut piece, each);
        self.piece = piece;
        read.map(|found| found.then_some(len))
    }

    /// [`Store::pieces`] of a value in the file: a short one read whole (and kept in the
    /// cache, as compared values are often compared again), a long one piece by piece.
    fn read_pieces(
        &mut self,
        id: u64,
        at: u64,
        len: usize,
        piece: &mut Vec<u8>,
        each: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<bool> {
        if len <= CACHE_VALUE_MAX {
            let found = self.get_prefix(id, usize::MAX, piece)?;
            if found {
                each(piece);
            }
            return Ok(found);
        }
        let Some(file) = &self.file else {
            return Ok(false);
        };
        piece.resize(PIECE, 0);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(PIECE);
            file.read_exact_at(&mut piece[..n], at + done as u64)?;
            if !each(&piece[..n]) {
                break;
            }
            done += n;
        }
        Ok(true)
    }

    /// Whether value `id` is `v`, byte for byte.
    fn same(&mut self, id: u64, v: &[u8]) -> io::Result<bool> {
        let (mut at, mut same) = (0, true);
        let len = self.pieces(id, &mut |p| {
            same = v.get(at..at + p.len()) == Some(p);
            at += p.len();
            same
        })?;
        Ok(same && len == Some(v.len()))
    }

    /// How many bytes `v` and value `id` begin with alike; `None` when there is no such
    /// value.
    fn shared_prefix(&mut self, id: u64, v: &[u8]) -> io::Result<Option<usize>> {
        let mut at = 0;
        let len = self.pieces(id, &mut |p| {
            let k = common_prefix(&v[at..], p);
            at += k;
            k == p.len()
        })?;
        Ok(len.map(|_| at))
    }

    /// Appends value `id` to `out`; false when there is no such value.
    #[cfg(test)]
    fn get(&mut self, id: u64, out: &mut Vec<u8>) -> io::Result<bool> {
        self.get_prefix(id, usize::MAX, out)
    }

    /// Appends the first `most` bytes of value `id` (all of it, when shorter) to `out`.
    fn get_prefix(&mut self, id: u64, most: usize, out: &mut Vec<u8>) -> io::Result<bool> {
        if let Some(v) = self.cache.get(&id) {
            out.extend_from_slice(&v[..v.len().min(most)]);
            return Ok(true);
        }
        let Some(&(at, len)) = self.at.get(&id) else {
            return Ok(false);
        };
        let whole = len <= most;
        let len = len.min(most);
        let start = out.len();
        if at >= self.pending_at {
            let from = (at - self.pending_at) as usize;
            out.extend_from_slice(&self.pending[from..from + len]);
        } else {
            let Some(file) = &self.file else {
                return Ok(false);
            };
            out.resize(start + len, 0);
            file.read_exact_at(&mut out[start..], at)?;
        }
        if whole {
            self.keep(id, &out[start..]);
        }
        Ok(true)
    }

    /// Forgets every value.
    fn clear(&mut self) -> io::Result<()> {
        if let Some(f) = &self.file {
            f.set_len(0)?;
        }
        self.len = 0;
        self.dead = 0;
        self.at.clear();
        self.cache.clear();
        self.cached = 0;
        self.pending.clear();
        self.pending_ids.clear();
        self.pending_at = 0;
        Ok(())
    }
}

/// A compaction's copy from the old scratch file to the new one, through one buffer.
struct Compaction {
    old: File,
    new: File,
    /// At most `cap` bytes.
    buf: Vec<u8>,
    cap: usize,
    /// Where the buffer's bytes go in the new file.
    at: u64,
}

impl Compaction {
    fn new(old: File, new: File, cap: usize) -> Compaction {
        Compaction {
            old,
            new,
            buf: Vec::with_capacity(cap),
            cap: cap.max(1),
            at: 0,
        }
    }

    /// Appends `len` bytes of the old file from `from` to what the new one gets.
    fn run(&mut self, mut from: u64, mut len: usize) -> io::Result<()> {
        while len > 0 {
            if self.buf.len() == self.cap {
                self.flush()?;
            }
            let n = len.min(self.cap - self.buf.len());
            let start = self.buf.len();
            self.buf.resize(start + n, 0);
            self.old.read_exact_at(&mut self.buf[start..], from)?;
            (from, len) = (from + n as u64, len - n);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.new.write_all_at(&self.buf, self.at).map_err(scratch)?;
        self.at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self) -> io::Result<File> {
        self.flush()?;
        Ok(self.new)
    }
}

/// Writes `bytes` at `at` in the scratch file, made when first needed.
fn write_at(file: &mut Option<File>, bytes: &[u8], at: u64) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let file = match file {
        Some(f) => f,
        None => file.insert(tempfile::tempfile().map_err(scratch)?),
    };
    file.write_all_at(bytes, at).map_err(scratch)
}

/// Removes the entries of `map` whose ids are in `ids`, showing each to `gone`: id by id
/// when there are fewer ids than entries, else in one pass over the map.
fn remove_ids<V>(map: &mut Table<V>, ids: &RangeInclusive<u64>, mut gone: impl FnMut(&V)) {
    let many = ids.end().saturating_sub(*ids.start()).saturating_add(1);
    if many <= map.len() as u64 {
        for id in ids.clone() {
            if let Some(v) = map.remove(&id) {
                gone(&v);
            }
        }
    } else {
        map.retain(|id, v| {
            let keep = !ids.contains(id);
            if !keep {
                gone(v);
            }
            keep
        });
    }
}

/// Why an interned line cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("a malformed interned line: {0}")]
    Malformed(String),
    #[error(
        "an interned line refers to value {0}, which is not defined before it (its \
         definition was in a frame that is missing or damaged, or in front of where reading began)"
    )]
    Missing(u64),
    #[error("an interned line refers to value {0}, whose bytes do not match the reference's crc32")]
    Mismatch(u64),
    #[error("cannot keep interned values: {0}")]
    Io(#[from] io::Error),
    #[error("not enough memory for the {0}-byte line it stands for")]
    Memory(u64),
}

impl Error {
    /// The error that ends reading, rather than costing one line: the store failed, or the
    /// line does not fit in memory (on a larger machine it would read). Any other is a
    /// line that cannot be rebuilt.
    pub fn into_fatal(self) -> Result<Error, io::Error> {
        match self {
            Error::Io(e) => Err(e),
            Error::Memory(_) => Err(io::Error::new(io::ErrorKind::OutOfMemory, self.to_string())),
            e => Ok(e),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    #[serde(rename = "type")]
    _type: String,
    v: u32,
    defs: Vec<[u64; 3]>,
    refs: Vec<[u64; 4]>,
    /// Id ranges `[from, to)` no later line refers to (optional: written only when there
    /// are some).
    #[serde(default)]
    free: Vec<[u64; 2]>,
}

/// The reading side: rebuilds interned lines, keeping the values they define.
#[derive(Default)]
pub struct Reader {
    store: Store,
}

impl Reader {
    /// The values kept, their bytes, and the bytes of the file they are kept in.
    pub fn kept(&self) -> (usize, u64, u64) {
        let live = self.store.at.values().map(|&(_, len)| len as u64).sum();
        (self.store.at.len(), live, self.store.len)
    }

    /// Forgets every definition (a new input begins).
    pub fn clear(&mut self) -> io::Result<()> {
        self.store.clear()
    }

    /// Rebuilds interned `line` into `out` (cleared first) and keeps what it defines.
    ///
    /// A line whose ref cannot be resolved is an error, but the definitions whose bytes
    /// lie outside every unresolved ref are still kept (a ref's `LEN` says where the bytes
    /// after it lie), and the others are forgotten. So a lost value costs the lines that
    /// need its bytes, not the lines that only need what a line holding it defines.
    pub fn read(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        out.clear();
        let (header, stored) = split(line)?;
        self.reserve_rebuilt(&header, stored.len(), out)?;
        let mut copied = 0;
        let mut first_error = None;
        // Unresolved refs, as ranges of the line rebuilt: their bytes are not in `out`,
        // so a place `p` of the line is at `p - skipped` in `out`, `skipped` being the
        // bytes of the holes before it.
        let mut holes: Vec<std::ops::Range<u64>> = Vec::new();
        let mut skipped = 0u64;
        for &[at, id, len, crc] in &header.refs {
            let at = usize::try_from(at).unwrap_or(usize::MAX);
            let rest = stored.get(at..).unwrap_or_default();
            let whole = rest.first() == Some(&b'0');
            let prefix = rest.starts_with(b"[0");
            if at < copied || !(whole || prefix) {
                return Err(Error::Malformed(format!(
                    "a ref at {at} is out of order or not at a 0 or [0"
                )));
            }
            let grown = (out.len() as u64 + skipped)
                .checked_add((at - copied) as u64)
                .and_then(|n| n.checked_add(len));
            if grown.is_none_or(|n| n > MAX_LINE as u64) {
                return Err(Error::Malformed(format!(
                    "the line would be longer than {MAX_LINE} bytes"
                )));
            }
            out.extend_from_slice(&stored[copied..at]);
            match self.resolve(id, len, crc, whole, out) {
                Ok(()) => {}
                Err(e @ Error::Io(_)) => return Err(e),
                Err(e) => {
                    let start = out.len() as u64 + skipped;
                    holes.push(start..start + len);
                    skipped += len;
                    first_error.get_or_insert(e);
                }
            }
            copied = at + if whole { 1 } else { 2 };
        }
        out.extend_from_slice(&stored[copied..]);
        let rebuilt = out.len() as u64 + skipped;
        if rebuilt > MAX_LINE as u64 {
            return Err(Error::Malformed(format!(
                "the line would be longer than {MAX_LINE} bytes"
            )));
        }
        for &[at, len, id] in &header.defs {
            let range = def_range(at, len, rebuilt)?;
            if holes
                .iter()
                .any(|h| h.start < range.end && range.start < h.end)
            {
                // Forgotten, not left as it was: a later ref to `id` must not find an
                // older value under the same id.
                self.store.forget(id)?;
                continue;
            }
            let shift: u64 = holes
                .iter()
                .filter(|h| h.end <= range.start)
                .map(|h| h.end - h.start)
                .sum();
            let (from, to) = ((range.start - shift) as usize, (range.end - shift) as usize);
            self.store.put(id, &out[from..to])?;
        }
        for &[from, to] in &header.free {
            if from > to {
                return Err(Error::Malformed(format!("a free range {from}..{to}")));
            }
            if from < to {
                self.store.free(from..=to - 1)?;
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Rebuilds into `out` a line whose bytes from `at` on began a new file ([`glued`]):
    /// each part as it reads alone, one after the other. Returns where the second part
    /// begins in `out`. Both parts are read, so that the definitions of one survive an
    /// error in the other; the first error is returned.
    pub fn read_glued(
        &mut self,
        line: &[u8],
        at: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        out.clear();
        let (mut part, mut first_error, mut second) = (Vec::new(), None, 0);
        for (k, bytes) in [&line[..at], &line[at..]].into_iter().enumerate() {
            if k == 1 {
                second = out.len();
            }
            if !is_interned(bytes) {
                out.extend_from_slice(bytes);
                continue;
            }
            match self.read(bytes, &mut part) {
                Ok(()) => {
                    out.try_reserve(part.len())
                        .map_err(|_| Error::Memory((out.len() + part.len()) as u64))?;
                    out.extend_from_slice(&part);
                }
                Err(e @ (Error::Io(_) | Error::Memory(_))) => return Err(e),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(second), Err)
    }

    /// Makes room in `out` for the line that `header`'s refs and `stored` bytes rebuild,
    /// all at once: a few bytes of refs to one large value can stand for gigabytes, and
    /// growing into them step by step doubled the memory, then aborted when an allocation
    /// failed. Only refs to values at hand count, at most their length: a damaged ref's
    /// length asks for nothing. Fails when the memory cannot be had.
    fn reserve_rebuilt(
        &self,
        header: &Header,
        stored: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let refs: u64 = header
            .refs
            .iter()
            .filter_map(|&[_, id, len, _]| Some(len.min(self.store.len_of(id)? as u64)))
            .fold(0, u64::saturating_add);
        let total = stored as u64 + refs;
        if total > MAX_LINE as u64 {
            // No machine reads it: the line is what is wrong, not the memory.
            return Err(Error::Malformed(format!(
                "the line would be longer than {MAX_LINE} bytes"
            )));
        }
        out.try_reserve_exact(total as usize)
            .map_err(|_| Error::Memory(total))
    }

    /// Appends what a ref stands for to `out`: value `id` whole, or its first `len` bytes
    /// (`whole` false), checked against the ref's `len` and `crc`. On an error, `out` is
    /// as it was.
    fn resolve(
        &mut self,
        id: u64,
        len: u64,
        crc: u64,
        whole: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let start = out.len();
        // A `0` stands for the whole value, a `[0` for its first `len` bytes.
        let most = if whole { usize::MAX } else { len as usize };
        if !self.store.get_prefix(id, most, out)? {
            return Err(Error::Missing(id));
        }
        let got = &out[start..];
        if got.len() as u64 != len
            || u64::from(crc32fast::hash(got)) != crc
            || (!whole && got.first() != Some(&b'['))
        {
            out.truncate(start);
            return Err(Error::Mismatch(id));
        }
        Ok(())
    }
}

/// The bytes a def `[AT,LEN,ID]` names in a rebuilt line of `line_len` bytes.
fn def_range(at: u64, len: u64, line_len: u64) -> Result<std::ops::Range<u64>, Error> {
    at.checked_add(len)
        .map(|end| at..end)
        .filter(|r| r.end <= line_len)
        .ok_or_else(|| Error::Malformed(format!("a def at {at}+{len} past the line")))
}

/// The header and the stored line of an interned line.
fn split(line: &[u8]) -> Result<(Header, &[u8]), Error> {
    const LINE: &[u8] = br#","line":"#;
    let bad = |why: &str| Error::Malformed(why.to_string());
    // The header holds only numbers before `,"line":`, so its first occurrence is the one.
    let k = memchr::memmem::find(line, LINE).ok_or_else(|| bad("no \"line\" member"))?;
    let stored = line[k + LINE.len()..]
        .strip_suffix(b"}")
        .ok_or_else(|| bad("it does not end with }"))?;
    let mut head = line[..k].to_vec();
    head.push(b'}');
    let header: Header =
        serde_json::from_slice(&head).map_err(|e| Error::Malformed(e.to_string()))?;
    if header.v != 1 {
        return Err(Error::Malformed(format!(
            "version {} (this sess reads 1)",
            header.v
        )));
    }
    Ok((header, stored))
}

/// The writing side: finds repeated values and writes lines with references to them.
pub struct Writer {
    min: usize,
    window: u64,
    /// Values seen once, by [`key`]: the frame their line went into.
    seen: Table<u64>,
    /// Repeats nearer than this many bytes of input are left to zstd (the frame size).
    near: u64,
    /// Where the survey is in the input, and the values it saw once there.
    survey_at: u64,
    survey_seen: Table<u64>,
    /// Values a survey of the whole input ([`Writer::survey`]) found more than once: they
    /// are defined at their first occurrence, not their second.
    repeated: KeySet,
    /// Bytes of the values the survey holds.
    surveyed: u64,
    /// Values defined, by [`key`]: their id and the frame their line went into.
    defs: Table<Def>,
    /// The frame the line being interned goes into, at the earliest.
    frame: u64,
    /// The first frame a reader must begin at to have what the refs of the line being
    /// interned stand for (`u64::MAX`: it has none).
    line_needs: u64,
    /// The defined values' bytes, to compare a candidate with before referencing it.
    store: Store,
    next_id: u64,
    /// Bytes of the values in `seen` and `defs`.
    remembered: u64,
    pub refs: u64,
    pub bytes_referenced: u64,
    /// The bytes the tables above (and the store's) have held at most: the window's index,
    /// which a memory bound allows for beside a fixed budget ([`Writer::index_peak`]).
    index_peak: u64,
    /// The keys the last line defined, to be placed in their frame.
    last_defs: Vec<u64>,
    /// The last array at each path (a hash of its keys).
    arrays: Table<LastArray>,
    /// The paths of the arrays the last line defined.
    last_arrays: Vec<u64>,
    /// Scratch for [`children`]: the commas of one container, and the children of the
    /// containers being walked, innermost last.
    commas: Commas,
    kids: Vec<Kid>,
    /// Ids no later line will refer to, as `[from, to)` ranges, for the next interned line
    /// to tell readers.
    free: Vec<[u64; 2]>,
    /// Lines not looked into ([`Writer::passing`]).
    passed: Option<fn(&[u8]) -> bool>,
    /// Lines passed on as they come once [`STREAM_AT`] bytes of them are gathered, told by
    /// their beginning ([`Writer::streaming`]).
    streams: Option<fn(&[u8]) -> bool>,
    /// The first frame from which only sampled frames are looked into, unless a line
    /// defines or refers to a value before ([`QUIET`] frames after the last that did).
    quiet_from: u64,
    /// The bytes of lines written since a line last defined or referred to a value: the
    /// stretch is quiet once they are [`QUIET_BYTES`] too.
    quiet_bytes: u64,
    /// The frames and bytes of a quiet stretch ([`QUIET`], [`QUIET_BYTES`]; tests make
    /// them fewer).
    quiet_frames: u64,
    quiet_min_bytes: u64,
}

/// The last array at a path, for the next one there to refer to its beginning.
#[derive(Clone, Copy)]
struct LastArray {
    known: Known,
    /// Its first element's [`key`], for the next array at its path to tell whether it
    /// begins the same (0 when it has none).
    head: u64,
    /// The frame its line went into (`u64::MAX` while that line is being written).
    frame: u64,
    /// How many `[0` refs lead from it to an array written whole.
    chain: u32,
    /// The first frame a reader must begin at to have its bytes ([`Def::needs`]).
    needs: u64,
}

/// How readers know the last array at a path.
#[derive(Clone, Copy)]
enum Known {
    /// Not at all: it was not defined, as the array before it at its path began otherwise.
    Not,
    /// Defined for the next array at its path, which frees it.
    Own(u64),
    /// As a definition of its whole value, which any later line may refer to: not freed
    /// when the next array at its path takes its place.
    Shared(u64),
}

/// A value the writer has defined.
#[derive(Clone, Copy)]
struct Def {
    id: u64,
    /// The frame its line went into (`u64::MAX` while that line is being written).
    frame: u64,
    /// Whether its bytes are in its line as they are (no refs inside), where zstd sees them.
    literal: bool,
    /// The first frame a reader must begin at to have its bytes: its own, or what the refs
    /// inside it need (`u64::MAX` until its line is placed).
    needs: u64,
}

/// A ref found in a line: what it stands for, the crc32 of those bytes, and the first frame
/// a reader must begin at to have them.
struct Ref {
    found: Found,
    crc: u32,
    needs: u64,
}

/// A value found in a line, by its place in the line.
struct Found {
    start: usize,
    end: usize,
    id: u64,
    /// A ref to the first `end - start` bytes of an array (written `[0`), not a whole value
    /// (written `0`).
    prefix: bool,
}

impl Writer {
    /// Interns values of at least `min` bytes (0: none), remembering at most `window`
    /// bytes of them.
    pub fn new(min: usize, window: u64) -> Writer {
        Writer {
            min,
            window,
            seen: Table::default(),
            // sess pack sets the frame size it uses (`near`); this is its default.
            near: 4 << 20,
            survey_at: 0,
            survey_seen: Table::default(),
            repeated: KeySet::default(),
            surveyed: 0,
            defs: Table::default(),
            frame: 0,
            line_needs: u64::MAX,
            store: Store::default(),
            next_id: 0,
            remembered: 0,
            refs: 0,
            bytes_referenced: 0,
            index_peak: 0,
            last_defs: Vec::new(),
            arrays: Table::default(),
            last_arrays: Vec::new(),
            commas: Commas::default(),
            kids: Vec::new(),
            free: Vec::new(),
            passed: None,
            streams: None,
            quiet_from: QUIET,
            quiet_bytes: 0,
            quiet_frames: QUIET,
            quiet_min_bytes: QUIET_BYTES,
        }
    }

    /// The frames with nothing found in their lines after which only sampled frames are
    /// looked into, whatever their bytes ([`QUIET`]; `u64::MAX`: never).
    pub fn quiet_after(mut self, frames: u64) -> Writer {
        self.quiet_frames = frames;
        self.quiet_from = frames;
        self.quiet_min_bytes = 0;
        self
    }

    /// Lines for which `passed` is true are not looked into, as lines shorter than `min`
    /// are not: written as they are (wrapped when they look interned), and their values
    /// neither referenced nor remembered. For lines a caller knows hold no value a later
    /// line repeats.
    pub fn passing(mut self, passed: fn(&[u8]) -> bool) -> Writer {
        self.passed = Some(passed);
        self
    }

    /// Lines that [`InternWriter`] passes on as they come, not looked into, once
    /// [`STREAM_AT`] bytes of them are written without their end: `streams` is asked of
    /// those bytes. Such a line costs no more memory than that, however long it is.
    pub fn streaming(mut self, streams: fn(&[u8]) -> bool) -> Writer {
        self.streams = Some(streams);
        self
    }

    /// What [`Writer::line`] notes of a line of `len` bytes passed on as it came, which
    /// defined and referred to nothing.
    fn passed_on(&mut self, len: u64) {
        self.last_defs.clear();
        self.last_arrays.clear();
        self.note_quiet(false, len);
        self.line_needs = u64::MAX;
    }

    /// Counts a line of `len` bytes towards a quiet stretch, or, when it defined or
    /// referred to a value (`found`), ends the stretch.
    fn note_quiet(&mut self, found: bool, len: u64) {
        if found {
            self.quiet_bytes = 0;
            self.quiet_from = self.frame.saturating_add(self.quiet_frames);
        } else {
            self.quiet_bytes = self.quiet_bytes.saturating_add(len + 1);
        }
    }

    /// Writes `line` (without its newline) to `out`, as an interned line when it repeats
    /// or defines a value, else as it is.
    pub fn line<W: Write + ?Sized>(&mut self, line: &[u8], out: &mut W) -> io::Result<()> {
        self.line_cr(line, false, out)
    }

    /// [`Writer::line`] of `line` and then, when `cr`, a `\r`: a line of a CRLF log whose
    /// `\r` lies apart from it (a snapshot row's event), interned as if it were there.
    fn line_cr<W: Write + ?Sized>(&mut self, line: &[u8], cr: bool, out: &mut W) -> io::Result<()> {
        let (mut refs, mut defs) = (Vec::new(), Vec::new());
        let tail: &[u8] = if cr { b"\r" } else { b"" };
        let len = line.len() + tail.len();
        self.last_defs.clear();
        self.last_arrays.clear();
        // What an error left (the walk returns early on one).
        self.kids.clear();
        // The `\r` is whitespace after the value: where the value ends does not change.
        if self.looks_into(line, len) && self.looks_into_frame() {
            let start = json::skip_ws(line, 0);
            let end = self.commas.value_end(line, start).unwrap_or(0);
            if end > start && json::skip_ws(line, end) == line.len() {
                self.walk(line, start, end, 0, 0, &mut refs, &mut defs)?;
            }
        }
        let found = !refs.is_empty() || !defs.is_empty();
        self.note_quiet(found, len as u64);
        self.line_needs = refs.iter().map(|r: &Ref| r.needs).min().unwrap_or(u64::MAX);
        self.note_index();
        if !found && !is_interned(line) {
            out.write_all(line)?;
            return out.write_all(tail);
        }
        write_interned(line, tail, &refs, &defs, &self.free, out)?;
        self.free.clear();
        Ok(())
    }

    /// A first pass over a line of an input that can be read twice (a file): values that
    /// occur again anywhere in it are then defined where they first occur, so that the
    /// second copy is already a reference. Counts at most `window` bytes of values.
    pub fn survey(&mut self, line: &[u8]) {
        let at = self.survey_at;
        self.survey_at += line.len() as u64 + 1;
        if !self.looks_into(line, line.len()) || self.surveyed > self.window {
            return;
        }
        let start = json::skip_ws(line, 0);
        if let Some(end) = self.commas.value_end(line, start) {
            self.count(line, start, end, 0, at);
        }
    }

    /// Whether a line of `len` bytes that begins with `line` is looked into, by the survey
    /// as by the writer: not one that cannot hold a value of `min` bytes, nor one the
    /// writer passes ([`Writer::passing`]).
    fn looks_into(&self, line: &[u8], len: usize) -> bool {
        self.min > 0 && len >= self.min && !self.passed.is_some_and(|passed| passed(line))
    }

    /// Whether the lines of this frame are looked into: every frame's, except on a quiet
    /// stretch ([`QUIET`]) that no survey said a repeat follows.
    fn looks_into_frame(&self) -> bool {
        self.frame < self.quiet_from
            || self.quiet_bytes < self.quiet_min_bytes
            || !self.repeated.is_empty()
            || self.frame.is_multiple_of(QUIET_SAMPLE)
    }

    /// Lines of `bytes` bytes in all, newlines included, that the survey did not need to see.
    pub fn survey_passed(&mut self, bytes: u64) {
        self.survey_at += bytes;
    }

    /// Whether the survey gains anything from the lines still to come: not once it holds
    /// its window of values (it counts no more), nor once [`SURVEY_PROBE`] frames of input
    /// held no value that repeats a frame or more apart. Then the values that do repeat
    /// later are defined at their second occurrence, as from a pipe.
    pub fn survey_wants_more(&self) -> bool {
        self.surveyed <= self.window && (self.survey_at < self.probe() || !self.repeated.is_empty())
    }

    /// The bytes of input the survey reads before it judges ([`SURVEY_PROBE`] frames).
    fn probe(&self) -> u64 {
        SURVEY_PROBE.saturating_mul(self.near)
    }

    /// The survey's walk: a value seen before is marked repeated when the copies lie a
    /// frame or more apart (nearer, zstd sees them) and not looked into (its parts were
    /// counted the first time).
    fn count(&mut self, b: &[u8], start: usize, end: usize, depth: usize, at: u64) {
        let v = &b[start..end];
        if v.len() < self.min.max(2) || !matches!(v[0], b'"' | b'{' | b'[') {
            return;
        }
        let key = key(crc32fast::hash(v), v.len());
        if let Some(&first) = self.survey_seen.get(&key) {
            if at - first >= self.near {
                self.repeated.insert(key);
            }
            return;
        }
        self.survey_seen.insert(key, at);
        self.surveyed += weight(v.len());
        if v[0] == b'"' || depth >= MAX_DEPTH {
            return;
        }
        let first = self.kids.len();
        children(b, start, end, self.min, &mut self.commas, &mut self.kids);
        for k in first..self.kids.len() {
            let Kid { start, end, .. } = self.kids[k];
            self.count(b, start, end, depth + 1, at);
        }
        self.kids.truncate(first);
    }

    /// How many values the survey found repeated.
    #[cfg(test)]
    pub(crate) fn repeats(&self) -> usize {
        self.repeated.len()
    }

    /// Forgets what a survey saw so far, for it to start again from the first line.
    pub fn survey_again(&mut self) {
        self.survey_at = 0;
        self.survey_seen = Table::default();
        self.repeated = KeySet::default();
        self.surveyed = 0;
    }

    /// The survey is over: what it saw once is forgotten, what repeats is kept. One that
    /// read its probe and found no repeat has seen the frames of a quiet stretch
    /// ([`QUIET`]), and its bytes count towards one: the writer begins there. (With small
    /// frames a probe can be one long line, too few bytes to judge by.)
    pub fn surveyed(&mut self) {
        if self.repeated.is_empty() && self.survey_at >= self.probe() {
            self.quiet_from = 0;
            self.quiet_bytes = self.survey_at;
        }
        self.note_index();
        self.survey_seen = Table::default();
    }

    /// The bytes of the window's index at its largest so far: the tables of values seen,
    /// repeated, defined and stored, by their room (a table's room doubles as it fills).
    /// Values themselves are not in it; the store holds them on disk.
    pub fn index_peak(&self) -> u64 {
        self.index_peak
    }

    fn note_index(&mut self) {
        let now = table_bytes(&self.seen)
            + table_bytes(&self.survey_seen)
            + table_bytes(&self.defs)
            + table_bytes(&self.arrays)
            + table_bytes(&self.store.at)
            + set_bytes(&self.repeated);
        self.index_peak = self.index_peak.max(now);
    }

    /// The least bytes a value needs to be interned; 0 when interning is off.
    pub fn min(&self) -> usize {
        self.min
    }

    /// Repeats nearer than `bytes` (the frame size) are left to zstd.
    pub fn near(mut self, bytes: u64) -> Writer {
        self.near = bytes;
        self
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        b: &[u8],
        start: usize,
        end: usize,
        depth: usize,
        path: u64,
        refs: &mut Vec<Ref>,
        defs: &mut Vec<Found>,
    ) -> io::Result<()> {
        let v = &b[start..end];
        if v.len() < self.min.max(2) || !matches!(v[0], b'"' | b'{' | b'[') {
            return Ok(());
        }
        let crc = crc32fast::hash(v);
        let key = key(crc, v.len());
        let mut defined = None;
        // Counted against the window once the refs inside it are known.
        let mut first_seen = false;
        match self.defs.get(&key).copied() {
            // In this frame (this line included: a reader keeps a line's definitions once
            // the line is whole): zstd sees the repeat, and does better with it.
            Some(d) if d.frame >= self.frame && d.literal => return Ok(()),
            Some(d) if d.frame == u64::MAX => {}
            // Defined too many frames back: defined again here instead, so that a lost
            // frame costs the lines of the next REFRESH frames, not every later line that
            // repeats a value it held. (The old id is not freed: an array may still be
            // known by it.)
            Some(d) if d.frame.saturating_add(REFRESH) <= self.frame => {
                defined = Some(self.define_at(key, b, start, end, defs)?);
            }
            Some(Def { id, needs, .. }) => {
                if self.store.same(id, v)? {
                    let found = Found {
                        start,
                        end,
                        id,
                        prefix: false,
                    };
                    refs.push(Ref { found, crc, needs });
                    self.refs += 1;
                    self.bytes_referenced += v.len() as u64;
                    return Ok(());
                }
            }
            None if self.repeated.contains(&key)
                || self.seen.get(&key).is_some_and(|&f| f < self.frame) =>
            {
                defined = Some(self.define_at(key, b, start, end, defs)?);
            }
            None => first_seen = self.seen.insert(key, self.frame).is_none(),
        }
        // A string, or nesting too deep, is not looked into.
        let leaf = v[0] == b'"' || depth >= MAX_DEPTH;
        let refs_before = refs.len();
        let array = !leaf && v[0] == b'[' && v.len() >= ARRAY_MIN;
        if !leaf {
            let first = self.kids.len();
            children(
                b,
                start,
                end,
                self.min.max(2),
                &mut self.commas,
                &mut self.kids,
            );
            let from = if array {
                let head = first_element(b, start, end, self.kids.get(first));
                self.array(b, start, end, head, path, refs, defs)?
            } else {
                start
            };
            for k in first..self.kids.len() {
                let kid = self.kids[k].clone();
                if kid.start >= from {
                    self.walk_kid(b, kid, depth, path, refs, defs)?;
                }
            }
            self.kids.truncate(first);
        }
        // Only its bytes that no ref stands for are new: a history that grows by a
        // message a step counts a message a step, not its whole length, and so does the
        // line that holds it.
        if first_seen {
            let referred: usize = refs[refs_before..]
                .iter()
                .map(|r| r.found.end - r.found.start)
                .sum();
            self.remember(v.len() - referred)?;
        }
        // A definition with refs inside is not there as bytes for zstd to see, and a reader
        // needs what they stand for to have it.
        let Some(inner) = refs[refs_before..].iter().map(|r| r.needs).min() else {
            return Ok(());
        };
        if let Some(key) = defined
            && let Some(d) = self.defs.get_mut(&key)
        {
            d.literal = false;
            d.needs = inner;
        }
        if array && let Some(a) = self.arrays.get_mut(&path) {
            a.needs = inner;
        }
        Ok(())
    }

    /// [`Writer::walk`] into a member or element of the value at `path`, when it is long
    /// enough to be interned (most are not: their keys are not hashed).
    fn walk_kid(
        &mut self,
        b: &[u8],
        kid: Kid,
        depth: usize,
        path: u64,
        refs: &mut Vec<Ref>,
        defs: &mut Vec<Found>,
    ) -> io::Result<()> {
        if kid.end - kid.start < self.min.max(2) {
            return Ok(());
        }
        let key = crc32fast::hash(&b[kid.key]);
        let path = child_path(path, key);
        self.walk(b, kid.start, kid.end, depth + 1, path, refs, defs)
    }

    /// An array that is not a repeat: when the last array at the same path (in an earlier
    /// frame) begins with the same elements, those are written as a ref to its first
    /// bytes, `[0`. A history that grows by one message a step (Claude Code's
    /// `normalizedMessages`) then costs one message a step. The array is defined for the
    /// next one at its path, when it begins as the last one did (`head`: where its first
    /// element lies). Returns where the elements still to be looked into begin.
    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        b: &[u8],
        start: usize,
        end: usize,
        head: Option<std::ops::Range<usize>>,
        path: u64,
        refs: &mut Vec<Ref>,
        defs: &mut Vec<Found>,
    ) -> io::Result<usize> {
        let v = &b[start..end];
        let mut from = start;
        // Always, in this frame too: the last array is itself mostly a ref, so zstd does
        // not see its bytes. Not within one line: its definitions are not read yet.
        // A chain of `[0` refs would make one lost frame cost every later array at the
        // path: every CHAIN-th array is written whole, so damage reaches CHAIN arrays
        // further at most.
        let mut depth = 0;
        let before = self.arrays.get(&path).copied();
        if let Some(LastArray {
            known: Known::Own(last) | Known::Shared(last),
            frame,
            chain: d,
            needs,
            ..
        }) = before
            && frame != u64::MAX
            && d + 1 < CHAIN
            && let Some(same) = self.store.shared_prefix(last, v)?
        {
            let cut = (self.commas)
                .shared_elements(b, start, same)
                .filter(|&e| e >= self.min.max(2));
            if let Some(cut) = cut {
                let crc = crc32fast::hash(&v[..cut]);
                let found = Found {
                    start,
                    end: start + cut,
                    id: last,
                    prefix: true,
                };
                refs.push(Ref { found, crc, needs });
                self.refs += 1;
                self.bytes_referenced += cut as u64;
                from = start + cut;
                depth = d + 1;
            }
        }
        // Defined for the next array at the path only when it begins as the last one did,
        // as a history that grows does: a ref to its first bytes needs the first element
        // the same. (A DeepSeek Harness chunk row's `texts` never begin alike, and defining
        // every one wrote each row longer and cost a third of a pack's time.)
        let head = head.map_or(0, |first| {
            let first = &b[first];
            key(crc32fast::hash(first), first.len())
        });
        let known = match defs.last() {
            Some(d) if d.start == start && d.end == end => Known::Shared(d.id),
            _ if before.is_some_and(|a| a.head == head) => {
                Known::Own(self.define(b, start, end, defs)?)
            }
            _ => Known::Not,
        };
        // Only the last array at a path is referred to this way: the one before is dead.
        if let Some(LastArray {
            known: Known::Own(old),
            ..
        }) = before
            && self.arrays.contains_key(&path)
        {
            self.forget(old)?;
        }
        let array = LastArray {
            known,
            head,
            frame: u64::MAX,
            chain: depth,
            needs: u64::MAX,
        };
        self.arrays.insert(path, array);
        self.last_arrays.push(path);
        Ok(from)
    }

    /// Defines the value `b[start..end]` (its key `key`) here, for later lines to refer to.
    fn define_at(
        &mut self,
        key: u64,
        b: &[u8],
        start: usize,
        end: usize,
        defs: &mut Vec<Found>,
    ) -> io::Result<u64> {
        let id = self.define(b, start, end, defs)?;
        // Until the line is written its frame is a guess; `placed` corrects it.
        let def = Def {
            id,
            frame: u64::MAX,
            literal: true,
            needs: u64::MAX,
        };
        self.defs.insert(key, def);
        self.last_defs.push(key);
        Ok(key)
    }

    /// Defines `b[start..end]` under a new id, for the line's header and later refs.
    fn define(
        &mut self,
        b: &[u8],
        start: usize,
        end: usize,
        defs: &mut Vec<Found>,
    ) -> io::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.store.put(id, &b[start..end])?;
        self.remember(end - start)?;
        defs.push(Found {
            start,
            end,
            id,
            prefix: false,
        });
        Ok(id)
    }

    /// The line just written went into `frame`: so did what it defined. Returns the first
    /// frame a reader must begin at to rebuild it.
    fn placed(&mut self, frame: u64) -> u64 {
        for key in self.last_defs.drain(..) {
            if let Some(d) = self.defs.get_mut(&key) {
                d.frame = frame;
                d.needs = d.needs.min(frame);
            }
        }
        for path in self.last_arrays.drain(..) {
            if let Some(a) = self.arrays.get_mut(&path) {
                a.frame = frame;
                a.needs = a.needs.min(frame);
            }
        }
        std::mem::replace(&mut self.line_needs, u64::MAX).min(frame)
    }

    /// Value `id` will not be referred to again: the writer forgets it, and so will readers.
    /// Its bytes no longer count against the window: a history array is freed at every
    /// step, and counting each one kept forgetting everything on a 1 GiB Codex log (three
    /// resets, each writing the whole history and its 1 MB image again: 34.3 MB packed
    /// instead of 28.8 MB).
    fn forget(&mut self, id: u64) -> io::Result<()> {
        if let Some(len) = self.store.len_of(id) {
            self.remembered = self.remembered.saturating_sub(weight(len));
        }
        self.store.forget(id)?;
        match self.free.last_mut() {
            Some(r) if r[1] == id => r[1] = id + 1,
            _ => self.free.push([id, id + 1]),
        }
        Ok(())
    }

    /// Counts `n` more bytes remembered; past the window, forgets everything (a reader
    /// keeps every definition, so forgetting is always safe, only less thorough).
    fn remember(&mut self, n: usize) -> io::Result<()> {
        self.remembered += weight(n);
        if self.remembered > self.window {
            self.seen.clear();
            self.defs.clear();
            self.arrays.clear();
            self.store.clear()?;
            self.remembered = 0;
            // Readers forget everything defined so far too.
            self.free.clear();
            self.free.push([0, self.next_id]);
        }
        Ok(())
    }
}

/// What a value of `len` bytes counts against the window: at least [`DEFAULT_MIN`], so that
/// however small `--intern-min` is, the tables hold at most window / 256 entries.
fn weight(len: usize) -> u64 {
    len.max(DEFAULT_MIN) as u64
}

/// A value's hash-table key: its crc32 and length. Two different values with one key only
/// cost a wasted definition, or a comparison that fails: bytes are compared before any
/// reference is written.
fn key(crc: u32, len: usize) -> u64 {
    u64::from(crc) | (len as u64) << 32
}

/// A value directly inside a container: an object's member value or an array's element,
/// with its key (the raw key's bytes, quotes included; empty in an array).
#[derive(Clone)]
struct Kid {
    key: std::ops::Range<usize>,
    start: usize,
    end: usize,
}

/// The structure of the line being read, kept from finding the end of its value to
/// finding the children of each container in it: every bracket and comma outside strings
/// ([`json::blocks::structure`]), so that a container's commas are read off them and its
/// bytes are not walked again at each depth it lies at (Codex histories lie five deep).
#[derive(Default)]
struct Commas {
    /// The line's brackets and commas, in order; empty when its value is no container,
    /// one the block walk leaves to the byte walk, or one with more than it keeps. Its
    /// room is that of the longest line's so far.
    tape: Vec<usize>,
    /// The spans of one container's children, as [`json::blocks::separators`] keeps them.
    at: Vec<usize>,
}

impl Commas {
    /// The end of the value that begins at `b[start]` in a new line, as
    /// [`json::skip_value`] finds it; a container's structure is kept for [`children`].
    fn value_end(&mut self, b: &[u8], start: usize) -> Option<usize> {
        self.tape.clear();
        if !matches!(b.get(start), Some(b'{' | b'[')) {
            return json::skip_value(b, start);
        }
        // Kept to about a quarter of the line's room (counted at each 64-byte block's end,
        // and a Vec's room doubles): Codex's longest lines hold one bracket or comma in 52
        // bytes, and an array of small numbers one in two.
        let most = ((b.len() - start) / 32).max(4096);
        json::blocks::structure(b, start, most, &mut self.tape).or_else(|| {
            self.tape.clear();
            json::skip_value(b, start)
        })
    }

    /// Reads the spans of `min` bytes or more in the container `b[start..end]` off the
    /// line's structure into `at`, as [`json::blocks::separators`] finds them; false when
    /// the structure does not hold that container.
    fn read_off(&mut self, b: &[u8], start: usize, end: usize, min: usize) -> bool {
        let Some(level) = level(&self.tape, b, start) else {
            return false;
        };
        self.at.clear();
        let mut spans = json::blocks::Spans::new(start, min, &mut self.at);
        for p in level {
            spans.meet(p);
            if b[p] != b',' {
                return p + 1 == end;
            }
        }
        false
    }

    /// Where the elements that the array at `b[start]` shares with another array end, when
    /// the two are the same bytes for `same` bytes: right before a `,` of it (the other
    /// then has an element end there too), and only when the last element that ends within
    /// those bytes does so right before its comma. `None` when no element does. Read off
    /// the line's structure where it holds the array (a history's elements are long, and
    /// walking them again was a twentieth of a Codex pack), else walked; never by keeping
    /// every element's end, which was 1.6 GB for an array of fifty million numbers.
    fn shared_elements(&self, b: &[u8], start: usize, same: usize) -> Option<usize> {
        let limit = start + same;
        let (comma, after) = match self.comma_within(b, start, limit) {
            Some(found) => found?,
            None => {
                let comma = json::blocks::last_comma(&b[..(limit + 1).min(b.len())], start)?;
                let next = json::skip_ws(b, comma + 1);
                let after = if next < limit {
                    json::skip_value(b, next)
                } else {
                    None
                };
                (comma, after)
            }
        };
        // An element after the comma that ends within the shared bytes is the last one.
        if after.is_some_and(|e| e <= limit) || json::is_ws(b[comma - 1]) {
            return None;
        }
        Some(comma - start)
    }

    /// On the line's structure: `Some(Some((comma, end)))` for the last comma of the
    /// container at `b[start]` at `limit` or before and where the element after it ends
    /// (`None` when that one is empty); `Some(None)` when no comma lies there, or the
    /// container closes there (its last element is followed by none); `None` when the
    /// structure does not hold the container.
    #[allow(clippy::type_complexity)]
    fn comma_within(
        &self,
        b: &[u8],
        start: usize,
        limit: usize,
    ) -> Option<Option<(usize, Option<usize>)>> {
        let mut comma = None;
        for p in level(&self.tape, b, start)? {
            if p > limit {
                return Some(comma.map(|c| {
                    let end = trim_end(b, c + 1, p);
                    (c, (end > c + 1).then_some(end))
                }));
            }
            if b[p] != b',' {
                return Some(None);
            }
            comma = Some(p);
        }
        None
    }
}

/// The separators at its own level (commas, then its closing bracket) of the container
/// whose opening bracket is on `tape` at `b[start]`, read off the tape; `None` when the
/// tape does not hold it.
fn level<'a>(
    tape: &'a [usize],
    b: &'a [u8],
    start: usize,
) -> Option<impl Iterator<Item = usize> + 'a> {
    let k = tape.binary_search(&start).ok()?;
    let mut depth = 0usize;
    Some(tape[k + 1..].iter().copied().filter(move |&p| match b[p] {
        b'{' | b'[' => {
            depth += 1;
            false
        }
        b'}' | b']' if depth > 0 => {
            depth -= 1;
            false
        }
        _ => depth == 0,
    }))
}

/// Pushes onto `kids` the strings, arrays and objects directly inside the container
/// `b[start..end]` that are `min` bytes or longer (the values interned), in order;
/// `commas` holds the line's structure when it was found with its end
/// ([`Commas::value_end`]), and is scratch otherwise. The container's commas are found 64
/// bytes at a time ([`json::blocks::separators`]), and a child is read (and its place
/// kept) only when the span between two of them is long enough to hold one of `min` bytes:
/// most are not (a chunk row's `texts` are short strings), and reading each, at every
/// depth, was most of the cost of interning; keeping each, an array of fifty million
/// numbers took 2 GB. (With a small `min`, each child that long still costs its place: 16
/// bytes, and 32 for a string or container.) In valid JSON these are the children a reader
/// finds one by one; in text that is not, a span is taken as it stands (`1 2` as one
/// child), the short ones unread, and a long one that is no member stops the list: refs
/// stand for bytes, so any span round-trips.
fn children(
    b: &[u8],
    start: usize,
    end: usize,
    min: usize,
    commas: &mut Commas,
    kids: &mut Vec<Kid>,
) {
    let min = min.max(1);
    if !commas.read_off(b, start, end, min) {
        commas.at.clear();
        if json::blocks::separators(b, start, min, &mut commas.at) != Some(end) {
            return;
        }
    }
    let object = b[start] == b'{';
    for pair in commas.at.chunks_exact(2) {
        let Some(kid) = child(b, pair[0] + 1..pair[1], object) else {
            return;
        };
        if kid.end - kid.start >= min && matches!(b[kid.start], b'"' | b'{' | b'[') {
            kids.push(kid);
        }
    }
}

/// The end of `b[from..to]` with the whitespace at its end left out.
fn trim_end(b: &[u8], from: usize, mut to: usize) -> usize {
    while to > from && json::is_ws(b[to - 1]) {
        to -= 1;
    }
    to
}

/// Where the first element of the array `b[start..end]` lies; `None` when it has none.
/// `kid` is the first of its [`children`]: the first element when that one is long (and
/// walking a long one again was a twentieth of a Codex pack), else it is soon read.
fn first_element(
    b: &[u8],
    start: usize,
    end: usize,
    kid: Option<&Kid>,
) -> Option<std::ops::Range<usize>> {
    let first = json::skip_ws(b, start + 1);
    if let Some(kid) = kid.filter(|k| k.start == first) {
        return Some(kid.start..kid.end);
    }
    let first_end = json::skip_value(b, first).filter(|&e| e < end)?;
    Some(first..first_end)
}

/// The member (`object`) or element between two commas of a container, whitespace around
/// it trimmed; `None` when it is not one.
fn child(b: &[u8], span: std::ops::Range<usize>, object: bool) -> Option<Kid> {
    let end = trim_end(b, span.start, span.end);
    let mut start = json::skip_ws(b, span.start);
    let mut key = start..start;
    if object {
        if b.get(start) != Some(&b'"') {
            return None;
        }
        key.end = json::string_end(b, start).filter(|&e| e < end)?;
        let colon = json::skip_ws(b, key.end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        start = json::skip_ws(b, colon + 1);
    }
    (start < end).then_some(Kid { key, start, end })
}

/// How many bytes `a` and `b` begin with alike. A history that grows is compared with the
/// last one at every step, megabytes a line: 4 KiB at a time, then 32 bytes in the block
/// that differs, then bytes (a byte at a time was a seventh of a pack of a Codex log, 32
/// bytes at a time a fifteenth).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut alike = 0;
    for block in [4096, 32, 1] {
        alike += a[alike..n]
            .chunks_exact(block)
            .zip(b[alike..n].chunks_exact(block))
            .take_while(|(x, y)| x == y)
            .count()
            * block;
    }
    alike
}

/// The path of a member `key` (or an array element, key 0) of the value at `parent`.
fn child_path(parent: u64, key: u32) -> u64 {
    (parent ^ u64::from(key))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29)
}

impl Found {
    fn placeholder(&self) -> &'static [u8] {
        if self.prefix { b"[0" } else { b"0" }
    }
}

/// Writes into `out` (cleared first) interned `line`, which a reader rebuilt as `rebuilt`,
/// again to stand alone: its definitions and `free` as they were, no refs, `rebuilt` as its
/// line. A reader of it keeps what a reader of `line` keeps, and needs no other line for it
/// (`sess repair` writes a line so when it refers to a value that only a line it drops
/// defined).
pub fn standalone(line: &[u8], rebuilt: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    standalone_parts(&[(line, rebuilt)], out)
}

/// [`standalone`] for a glued line ([`glued`]): `line` as stored, whose second part begins
/// at `at`, and as [`Reader::read_glued`] rebuilt it, the second part at `rebuilt_at`.
pub fn standalone_glued(
    (line, at): (&[u8], usize),
    (rebuilt, rebuilt_at): (&[u8], usize),
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let parts = [
        (&line[..at], &rebuilt[..rebuilt_at]),
        (&line[at..], &rebuilt[rebuilt_at..]),
    ];
    standalone_parts(&parts, out)
}

/// One interned line standing alone for `parts` (each as stored and as rebuilt) one after
/// the other: the definitions of each (an interned one) moved to where it lies.
fn standalone_parts(parts: &[(&[u8], &[u8])], out: &mut Vec<u8>) -> Result<(), Error> {
    let (mut defs, mut free, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for &(line, rebuilt) in parts {
        if is_interned(line) {
            let (header, _) = split(line)?;
            for &[at, len, id] in &header.defs {
                let range = def_range(at, len, rebuilt.len() as u64)?;
                let shift = whole.len();
                defs.push(Found {
                    start: shift + range.start as usize,
                    end: shift + range.end as usize,
                    id,
                    prefix: false,
                });
            }
            // A part's `free` applies after its own definitions; after a later part's it
            // could free what that part defines, so only the last one's is kept (keeping a
            // value longer costs memory, not bytes).
            free = header.free;
        }
        whole.extend_from_slice(rebuilt);
    }
    out.clear();
    write_interned(&whole, b"", &[], &defs, &free, out)?;
    Ok(())
}

/// Writes `line` as an interned line: refs replaced by `0`, their places and the defs'.
fn write_interned<W: Write + ?Sized>(
    line: &[u8],
    tail: &[u8],
    refs: &[Ref],
    defs: &[Found],
    free: &[[u64; 2]],
    out: &mut W,
) -> io::Result<()> {
    let mut head = Vec::with_capacity(64 + 24 * (refs.len() + defs.len()));
    head.extend_from_slice(PREFIX);
    for (k, d) in defs.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        write!(head, "{sep}[{},{},{}]", d.start, d.end - d.start, d.id)?;
    }
    head.extend_from_slice(b"],\"refs\":[");
    // Each ref shrinks the stored line by its length less the one byte of `0`.
    let mut shrunk = 0;
    for (k, Ref { found: r, crc, .. }) in refs.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        let len = r.end - r.start;
        write!(head, "{sep}[{},{},{len},{crc}]", r.start - shrunk, r.id)?;
        shrunk += len - r.placeholder().len();
    }
    head.push(b']');
    if !free.is_empty() {
        head.extend_from_slice(b",\"free\":[");
        for (k, [from, to]) in free.iter().enumerate() {
            let sep = if k == 0 { "" } else { "," };
            write!(head, "{sep}[{from},{to}]")?;
        }
        head.push(b']');
    }
    head.extend_from_slice(b",\"line\":");
    out.write_all(&head)?;
    let mut copied = 0;
    for Ref { found: r, .. } in refs {
        out.write_all(&line[copied..r.start])?;
        out.write_all(r.placeholder())?;
        copied = r.end;
    }
    out.write_all(&line[copied..])?;
    out.write_all(tail)?;
    out.write_all(b"}")
}

/// Where lines land, as far as the interner needs to know: zstd already sees a repeat
/// within a frame, so only a value defined in an earlier frame is referenced.
pub trait Framed: Write {
    /// The frame the next line goes into, at the earliest.
    fn next_frame(&self) -> u64;
    /// The frame the last whole line written went into.
    fn last_line_frame(&self) -> u64;
    /// The line just written into `frame` needs the lines of frames `earliest..frame` to
    /// be rebuilt: an index can tell a reader that seeks where to begin.
    fn needs(&mut self, _frame: u64, _earliest: u64) {}
}

/// Plain bytes, as tests use them: every line a frame of its own.
impl Framed for Vec<u8> {
    fn next_frame(&self) -> u64 {
        memchr::memchr_iter(b'\n', self).count() as u64
    }

    fn last_line_frame(&self) -> u64 {
        self.next_frame().saturating_sub(1)
    }
}

/// A [`Write`] that interns each whole line written through it; a last line without a
/// newline is passed on as it is at [`InternWriter::finish`].
pub struct InternWriter<W: Framed> {
    inner: W,
    writer: Writer,
    pending: Vec<u8>,
    /// The bytes so far of a line being passed on as it comes ([`Writer::streaming`]).
    streaming: Option<u64>,
}

impl<W: Framed> InternWriter<W> {
    pub fn new(inner: W, writer: Writer) -> InternWriter<W> {
        InternWriter {
            inner,
            writer,
            pending: Vec::new(),
            streaming: None,
        }
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// References written, and the bytes they stand for.
    pub fn counts(&self) -> (u64, u64) {
        (self.writer.refs, self.writer.bytes_referenced)
    }

    /// The interner, for its survey ([`Writer::survey`]).
    pub fn writer_mut(&mut self) -> &mut Writer {
        &mut self.writer
    }

    /// Passes on a last line without newline and hands the output back. Readers rebuild
    /// such a line when it is whole JSON (and leave a torn one as it is), so one that looks
    /// interned is wrapped then.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(len) = self.streaming {
            self.writer.passed_on(len);
        } else if is_interned(&self.pending) && json::validate(&self.pending).is_ok() {
            write_interned(&self.pending, b"", &[], &[], &[], &mut self.inner)?;
        } else {
            self.inner.write_all(&self.pending)?;
        }
        // It refers to nothing.
        let frame = self.inner.last_line_frame();
        self.inner.needs(frame, frame);
        Ok(self.inner)
    }
}

impl<W: Framed> InternWriter<W> {
    /// Interns one whole line (without its newline, and, when `cr`, without the `\r` before
    /// it) and writes it, newline and all.
    fn write_line(&mut self, line: &[u8], cr: bool) -> io::Result<()> {
        self.writer.frame = self.inner.next_frame();
        self.writer.line_cr(line, cr, &mut self.inner)?;
        self.inner.write_all(b"\n")?;
        self.place_line();
        Ok(())
    }

    /// The line just written, newline and all, lies in its frame: what it defined is
    /// placed there, and the frame notes where a reader must begin to rebuild it.
    fn place_line(&mut self) {
        let frame = self.inner.last_line_frame();
        let earliest = self.writer.placed(frame);
        self.inner.needs(frame, earliest);
    }
}

impl<W: Framed> InternWriter<W> {
    /// Passes on the part of a streamed line in `buf`, and its end if it is there, placing
    /// the line then. Returns what follows it.
    fn go_on_streaming<'b>(&mut self, buf: &'b [u8]) -> io::Result<&'b [u8]> {
        let Some(len) = &mut self.streaming else {
            return Ok(buf);
        };
        let Some(k) = memchr::memchr(b'\n', buf) else {
            *len += buf.len() as u64;
            self.inner.write_all(buf)?;
            return Ok(&[]);
        };
        let len = *len + k as u64;
        self.streaming = None;
        self.inner.write_all(&buf[..=k])?;
        self.writer.passed_on(len);
        self.place_line();
        Ok(&buf[k + 1..])
    }

    /// Whether a line of which `pending` and then `rest` are written, without its end, is
    /// to be passed on as it comes from now on.
    fn streams(&self, rest: &[u8]) -> bool {
        let Some(streams) = self.writer.streams else {
            return false;
        };
        if self.pending.len() + rest.len() < STREAM_AT {
            return false;
        }
        streams(&crate::io::head_of(&self.pending, rest))
    }
}

impl<W: Framed> Write for InternWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = self.go_on_streaming(buf)?;
        while let Some(k) = memchr::memchr(b'\n', rest) {
            // The line is read where it lies: in `buf`, or in `pending` when it began in
            // an earlier write (the packers write a line and its newline apart).
            if self.pending.is_empty() {
                self.write_line(&rest[..k], false)?;
            } else {
                self.pending.extend_from_slice(&rest[..k]);
                let line = std::mem::take(&mut self.pending);
                let written = self.write_line(&line, false);
                self.pending = line;
                self.pending.clear();
                written?;
            }
            rest = &rest[k + 1..];
        }
        if self.streams(rest) {
            self.writer.frame = self.inner.next_frame();
            self.streaming = Some((self.pending.len() + rest.len()) as u64);
            self.inner.write_all(&self.pending)?;
            self.pending = Vec::new();
            self.inner.write_all(rest)?;
            return Ok(buf.len());
        }
        // A line without its newline yet is gathered, however long it is: when memory runs
        // out for it, that is an error, not an abort.
        crate::io::memory::extend(&mut self.pending, rest)?;
        Ok(buf.len())
    }

    /// A whole line and its end, `\n` or `\r\n` ([`crate::io::write_ended`]), are interned
    /// where they lie: gathered first, a line of 4 MB cost a copy and its room. Such a line
    /// is never streamed ([`Writer::streaming`]), which is for lines that would have to be
    /// gathered; the snapshot rows it is asked of are not written so.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match bufs {
            [line, end]
                if self.pending.is_empty()
                    && self.streaming.is_none()
                    && matches!(&**end, b"\n" | b"\r\n")
                    && memchr::memchr(b'\n', line).is_none() =>
            {
                self.write_line(line, end.len() == 2)?;
                Ok(line.len() + end.len())
            }
            _ => {
                let first = bufs.iter().find(|b| !b.is_empty());
                self.write(first.map_or(&[][..], |b| &b[..]))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::ops::Range;

    /// Keys that differ only in their high bits (a value's length, or a crc32 chosen to
    /// agree in its low bits) still spread over a table's buckets, which are picked by the
    /// low bits of the hash.
    #[test]
    fn keys_alike_in_their_low_bits_spread_over_the_buckets() {
        for low in [0u64, 0xffff_ffff, 0x1234] {
            let keyed = Keyed::default();
            let buckets: HashSet<u64> = (0..4096u64)
                .map(|i| keyed.hash_one(i << 32 | low) & 0xfff)
                .collect();
            assert!(buckets.len() > 2000, "{} buckets of 4096", buckets.len());
            let buckets: HashSet<u64> = (0..4096u64)
                .map(|i| keyed.hash_one(low | i << 52) & 0xfff)
                .collect();
            assert!(buckets.len() > 2000, "{} buckets of 4096", buckets.len());
        }
    }

    proptest! {
        /// A compaction's copy gives the new file the runs asked for, in order, whatever
        /// the buffer's room (runs longer than it, and runs that fill it exactly).
        #[test]
        fn a_compaction_copies_its_runs_through_any_buffer(
            runs in prop::collection::vec((0u64..3000, 0usize..700), 0..12),
            cap in prop_oneof![Just(1usize), 2usize..64, Just(256), Just(1 << 20)],
        ) {
            let old_bytes: Vec<u8> = (0..4000u32).map(|i| (i * 7 % 251) as u8).collect();
            let old = tempfile::tempfile().unwrap();
            old.write_all_at(&old_bytes, 0).unwrap();
            let mut copy = Compaction::new(old, tempfile::tempfile().unwrap(), cap);
            let mut want = Vec::new();
            for &(from, len) in &runs {
                copy.run(from, len).unwrap();
                want.extend_from_slice(&old_bytes[from as usize..from as usize + len]);
            }
            let new = copy.finish().unwrap();
            let mut got = vec![0u8; want.len()];
            new.read_exact_at(&mut got, 0).unwrap();
            prop_assert_eq!(got, want);
            prop_assert_eq!(new.metadata().unwrap().len(), runs.iter().map(|r| r.1 as u64).sum::<u64>());
        }
    }

    /// Each table is seeded apart: a key's bucket cannot be known from the file.
    #[test]
    fn tables_are_seeded_apart() {
        let (a, b) = (Keyed::default(), Keyed::default());
        assert!((0..64u64).any(|k| a.hash_one(k) != b.hash_one(k)));
    }

    fn pack(lines: &[&[u8]], min: usize, window: u64) -> Vec<u8> {
        let mut w = InternWriter::new(Vec::new(), Writer::new(min, window));
        for l in lines {
            w.write_all(l).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.finish().unwrap()
    }

    /// Also a line of a CRLF log whose `\r` comes with its newline, as a snapshot row's
    /// event alone is written: interned as if the `\r` had been in it.
    #[test]
    fn a_line_written_whole_is_interned_where_it_lies_and_as_if_written_in_pieces() {
        let big = format!("\"{}\"", "v".repeat(5000));
        let lines: Vec<String> = (0..6)
            .map(|i| format!("{{\"i\":{i},\"a\":{big},\"b\":[{big},{i}]}}"))
            .collect();
        for end in [&b"\n"[..], b"\r\n"] {
            let mut whole = InternWriter::new(Vec::new(), Writer::new(256, 1 << 30).near(0));
            for l in &lines {
                crate::io::write_ended(&mut whole, l.as_bytes(), end).unwrap();
                // Not gathered into a copy first.
                assert_eq!(whole.pending.capacity(), 0);
            }
            let whole = whole.finish().unwrap();
            let mut pieces = InternWriter::new(Vec::new(), Writer::new(256, 1 << 30).near(0));
            let mut input = Vec::new();
            for l in &lines {
                input.extend_from_slice(l.as_bytes());
                input.extend_from_slice(end);
            }
            for piece in input.chunks(7) {
                pieces.write_all(piece).unwrap();
            }
            assert_eq!(whole, pieces.finish().unwrap());
            assert!(whole.len() < input.len() / 2, "repeats became refs");
            assert_eq!(unpack(&whole).unwrap(), input);
        }
    }

    /// [`pack`] of lines held as strings.
    fn pack_strings(lines: &[String], min: usize, window: u64) -> Vec<u8> {
        let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        pack(&refs, min, window)
    }

    /// The lines as a log: each followed by its newline.
    fn joined(lines: &[String]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| l.bytes().chain([b'\n']))
            .collect()
    }

    fn unpack(packed: &[u8]) -> Result<Vec<u8>, Error> {
        unpack_with(&mut Reader::default(), packed)
    }

    fn unpack_with(r: &mut Reader, packed: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let mut line = Vec::new();
        for l in packed.split_inclusive(|&b| b == b'\n') {
            let l = l.strip_suffix(b"\n").unwrap_or(l);
            if is_interned(l) {
                r.read(l, &mut line)?;
                out.extend_from_slice(&line);
            } else {
                out.extend_from_slice(l);
            }
            out.push(b'\n');
        }
        Ok(out)
    }

    fn big(tag: &str) -> String {
        format!("\"{}\"", tag.repeat(300 / tag.len().max(1) + 1))
    }

    /// A line the writer streams (here one that begins `{"row"`) is passed on as it comes
    /// once `STREAM_AT` bytes of it are written: never gathered whole, not looked into. The
    /// lines around it are interned as ever: a value defined before it is referred to
    /// after it, and a line written whole after it is not taken for its end.
    #[test]
    fn a_streamed_line_is_passed_on_as_it_comes() {
        let v = big("abc");
        let row = format!(r#"{{"row":[{v},"{}"]}}"#, "r".repeat(STREAM_AT));
        let lines = [
            format!(r#"{{"a":{v}}}"#),
            format!(r#"{{"b":{v}}}"#),
            row.clone(),
            format!(r#"{{"c":{v}}}"#),
        ];
        let writer = Writer::new(256, 1 << 30)
            .near(0)
            .streaming(|l| l.starts_with(br#"{"row""#));
        let mut w = InternWriter::new(Vec::new(), writer);
        for l in &lines[..2] {
            writeln!(w, "{l}").unwrap();
        }
        for piece in row.as_bytes().chunks(1 << 20) {
            w.write_all(piece).unwrap();
            assert!(
                w.pending.capacity() <= STREAM_AT,
                "{}",
                w.pending.capacity()
            );
        }
        assert!(w.streaming.is_some());
        // Its end, and a whole line after it, in one write.
        w.write_all(format!("\n{}\n", lines[3]).as_bytes()).unwrap();
        assert!(w.streaming.is_none());
        let packed = w.finish().unwrap();
        // Compared without printing them: they are 8 MiB.
        assert!(unpack(&packed).unwrap() == joined(&lines));
        let out: Vec<&[u8]> = packed.split(|&b| b == b'\n').collect();
        assert!(
            out[2] == row.as_bytes(),
            "the row as it was, its value not a ref"
        );
        assert!(
            is_interned(out[1]) && is_interned(out[3]),
            "refs before and after it"
        );
        assert!(out[3].len() < lines[3].len());
    }

    #[test]
    fn the_third_copy_is_a_reference() {
        let v = big("abc");
        let lines: Vec<String> = (0..4)
            .map(|i| format!(r#"{{"n":{i},"x":{{"y":{v}}}}}"#))
            .collect();
        let packed = pack_strings(&lines, 256, DEFAULT_WINDOW);
        let out: Vec<&[u8]> = packed.split(|&b| b == b'\n').collect();
        assert_eq!(out[0], lines[0].as_bytes());
        // The second copy defines the value (here `x`, and `y` inside it); the third
        // refers to it.
        assert!(is_interned(out[1]) && out[1].len() > lines[1].len());
        assert!(
            is_interned(out[2]) && out[2].len() < 120,
            "{}",
            String::from_utf8_lossy(out[2])
        );
        let want: Vec<u8> = joined(&lines);
        assert_eq!(unpack(&packed).unwrap(), want);
    }

    /// Lines written `per` to a frame, as a writer of frames numbers them.
    struct Frames {
        out: Vec<u8>,
        per: u64,
    }

    impl Write for Frames {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.out.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Framed for Frames {
        fn next_frame(&self) -> u64 {
            self.out.next_frame() / self.per
        }

        fn last_line_frame(&self) -> u64 {
            self.out.last_line_frame() / self.per
        }
    }

    /// The first of `lines` that `w`, its lines `per` to a frame, writes as a ref.
    fn first_ref(w: Writer, per: u64, lines: &[String]) -> Option<usize> {
        let mut w = InternWriter::new(
            Frames {
                out: Vec::new(),
                per,
            },
            w,
        );
        for l in lines {
            writeln!(w, "{l}").unwrap();
        }
        let packed = w.finish().unwrap().out;
        assert_eq!(unpack(&packed).unwrap(), joined(lines));
        let out: Vec<&[u8]> = packed.split(|&b| b == b'\n').collect();
        (0..lines.len()).find(|&k| is_interned(out[k]) && out[k].len() < lines[k].len())
    }

    /// `unique` lines of values met once, then lines that all hold the same value.
    fn quiet_then_repeats(unique: usize, total: usize) -> Vec<String> {
        let v = big("v.");
        (0..unique)
            .map(|k| format!(r#"{{"k":{}}}"#, big(&format!("u{k}."))))
            .chain((unique..total).map(|k| format!(r#"{{"n":{k},"v":{v}}}"#)))
            .collect()
    }

    #[test]
    fn a_quiet_stretch_is_looked_into_a_frame_in_eight_until_a_repeat_is_met() {
        let writer = |quiet| Writer::new(DEFAULT_MIN, DEFAULT_WINDOW).quiet_after(quiet);
        // A line a frame: fifty frames of values met once, then one value on every line.
        let lines = quiet_then_repeats(50, 80);
        // Every line looked into: met at 50, defined at 51, referred to from 52.
        assert_eq!(first_ref(writer(u64::MAX), 1, &lines), Some(52));
        // Quiet after 20 frames: only frames 56 and 64 are looked into until 64 defines it.
        assert_eq!(first_ref(writer(20), 1, &lines), Some(65));
        // Quiet only after more frames than there are: as if never.
        assert_eq!(first_ref(writer(100), 1, &lines), Some(52));
        // By default also only after 64 MiB: fifty small frames are not quiet yet.
        let default = Writer::new(DEFAULT_MIN, DEFAULT_WINDOW);
        assert_eq!(first_ref(default, 1, &lines), Some(52));
        // Three lines a frame, the value from line 30 (frame 10) on: frames, not lines, are
        // sampled. Met in frame 16 (line 48), defined in frame 24 (line 72), referred to
        // from the next frame (line 75; within its own frame zstd sees the repeat).
        let lines = quiet_then_repeats(30, 90);
        assert_eq!(first_ref(writer(u64::MAX), 3, &lines), Some(36));
        assert_eq!(first_ref(writer(4), 3, &lines), Some(75));
        // A survey that found the repeat: every line is looked into, and the value is
        // defined where it is first met.
        let mut w = writer(4).near(0);
        lines.iter().for_each(|l| w.survey(l.as_bytes()));
        w.surveyed();
        assert_eq!(first_ref(w, 3, &lines), Some(33));
    }

    #[test]
    fn a_survey_that_read_its_probe_and_found_no_repeat_begins_a_quiet_stretch() {
        let v = big("v.");
        let lines: Vec<String> = (0..20).map(|k| format!(r#"{{"n":{k},"v":{v}}}"#)).collect();
        // A probe of 16 KB; fifty lines of values met once are about as many bytes.
        let near = 1000;
        let surveyed = |n: usize| {
            let mut w = Writer::new(DEFAULT_MIN, DEFAULT_WINDOW)
                .near(near)
                .quiet_after(20);
            (0..n).for_each(|k| {
                w.survey(format!(r#"{{"k":{}}}"#, big(&format!("u{k}."))).as_bytes())
            });
            assert_eq!(w.survey_wants_more(), w.survey_at < SURVEY_PROBE * near);
            w.surveyed();
            w
        };
        // The probe read: quiet from the first frame, so only frames 0 and 8 are looked
        // into until 8 defines the value.
        assert_eq!(first_ref(surveyed(60), 1, &lines), Some(9));
        // A survey that ended before its probe (the input did): every line is looked into.
        assert_eq!(first_ref(surveyed(10), 1, &lines), Some(2));
        // Nor does a probe of fewer bytes than a quiet stretch holds by default (a small
        // frame size): the writer judges for itself.
        let mut w = Writer::new(DEFAULT_MIN, DEFAULT_WINDOW).near(near);
        (0..60).for_each(|k| w.survey(format!(r#"{{"k":{}}}"#, big(&format!("u{k}."))).as_bytes()));
        assert!(!w.survey_wants_more());
        w.surveyed();
        assert_eq!(first_ref(w, 1, &lines), Some(2));
    }

    /// Lines `{"step":k,"hist":[...]}` for each `k` in `steps`, the history holding `k`
    /// messages of `base + i` bytes of text each: each line's history begins with the last.
    fn growing_history(steps: Range<usize>, base: usize) -> Vec<String> {
        steps
            .map(|k| {
                let hist: Vec<String> = (0..k)
                    .map(|i| format!(r#"{{"i":{i},"text":"{}"}}"#, "m".repeat(base + i)))
                    .collect();
                format!(r#"{{"step":{k},"hist":[{}]}}"#, hist.join(","))
            })
            .collect()
    }

    #[test]
    fn a_growing_history_refers_to_the_last_one() {
        let lines = growing_history(1..30, 200);
        let packed = pack_strings(&lines, 256, DEFAULT_WINDOW);
        let want: Vec<u8> = joined(&lines);
        assert_eq!(unpack(&packed).unwrap(), want);
        // Once the history passes ARRAY_MIN, each line holds its newest message and a ref
        // to the rest: it stops growing.
        for (k, line) in packed.split(|&b| b == b'\n').enumerate().skip(20).take(9) {
            assert!(line.windows(9).any(|w| w == b"\"hist\":[0"), "line {k}");
            assert!(line.len() < 600, "line {k}: {} bytes", line.len());
        }
        // Each history is dead once the next refers to it: a reader keeps about one.
        let mut r = Reader::default();
        assert_eq!(unpack_with(&mut r, &packed).unwrap(), want);
        let (_, live, file) = r.kept();
        let longest = lines.iter().map(String::len).max().unwrap() as u64;
        assert!(
            live <= 2 * longest,
            "{live} bytes kept, the longest line {longest}"
        );
        assert!(file > 5 * live, "nothing was freed: {file}");
    }

    #[test]
    fn a_freed_history_no_longer_counts_against_the_window() {
        // Each history is defined for the next and freed by it: what the writer keeps is
        // one history, far under the window, though all of them together are far over it.
        // (Fewer steps than CHAIN: a history written whole is new bytes again. A message
        // counts about thrice: as an object, as its text, and as new bytes of its line.)
        let lines = growing_history(1..60, 500);
        let longest = lines.iter().map(String::len).max().unwrap() as u64;
        let total: u64 = lines.iter().map(|l| l.len() as u64).sum();
        let window = 10 * longest;
        assert!(total > 2 * window);
        let packed = pack_strings(&lines, 256, window);
        assert_eq!(unpack(&packed).unwrap(), joined(&lines));
        let text = String::from_utf8_lossy(&packed);
        assert!(!text.contains(r#","free":[[0,"#), "the window was reset");
        for (k, line) in packed.split(|&b| b == b'\n').enumerate().skip(20).take(39) {
            assert!(line.len() < 1200, "line {k}: {} bytes", line.len());
        }
    }

    #[test]
    fn an_array_that_begins_unlike_the_last_one_at_its_path_is_not_defined() {
        // Big arrays of small new texts, as a chunk row's: no ref can name the one before
        // (a ref to an array's first bytes needs its first element the same), so none is
        // defined, and the lines stay as they are.
        let lines: Vec<String> = (0..20)
            .map(|k| {
                let texts: Vec<String> = (0..600).map(|i| format!("\"{k}-{i}\"")).collect();
                format!(r#"{{"k":{k},"texts":[{}]}}"#, texts.join(","))
            })
            .collect();
        assert!(lines.iter().all(|l| l.len() > ARRAY_MIN));
        let packed = pack_strings(&lines, 256, DEFAULT_WINDOW);
        let want: Vec<u8> = joined(&lines);
        assert!(
            packed == want,
            "{}",
            String::from_utf8_lossy(&packed[..300])
        );
        // One that begins like the one before is defined, for the next to refer to.
        let mut grows = lines.clone();
        grows[7] = grows[7].replacen("\"7-0\"", "\"6-0\"", 1);
        grows[8] = grows[7]
            .replacen("\"k\":7", "\"k\":8", 1)
            .replacen("]}", ",\"new\"]}", 1);
        let refs: Vec<&[u8]> = grows.iter().map(|l| l.as_bytes()).collect();
        let packed = pack(&refs, 256, DEFAULT_WINDOW);
        let out: Vec<&[u8]> = packed.split(|&b| b == b'\n').collect();
        let interned: Vec<usize> = (0..20).filter(|&k| is_interned(out[k])).collect();
        assert_eq!(interned, [7, 8], "{}", String::from_utf8_lossy(out[8]));
        assert!(out[8].windows(10).any(|w| w == b"\"texts\":[0"));
    }

    #[test]
    fn a_window_reset_is_a_reset_for_readers_too() {
        // Values that repeat once, in pairs, then never again: only the window keeps them.
        let lines: Vec<String> = (0..200)
            .map(|k| format!(r#"{{"k":{k},"v":{}}}"#, big(&format!("v{}", k / 3))))
            .collect();
        let packed = pack_strings(&lines, 256, 4096);
        let mut r = Reader::default();
        let want: Vec<u8> = joined(&lines);
        assert_eq!(unpack_with(&mut r, &packed).unwrap(), want);
        assert!(String::from_utf8_lossy(&packed).contains(r#","free":[[0,"#));
        let (_, live, file) = r.kept();
        assert!(
            live <= 4096 + 1000,
            "{live} bytes kept against a window of 4096"
        );
        assert!(file > 4 * live);
    }

    #[test]
    fn the_survey_stops_after_its_probe_only_when_nothing_repeated() {
        let near = 1024;
        let probe = SURVEY_PROBE * near;
        let line = |k: usize| format!(r#"{{"k":{}}}"#, big(&format!("v{k}.")));
        for repeat_early in [false, true] {
            let mut w = Writer::new(DEFAULT_MIN, DEFAULT_WINDOW).near(near);
            let mut k = 0;
            while w.survey_at < probe {
                assert!(w.survey_wants_more(), "stopped before the probe's end");
                // The first line again, a probe's half later.
                let again = repeat_early && w.survey_at >= probe / 2 && w.repeated.is_empty();
                w.survey(line(if again { 0 } else { k }).as_bytes());
                k += 1;
            }
            assert_eq!(w.survey_wants_more(), repeat_early);
        }
        // Past its window, a survey counts no more, so it reads no more either.
        let mut w = Writer::new(DEFAULT_MIN, 4096).near(near);
        w.survey(line(0).as_bytes());
        w.survey(format!("[{},{0}]", line(1)).as_bytes());
        assert!(w.survey_wants_more());
        for k in 2..20 {
            w.survey(line(k).as_bytes());
        }
        assert!(!w.survey_wants_more());
    }

    #[test]
    fn the_survey_passes_over_the_lines_the_writer_passes() {
        let row = format!(r#"{{"row":{}}}"#, big("r"));
        for passing in [false, true] {
            let mut w = Writer::new(DEFAULT_MIN, DEFAULT_WINDOW).near(16);
            if passing {
                w = w.passing(|line| line.starts_with(br#"{"row""#));
            }
            w.survey(row.as_bytes());
            w.survey(big("filler").as_bytes());
            w.survey(row.as_bytes());
            assert_eq!(w.repeats() == 0, passing);
        }
    }

    #[test]
    fn tiny_values_cannot_grow_the_tables_past_the_window() {
        // Thousands of distinct values of a few bytes each, against a window of 64 KiB.
        let window = 64 << 10;
        let mut w = Writer::new(2, window);
        let mut out = Vec::new();
        for i in 0..2000 {
            let items: Vec<String> = (0..50).map(|j| format!("\"{i}.{j}\"")).collect();
            let line = format!("[{}]", items.join(","));
            w.survey(line.as_bytes());
            w.line(line.as_bytes(), &mut out).unwrap();
        }
        let most = (window / DEFAULT_MIN as u64) as usize + 1;
        assert!(
            w.survey_seen.len() <= most,
            "{} surveyed",
            w.survey_seen.len()
        );
        assert!(
            w.seen.len() + w.defs.len() <= most,
            "{} remembered",
            w.seen.len()
        );
    }

    #[test]
    fn a_store_reads_back_from_memory_only_what_it_still_keeps() {
        for pending_max in [0, 10, 100, PENDING_BYTES] {
            reads_back_what_it_keeps(Store {
                cache_max: 300,
                pending_max,
                ..Store::default()
            });
        }
    }

    #[test]
    fn a_long_stored_value_is_compared_piece_by_piece() {
        // Longer than the cache takes and than a piece, and not a whole number of pieces.
        let value: Vec<u8> = (0..2 * PIECE + 12_345)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        for (pending_max, cache_max) in [(0, CACHE_BYTES), (PENDING_BYTES, 0), (0, 0)] {
            let mut store = Store {
                pending_max,
                cache_max,
                ..Store::default()
            };
            store.put(1, &value).unwrap();
            store.put(2, b"[1,2,3]").unwrap();
            assert!(store.same(1, &value).unwrap());
            assert!(store.same(2, b"[1,2,3]").unwrap());
            assert!(!store.same(1, &value[..value.len() - 1]).unwrap());
            assert!(!store.same(3, &value).unwrap());
            let mut longer = value.clone();
            longer.push(b'x');
            assert!(!store.same(1, &longer).unwrap());
            assert_eq!(store.shared_prefix(1, &longer).unwrap(), Some(value.len()));
            assert_eq!(store.shared_prefix(3, &value).unwrap(), None);
            for at in [
                0,
                1,
                PIECE - 1,
                PIECE,
                PIECE + 1,
                2 * PIECE + 7,
                value.len() - 1,
            ] {
                let mut other = value.clone();
                other[at] ^= 1;
                assert!(!store.same(1, &other).unwrap(), "{at}");
                assert_eq!(store.shared_prefix(1, &other).unwrap(), Some(at));
                assert_eq!(store.shared_prefix(1, &other[..at]).unwrap(), Some(at));
            }
            // Nothing of it was read whole.
            assert!(
                store.piece.capacity() <= PIECE,
                "{}",
                store.piece.capacity()
            );
        }
    }

    fn reads_back_what_it_keeps(mut store: Store) {
        let value = |id: u64| format!("{id:03} ").repeat(1 + id as usize % 9).into_bytes();
        let get = |store: &mut Store, id: u64, most: usize| {
            let mut got = b"x".to_vec();
            store
                .get_prefix(id, most, &mut got)
                .unwrap()
                .then(|| got[1..].to_vec())
        };
        for id in 0..100 {
            store.put(id, &value(id)).unwrap();
            if id % 10 == 9 {
                store.free(id - 3..=id - 1).unwrap();
            }
            // Read back the one before, from memory or from the file.
            if id > 0 {
                // Freed just now when it is the last of three.
                let want = (id % 10 != 9).then(|| value(id - 1));
                assert_eq!(get(&mut store, id - 1, usize::MAX), want, "{id}");
            }
            assert!(store.cached <= store.cache_max);
            assert_eq!(
                store.cached,
                store.cache.values().map(Vec::len).sum::<usize>()
            );
            assert!(store.cache.keys().all(|id| store.at.contains_key(id)));
        }
        for id in 0..100 {
            let kept = !(6..9).contains(&(id % 10));
            assert_eq!(
                get(&mut store, id, usize::MAX),
                kept.then(|| value(id)),
                "{id}"
            );
            assert_eq!(
                get(&mut store, id, 3),
                kept.then(|| value(id)[..3].to_vec())
            );
        }
        // A value put again under an id is read back as put last, and the bytes it held in
        // the file are dead.
        store.write_pending().unwrap();
        let (dead, old) = (store.dead, store.at[&5].1 as u64);
        store.put(5, b"new").unwrap();
        assert!(store.file.is_some());
        assert_eq!(store.dead, dead + old);
        store.put(5, b"newer").unwrap();
        // "new" was never written unless nothing is held pending.
        let new_dead = if store.pending_max == 0 { 3 } else { 0 };
        assert_eq!(store.dead, dead + old + new_dead);
        assert_eq!(get(&mut store, 5, usize::MAX), Some(b"newer".to_vec()));
        assert_eq!(
            store.cached,
            store.cache.values().map(Vec::len).sum::<usize>()
        );
        // Freed many at once (more than it holds in memory).
        store.free(0..=98).unwrap();
        assert_eq!(get(&mut store, 5, usize::MAX), None);
        assert_eq!(get(&mut store, 99, usize::MAX), Some(value(99)));
        store.clear().unwrap();
        assert_eq!(get(&mut store, 0, usize::MAX), None);
        assert_eq!(store.cached, 0);
    }

    #[test]
    fn a_store_compacts_what_it_keeps_and_reads_it_back() {
        // Without a cache, what is read back comes from the file a compaction wrote.
        for cache_max in [0, CACHE_BYTES] {
            for pending_max in [0, 100, 1000, PENDING_BYTES] {
                compacts_what_it_keeps(Store {
                    compact_min: 1000,
                    pending_max,
                    cache_max,
                    ..Store::default()
                });
            }
        }
    }

    fn compacts_what_it_keeps(mut store: Store) {
        let value = |id: u64| {
            format!("value {id} ")
                .repeat(1 + id as usize % 50)
                .into_bytes()
        };
        let mut put = 0;
        for id in 0..400 {
            store.put(id, &value(id)).unwrap();
            put += value(id).len() as u64;
            // Keep two of every 7; free the others, five at a time.
            if id % 7 == 6 {
                store.free(id - 5..=id - 1).unwrap();
            }
        }
        assert_eq!(store.at.len(), 400 - 57 * 5);
        // Freed values are written only as dead bytes that compaction reclaims: never more
        // than half the file, or the live bytes.
        store.write_pending().unwrap();
        let live: u64 = store.at.values().map(|&(_, len)| len as u64).sum();
        let file = store
            .file
            .as_ref()
            .map_or(0, |f| f.metadata().unwrap().len());
        assert_eq!((store.len, file), (live + store.dead, store.len));
        // Compacted whenever half the file (and at least compact_min) was dead.
        assert!(
            store.dead < store.compact_min.max(store.len / 2 + 1),
            "{} dead of {} ({put} put)",
            store.dead,
            store.len
        );
        if store.pending_max == 0 {
            assert!(store.len < put / 2, "compacted: {} of {put}", store.len);
        }
        for id in 0..400 {
            let mut got = Vec::new();
            let kept = store.get(id, &mut got).unwrap();
            let want = id % 7 == 0 || id % 7 == 6;
            assert_eq!(kept, want, "{id}");
            if kept {
                assert_eq!(got, value(id), "{id}");
            }
        }
    }

    #[test]
    fn a_store_never_writes_what_is_freed_while_pending() {
        let mut store = Store {
            pending_max: 1000,
            ..Store::default()
        };
        // A history: each array is freed once the next one is put.
        for id in 0..50u64 {
            store.put(id, &[b'a' + (id % 26) as u8; 300]).unwrap();
            if id > 0 {
                store.free(id - 1..=id - 1).unwrap();
            }
        }
        // Three values pending at each write, one of them kept (and freed later).
        let file = store.file.as_ref().unwrap().metadata().unwrap().len();
        assert_eq!((file, store.dead), (store.pending_at, store.pending_at));
        assert_eq!(store.pending_at, 300 * 16);
        let mut got = Vec::new();
        assert!(store.get(49, &mut got).unwrap());
        assert_eq!(got, [b'a' + 23; 300]);
        // Longer than what may be pending: written at once, and read back from the file.
        let long = vec![b'z'; 1001];
        store.put(50, &long).unwrap();
        assert!(store.pending.is_empty());
        store.cache.clear();
        got.clear();
        assert!(store.get(50, &mut got).unwrap());
        assert_eq!(got, long);
        got.clear();
        assert!(store.get(49, &mut got).unwrap());
        assert_eq!(got, [b'a' + 23; 300]);
    }

    #[test]
    fn a_cleared_store_holds_nothing_of_what_was_pending() {
        // Values 0..6 written, 6 and 7 pending (at 1800 and 2100) when it is cleared.
        let cleared = || {
            let mut store = Store {
                pending_max: 1000,
                ..Store::default()
            };
            for id in 0..8u64 {
                store.put(id, &[b'o'; 300]).unwrap();
            }
            assert_eq!((store.pending_at, store.pending.len()), (1800, 600));
            store.clear().unwrap();
            store
        };
        let value = |id: u64| vec![b'n' + id as u8; 300];
        let read = |store: &mut Store, id: u64| {
            store.cache.clear();
            store.cached = 0;
            let mut got = Vec::new();
            store.get(id, &mut got).unwrap().then_some(got)
        };
        // Put again, each is read back as put now, pending or written.
        let mut store = cleared();
        for id in 0..3 {
            store.put(id, &value(id)).unwrap();
            assert_eq!(read(&mut store, id), Some(value(id)), "{id} pending");
        }
        assert_eq!(read(&mut store, 6), None);
        store.write_pending().unwrap();
        for id in 0..3 {
            assert_eq!(read(&mut store, id), Some(value(id)), "{id} written");
        }
        // 6 pending again where it was pending before: written once.
        let mut store = cleared();
        store.put(9, &[b'l'; 1800]).unwrap();
        for id in [6, 0, 1, 2] {
            store.put(id, &value(id)).unwrap();
        }
        store.write_pending().unwrap();
        let file = store.file.as_ref().unwrap().metadata().unwrap().len();
        assert_eq!((file, store.len), (3000, 3000));
        for id in [6, 0, 1, 2] {
            assert_eq!(read(&mut store, id), Some(value(id)), "{id}");
        }
    }

    #[test]
    fn a_line_that_looks_interned_is_wrapped() {
        let l: &[u8] = br#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":{}}"#;
        let packed = pack(&[l], 256, DEFAULT_WINDOW);
        assert_ne!(&packed[..packed.len() - 1], l);
        assert_eq!(unpack(&packed).unwrap(), [l, b"\n"].concat());
    }

    #[test]
    fn a_missing_or_wrong_definition_is_an_error_not_a_line() {
        let v = big("q");
        let lines: Vec<String> = (0..3).map(|i| format!(r#"{{"n":{i},"v":{v}}}"#)).collect();
        let packed = pack_strings(&lines, 256, DEFAULT_WINDOW);
        let out: Vec<&[u8]> = packed.split(|&b| b == b'\n').collect();
        // Without the defining line.
        let mut r = Reader::default();
        let mut buf = Vec::new();
        assert!(matches!(r.read(out[2], &mut buf), Err(Error::Missing(0))));
        // With a definition of other bytes under the same id.
        let forged = String::from_utf8(out[1].to_vec())
            .unwrap()
            .replace('q', "r");
        r.read(forged.as_bytes(), &mut buf).unwrap();
        assert!(matches!(r.read(out[2], &mut buf), Err(Error::Mismatch(0))));
    }

    /// An interned line, by hand: `refs` as `[at, id, value]` (the ref's len and crc are
    /// the value's), `defs` as `[at, len, id]`.
    fn hand(line: &str, refs: &[(usize, u64, &str)], defs: &[[usize; 3]]) -> String {
        let refs: Vec<String> = refs
            .iter()
            .map(|(at, id, v)| format!("[{at},{id},{},{}]", v.len(), crc32fast::hash(v.as_bytes())))
            .collect();
        let defs: Vec<String> = defs
            .iter()
            .map(|d| format!("[{},{},{}]", d[0], d[1], d[2]))
            .collect();
        format!(
            r#"{{"type":"sess-interned","v":1,"defs":[{}],"refs":[{}],"line":{line}}}"#,
            defs.join(","),
            refs.join(",")
        )
    }

    #[test]
    fn an_unresolved_ref_keeps_the_definitions_beside_it_and_forgets_those_over_it() {
        let (a, b) = ("\"aaaa\"", "\"bbbbbb\"");
        let mut r = Reader::default();
        let mut buf = Vec::new();
        // Value 1 is "aaaa"; then a line refers to value 9, never defined: the line is
        // lost, but what it defines after the hole (value 2, at 14 of the line rebuilt, past
        // a 4-byte hole at 5) is kept, and value 1, redefined over the hole, is forgotten.
        r.read(
            hand(&format!(r#"{{"x":{a}}}"#), &[], &[[5, 6, 1]]).as_bytes(),
            &mut buf,
        )
        .unwrap();
        let lost = hand(
            &format!(r#"{{"p":0,"q":{b}}}"#),
            &[(5, 9, "1234")],
            &[[5, 6, 1], [14, 8, 2]],
        );
        assert!(matches!(
            r.read(lost.as_bytes(), &mut buf),
            Err(Error::Missing(9))
        ));
        r.read(hand(r#"{"y":0}"#, &[(5, 2, b)], &[]).as_bytes(), &mut buf)
            .unwrap();
        assert_eq!(buf, format!(r#"{{"y":{b}}}"#).as_bytes());
        let stale = hand(r#"{"z":0}"#, &[(5, 1, a)], &[]);
        assert!(matches!(
            r.read(stale.as_bytes(), &mut buf),
            Err(Error::Missing(1))
        ));
        // The last id too, which has no id after it to end a range at.
        let max = u64::MAX as usize;
        r.read(
            hand(&format!(r#"{{"x":{a}}}"#), &[], &[[5, 6, max]]).as_bytes(),
            &mut buf,
        )
        .unwrap();
        let lost = hand(r#"{"p":0}"#, &[(5, 9, "1234")], &[[5, 4, max]]);
        assert!(matches!(
            r.read(lost.as_bytes(), &mut buf),
            Err(Error::Missing(9))
        ));
        let stale = hand(r#"{"z":0}"#, &[(5, u64::MAX, a)], &[]);
        assert!(matches!(
            r.read(stale.as_bytes(), &mut buf),
            Err(Error::Missing(u64::MAX))
        ));
    }

    #[test]
    fn a_glued_line_reads_as_its_two_parts_each_rebuilt() {
        let a = "\"aaaa\"";
        // Each part refers to value 1 and defines value 2; the second defines 1 anew.
        let head = hand(r#"{"h":0,"k":"kkkkk"}"#, &[(5, 1, a)], &[[16, 7, 2]]);
        let tail = hand(
            r#"{"t":0,"m":[1,2]}"#,
            &[(5, 2, "\"kkkkk\"")],
            &[[17, 5, 1]],
        );
        let line = format!("{head}{tail}");
        let mut r = Reader::default();
        let mut buf = Vec::new();
        r.read(
            hand(&format!(r#"{{"x":{a}}}"#), &[], &[[5, 6, 1]]).as_bytes(),
            &mut buf,
        )
        .unwrap();
        let second = r.read_glued(line.as_bytes(), head.len(), &mut buf).unwrap();
        let want = format!(r#"{{"h":{a},"k":"kkkkk"}}{{"t":"kkkkk","m":[1,2]}}"#);
        assert_eq!(String::from_utf8_lossy(&buf), want);
        assert_eq!(second, want.find("{\"t\"").unwrap());
        // The tail's definition of 1 replaced the first one.
        let mut got = Vec::new();
        r.read(
            hand(r#"{"y":0}"#, &[(5, 1, "[1,2]")], &[]).as_bytes(),
            &mut got,
        )
        .unwrap();
        assert_eq!(got, br#"{"y":[1,2]}"#);
        // Standing alone, it rebuilds the same, and defines the same, with no other line.
        let mut alone = Vec::new();
        standalone_glued((line.as_bytes(), head.len()), (&buf, second), &mut alone).unwrap();
        let mut fresh = Reader::default();
        fresh.read(&alone, &mut got).unwrap();
        assert_eq!(got, buf);
        fresh
            .read(
                hand(r#"{"y":0}"#, &[(5, 1, "[1,2]")], &[]).as_bytes(),
                &mut got,
            )
            .unwrap();
        fresh
            .read(
                hand(r#"{"z":0}"#, &[(5, 2, "\"kkkkk\"")], &[]).as_bytes(),
                &mut got,
            )
            .unwrap();
        // A plain first part is taken as it is.
        let plain = format!("{{\"p\":1}}{tail}");
        let second = r.read_glued(plain.as_bytes(), 7, &mut buf).unwrap();
        assert_eq!((&buf[..second], second), (&b"{\"p\":1}"[..], 7));
    }

    #[test]
    fn only_a_whole_line_or_an_interned_next_frame_is_glued() {
        let interned = hand(r#"{"x":1}"#, &[], &[]);
        // A new file that begins with an interned line.
        assert!(glued(b"{\"a\":1}", interned.as_bytes()));
        // A whole interned line, then anything.
        assert!(glued(interned.as_bytes(), b"{\"b\":2}\n"));
        // An interned line that pzstd cut between two frames.
        assert!(!glued(
            &interned.as_bytes()[..20],
            &interned.as_bytes()[20..]
        ));
        // Nothing carried, or neither part interned.
        assert!(!glued(b"", interned.as_bytes()));
        assert!(!glued(b"{\"a\":1}", b"{\"b\":2}\n"));
    }

    #[test]
    fn malformed_headers_are_errors() {
        let mut r = Reader::default();
        let mut buf = Vec::new();
        for bad in [
            &br#"{"type":"sess-interned","v":1,"defs":["#[..],
            br#"{"type":"sess-interned","v":1,"defs":[],"refs":[[0,0,1,0]],"line":x}"#,
            br#"{"type":"sess-interned","v":1,"defs":[[5,1,0]],"refs":[],"line":{}}"#,
            br#"{"type":"sess-interned","v":2,"defs":[],"refs":[],"line":{}}"#,
            br#"{"type":"sess-interned","v":1,"defs":[],"refs":[[9,0,1,0]],"line":{}}"#,
            // Numbers at the edge of u64: no arithmetic may overflow.
            br#"{"type":"sess-interned","v":1,"defs":[],"refs":[[18446744073709551615,0,0,0]],"line":0}"#,
            br#"{"type":"sess-interned","v":1,"defs":[[18446744073709551615,18446744073709551615,0]],"refs":[],"line":0}"#,
        ] {
            assert!(
                matches!(r.read(bad, &mut buf), Err(Error::Malformed(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_window_smaller_than_the_values_forgets_them() {
        let v = big("w");
        let lines: Vec<String> = (0..5).map(|i| format!(r#"{{"n":{i},"v":{v}}}"#)).collect();
        let packed = pack_strings(&lines, 256, 100);
        assert!(!packed.starts_with(PREFIX) && !packed.windows(PREFIX.len()).any(|w| w == PREFIX));
    }

    /// Lines built from a few pools of values, nested and repeated at random depths and
    /// distances, with odd spellings, and their members in a random order per line (with
    /// a repeated object's keys in either order).
    fn jsonl() -> impl Strategy<Value = Vec<String>> {
        let atom = prop_oneof![
            Just("1.0e2".to_string()),
            Just("-0".to_string()),
            Just(r#""\ud800 lone""#.to_string()),
            Just(r#""é \"q\" \\""#.to_string()),
            "[a-z]{0,5}".prop_map(|s| format!("\"{s}\"")),
            (0..600usize).prop_map(|n| format!("\"{}\"", "x".repeat(n))),
        ];
        let pool = prop::collection::vec(atom, 1..6);
        (
            pool,
            prop::collection::vec(
                (
                    prop::collection::vec((0..6usize, 0..4usize, any::<bool>()), 1..6),
                    0..6usize,
                ),
                1..30,
            ),
        )
            .prop_map(|(pool, shapes)| {
                shapes
                    .iter()
                    .map(|(fields, turn)| {
                        let mut members: Vec<String> = fields
                            .iter()
                            .enumerate()
                            .map(|(k, &(p, depth, arr))| {
                                let mut v = pool[p % pool.len()].clone();
                                for d in 0..depth {
                                    v = match (arr, (d + turn) % 2) {
                                        (true, _) => format!("[{v}, {d}]"),
                                        (false, 0) => format!("{{\"k{d}\" : {v},\"z\":1}}"),
                                        (false, _) => format!("{{\"z\":1,\"k{d}\" : {v}}}"),
                                    };
                                }
                                format!("\"f{k}\":{v}")
                            })
                            .collect();
                        let n = members.len();
                        members.rotate_left(turn % n);
                        format!("{{{}}}", members.join(","))
                    })
                    .collect()
            })
    }

    /// The children of the container `b[start..end]` found as a reader skips them, one
    /// value after another: what [`children`] must find in valid JSON, as (key, start, end).
    fn children_one_by_one(
        b: &[u8],
        start: usize,
        end: usize,
    ) -> Vec<(Range<usize>, usize, usize)> {
        let object = b[start] == b'{';
        let mut i = start + 1;
        let mut kids = Vec::new();
        loop {
            i = json::skip_ws(b, i);
            if i >= end - 1 {
                return kids;
            }
            if b[i] == b',' {
                i = json::skip_ws(b, i + 1);
            }
            let mut key = i..i;
            if object {
                key.end = json::string_end(b, i).unwrap();
                i = json::skip_ws(b, key.end);
                assert_eq!(b[i], b':');
                i = json::skip_ws(b, i + 1);
            }
            let start = i;
            i = json::skip_value(b, start).unwrap();
            kids.push((key, start, i));
        }
    }

    /// Every container in `b[start..end]`, as (start, end), the outermost first.
    fn containers(b: &[u8], start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
        if matches!(b[start], b'{' | b'[') {
            out.push((start, end));
            for (_, s, e) in children_one_by_one(b, start, end) {
                containers(b, s, e, out);
            }
        }
    }

    /// JSON text with whitespace anywhere it may be, and strings that hold brackets,
    /// commas, colons and escaped quotes.
    fn json_text() -> impl Strategy<Value = String> {
        let ws = || prop_oneof![Just(""), Just(" "), Just("\t\r\n ")];
        let leaf = prop_oneof![
            r#"[a-z,:\[\]{} ]{0,8}"#.prop_map(|s| format!("\"{s}\"")),
            Just(r#""a\"b,}\\""#.to_string()),
            "-?[0-9]{1,4}",
            Just("true".to_string()),
            Just("null".to_string()),
        ];
        leaf.prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec((inner.clone(), ws(), ws()), 0..6).prop_map(|v| {
                    let items: Vec<String> =
                        v.iter().map(|(x, a, b)| format!("{a}{x}{b}")).collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec(("[a-z,]{0,3}", inner, ws(), ws()), 0..6).prop_map(|v| {
                    let items: Vec<String> = v
                        .iter()
                        .map(|(k, x, a, b)| format!("{a}\"{k}\"{b}:{a}{x}{b}"))
                        .collect();
                    format!("{{{}}}", items.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn children_between_commas_are_the_children_read_one_by_one(text in json_text(), min in 0usize..24) {
            let b = text.as_bytes();
            let mut all = Vec::new();
            containers(b, 0, b.len(), &mut all);
            for (start, end) in all {
                let want: Vec<_> = children_one_by_one(b, start, end)
                    .into_iter()
                    .filter(|(_, s, e)| e - s >= min && b"\"{[".contains(&b[*s]))
                    .collect();
                let (mut commas, mut kids) = (Commas { tape: vec![], at: vec![7] }, vec![]);
                children(b, start, end, min, &mut commas, &mut kids);
                let got: Vec<_> = kids.into_iter().map(|k| (k.key, k.start, k.end)).collect();
                prop_assert_eq!(got, want, "{}", &text[start..end]);
            }
        }

        #[test]
        fn the_elements_two_arrays_share_end_where_their_ends_say(
            text in json_text(),
            near in any::<prop::sample::Index>(),
            off in 0usize..4,
            small in any::<bool>(),
        ) {
            // An array of elements each, inside a line whose structure holds it, or not (a
            // structure too small to hold is walked instead).
            let array = format!("[{text},{text} ,{text}]");
            let line = format!(r#"{{"a":{array},"b":[{text},1]}}"#);
            let (b, start) = (line.as_bytes(), 5);
            let end = start + array.len();
            // As the prefix ref read them off every element's end: the last element that
            // ends within the shared bytes, when a comma follows it at once.
            let ends: Vec<usize> = children_one_by_one(b, start, end)
                .into_iter()
                .map(|(_, _, e)| e - start)
                .collect();
            // The shared bytes end anywhere, mostly next to an element's end.
            let same = match off {
                3 => near.index(array.len() + 1),
                _ => (near.get(&ends) + off).saturating_sub(1).min(array.len()),
            };
            let want = ends
                .into_iter()
                .take_while(|&e| e <= same)
                .last()
                .filter(|&e| array.as_bytes()[e] == b',');
            let mut commas = Commas::default();
            if !small {
                commas.value_end(b, 0);
                prop_assert!(!commas.tape.is_empty());
            }
            let got = commas.shared_elements(b, start, same);
            prop_assert_eq!(got, want, "{} {}", array, same);
        }

        #[test]
        fn the_structure_found_with_a_lines_end_gives_each_containers_children(
            before in json_text(),
            text in json_text(),
            min in 0usize..24,
        ) {
            // The line before leaves its commas unused (its value was referred to whole).
            let mut commas = Commas::default();
            commas.value_end(before.as_bytes(), 0);
            let b = text.as_bytes();
            let end = commas.value_end(b, 0);
            prop_assert_eq!(end, json::skip_value(b, 0));
            // Every container in it, outermost first as a walk meets them, read off the
            // structure found with the end.
            let mut all = Vec::new();
            containers(b, 0, b.len(), &mut all);
            for (start, end) in all {
                let want: Vec<_> = children_one_by_one(b, start, end)
                    .into_iter()
                    .filter(|(_, s, e)| e - s >= min && b"\"{[".contains(&b[*s]))
                    .collect();
                let mut kids = vec![];
                children(b, start, end, min, &mut commas, &mut kids);
                let got: Vec<_> = kids.into_iter().map(|k| (k.key, k.start, k.end)).collect();
                prop_assert_eq!(got, want, "{}", &text[start..end]);
            }
        }

        #[test]
        fn common_prefix_is_the_bytes_alike_before_the_first_difference(
            a in prop::collection::vec(0u8..3, 0..200),
            b in prop::collection::vec(0u8..3, 0..200),
            shared in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..150),
                prop::collection::vec(any::<u8>(), 4000..9000),
            ],
        ) {
            // The shared part puts the first difference anywhere in a block (of 32 bytes
            // or of 4 KiB), or past both.
            let a: Vec<u8> = shared.iter().chain(&a).copied().collect();
            let b: Vec<u8> = shared.iter().chain(&b).copied().collect();
            let want = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            prop_assert_eq!(common_prefix(&a, &b), want);
            prop_assert_eq!(common_prefix(&b, &a), want);
        }

        #[test]
        fn round_trips_byte_for_byte(lines in jsonl(), min in 2usize..400, window in prop_oneof![Just(DEFAULT_WINDOW), 0u64..4000]) {
            let packed = pack_strings(&lines, min, window);
            let want: Vec<u8> = joined(&lines);
            prop_assert_eq!(unpack(&packed).unwrap(), want);
        }

        #[test]
        fn random_bytes_round_trip(lines in prop::collection::vec(prop::collection::vec(prop_oneof![Just(b'{'), Just(b'}'), Just(b'"'), Just(b'['), Just(b']'), Just(b','), Just(b':'), Just(b'\\'), Just(b'a')], 0..700), 1..8)) {
            let lines: Vec<Vec<u8>> = lines.into_iter().map(|mut l| { l.retain(|&b| b != b'\n'); l }).collect();
            let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
            let packed = pack(&refs, 2, DEFAULT_WINDOW);
            let want: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
            prop_assert_eq!(unpack(&packed).unwrap(), want);
        }
    }
}
