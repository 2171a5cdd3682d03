//! What `sess pack` writes, event by event: runs of DSH chunk deltas become chunk rows
//! ([`crate::rows`]), runs of snapshot frames become snapshot-delta rows
//! ([`crate::snapshots`]), everything else is copied verbatim. A row only ever holds
//! consecutive events, so each packer flushes before the other takes an event.

use std::io::{self, Write};

use crate::rows;
use crate::snapshots;

#[derive(Default)]
pub struct Packer {
    chunks: rows::Packer,
    snapshots: snapshots::Encoder,
}

impl Packer {
    /// One logical event (a line without its newline); `terminated` is false only for a
    /// last line without newline, which is written back so and never packed.
    pub fn event<W: Write + ?Sized>(
        &mut self,
        line: &[u8],
        terminated: bool,
        out: &mut W,
    ) -> io::Result<()> {
        match self.snapshots.candidate(line).filter(|_| terminated) {
            Some(c) => {
                self.chunks.finish(out)?;
                self.snapshots.take(line, c, out)
            }
            None => {
                self.snapshots.finish(out)?;
                self.chunks.event(line, terminated, out)
            }
        }
    }

    /// Writes whatever run is open. Call at the end of the input (or of a window).
    pub fn finish<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        self.snapshots.finish(out)?;
        self.chunks.finish(out)
    }

    /// Rows written and the events they hold.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.chunks.rows + self.snapshots.rows,
            self.chunks.packed_events + self.snapshots.packed_events,
        )
    }
}
