//! The compressed container: independent zstd frames holding whole lines, each with the
//! content checksum, and an index of them (crc32 per frame) in a zstd skippable frame.
//! `docs/FORMAT.md` describes it for readers outside sess.

pub mod audit;
pub mod decode;
pub mod index;
pub mod reader;
pub mod seek;
pub mod walk;
pub mod writer;

pub use index::{Entry, Index};
pub use reader::{FrameReader, Recovery};
pub use writer::{FrameWriter, Layout};
