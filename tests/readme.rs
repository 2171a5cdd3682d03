//! The README's examples, run. Every fenced `console` block is a session: each `$ ` line is
//! run by bash (stderr joined to stdout, as a terminal shows both), and what follows it up
//! to the next `$ ` line is what it must print, exactly; it must succeed unless what it
//! prints is an error. The blocks run in order in one scratch folder holding a link to
//! `testdata/`, so a later example may use a file an earlier one made (or a variable an
//! earlier `$ NAME=value` line set), and nothing is written into the project. `sh` blocks
//! are for the reader's own files and are not run.

use std::path::Path;
use std::process::Command;

/// One `$ ` line and the output the README shows under it.
struct Example {
    /// The README's line number of the command, for messages.
    line: usize,
    command: String,
    output: String,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_console = false;
    for (i, line) in readme.lines().enumerate() {
        if !in_console {
            in_console = line == "```console";
            continue;
        }
        if line.starts_with("```") {
            in_console = false;
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push(Example {
                line: i + 1,
                command: command.to_string(),
                output: String::new(),
            });
        } else {
            let last = out
                .last_mut()
                .expect("a console block starts with a $ line");
            last.output += line;
            last.output.push('\n');
        }
    }
    out
}

#[test]
#[cfg_attr(sess_no_jq, ignore = "jq is not installed")]
#[cfg_attr(sess_no_zstd_cli, ignore = "the zstd CLI is not installed")]
fn every_console_example_in_the_readme_prints_what_the_readme_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(
        examples.len() >= 30,
        "only {} examples found",
        examples.len()
    );
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("testdata"), dir.path().join("testdata")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_sess")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut wrong = Vec::new();
    let mut assignments = String::new();
    for ex in &examples {
        let out = Command::new("bash")
            .arg("-c")
            // The group keeps the example's own redirections (`> facts.jsonl`) its own.
            .arg(format!(
                "set -o pipefail; {assignments}{{ {}\n}} 2>&1",
                ex.command
            ))
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("LC_ALL", "C")
            .env_remove("SESS_PROFILES")
            .output()
            .unwrap();
        if is_assignment(&ex.command) {
            assignments += &format!("{}; ", ex.command);
        }
        let got = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() && !ex.output.contains("error:") {
            wrong.push(format!(
                "README.md:{}: $ {}\n--- failed ({}) though the README shows no error",
                ex.line, ex.command, out.status
            ));
        }
        if got != ex.output {
            wrong.push(format!(
                "README.md:{}: $ {}\n--- the README shows:\n{}--- it printed:\n{}",
                ex.line, ex.command, ex.output, got
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// `NAME=value`: a variable for the examples after it.
fn is_assignment(command: &str) -> bool {
    command.split_once('=').is_some_and(|(name, value)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !value.contains(char::is_whitespace)
    })
}

#[test]
fn the_example_parser_reads_commands_and_their_output() {
    assert!(is_assignment("F=testdata/x.jsonl"));
    assert!(!is_assignment("sess cat --lines=2 x"));
    let text = "x\n```console\n$ a\none\ntwo\n$ b\n```\n$ not run\n```sh\n$ c\n```\n";
    let ex = examples(text);
    assert_eq!(ex.len(), 2);
    assert_eq!((ex[0].line, ex[0].command.as_str()), (3, "a"));
    assert_eq!(ex[0].output, "one\ntwo\n");
    assert_eq!((ex[1].command.as_str(), ex[1].output.as_str()), ("b", ""));
}
