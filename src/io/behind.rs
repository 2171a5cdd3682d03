//! Writing behind, on a thread of its own: a command that writes a gigabyte spends as
//! long in `write(2)` (the kernel copying into the page cache) as in making the bytes, and
//! the two can run on two cores. The caller fills a block; full blocks go to the thread,
//! which writes them in order and hands the buffers back. Memory holds a few blocks.
//!
//! Errors are the writer's own, kind and text: the first one is kept and returned by the
//! caller's next write or flush (a closed pipe stays a closed pipe), and after it nothing
//! more is written.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The bytes a block gathers before it is handed over: the size of the buffer the sink
/// writes through on one thread, so that both write the same bytes at the same points
/// (and a write that fails, fails after the same lines).
pub const BLOCK: usize = 256 * 1024;

/// How many full blocks may wait for the thread.
const IN_FLIGHT: usize = 2;

enum Msg {
    Block(Vec<u8>),
    /// Flush the writer and say when done (the outcome is in [`Failed`]).
    Flush(SyncSender<()>),
    /// Say when every block before is written.
    Settle(SyncSender<()>),
}

/// The writer's first error, kind and text, shared: the thread sets it, the caller's next
/// write or flush returns it. The flag is what the caller looks at on every write, so
/// that a write costs no lock.
#[derive(Default)]
struct Failed {
    any: AtomicBool,
    first: Mutex<Option<(io::ErrorKind, String)>>,
}

impl Failed {
    fn set(&self, e: io::Error) {
        let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert((e.kind(), e.to_string()));
        self.any.store(true, Ordering::Release);
    }

    fn get(&self) -> io::Result<()> {
        if !self.any.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*self.first.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
            None => Ok(()),
        }
    }
}

/// `inner`, written on a thread of its own. [`Behind::finish`] gives it back.
pub struct Behind<W: Write + Send + 'static> {
    block: Vec<u8>,
    tx: Option<SyncSender<Msg>>,
    /// Buffers the thread is done with.
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<W>>,
    failed: Arc<Failed>,
}

impl<W: Write + Send + 'static> Behind<W> {
    pub fn new(mut inner: W) -> Behind<W> {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let failed = Arc::new(Failed::default());
        let seen = Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("sess-write".into())
            .spawn(move || {
                let fail = |e: io::Error| seen.set(e);
                let ok = || seen.get().is_ok();
                for msg in rx {
                    match msg {
                        Msg::Block(mut b) => {
                            if ok() {
                                inner.write_all(&b).unwrap_or_else(fail);
                            }
                            b.clear();
                            let _ = give_back.try_send(b);
                        }
                        Msg::Flush(done) => {
                            if ok() {
                                inner.flush().unwrap_or_else(fail);
                            }
                            let _ = done.send(());
                        }
                        Msg::Settle(done) => {
                            let _ = done.send(());
                        }
                    }
                }
                inner
            })
            .expect("a thread to write on");
        Behind {
            block: Vec::with_capacity(BLOCK),
            tx: Some(tx),
            spare,
            thread: Some(thread),
            failed,
        }
    }

    /// The writer's first error, if it has had one.
    fn check(&self) -> io::Result<()> {
        self.failed.get()
    }

    /// Hands the block over (when it holds bytes); an error when the writer has failed.
    fn hand_over(&mut self) -> io::Result<()> {
        self.check()?;
        if self.block.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BLOCK));
        let full = std::mem::replace(&mut self.block, next);
        self.send(Msg::Block(full))
    }

    fn send(&mut self, msg: Msg) -> io::Result<()> {
        let tx = self.tx.as_ref().expect("not finished");
        if tx.send(msg).is_err() {
            return Err(self.ended());
        }
        Ok(())
    }

    /// The thread ended before it was told to: it panicked, which joining passes on.
    fn ended(&mut self) -> io::Error {
        if let Some(t) = self.thread.take()
            && let Err(panic) = t.join()
        {
            std::panic::resume_unwind(panic);
        }
        io::Error::other("the writing thread ended")
    }

    /// Sends `ask` (a message carrying `done`) and waits for the thread to answer, then
    /// says whether the writer has failed.
    fn ask(&mut self, ask: impl FnOnce(SyncSender<()>) -> Msg) -> io::Result<()> {
        let (done, wait) = sync_channel(1);
        self.send(ask(done))?;
        if wait.recv().is_err() {
            return Err(self.ended());
        }
        self.check()
    }

    /// Waits for the blocks handed over to be written (not the one being filled), and
    /// says whether writing them failed. Blocks are handed over where a `BufWriter` on one
    /// thread writes, so a caller that meets another error can ask which came first.
    pub fn settle(&mut self) -> io::Result<()> {
        self.ask(Msg::Settle)
    }

    /// Writes what is left, and gives the writer back (flushed), or the first error.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        drop(self.tx.take());
        let thread = self.thread.take().expect("not finished");
        let inner = thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        self.check()?;
        Ok(inner)
    }
}

/// Dropped unfinished (the command failed), what was written still goes out, as a
/// `BufWriter` dropped writes what it holds: the lines before a failure are output.
impl<W: Write + Send + 'static> Drop for Behind<W> {
    fn drop(&mut self) {
        let Some(tx) = self.tx.take() else { return };
        if !self.block.is_empty() {
            let _ = tx.send(Msg::Block(std::mem::take(&mut self.block)));
        }
        drop(tx);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<W: Write + Send + 'static> Write for Behind<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    /// Hands a block over where a `BufWriter` of [`BLOCK`] bytes writes its buffer: when
    /// the next bytes would not fit. Bytes of a block's size or more go straight after it.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.check()?;
        if self.block.len() + buf.len() > BLOCK {
            self.hand_over()?;
        }
        if buf.len() < BLOCK {
            self.block.extend_from_slice(buf);
            return Ok(());
        }
        for piece in buf.chunks(BLOCK) {
            self.block.extend_from_slice(piece);
            self.hand_over()?;
        }
        Ok(())
    }

    /// Writes everything handed over so far through to the writer, and flushes it.
    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        self.ask(Msg::Flush)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_arrive_in_order_whatever_the_writes() {
        let mut w = Behind::new(Vec::new());
        let mut want = Vec::new();
        for k in 0..5000usize {
            let chunk: Vec<u8> = (0..(k * 37) % 3000).map(|i| (i + k) as u8).collect();
            w.write_all(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            if k % 777 == 0 {
                w.flush().unwrap();
            }
        }
        assert_eq!(w.finish().unwrap(), want);
    }

    /// Fails every write after the first `ok` bytes, as a full disk does.
    #[derive(Debug)]
    struct Full {
        ok: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::from_raw_os_error(28));
            }
            let n = buf.len().min(self.ok);
            self.ok -= n;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Shares what it is given, so that a test can look after the writer is gone.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn dropped_unfinished_it_still_writes_everything() {
        let seen = Shared::default();
        let mut w = Behind::new(seen.clone());
        let want: Vec<u8> = (0..3 * BLOCK + 17).map(|i| i as u8).collect();
        w.write_all(&want).unwrap();
        drop(w);
        assert!(*seen.0.lock().unwrap() == want);
    }

    /// Panics when written to.
    #[derive(Debug)]
    struct Panics;

    impl Write for Panics {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            panic!("the writer broke");
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    #[should_panic(expected = "the writer broke")]
    fn a_writer_that_panics_is_not_a_flush_that_worked() {
        let mut w = Behind::new(Panics);
        w.write_all(&[b'x'; BLOCK]).unwrap();
        let _ = w.flush();
    }

    #[test]
    fn the_writers_error_comes_back_with_its_kind_and_text() {
        let want = io::Error::from_raw_os_error(28);
        let mut w = Behind::new(Full { ok: 1000 });
        let block = vec![b'x'; BLOCK];
        // The first block fails on the thread; a later write or the flush says so.
        let mut told = None;
        for _ in 0..(IN_FLIGHT + 3) {
            if let Err(e) = w.write_all(&block) {
                told = Some(e);
                break;
            }
        }
        let e = told.unwrap_or_else(|| w.flush().unwrap_err());
        assert_eq!((e.kind(), e.to_string()), (want.kind(), want.to_string()));
        // And again, to every later call.
        let e = w.write_all(b"more").unwrap_err();
        assert_eq!(e.to_string(), want.to_string());
        assert_eq!(w.finish().unwrap_err().to_string(), want.to_string());
    }
}
