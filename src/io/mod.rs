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
