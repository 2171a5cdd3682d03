//! Reads that a signal cannot cut short: every reader in sess goes through these.

use std::io::{self, Read};

/// `Read::read`, tried again when a signal interrupts it.
pub fn read_some<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
pub fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(r, &mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// A reader that calls `first` before each read of `inner`, a read that may wait for the
/// writer at the other end of a pipe: `sess pack` hands over what it has gathered then,
/// so that a quiet producer's lines are not held back.
pub struct FirstThen<R> {
    inner: R,
    first: Box<dyn FnMut() + Send>,
}

impl<R: Read> FirstThen<R> {
    pub fn new(inner: R, first: Box<dyn FnMut() + Send>) -> FirstThen<R> {
        FirstThen { inner, first }
    }
}

impl<R: Read> Read for FirstThen<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (self.first)();
        self.inner.read(buf)
    }
}
