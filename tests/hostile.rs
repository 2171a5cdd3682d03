//! Input built to hurt: values nested past any stack, and lines shaped to make a quadratic
//! scan take minutes. Each ran for minutes or aborted before its fix.
//!
//! The timeouts below are not speed targets (those live in `bench/`): each input is sized so
//! that the linear code finishes in seconds even in a debug build, while the quadratic code
//! it replaced needs many minutes. A timeout is the only way such a test can fail.

mod common;

use std::time::Duration;

use common::sess;
use predicates::prelude::*;

const GUARD: Duration = Duration::from_secs(120);

#[test]
fn ops_that_nest_a_value_past_the_limit_are_refused_not_a_crash() {
    // A base nesting 900 arrays, then sets that would each add 900 levels more.
    let deep = "[".repeat(900) + &"]".repeat(900);
    let path = format!("[{}]", vec!["0"; 899].join(","));
    let mut list = format!("{{\"seq\":0,\"tag\":\"base\",\"ops\":[[\"r\",{deep}]]}}\n");
    for seq in 1..200 {
        list += &format!("{{\"seq\":{seq},\"ops\":[[\"s\",{path},{deep}]]}}\n");
    }
    sess()
        .args(["recover", "-"])
        .write_stdin(list)
        .timeout(GUARD)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("<stdin>:2:").and(predicate::str::contains(
                "levels deep, more than the 1000 sess allows",
            )),
        );
}

#[test]
fn diff_refuses_a_snapshot_too_deep_for_the_op_list_recover_reads() {
    // n arrays, each holding the next and the innermost holding 1: n levels to a reader.
    let nest = |n: usize| "[".repeat(n) + "1" + &"]".repeat(n);
    for rebase in [false, true] {
        let mut cmd = sess();
        cmd.arg("diff");
        if rebase {
            cmd.args(["--rebase-every", "1"]);
        }
        // 997 levels, the deepest an op list record carries: a record holds its values
        // 3 levels down, and recover reads records 1000 deep at most.
        let ok = format!("{}\n{}\n", nest(997), nest(996));
        let out = cmd.write_stdin(ok).timeout(GUARD).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let state = sess()
            .args(["recover", "-"])
            .write_stdin(out.stdout)
            .timeout(GUARD)
            .output()
            .unwrap();
        assert!(
            state.status.success(),
            "{}",
            String::from_utf8_lossy(&state.stderr)
        );
        assert_eq!(
            String::from_utf8(state.stdout).unwrap().trim_end(),
            nest(996)
        );
    }
    // One level more: diff wrote an op list recover refused, with exit 0. Now it names
    // the line, whether or not the snapshot would go out whole.
    sess()
        .arg("diff")
        .write_stdin(format!("[]\n{}\n", nest(998)))
        .timeout(GUARD)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "<stdin>:2:999: the snapshot nests deeper than 997 levels",
        ));
}

/// One line holding an object of `n` keys, with `extra` spliced in after the first key.
fn wide_object(n: usize, extra: &str, value: u32) -> String {
    let mut s = String::from("{\"k0\":0");
    s += extra;
    for k in 1..n {
        s += &format!(",\"k{k}\":{value}");
    }
    s + "}"
}

#[test]
fn diff_of_an_object_with_many_keys_is_linear() {
    let input = format!(
        "{}\n{}\n",
        wide_object(200_000, "", 1),
        wide_object(200_000, "", 2)
    );
    let out = sess()
        .arg("diff")
        .write_stdin(input)
        .timeout(GUARD)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn a_line_with_many_keys_that_mentions_a_row_tag_is_read_in_linear_time() {
    let line = wide_object(
        200_000,
        ",\"type\":\"text-chunks\",\"note\":\"x-chunks\"",
        1,
    ) + "\n";
    sess()
        .arg("cat")
        .write_stdin(line.clone())
        .timeout(GUARD)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "malformed text-chunks storage row",
        ));
    // Not a row (its type is not a row tag): passed through.
    let line = wide_object(200_000, ",\"type\":\"note\",\"x\":\"text-chunks\"", 1) + "\n";
    sess()
        .arg("cat")
        .write_stdin(line.clone())
        .timeout(GUARD)
        .assert()
        .success()
        .stdout(line);
}

#[test]
fn filter_with_many_open_tool_runs_is_linear() {
    let mut log = String::from("{\"type\":\"session\",\"version\":3}\n");
    let n = 160_000;
    for k in 0..n {
        log += &format!(
            "{{\"type\":\"tool_execution_update\",\"toolCallId\":\"c{k}\",\"partialResult\":{{\"content\":[]}}}}\n"
        );
    }
    let out = sess()
        .arg("filter")
        .write_stdin(log)
        .timeout(GUARD)
        .output()
        .unwrap();
    assert!(out.status.success());
    // Every run is an orphan (no tool_execution_end): each keeps its one frame.
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), n + 1);
}

#[test]
fn recover_reads_a_huge_last_line_backwards_in_linear_time() {
    // The last line is 256 MiB of blanks (skipped, as blank lines are): the backward reader
    // must assemble it before it can look at the line before, where the base is.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge.jsonl");
    let mut text = b"{\"seq\":0,\"tag\":\"base\",\"ops\":[[\"r\",\"a\"]]}\n".to_vec();
    text.resize(text.len() + (256 << 20), b' ');
    text.push(b'\n');
    std::fs::write(&f, text).unwrap();
    sess()
        .arg("recover")
        .arg(&f)
        .timeout(GUARD)
        .assert()
        .success()
        .stdout("\"a\"\n");
}

#[test]
fn pack_keeps_no_entry_per_element_of_a_huge_array() {
    // Ten million numbers in one 20 MB line. Finding where its elements lie kept an entry
    // for each (their ends for a prefix ref, the commas between them): 280 MB and an
    // abort under this limit, where the packer needs about 80 MB (the room of a few
    // copies of the line). The line's brackets and commas kept whole are 128 MB more,
    // and abort too (from 160000 down).
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("numbers.jsonl");
    let line = format!("{{\"type\":\"x\",\"v\":[{}0]}}\n", "0,".repeat(10_000_000));
    std::fs::write(&input, &line).unwrap();
    let packed = dir.path().join("numbers.zst");
    let args = format!("pack {} -o {}", input.display(), packed.display());
    let limited = common::sess_in_bash("ulimit -d 140000 && ", &args);
    common::stdout_ok(&mut assert_cmd::Command::from_std(limited));
    sess()
        .arg("unpack")
        .arg(&packed)
        .assert()
        .success()
        .stdout(predicate::eq(line.into_bytes()));
}

/// `sess ARGS` under `ulimit -v LIMIT` (KiB), its stdout thrown away: its exit code and
/// stderr.
fn under_limit(limit: &str, args: &str) -> (Option<i32>, String) {
    let args = format!("{args} > /dev/null");
    let out = common::sess_in_bash(&format!("ulimit -v {limit} && "), &args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), err)
}

/// A packed log of 1.5 MB: a 1 MiB value, and one line of `k` refs to it, which stands
/// for a line of `k` MiB.
fn interned_bomb(k: usize) -> String {
    let n = 1 << 20;
    let value = format!("\"{}\"", "x".repeat(n - 2));
    let crc = crc32fast::hash(value.as_bytes());
    let refs: Vec<String> = (0..k)
        .map(|i| format!("[{},0,{n},{crc}]", 1 + 2 * i))
        .collect();
    format!(
        "{{\"type\":\"sess-interned\",\"v\":1,\"defs\":[[5,{n},0]],\"refs\":[],\"line\":{{\"v\":{value}}}}}\n\
         {{\"type\":\"sess-interned\",\"v\":1,\"defs\":[],\"refs\":[{}],\"line\":[{}]}}\n",
        refs.join(","),
        vec!["0"; k].join(",")
    )
}

#[test]
fn an_interned_line_that_stands_for_more_than_memory_is_an_error_not_an_abort() {
    // 1.5 MB of input: a 1 MiB value, and one line of 1,500 refs to it, which stands for
    // a line of 1.5 GB. It was built by growing, so doubling, and the failed allocation
    // aborted (signal 6) with a backtrace.
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.jsonl");
    std::fs::write(&bomb, interned_bomb(1500)).unwrap();
    let n = 1 << 20;
    let value = format!("\"{}\"", "x".repeat(n - 2));
    let crc = crc32fast::hash(value.as_bytes());
    // Not even skip-corrupt passes over it: on a larger machine the line reads.
    for cmd in [
        "cat",
        "unpack",
        "filter",
        "stats",
        "cat --recovery skip-corrupt",
    ] {
        let (code, err) = under_limit("1000000", &format!("{cmd} -q {}", bomb.display()));
        assert_eq!(code, Some(1), "{cmd}: {err}");
        assert!(
            err.contains(
                "bomb.jsonl:2: cannot rebuild the interned line: not enough memory for the 1572867"
            ),
            "{cmd}: {err}"
        );
    }
    // A line longer than 4 GiB is no machine's: it is the line that is wrong.
    let refs: Vec<String> = (0..5000)
        .map(|i| format!("[{},0,{n},{crc}]", 1 + 2 * i))
        .collect();
    let huge = format!(
        "{{\"type\":\"sess-interned\",\"v\":1,\"defs\":[[5,{n},0]],\"refs\":[],\"line\":{{\"v\":{value}}}}}\n\
         {{\"type\":\"sess-interned\",\"v\":1,\"defs\":[],\"refs\":[{}],\"line\":[{}]}}\n",
        refs.join(","),
        vec!["0"; 5000].join(",")
    );
    std::fs::write(&bomb, huge).unwrap();
    let (_, err) = under_limit("1000000", &format!("cat -q {}", bomb.display()));
    assert!(
        err.contains("bomb.jsonl:2: a malformed interned line: the line would be longer than"),
        "{err}"
    );
    // A damaged ref's length asks for nothing: the ref is what is wrong.
    let damaged = "{\"type\":\"sess-interned\",\"v\":1,\"defs\":[],\"refs\":[[5,7,3000000000,1]],\"line\":{\"v\":0}}\n";
    std::fs::write(&bomb, damaged).unwrap();
    let (code, err) = under_limit("1000000", &format!("cat -q {}", bomb.display()));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("refers to value 7, which is not defined"),
        "{err}"
    );
}

/// Memory that holds the 1.5 GB line once, rebuilt, but not twice: the commands that copy
/// a line (into a batch for another thread, or gathered before it is interned) aborted on
/// that copy, with exit 134 and no word of which line. Pack lends a long line to its
/// packing thread instead ([`sess::io::lend`]), so it packs on two threads as on one.
#[test]
fn a_line_that_fits_once_but_not_twice_is_an_error_where_it_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.jsonl");
    std::fs::write(&bomb, interned_bomb(1500)).unwrap();
    let folder = dir.path().join("logs");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(&bomb, folder.join("bomb.jsonl")).unwrap();
    let named = "bomb.jsonl:2: cannot hold the line: not enough memory for its 1572865501 bytes";
    let run = |limit: &str, cmd: &str, input: &std::path::Path| {
        under_limit(limit, &format!("{cmd} -q {}", input.display()))
    };
    // Stats copies the line, on one thread as on more.
    for cmd in ["stats", "stats --threads 1", "stats --exact"] {
        let (code, err) = run("2000000", cmd, &bomb);
        assert_eq!(code, Some(1), "{cmd}: {err}");
        assert!(err.contains(named), "{cmd}: {err}");
    }
    // A folder's report names the log (in the report, on stdout), and leaves it out.
    let args = format!("stats -q {} 2>&1", folder.display());
    let out = common::sess_in_bash("ulimit -v 2000000 && ", &args)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains(&format!("logs/{named}")), "{report}");
    // Without its newline, the last line is gathered by the interning writer.
    let torn = dir.path().join("torn.jsonl");
    let text = interned_bomb(1500);
    std::fs::write(&torn, text.strip_suffix('\n').unwrap()).unwrap();
    // On two threads and from a pipe, the packing side runs out, where the line is lent:
    // it still names the line, and from a pipe the lines before it are written out.
    let held = ": cannot hold the line: not enough memory for its 1572865501";
    for threads in ["1", "2"] {
        let (code, err) = run("2000000", &format!("pack --threads {threads}"), &torn);
        assert_eq!(code, Some(1), "{threads}: {err}");
        assert!(
            err.contains(&format!("torn.jsonl:2{held}")),
            "{threads}: {err}"
        );
    }
    let before = dir.path().join("before.zst");
    let piped = format!("ulimit -v 2000000 && cat '{}' | ", torn.display());
    // A window that never closes: the line before is pending when packing fails.
    let args = format!("pack -q --window 3600000 -o '{}'", before.display());
    let out = common::sess_in_bash(&piped, &args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("<stdin>:2{held}")), "{err}");
    // The first line, rebuilt: the 1 MiB value it defines.
    let first = format!("{{\"v\":\"{}\"}}\n", "x".repeat((1 << 20) - 2));
    let unpacked = common::stdout_ok(sess().arg("unpack").arg(&before));
    assert!(
        unpacked == first.as_bytes(),
        "{} bytes back",
        unpacked.len()
    );
    // Packed, the line is held once, on one thread or lent to a second: it packs.
    for cmd in [
        "pack --threads 1",
        "pack --threads 2",
        "pack --plain --threads 2",
    ] {
        let (code, err) = run("2000000", cmd, &bomb);
        assert_eq!(code, Some(0), "{cmd}: {err}");
    }
}

/// A pi session whose third line, interned, stands for a `message_update` snapshot of
/// 1.5 GB (1,500 strings of 1 MiB): the snapshot packer copies a frame that starts a run.
fn interned_snapshot_bomb() -> String {
    let n = 1 << 20;
    let value = format!("\"{}\"", "x".repeat(n - 2));
    let crc = crc32fast::hash(value.as_bytes());
    let head = r#"{"type":"message_update","message":{"role":"assistant","content":["#;
    let refs: Vec<String> = (0..1500)
        .map(|i| format!("[{},0,{n},{crc}]", head.len() + 2 * i))
        .collect();
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/tmp\"}}\n\
         {{\"type\":\"sess-interned\",\"v\":1,\"defs\":[[5,{n},0]],\"refs\":[],\"line\":{{\"v\":{value}}}}}\n\
         {{\"type\":\"sess-interned\",\"v\":1,\"defs\":[],\"refs\":[{}],\"line\":{head}{}]}}}}}}\n",
        refs.join(","),
        vec!["0"; 1500].join(",")
    )
}

/// Memory for a snapshot frame once, not twice: the copy that starts its run aborted
/// (exit 134, no word of which line) on one thread; on two, the batch's copy failed first.
#[test]
fn a_snapshot_that_fits_once_but_not_twice_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.jsonl");
    std::fs::write(&bomb, interned_snapshot_bomb()).unwrap();
    let named = "bomb.jsonl:3: cannot hold the line: not enough memory for its 1572865568 bytes";
    for threads in ["1", "2"] {
        let args = format!("pack -q --threads {threads} {}", bomb.display());
        let (code, err) = under_limit("2000000", &args);
        assert_eq!(code, Some(1), "{threads}: {err}");
        assert!(err.contains(named), "{threads}: {err}");
    }
}

/// A run of snapshots of 24 MB each (pi's old `message_update`, the message twice in each)
/// packs and unpacks within the issue's bound: 64 MiB and twice the longest line. Holding
/// the run's value as a tree (its strings in UTF-16), its first event apart and the row
/// gathered whole took 150 MB of memory here packing and 112 MB unpacking on one thread,
/// and both aborted under this limit (and under 130 MB), as two threads unpacking did.
#[test]
fn a_run_of_huge_snapshots_packs_and_unpacks_in_twice_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("huge.jsonl");
    let mut text = "w".repeat(12_000_000);
    let mut log = String::new();
    for _ in 0..3 {
        text.push_str("more");
        let msg =
            format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}"#);
        log.push_str(&format!(
            r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"more","partial":{msg}}},"message":{msg}}}"#
        ));
        log.push('\n');
    }
    std::fs::write(&input, &log).unwrap();
    let longest = log.lines().map(str::len).max().unwrap();
    let bound_kib = (64 << 20) / 1024 + 2 * longest / 1024;
    let limit = format!("ulimit -d {bound_kib} && ");
    let packed = dir.path().join("huge.zst");
    // On one thread: a second's stack and heap count against `ulimit -d` though little of
    // them is in use. tests/memory.rs measures the peak of both, as resident memory.
    let args = format!(
        "pack --threads 1 -q {} -o {}",
        input.display(),
        packed.display()
    );
    common::stdout_ok(&mut assert_cmd::Command::from_std(common::sess_in_bash(
        &limit, &args,
    )));
    // Two threads expand a long row on the reading one, as one thread does.
    for threads in [1, 2] {
        let args = format!("unpack --threads {threads} {}", packed.display());
        let out = common::sess_in_bash(&limit, &args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{threads} threads: {err}");
        assert!(out.stdout == log.as_bytes(), "not the same bytes back");
    }
    // As one row of the first event and two small batches, not three copies.
    let rows = zstd::decode_all(std::fs::File::open(&packed).unwrap()).unwrap();
    assert!(rows.starts_with(br#"{"type":"snapshot-deltas","first":"#));
    assert!(rows.len() < longest + 1000, "{} bytes packed", rows.len());
}
