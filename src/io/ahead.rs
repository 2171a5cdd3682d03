//! Reading ahead on a thread of its own: the reader behind (zstd frames being decompressed)
//! runs on one core while the caller works through what it gave on another. The bytes,
//! their order and every error are the reader's; memory holds at most a few blocks. What
//! the reader has to say (warnings) is said when the caller reaches the bytes it came
//! with, as it would be without the thread.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::read::read_some;

/// The most one hand-over carries.
const BLOCK: usize = 1 << 20;

/// How many blocks may wait between the two threads.
const IN_FLIGHT: usize = 2;

/// How a reader's notes travel with its bytes: `count` (on the reading thread, after each
/// read) says how many notes there are so far; `show` (on the caller's, when it reaches
/// that read's bytes) shows those not shown yet, up to that count.
pub struct Notes {
    pub count: Box<dyn FnMut() -> usize + Send>,
    pub show: Box<dyn FnMut(usize) + Send>,
}

/// One read of the reader behind, and its notes so far.
type Block = (io::Result<Vec<u8>>, usize);

/// A reader whose reads are made ahead, on a thread of its own.
pub struct ReadAhead {
    blocks: Receiver<Block>,
    show: Option<Box<dyn FnMut(usize) + Send>>,
    /// The block being given out, and how far.
    block: Vec<u8>,
    at: usize,
    /// The reader reported its end or an error: nothing more comes.
    done: bool,
    /// Blocks handed back to the reading thread, to be filled again. The thread is not
    /// waited for: dropping this ends it at its next hand-over (one blocked reading a pipe
    /// that never ends goes with the process).
    spare: SyncSender<Vec<u8>>,
}

impl ReadAhead {
    /// Reads `inner` ahead. With `whole`, each hand-over waits for a full block (for a
    /// file, which never makes a read wait for a writer); without, each read of `inner` is
    /// handed over as it comes, so a stream being written is read as promptly as without
    /// the thread.
    pub fn new(mut inner: Box<dyn Read + Send>, notes: Option<Notes>, whole: bool) -> ReadAhead {
        let (give, blocks) = sync_channel::<Block>(IN_FLIGHT);
        let (mut count, show) = match notes {
            Some(n) => (Some(n.count), Some(n.show)),
            None => (None, None),
        };
        let (spare, spares) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
        std::thread::spawn(move || {
            let mut noted = || count.as_mut().map_or(0, |count| count());
            let mut buf = vec![0; BLOCK];
            // Bytes read but not handed over: `buf[..got]`, to be shown after `seen` notes.
            let (mut got, mut seen) = (0, noted());
            let send = |bytes: &[u8], seen: usize| {
                let mut block = spares.try_recv().unwrap_or_default();
                block.clear();
                block.extend_from_slice(bytes);
                give.send((Ok(block), seen)).is_ok()
            };
            let end = loop {
                let read = read_some(&mut inner, &mut buf[got..]);
                let now = noted();
                // What this read had to say comes before its bytes: those before go first.
                if now != seen && got > 0 {
                    if !send(&buf[..got], seen) {
                        return;
                    }
                    if let Ok(n) = read {
                        buf.copy_within(got..got + n, 0);
                    }
                    got = 0;
                }
                seen = now;
                match read {
                    Ok(0) => break Ok(()),
                    Err(e) => break Err(e),
                    Ok(n) => got += n,
                }
                if got == BLOCK || !whole {
                    // The caller went away (it stopped reading): so does this thread.
                    if !send(&buf[..got], seen) {
                        return;
                    }
                    got = 0;
                }
            };
            if got > 0 && !send(&buf[..got], seen) {
                return;
            }
            // An empty block is the end: only the end is sent empty.
            let _ = give.send((end.map(|()| Vec::new()), seen));
        });
        ReadAhead {
            blocks,
            show,
            block: Vec::new(),
            at: 0,
            done: false,
            spare,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() {
            if self.done {
                return Ok(0);
            }
            let next = match self.blocks.recv() {
                Ok((next, noted)) => {
                    if let Some(show) = &mut self.show {
                        show(noted);
                    }
                    next
                }
                // The thread ended without a word: it panicked.
                Err(_) => Err(io::Error::other("the reading thread failed")),
            };
            let used = std::mem::take(&mut self.block);
            let _ = self.spare.try_send(used);
            self.at = 0;
            match next {
                Ok(block) if block.is_empty() => self.done = true,
                Ok(block) => self.block = block,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that gives `data` a piece at a time, then perhaps an error.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        fail: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.data.len() {
                return match self.fail {
                    true => Err(io::Error::new(io::ErrorKind::InvalidData, "damaged")),
                    false => Ok(0),
                };
            }
            let n = buf.len().min(4099).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn gives_the_bytes_in_order_then_the_end() {
        let sizes = [0, 1, BLOCK - 1, BLOCK, 3 * BLOCK + 5];
        for (n, whole) in sizes.iter().flat_map(|&n| [(n, false), (n, true)]) {
            let inner = Trickle {
                data: data(n),
                at: 0,
                fail: false,
            };
            let mut got = Vec::new();
            ReadAhead::new(Box::new(inner), None, whole)
                .read_to_end(&mut got)
                .unwrap();
            assert!(got == data(n), "{n} bytes");
        }
    }

    #[test]
    fn gives_the_error_after_the_bytes_before_it() {
        let n = 2 * BLOCK + 3;
        let inner = Trickle {
            data: data(n),
            at: 0,
            fail: true,
        };
        let mut r = ReadAhead::new(Box::new(inner), None, true);
        let mut got = vec![0; n];
        r.read_exact(&mut got).unwrap();
        assert!(got == data(n));
        let e = r.read(&mut [0; 16]).unwrap_err();
        assert_eq!(e.to_string(), "damaged");
        assert_eq!(r.read(&mut [0; 16]).unwrap(), 0);
    }

    /// A reader that notes each read it makes.
    struct Noting {
        reads: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
        left: usize,
    }

    impl Read for Noting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.left).min(1000);
            self.left -= n;
            if n > 0 {
                self.reads.lock().unwrap().push(n);
            }
            Ok(n)
        }
    }

    #[test]
    fn notes_are_shown_when_the_bytes_they_came_with_are_reached() {
        for whole in [false, true] {
            let reads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let shown = std::sync::Arc::new(std::sync::Mutex::new(0));
            let (counted, seen) = (reads.clone(), shown.clone());
            let notes = Notes {
                count: Box::new(move || counted.lock().unwrap().len()),
                show: Box::new(move |upto| *seen.lock().unwrap() = upto),
            };
            let inner = Noting {
                reads: reads.clone(),
                left: 10_000,
            };
            let mut r = ReadAhead::new(Box::new(inner), Some(notes), whole);
            let mut got = 0;
            let mut buf = [0; 1000];
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got += n;
                // Each read of 1000 bytes came with one note: those shown are those
                // reached, however far the thread has gone, even when it gathers reads.
                assert_eq!(*shown.lock().unwrap(), got / 1000, "whole: {whole}");
            }
            assert_eq!(got, 10_000);
        }
    }

    #[test]
    fn a_caller_that_stops_reading_ends_the_thread() {
        let inner = Trickle {
            data: data(10 * BLOCK),
            at: 0,
            fail: false,
        };
        let mut r = ReadAhead::new(Box::new(inner), None, true);
        r.read_exact(&mut [0; 100]).unwrap();
        drop(r);
    }
}
