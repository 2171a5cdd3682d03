//! Writing behind, on a thread of its own: a command that writes a gigabyte spends as
//! long in `write(2)` (the kernel copying into the page cache) as in making the bytes, and
//! the two can run on two cores. The caller fills a block; full blocks go to the thread,
//! which writes them in order and hands the buffers back. Memory holds a few blocks.
//!
//! Errors are the writer's own, kind and text: the first one is kept and returned by the
//! caller's next write or flush (a closed pipe stays a closed pipe), and after it nothing
//! more is written.

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The bytes a block gathers before it is handed over.
const BLOCK: usize = 256 * 1024;

/// How many full blocks may wait for the thread.
const IN_FLIGHT: usize = 2;

enum Msg {
    Block(Vec<u8>),
    /// Flush the writer and say when done (the outcome is in [`Failed`]).
    Flush(SyncSender<()>),
    /// Say when every block before is written.
    Sync(SyncSender<()>),
}

/// The writer's first error, kind and text, shared: the thread sets it, the caller's next
/// write or flush returns it.
type Failed = Arc<Mutex<Option<(io::ErrorKind, String)>>>;

/// `inner`, written on a thread of its own. [`Behind::finish`] gives it back.
pub struct Behind<W: Write + Send + 'static> {
    block: Vec<u8>,
    tx: Option<SyncSender<Msg>>,
    /// Buffers the thread is done with.
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<W>>,
    failed: Failed,
}

impl<W: Write + Send + 'static> Behind<W> {
    pub fn new(mut inner: W) -> Behind<W> {
        let (tx, rx) = sync_channel::<Msg>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let failed = Failed::default();
        let seen = Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("sess-write".into())
            .spawn(move || {
                let fail = |e: io::Error| {
                    let mut f = seen.lock().unwrap_or_else(|p| p.into_inner());
                    f.get_or_insert((e.kind(), e.to_string()));
                };
                let ok = || seen.lock().unwrap_or_else(|p| p.into_inner()).is_none();
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
                        Msg::Sync(done) => {
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
        match &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
            None => Ok(()),
        }
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
            // The thread ended before it was told to: it panicked, which joining says.
            if let Some(t) = self.thread.take()
                && let Err(panic) = t.join()
            {
                std::panic::resume_unwind(panic);
            }
            return Err(io::Error::other("the writing thread ended"));
        }
        Ok(())
    }

    /// Waits for the blocks handed over to be written (not the one being filled), and
    /// says whether writing them failed. On one thread a write fails as its block is
    /// handed over; a caller that meets another error can ask which came first.
    pub fn settle(&mut self) -> io::Result<()> {
        let (done, wait) = sync_channel(1);
        self.send(Msg::Sync(done))?;
        let _ = wait.recv();
        self.check()
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

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        self.check()?;
        while !buf.is_empty() {
            let room = BLOCK.saturating_sub(self.block.len()).max(1);
            let (now, rest) = buf.split_at(room.min(buf.len()));
            self.block.extend_from_slice(now);
            buf = rest;
            if self.block.len() >= BLOCK {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Writes everything handed over so far through to the writer, and flushes it.
    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        let (done, wait) = sync_channel(1);
        self.send(Msg::Flush(done))?;
        // No answer: the thread panicked, and the next call says so.
        let _ = wait.recv();
        self.check()
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
