//! sess: make agent session logs small, safe and easy to read.
//!
//! Data flows one way: source → lines → events → command → sink. Each module sits on a
//! layer and uses only modules of lower layers (`tests/layers.rs` checks it from the code,
//! reading the table below):
//!
//! | layer | modules | what they are |
//! |---|---|---|
//! | 0 | error, json | typed errors with their place; a non-recursive scanner over raw JSON |
//! | 1 | value, io | a JSON value as JavaScript holds one; reads, the line splitter, outputs, signals |
//! | 2 | delta, rows, frames, intern, syntax | formats: op lists, packed chunk rows, the zstd container, interned lines; which lines are JSON |
//! | 3 | snapshots, input, profile | snapshot-delta rows; opening inputs; producers as data |
//! | 4 | event | logical events: lines with packed rows expanded |
//! | 5 | filter, pack, repair, verify | the engines: durability filtering, packing, salvage, checks |
//! | 6 | stats | where the bytes go, from all of the above |
//! | 7 | store | whole log stores: the logs under folders, their report, compacting them |
//!
//! The command line (`src/main.rs`, `src/cli.rs`, `src/cmd/`) is the binary's, not the
//! library's: it parses arguments and wires an input through an engine into an output.
//! `docs/ARCHITECTURE.md` is the map.

pub mod delta;
pub mod error;
pub mod event;
pub mod filter;
pub mod frames;
pub mod input;
pub mod intern;
pub mod io;
pub mod json;
pub mod pack;
pub mod profile;
pub mod repair;
pub mod rows;
pub mod snapshots;
pub mod stats;
pub mod store;
pub mod syntax;
pub mod value;
pub mod verify;
