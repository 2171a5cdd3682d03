//! Lending a line to another thread instead of copying it.
//!
//! A line of 100 MB read on one thread and packed on another was copied into a batch for
//! the crossing: for a moment the reader's buffer, the copy and what the packer kept of the
//! line before all held it, three times the longest line where issue 12's bound is two. A
//! lent line crosses as a pointer into the reader's buffer, and the lender waits, its buffer
//! untouched, until the borrower has dropped the [`Lent`].
//!
//! Why this is sound: [`lend`] does not return (nor unwind) before every [`Lent`] it made
//! is dropped, because it waits for the one sender a `Lent` holds to go, and that wait
//! runs in a guard's `drop` too. A `Lent` forgotten (never dropped), or kept on the
//! lender's own thread, leaves the lender waiting for ever: a hang, never a read of freed
//! bytes. `send` returns a `bool`, not the `Lent` back (as a failed send's error would).

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Bytes lent by another thread, which waits until this is dropped.
pub struct Lent {
    ptr: *const u8,
    len: usize,
    /// Never used to send: its drop is what the lender waits for.
    _held: SyncSender<()>,
}

// The bytes are only read, through `&self`, while the lender waits (see the module).
unsafe impl Send for Lent {}

impl Lent {
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is the slice given to `lend`, whose borrow outlives this
        // `Lent` (lend waits for its drop), and nothing writes to it meanwhile: the lender
        // holds it shared.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lent({} bytes)", self.len)
    }
}

/// Lends `bytes` to `send`, which passes the [`Lent`] on (to a channel, say) and says
/// whether it did; returns that once the `Lent` has been dropped, used or unsent.
pub fn lend(bytes: &[u8], send: impl FnOnce(Lent) -> bool) -> bool {
    let (held, released) = sync_channel(0);
    let _wait = Wait(released);
    send(Lent {
        ptr: bytes.as_ptr(),
        len: bytes.len(),
        _held: held,
    })
}

/// Waits, when dropped, for the `Lent`'s sender to be gone: after `send` returns, and
/// also when it panics.
struct Wait(Receiver<()>);

impl Drop for Wait {
    fn drop(&mut self) {
        // Nothing is ever sent: this returns (with an error) when the sender is dropped.
        let _ = self.0.recv();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// Lends `line` through `lender` to a thread that holds it a while, checking that the
    /// lender has not come back meanwhile, and reads it.
    fn borrowed_while_held(line: &[u8], lender: impl FnOnce(&[u8], std::sync::mpsc::Sender<Lent>)) {
        let (tx, rx) = std::sync::mpsc::channel::<Lent>();
        let back = AtomicBool::new(false);
        std::thread::scope(|s| {
            let back = &back;
            let borrower = s.spawn(move || {
                let lent = rx.recv().unwrap();
                std::thread::sleep(Duration::from_millis(100));
                assert!(!back.load(Ordering::SeqCst), "the lender came back first");
                lent.bytes().to_vec()
            });
            lender(line, tx);
            back.store(true, Ordering::SeqCst);
            assert_eq!(borrower.join().unwrap(), line);
        });
    }

    #[test]
    fn the_lender_waits_until_the_borrower_drops_the_line() {
        borrowed_while_held(b"a long line", |line, tx| {
            assert!(lend(line, |l| tx.send(l).is_ok()));
        });
    }

    #[test]
    fn a_sender_that_panics_after_sending_still_waits() {
        borrowed_while_held(b"xyz", |line, tx| {
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lend(line, |l| {
                    assert!(tx.send(l).is_ok());
                    // Unwinds without the panic hook, whose backtrace took longer than
                    // the borrower holds the line.
                    std::panic::resume_unwind(Box::new("after sending"));
                })
            }));
            assert!(unwound.is_err());
        });
    }

    #[test]
    fn a_line_dropped_unsent_ends_the_wait_at_once() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Lent>(0);
        drop(rx);
        let line = vec![7u8; 10];
        assert!(!lend(&line, |l| tx.send(l).is_ok()));
    }
}
