//! sess: make agent session logs small, safe and easy to read.
//!
//! Data flows one way: source → lines → events → command → sink.
//!
//! - [`io`]: inputs (files, stdin, zstd), the line splitter, and atomic outputs.
//! - [`json`]: a non-recursive scanner over raw JSON text.
//! - [`event`]: what commands ask of a raw line (its `type`), found without parsing it.
//! - [`dialect`]: which producer wrote a log.
//! - [`stats`]: where the bytes of a log go.
//! - [`rows`]: packed chunk rows, encoder and decoder side by side; [`snapshots`]:
//!   snapshot-delta rows; [`pack`] routes events to either.
//! - [`durability`]: classes, profiles, boundary projection and frame bounding;
//!   [`filter`] applies them to a stream.
//! - [`value`]: a JSON value as JavaScript holds one (UTF-16 strings, double numbers).

pub mod delta;
pub mod error;
pub mod event;
pub mod filter;
pub mod frames;
pub mod input;
pub mod io;
pub mod json;
pub mod pack;
pub mod profile;
pub mod repair;
pub mod rows;
pub mod snapshots;
pub mod stats;
pub mod value;
