//! `sess verify`: check that a log is well-formed.

use std::io::Write;

use anyhow::{Result, bail};

use std::sync::Mutex;

use super::is_broken_pipe;
use crate::cli::{Global, Inputs};
use sess::frames::Recovery;
use sess::frames::reader::Health;
use sess::input::{Flow, Input, OpenOptions};
use sess::io::Sink;
use sess::verify::{self, Container, LineChecks};

const ABOUT: &str = "Check a log: valid JSON, valid packed rows, contiguous seq, no torn line";

const LONG_ABOUT: &str = "Check one or more logs. Every line must be one valid JSON value (RFC 8259, \
UTF-8; escapes of lone surrogates are accepted as JavaScript writes them); every packed row \
must pass the strict row checks; where events carry a top-level seq, it must rise by exactly \
1 from one event to the next (members of packed rows included); and the last line must end \
with a newline. Each problem is printed as FILE:LINE[:COLUMN] with the byte offset and what \
was expected, then a summary. Exits 1 if any problem was found.\n\n\
A compressed file is first checked against its frame index without decompressing it (each \
frame's place and crc32), then read through: each damaged stretch is a problem naming the \
lines of the original it cost (when the index says), and so is each later line that cannot \
be rebuilt because a value it refers to was stored in a lost frame.";

const EXAMPLES: &str = "Examples:
  sess verify run.jsonl
  sess verify logs/*.jsonl.zst && echo all good";

#[derive(Debug, clap::Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub inputs: Inputs,

    /// For compressed files, check only the frames against the index (crc32 of the
    /// compressed bytes), without decompressing.
    #[arg(long)]
    pub index_only: bool,

    /// Print one JSON object (schema sess-verify/1, docs/FORMAT.md) instead of a line per
    /// problem and the summary.
    #[arg(long)]
    pub json: bool,
}

/// One input's problems: printed as they are found, or kept for the JSON report.
struct Checker<'o> {
    out: &'o mut Sink,
    problems: u64,
    lines: LineChecks,
    /// `--json`: the problems, as the report lists them.
    kept: Option<Vec<serde_json::Value>>,
    name: String,
}

impl Checker<'_> {
    fn problem(&mut self, msg: &str) -> Result<()> {
        self.problems += 1;
        match &mut self.kept {
            Some(kept) => kept.push(problem_json(&self.name, msg)),
            None => writeln!(self.out, "{msg}")?,
        }
        Ok(())
    }

    /// The reader's warnings not reported yet, as problems.
    fn notices(&mut self, health: &Mutex<Health>) -> Result<()> {
        let found = std::mem::take(&mut Health::lock(health).notices);
        if !found.is_empty() {
            self.lines.lost();
        }
        for n in found {
            self.problem(&n)?;
        }
        Ok(())
    }

    /// Reads one input through, checking every line. A damaged frame is a problem, and so
    /// is each later line that needed a value defined in it; the rest is read on.
    fn read(&mut self, input: &Input, opts: OpenOptions, lines: &mut u64) -> Result<()> {
        // An input that cannot be opened, or is no log, is a problem of its own: the others
        // are checked all the same.
        let src = match sess::input::open(input, opts) {
            Ok(src) => src,
            Err(e) => return self.problem(&e.to_string()),
        };
        let name = src.name.clone();
        let health = src.health.clone();
        let read = super::each_line_of(src, &mut |name, line| {
            // Damage skipped and lines lost with it, reported where reading found them.
            self.notices(&health)?;
            *lines += 1;
            for p in self.lines.line(name, line) {
                self.problem(&p)?;
            }
            Ok(Flow::More)
        });
        if let Err(e) = read {
            if is_broken_pipe(&e) {
                return Err(e);
            }
            self.problem(&format!("{e:#}"))?;
        }
        self.notices(&health)?;
        let unchecked = Health::lock(&health).unchecked;
        if let Some(p) = verify::unchecked_frames(&name, unchecked) {
            self.problem(&p)?;
        }
        Ok(())
    }
}

pub fn run(args: Args, g: Global) -> Result<()> {
    let inputs = args.inputs.list();
    let mut out = Sink::stdout();
    let mut lines = 0u64;
    let mut problems = 0u64;
    // A checker tolerates nothing, and reads past damage to report all of it.
    let opts = OpenOptions {
        recovery: Recovery::SkipCorrupt,
        collect_warnings: true,
        // Every line is checked strictly below, and each bad one is a problem.
        check: sess::syntax::LineCheck::Off,
        ..crate::cli::default_open(g)
    };
    let mut files = Vec::new();
    for input in &inputs {
        let mut check = Checker {
            out: &mut out,
            problems: 0,
            lines: LineChecks::default(),
            kept: args.json.then(Vec::new),
            name: input.name(),
        };
        let mut warnings = Vec::new();
        let lines_before = lines;
        let container = match input {
            // A file whose container cannot be read cannot be read through either: that
            // says why, once.
            Input::Path(p) => verify::container(p).unwrap_or(Container::Unchecked),
            Input::Stdin => Container::Unchecked,
        };
        let checked = match container {
            Container::Checked(problems) => {
                for p in &problems {
                    check.problem(p)?;
                }
                true
            }
            Container::NoIndex(warning) => {
                sess::io::tell!("sess: warning: {warning}");
                let name = format!("{}: ", input.name());
                warnings.push(warning.strip_prefix(&name).unwrap_or(&warning).to_string());
                false
            }
            Container::Unchecked => false,
        };
        if args.index_only && !checked {
            check.problem(&format!(
                "{}: no frame index to check (--index-only checks the index of a file \
                 'sess pack' wrote: this is not one, or its index is gone)",
                input.name()
            ))?;
        }
        if !args.index_only {
            check.read(input, opts, &mut lines)?;
        }
        problems += check.problems;
        if let Some(kept) = check.kept {
            files.push(serde_json::json!({
                "file": input.name(),
                "lines": lines - lines_before,
                "index_checked": checked,
                "problems": kept,
                "warnings": warnings,
            }));
        }
    }
    if args.json {
        let report = serde_json::json!({
            "schema": "sess-verify/1",
            "ok": problems == 0,
            "inputs": inputs.len(),
            "lines": lines,
            "problems": problems,
            "files": files,
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(
            out,
            "{} {lines} lines in {} input(s), {problems} problem(s)",
            if problems == 0 { "ok:" } else { "FAILED:" },
            inputs.len()
        )?;
    }
    out.finish()?;
    if problems > 0 {
        bail!("verify found {problems} problem(s)");
    }
    Ok(())
}

/// A problem as the JSON report lists it: its line, column and byte offset when the text
/// names them (`FILE:LINE[:COLUMN]: what (byte offset N)`, as every place is printed), and
/// what is wrong.
fn problem_json(name: &str, text: &str) -> serde_json::Value {
    let mut p = serde_json::json!({ "line": null, "column": null, "offset": null });
    let mut message = text;
    if let Some(mut rest) = text.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
        for key in ["line", "column"] {
            let Some((n, after)) = leading_number(rest) else {
                break;
            };
            p[key] = n.into();
            rest = after.strip_prefix(':').unwrap_or(after);
        }
        message = rest.trim_start();
    }
    if let Some((before, after)) = message.rsplit_once(" (byte offset ")
        && let Some((n, ")")) = leading_number(after)
    {
        p["offset"] = n.into();
        message = before;
    } else if let Some((_, after)) = message.split_once(" at byte offset ")
        && let Some((n, _)) = leading_number(after)
    {
        // The offset told inside the message (a torn last line's): it stays there too.
        p["offset"] = n.into();
    }
    p["message"] = message.into();
    p
}

/// The number `s` begins with, and what follows it.
fn leading_number(s: &str) -> Option<(u64, &str)> {
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    Some((s[..digits].parse().ok()?, &s[digits..]))
}

#[cfg(test)]
mod tests {
    use super::problem_json;

    #[test]
    fn a_problem_is_split_into_its_place_and_what_is_wrong() {
        let p = problem_json(
            "a:b.jsonl",
            "a:b.jsonl:2:13: invalid JSON: expected a string key (byte offset 25)",
        );
        assert_eq!(
            p,
            serde_json::json!({"line": 2, "column": 13, "offset": 25,
                               "message": "invalid JSON: expected a string key"})
        );
        let p = problem_json("f", "f:7: seq 9 where 8 was expected (seq must rise by 1)");
        assert_eq!(p["line"], 7);
        assert_eq!(p["column"], serde_json::Value::Null);
        assert_eq!(
            p["message"],
            "seq 9 where 8 was expected (seq must rise by 1)"
        );
        let p = problem_json(
            "f",
            "f:2: torn last line (5 bytes at byte offset 8; repair)",
        );
        assert_eq!(
            (p["line"].clone(), p["offset"].clone()),
            (2.into(), 8.into())
        );
        assert_eq!(
            p["message"],
            "torn last line (5 bytes at byte offset 8; repair)"
        );
        let p = problem_json("f", "f: lost bytes 10..20 (bad frame)");
        assert_eq!(p["line"], serde_json::Value::Null);
        assert_eq!(p["message"], "lost bytes 10..20 (bad frame)");
    }
}
