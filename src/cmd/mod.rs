//! One module per subcommand. Each holds its clap arguments, its usage text and a `run`
//! that wires a source through the engine into a sink.

pub mod cat;
pub mod completions;
pub mod diff;
pub mod filter;
pub mod pack;
pub mod profiles;
pub mod recover;
pub mod repair;
pub mod stats;
pub mod unpack;
pub mod verify;
