//! The whole logical log, its packed rows expanded on helper threads.
//!
//! `sess unpack`, and `sess cat` with nothing to select, write every event of a log. Most
//! of that time goes to expanding rows: a DSH chunk row into its chunks, a snapshot-delta
//! row into its frames, each many times the row's bytes. Rows are independent of each
//! other, so the lines read are handed to helpers in batches, each batch expanded into
//! pieces of output, and the pieces written in the order the lines were read. Reading
//! (decompressing, splitting lines, rebuilding interned lines, checking them) stays one
//! stream, as it is in [`super::each_event`], and so does writing.
//!
//! What comes out is what [`super::each_event`] gives, event for event, and so are the
//! errors: a bad row is reported once every event before it has been written, and nothing
//! after it is; a failure of reading is reported once the batches read before it are
//! written (unless one of them failed first); a failure of writing ends it at once. One
//! thing differs: reading runs up to [`IN_FLIGHT_BYTES`] of lines ahead of writing, within
//! one input, so before a bad row's error there may be warnings about what was read past
//! it (a torn or damaged frame after it, the count of lines that are not JSON).
//!
//! Only files are read so ([`helpers`]): lines from a pipe come as they are written, and a
//! reader wants each one expanded and written as it comes, not once a batch is full.
//!
//! Memory stays bounded: batches of at most [`BATCH`] bytes of lines (or one longer line)
//! are out [`IN_FLIGHT`] at a time, [`IN_FLIGHT_BYTES`] of lines at most unless one line
//! is longer, and a helper waits once [`PIECES`] pieces of [`PIECE`] bytes of its batch
//! are waiting to be written, however much its rows expand to.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use super::{LastLine, expand_to, is_one_event, newline_for, not_jsonl};
use crate::error::{Error, Place};
use crate::input::{self, Flow, Input, OpenOptions};
use crate::io::{Ending, Line};
use crate::snapshots;

/// Bytes of lines a batch holds, unless one line is longer.
const BATCH: usize = 128 << 10;
/// Batches handed out and not yet written, at most; and their bytes of lines, at most,
/// unless one batch alone holds more (one long line).
const IN_FLIGHT: usize = 8;
const IN_FLIGHT_BYTES: usize = IN_FLIGHT * BATCH;
/// Output bytes a helper gathers before handing them over.
const PIECE: usize = 1 << 20;
/// Pieces of one batch waiting to be written before its helper waits.
const PIECES: usize = 2;

/// A line of a batch: where its bytes end in the batch, and what [`super::expand`] needs
/// to know of it.
struct Held {
    end: usize,
    number: u64,
    offset: u64,
    ending: Ending,
    newline: bool,
}

/// Lines read, on their way to a helper.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    lines: Vec<Held>,
}

/// What a helper hands back of a batch, in order.
enum Piece {
    Bytes(Vec<u8>),
    /// A bad row: nothing more comes of the batch.
    Failed(Error),
    /// The batch is done. (A channel that closes without it belonged to a helper that
    /// panicked.)
    End,
}

/// A batch to expand, the input it was read from, and where its pieces go.
type Job = (Arc<str>, Batch, SyncSender<Piece>);

/// Why writing the log stopped.
enum Fail {
    /// Reading failed: what was read before is written first.
    Read(Error),
    /// A row is bad (or its helper failed): nothing after it is written.
    Row(Error),
    /// Writing failed: nothing more is written.
    Write(std::io::Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Read(e)
    }
}

/// How many helpers [`write_events`] would use on `inputs` with `threads` threads, or
/// `None` when they are read on one thread: with one thread, or any input that is not a
/// file (stdin, a FIFO, a device).
pub fn helpers(threads: u64, inputs: &[Input]) -> Option<usize> {
    let files = inputs
        .iter()
        .all(|i| i.path().is_some_and(input::is_regular_file));
    (threads > 1 && files).then_some(threads as usize)
}

/// Writes every logical event of `inputs` to `out`, each followed by its newline, as
/// [`super::each_event`] reads them under `last`, with rows expanded on `helpers` threads
/// (no more than there are cores, which is all they can use; as many of those as can be
/// started, at least one).
pub fn write_events<E: From<Error> + From<std::io::Error>>(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    helpers: usize,
    out: &mut dyn Write,
) -> Result<(), E> {
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let jobs_rx = Mutex::new(jobs_rx);
    let spare = Spare::default();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    std::thread::scope(|scope| {
        for k in 0..helpers.clamp(1, cores) {
            let started = std::thread::Builder::new()
                .name("expand".into())
                .spawn_scoped(scope, || helper(&jobs_rx, &spare));
            match started {
                Ok(_) => {}
                // A limit on threads: the helpers started do the work.
                Err(_) if k > 0 => break,
                Err(e) => {
                    let why = format!("cannot start a thread to expand rows on: {e}");
                    return Err(E::from(std::io::Error::new(e.kind(), why)));
                }
            }
        }
        let mut order = Order {
            jobs: jobs_tx,
            waiting: VecDeque::new(),
            held: 0,
            out,
            spare: &spare,
        };
        let done = match read(inputs, opts, last, &mut order) {
            // Whatever was read is written, up to the first batch that failed; a failure
            // of reading comes after it, as it would on one thread.
            Ok(()) => order.drain(),
            Err(Fail::Read(e)) => order.drain().and(Err(Fail::Read(e))),
            failed => failed,
        };
        // The helpers end when the jobs' sender goes, and pieces no one waits for are
        // dropped (a helper whose receiver is gone stops its batch).
        drop(order);
        match done {
            Ok(()) => Ok(()),
            Err(Fail::Read(e) | Fail::Row(e)) => Err(E::from(e)),
            Err(Fail::Write(e)) => Err(E::from(e)),
        }
    })
}

/// Reads `inputs` line by line into batches handed to `order`.
fn read(
    inputs: &[Input],
    opts: OpenOptions,
    last: LastLine,
    order: &mut Order<'_>,
) -> Result<(), Fail> {
    for (k, input) in inputs.iter().enumerate() {
        let src = input::open(input, opts)?;
        let name = src.name.clone();
        let last = last.for_input(k, inputs.len());
        let mut batch = Batch::default();
        let read = input::each_line_of(src, &mut |name: &str, line: &Line<'_>| {
            if let Some(e) = not_jsonl(name, line) {
                return Err(Fail::Read(e));
            }
            // The last line may be warned about: what was read before it is written first,
            // so that a bad row before it is the error, and the warning is not said, as on
            // one thread.
            if line.ending != Ending::Newline {
                order.send(name, std::mem::take(&mut batch))?;
                order.drain()?;
            }
            let Some(newline) = newline_for(name, line, last) else {
                return Ok(Flow::More);
            };
            // A long line that is not a row is written from where it was read: copied into
            // a batch and a piece, it would be held three times over.
            if line.bytes.len() >= BATCH && is_one_event(line) {
                order.send(name, std::mem::take(&mut batch))?;
                order.drain()?;
                return order.write_line(line.bytes, newline).map(|()| Flow::More);
            }
            // So is a long snapshot row expanded here: on a helper it would be held copied
            // into a batch, beside its last event's text, and each event copied into a piece.
            if line.bytes.len() >= snapshots::HELD && snapshots::is_row(line.bytes) {
                order.send(name, std::mem::take(&mut batch))?;
                order.drain()?;
                return order.expand_here(name, line, newline).map(|()| Flow::More);
            }
            batch.bytes.extend_from_slice(line.bytes);
            batch.lines.push(Held {
                end: batch.bytes.len(),
                number: line.number,
                offset: line.offset,
                ending: line.ending,
                newline,
            });
            if batch.bytes.len() >= BATCH {
                order.send(name, std::mem::take(&mut batch))?;
            }
            Ok(Flow::More)
        });
        // Lines read before reading failed are written too; after a bad row or a failed
        // write, nothing.
        if let Err(Fail::Row(_) | Fail::Write(_)) = read {
            return read.map(|_| ());
        }
        order.send(&name, batch)?;
        read?;
        // The next input is opened only once this one is written: a bad row in it ends
        // the run before the next is read.
        order.drain()?;
    }
    Ok(())
}

/// The batches handed out, in the order they were read, and where their pieces go.
struct Order<'a> {
    jobs: Sender<Job>,
    /// Each batch out: where its pieces come, and its bytes of lines.
    waiting: VecDeque<(Receiver<Piece>, usize)>,
    /// The bytes of lines of the batches out.
    held: usize,
    out: &'a mut dyn Write,
    spare: &'a Spare,
}

/// Pieces written, to be filled again: a fresh megabyte each time would be mapped and
/// faulted in page by page.
#[derive(Default)]
struct Spare(Mutex<Vec<Vec<u8>>>);

impl Spare {
    fn take(&self) -> Vec<u8> {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        spare.pop().unwrap_or_else(|| Vec::with_capacity(PIECE))
    }

    fn give(&self, mut piece: Vec<u8>) {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // As many as can be out at once, no more.
        if spare.len() < IN_FLIGHT * (PIECES + 1) && piece.capacity() <= 2 * PIECE {
            piece.clear();
            spare.push(piece);
        }
    }
}

impl Order<'_> {
    /// Hands `batch` to a helper, first writing what is done, and waiting for the oldest
    /// batch when [`IN_FLIGHT`] are out.
    fn send(&mut self, name: &str, batch: Batch) -> Result<(), Fail> {
        if batch.lines.is_empty() {
            return Ok(());
        }
        self.write_ready()?;
        let len = batch.bytes.len();
        while !self.waiting.is_empty()
            && (self.waiting.len() >= IN_FLIGHT || self.held + len > IN_FLIGHT_BYTES)
        {
            self.write_oldest()?;
        }
        let (tx, rx) = mpsc::sync_channel(PIECES);
        self.jobs
            .send((Arc::from(name), batch, tx))
            .map_err(|_| Fail::Row(Error::io(Place::file(name), "cannot expand", gone())))?;
        self.waiting.push_back((rx, len));
        self.held += len;
        Ok(())
    }

    /// Writes the pieces ready, in order, without waiting.
    fn write_ready(&mut self) -> Result<(), Fail> {
        while let Some((rx, _)) = self.waiting.front() {
            let piece = match rx.try_recv() {
                Ok(piece) => piece,
                Err(mpsc::TryRecvError::Empty) => return Ok(()),
                Err(mpsc::TryRecvError::Disconnected) => return Err(helper_failed()),
            };
            if let Piece::End = piece {
                self.done();
            } else {
                self.write(piece)?;
            }
        }
        Ok(())
    }

    /// Writes the oldest batch out whole, waiting for it.
    fn write_oldest(&mut self) -> Result<(), Fail> {
        while let Some((rx, _)) = self.waiting.front() {
            match rx.recv().map_err(|_| helper_failed())? {
                Piece::End => {
                    self.done();
                    break;
                }
                piece => self.write(piece)?,
            }
        }
        Ok(())
    }

    /// The oldest batch is written.
    fn done(&mut self) {
        if let Some((_, len)) = self.waiting.pop_front() {
            self.held -= len;
        }
    }

    /// Writes every batch out.
    fn drain(&mut self) -> Result<(), Fail> {
        while !self.waiting.is_empty() {
            self.write_oldest()?;
        }
        Ok(())
    }

    /// Expands a row read and writes its events, all batches before it written.
    fn expand_here(&mut self, name: &str, line: &Line<'_>, newline: bool) -> Result<(), Fail> {
        let out = &mut self.out;
        let expanded = super::expand(name, line, newline, &mut Vec::new(), &mut |_, ev| {
            out.write_all(ev.bytes).map_err(Fail::Write)?;
            if ev.newline {
                out.write_all(b"\n").map_err(Fail::Write)?;
            }
            Ok::<_, Fail>(Flow::More)
        });
        match expanded {
            Ok(_) => Ok(()),
            // What the row itself says is wrong with it.
            Err(Fail::Read(e)) => Err(Fail::Row(e)),
            Err(other) => Err(other),
        }
    }

    /// Writes a line read, all batches before it written.
    fn write_line(&mut self, line: &[u8], newline: bool) -> Result<(), Fail> {
        self.out.write_all(line).map_err(Fail::Write)?;
        if newline {
            self.out.write_all(b"\n").map_err(Fail::Write)?;
        }
        Ok(())
    }

    fn write(&mut self, piece: Piece) -> Result<(), Fail> {
        match piece {
            Piece::Bytes(b) => {
                self.out.write_all(&b).map_err(Fail::Write)?;
                self.spare.give(b);
                Ok(())
            }
            Piece::Failed(e) => Err(Fail::Row(e)),
            Piece::End => Ok(()),
        }
    }
}

/// A helper: takes batches until there are no more, and expands each into pieces.
fn helper(jobs: &Mutex<Receiver<Job>>, spare: &Spare) {
    loop {
        // The lock is held only to take one job.
        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((name, batch, tx)) = job else { return };
        let mut piece = spare.take();
        match expand_batch(&name, &batch, &mut piece, &tx, spare) {
            Ok(()) => {
                let _ = tx.send(Piece::Bytes(piece));
                let _ = tx.send(Piece::End);
            }
            // What was expanded before the bad row goes out first.
            Err(Stop::Failed(e)) => {
                let _ = tx.send(Piece::Bytes(piece));
                let _ = tx.send(Piece::Failed(e));
            }
            Err(Stop::Gone) => {}
        }
    }
}

/// Why a helper stopped a batch.
enum Stop {
    Failed(Error),
    /// No one waits for the batch any more.
    Gone,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Failed(e)
    }
}

fn expand_batch(
    name: &str,
    batch: &Batch,
    piece: &mut Vec<u8>,
    tx: &SyncSender<Piece>,
    spare: &Spare,
) -> Result<(), Stop> {
    let mut start = 0;
    for held in &batch.lines {
        let line = Line {
            bytes: &batch.bytes[start..held.end],
            number: held.number,
            offset: held.offset,
            ending: held.ending,
        };
        start = held.end;
        expand_to(name, &line, held.newline, piece, PIECE, &mut |piece| {
            let full = std::mem::replace(piece, spare.take());
            tx.send(Piece::Bytes(full)).map_err(|_| Stop::Gone)
        })?;
    }
    Ok(())
}

fn gone() -> std::io::Error {
    std::io::Error::other("the expanding threads stopped")
}

/// A batch whose helper stopped without finishing it (it panicked).
fn helper_failed() -> Fail {
    Fail::Row(Error::io(Place::stdout(), "cannot expand rows", gone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk row of `n` members of `len` bytes each.
    fn row(n: usize, len: usize) -> Vec<u8> {
        let texts: Vec<String> = (0..n)
            .map(|k| format!("\"{}\"", "x".repeat(len - k % 2)))
            .collect();
        let dt = vec!["1"; n - 1].join(",");
        format!(
            r#"{{"type":"text-chunks","seq0":1,"time0":5,"data":{{"turn":1,"step":1,"index":0,"dt":[{dt}],"texts":[{}]}}}}"#,
            texts.join(",")
        )
        .into_bytes()
    }

    /// A batch of whole lines, numbered from 1.
    fn batch_of(lines: [Vec<u8>; 3]) -> Batch {
        let mut batch = Batch::default();
        for line in lines {
            batch.bytes.extend_from_slice(&line);
            let number = batch.lines.len() as u64 + 1;
            batch.lines.push(Held {
                end: batch.bytes.len(),
                number,
                offset: 0,
                ending: Ending::Newline,
                newline: true,
            });
        }
        batch
    }

    #[test]
    fn a_batch_comes_back_in_pieces_of_bounded_size_and_in_order() {
        let batch = batch_of([row(30_000, 100), b"{\"plain\":1}".to_vec(), row(5, 10)]);
        let (tx, rx) = mpsc::sync_channel(PIECES);
        let spare = Spare::default();
        let mut pieces = Vec::new();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut piece = Vec::new();
                assert!(expand_batch("t", &batch, &mut piece, &tx, &spare).is_ok());
                tx.send(Piece::Bytes(piece)).unwrap();
                drop(tx);
            });
            for piece in rx {
                let Piece::Bytes(b) = piece else {
                    panic!("a batch that expands failed")
                };
                pieces.push(b);
            }
        });
        // What one thread writes, event by event.
        let mut expected = Vec::new();
        let mut start = 0;
        for held in &batch.lines {
            let line = Line {
                bytes: &batch.bytes[start..held.end],
                number: held.number,
                offset: 0,
                ending: Ending::Newline,
            };
            start = held.end;
            super::super::expand("t", &line, true, &mut Vec::new(), &mut |_, ev| {
                expected.extend_from_slice(ev.bytes);
                expected.push(b'\n');
                Ok::<_, Error>(Flow::More)
            })
            .unwrap();
        }
        assert!(pieces.concat() == expected);
        // Several pieces, none longer than a piece and one event.
        assert!(pieces.len() >= 4, "{}", pieces.len());
        let event = expected
            .split(|&c| c == b'\n')
            .map(<[u8]>::len)
            .max()
            .unwrap()
            + 1;
        assert!(pieces.iter().all(|p| p.len() < PIECE + event));
    }

    #[test]
    fn a_bad_row_stops_its_batch_after_the_events_before_it() {
        let batch = batch_of([
            row(3, 4),
            b"{\"type\":\"text-chunks\",\"seq0\":1,\"time0\":1,\"data\":{}}".to_vec(),
            row(3, 4),
        ]);
        let (tx, rx) = mpsc::sync_channel(8);
        let mut piece = Vec::new();
        match expand_batch("t", &batch, &mut piece, &tx, &Spare::default()) {
            Err(Stop::Failed(e)) => assert!(e.to_string().starts_with("t:2"), "{e}"),
            _ => panic!("the bad row is not the error"),
        }
        drop(tx);
        assert!(rx.iter().next().is_none());
        assert_eq!(piece.iter().filter(|&&c| c == b'\n').count(), 3);
    }
}
