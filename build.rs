//! Tells the tests what this machine has, so that a test needing something absent is shown
//! as ignored (with the reason) in the default `cargo test` output instead of passing
//! vacuously, and fails the build under `CI=true`, where everything must be there.
//!
//! - `../shared/conformance` (the shared corpus beside the project): without it the
//!   conformance tests are compiled with `cfg(sess_no_conformance)`.
//! - the zstd CLI: without it the tests comparing with stock zstd get `cfg(sess_no_zstd_cli)`.
//! - jq: without it the test that runs the README's examples (which pipe into jq) gets
//!   `cfg(sess_no_jq)`.
//! - DuckDB's Python package: without it the tests loading `stats --json` and
//!   `compact --compat` output into DuckDB get `cfg(sess_no_duckdb)`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sess_no_conformance)");
    println!("cargo::rustc-check-cfg=cfg(sess_no_zstd_cli)");
    println!("cargo::rustc-check-cfg=cfg(sess_no_jq)");
    println!("cargo::rustc-check-cfg=cfg(sess_no_duckdb)");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let corpus = Path::new(&root).join("../shared/conformance");
    // A path that does not exist makes cargo run this script again on every build, so the
    // warning below is printed every time the corpus is missing.
    println!("cargo::rerun-if-changed={}", corpus.display());
    if !corpus.is_dir() {
        if ci {
            panic!(
                "CI=true, but the conformance corpus {} is absent; CI must have ../shared beside \
                 the clone",
                corpus.display()
            );
        }
        println!("cargo::rustc-cfg=sess_no_conformance");
        println!(
            "cargo::warning=the conformance corpus {} is absent: its tests are ignored (cargo \
             test lists them as ignored); see README.md",
            corpus.display()
        );
    }
    let tools: [(&[&str], &str, &str, &str); 3] = [
        (
            &["zstd", "--version"],
            "sess_no_zstd_cli",
            "the tests comparing with stock zstd",
            "apt install zstd",
        ),
        (
            &["jq", "--version"],
            "sess_no_jq",
            "the test running the README's examples",
            "apt install jq",
        ),
        (
            &["python3", "-c", "import duckdb"],
            "sess_no_duckdb",
            "the tests loading sess output into DuckDB",
            "python3 -m pip install duckdb",
        ),
    ];
    for (command, cfg, tests, install) in tools {
        tool(command, cfg, tests, install, ci);
    }
}

/// Sets `cfg` when `command` (a tool asked for its version, a module imported) fails, so
/// that the tests needing it are ignored, with a warning; under CI, where `.ci/run`
/// installs it, its absence fails.
fn tool(command: &[&str], cfg: &str, tests: &str, install: &str, ci: bool) {
    let found = Command::new(command[0]).args(&command[1..]).output();
    if found.is_ok_and(|o| o.status.success()) {
        return;
    }
    let name = command.join(" ");
    if ci {
        panic!("CI=true, but '{name}' fails (.ci/run installs what it needs)");
    }
    println!("cargo::rustc-cfg={cfg}");
    println!("cargo::warning='{name}' fails: {tests} are ignored; {install} to run them");
}
