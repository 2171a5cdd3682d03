//! Bytes in and bytes out, below any format: reads that signals cannot cut short, the line
//! splitter, outputs (stdout, atomic files, streams written in place) and what a signal
//! does to them.

pub mod ahead;
pub mod behind;
pub mod lines;
pub mod read;
pub mod signals;
pub mod sink;

pub use lines::{Ending, Line, LineReader};
pub use sink::Sink;

/// An error of a temporary file sess keeps while it works (the values interning refers
/// to, the frames filter holds), saying which: it is in `$TMPDIR`, not beside the output,
/// and that is where space (or a size limit) ran out. `what` names the file, `doing` the
/// operation that failed.
pub fn scratch_error(e: std::io::Error, doing: &str, what: &str) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!(
            "cannot {doing} the temporary file of {what} (in {}; TMPDIR sets where): {e}",
            std::env::temp_dir().display()
        ),
    )
}
