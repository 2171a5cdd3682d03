//! What `-o` does with what it finds at its path, what a failed command leaves behind, and
//! what a signal leaves behind. Each test failed on the code before its fix.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::Duration;

use common::{sess, stdout_ok, testdata};
use predicates::prelude::*;

fn spawn(args: &[&str], dir: &Path) -> Child {
    StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on a child this test started and has not yet waited for.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".sess-"))
        .collect()
}

#[test]
fn a_repair_that_saves_nothing_leaves_the_input_and_creates_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let binary: Vec<u8> = (0..4000u32).map(|i| (i * 7919 % 251) as u8).collect();
    let cases: [(&str, &[u8]); 3] = [
        ("torn.jsonl", b"{\"type\":\"a\""),
        ("binary.bin", &binary),
        (
            "garbage.zst",
            b"\x28\xb5\x2f\xfd garbage that is no frame at all",
        ),
    ];
    for (name, bytes) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        sess()
            .args(["repair", "--in-place"])
            .arg(&f)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("no complete record survived"));
        assert_eq!(std::fs::read(&f).unwrap(), bytes, "{name} is untouched");
        let out = dir.path().join(format!("{name}.out"));
        sess()
            .arg("repair")
            .arg(&f)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(1);
        assert!(!out.exists(), "{name}: no output was created");
    }
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn output_to_a_device_or_a_fifo_is_written_through() {
    // /dev/null stays the device it is.
    sess()
        .arg("cat")
        .arg(testdata("pi-new.jsonl"))
        .args(["-o", "/dev/null"])
        .assert()
        .success();
    let null = std::fs::metadata("/dev/null").unwrap();
    if null.is_file() {
        // Put the device back before failing, so that the machine stays usable (as root,
        // the only user a broken sess could do this as).
        let _ = std::fs::remove_file("/dev/null");
        let path = c"/dev/null";
        // SAFETY: mknod with a valid path; makes the character device 1:3 that /dev/null is.
        unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        panic!("/dev/null was replaced by a regular file");
    }
    // A FIFO with a reader waiting: the reader gets the output.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    sess()
        .arg("cat")
        .arg(testdata("pi-new.jsonl"))
        .arg("-o")
        .arg(&fifo)
        .timeout(Duration::from_secs(30))
        .assert()
        .success();
    assert_eq!(
        reader.join().unwrap(),
        std::fs::read(testdata("pi-new.jsonl")).unwrap()
    );
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(!meta.is_file(), "the FIFO is still a FIFO");
    assert!(temp_files(dir.path()).is_empty());
    // /dev/stdout on a pipe (as here) links to no path, `pipe:[N]`: still the pipe.
    if std::path::Path::new("/dev/stdout").exists() {
        let out = stdout_ok(
            sess()
                .arg("cat")
                .arg(testdata("pi-new.jsonl"))
                .args(["-o", "/dev/stdout"]),
        );
        assert_eq!(out, std::fs::read(testdata("pi-new.jsonl")).unwrap());
    }
}

#[test]
fn output_through_a_symlink_replaces_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.jsonl");
    std::fs::write(&target, "old\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink("real.jsonl", &link).unwrap();
    sess()
        .arg("cat")
        .arg(testdata("dsh.jsonl"))
        .args(["-f", "-o"])
        .arg(&link)
        .assert()
        .success();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(testdata("dsh.jsonl")).unwrap()
    );
    // A dangling link: its target is created.
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink("made.jsonl", &dangling).unwrap();
    sess()
        .arg("cat")
        .arg(testdata("dsh.jsonl"))
        .arg("-o")
        .arg(&dangling)
        .assert()
        .success();
    assert!(dir.path().join("made.jsonl").is_file());
}

#[test]
fn output_onto_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("log.jsonl");
    std::fs::copy(testdata("pi-old.jsonl"), &f).unwrap();
    let before = std::fs::read(&f).unwrap();
    let link = dir.path().join("alias.jsonl");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    for (cmd, out) in [
        (&["cat"][..], &f),
        (&["filter"][..], &f),
        (&["pack"][..], &link),
        (&["unpack"][..], &f),
    ] {
        sess()
            .args(cmd)
            .arg(&f)
            .arg("-o")
            .arg(out)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("is also an input"));
        assert_eq!(std::fs::read(&f).unwrap(), before, "{cmd:?}");
    }
    sess()
        .arg("repair")
        .arg(&f)
        .arg("-o")
        .arg(&link)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is also an input"));
}

/// `cat F | sess pack -o F -f`: a stream is packed in place, so the output file is
/// truncated at the first frame, while `cat` is still reading it. Before, F was lost.
#[test]
fn a_stream_packed_onto_the_file_it_reads_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("log.jsonl");
    // Far more than the pipe and the reader hold before the first 16 KiB frame is written.
    let text = std::fs::read(testdata("pi-old.jsonl"))
        .unwrap()
        .repeat(2000);
    assert!(text.len() > 4 << 20);
    std::fs::write(&f, &text).unwrap();
    let out = common::sess_in_bash(
        &format!("cat '{}' | ", f.display()),
        &format!("pack --frame-size 16K -f -o '{}'", f.display()),
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is reading or writing it (is it this stream's input"),
        "{err}"
    );
    assert!(std::fs::read(&f).unwrap() == text);
    // A writer at the end (a producer appending) would write after the frames.
    let writer = holding_at_end("exec 3>>\"$1\"; echo '{}' >&3", &f, text.len() as u64 + 3);
    let out = pack_stream_onto(&f);
    drop(writer);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is reading or writing it"), "{err}");
    let text = [&text[..], b"{}\n"].concat();
    assert!(std::fs::read(&f).unwrap() == text);
    // A reader at the end (`tail -f`) loses nothing: the file is packed over.
    let reader = holding_at_end("exec 3<\"$1\"; cat <&3 >/dev/null", &f, text.len() as u64);
    let out = pack_stream_onto(&f);
    drop(reader);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    sess()
        .arg("unpack")
        .arg(&f)
        .assert()
        .success()
        .stdout(std::fs::read(testdata("pi-old.jsonl")).unwrap());
}

/// A child that runs `script` (`$1` is `f`) to open `f` as its descriptor 3, then holds
/// it; returned once the descriptor is at `pos`. Killed when dropped.
fn holding_at_end(script: &str, f: &Path, pos: u64) -> Killed {
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{script}; exec sleep 30"))
        .arg("sh")
        .arg(f)
        .spawn()
        .unwrap();
    // sh execs sleep: the pid stays.
    let fdinfo = format!("/proc/{}/fdinfo/3", child.id());
    let at = format!("pos:\t{pos}\n");
    for _ in 0..250 {
        if std::fs::read_to_string(&fdinfo).is_ok_and(|t| t.starts_with(&at)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Killed(child)
}

/// A child process killed and reaped when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `cat testdata/pi-old.jsonl | sess pack -f -o F`: a stream packed in place onto `f`.
fn pack_stream_onto(f: &Path) -> std::process::Output {
    common::sess_in_bash(
        &format!("cat '{}' | ", testdata("pi-old.jsonl").display()),
        &format!("pack -f -o '{}'", f.display()),
    )
    .output()
    .unwrap()
}

/// Whether `child` has a file in `dir` open: named, or made with `O_TMPFILE` (which
/// `/proc` shows as `dir/#inode (deleted)`).
fn writing_in(child: &Child, dir: &Path) -> bool {
    let dir = dir.canonicalize().unwrap();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", child.id())) else {
        return !temp_files(&dir).is_empty();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| target.parent() == Some(&dir))
}

/// Whether files without a name can be made in `dir` (Linux's O_TMPFILE).
fn o_tmpfile_works(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .is_ok()
}

#[test]
fn a_signal_leaves_no_temporary_file_and_exits_as_shells_expect() {
    use std::os::unix::process::ExitStatusExt;
    // SIGKILL cannot be caught: only a file that never had a name leaves nothing.
    for (sig, code) in [
        (libc::SIGINT, Some(130)),
        (libc::SIGTERM, Some(143)),
        (libc::SIGHUP, Some(129)),
        (libc::SIGKILL, None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn(&["cat", "-o", "out.jsonl"], dir.path());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{\"type\":\"a\"}\n").unwrap();
        stdin.flush().unwrap();
        // Wait until the temporary file is open: the command is mid-run.
        for _ in 0..200 {
            if writing_in(&child, dir.path()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            writing_in(&child, dir.path()),
            "a temporary file is being written"
        );
        if sig == libc::SIGKILL && !o_tmpfile_works(dir.path()) {
            eprintln!("SIGKILL not checked: this file system has no O_TMPFILE");
            signal(&child, sig);
            child.wait().unwrap();
            continue;
        }
        signal(&child, sig);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), code, "signal {sig}");
        if code.is_none() {
            assert_eq!(status.signal(), Some(sig));
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "signal {sig} left {left:?}");
        drop(stdin);
    }
}

#[test]
fn a_streaming_pack_stopped_by_a_signal_finishes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(&["pack", "--window", "60000", "-o", "live.zst"], dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let lines = b"{\"type\":\"a\",\"seq\":0}\n{\"type\":\"b\",\"seq\":1}\n";
    stdin.write_all(lines).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let file = dir.path().join("live.zst");
    // Everything read before the signal is there, with an index: the file verifies.
    sess().arg("verify").arg(&file).assert().success();
    sess()
        .arg("cat")
        .arg(&file)
        .assert()
        .success()
        .stdout(&lines[..]);
    drop(stdin);
}

#[test]
fn a_full_temporary_folder_is_named_as_such_not_as_the_output() {
    // Values that repeat a frame or more apart are kept in a temporary file while packing
    // (the last 8 MiB of them in memory, a longer one written at once); a size limit (here
    // 100 KiB, as a full disk would) stops it there.
    let line = format!("{{\"type\":\"x\",\"v\":\"{}\"}}\n", "ab".repeat(4600 << 10));
    let text = line.repeat(2);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("repeats.jsonl");
    std::fs::write(&log, text).unwrap();
    let out = common::sess_in_bash(
        "trap '' XFSZ; ulimit -f 100; ",
        &format!("pack --frame-size 64K '{}' -o /dev/null", log.display()),
    )
    .env("TMPDIR", dir.path())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot write the temporary file of repeated values (in {}",
            dir.path().display()
        )),
        "{err}"
    );
}

#[test]
fn a_write_error_on_the_output_names_the_output_not_its_temporary_file() {
    // A size limit of 10 KiB stops the write into the temporary file beside the output.
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.jsonl");
    let log = common::testdata("pi-old.jsonl");
    let big = dir.path().join("big.jsonl");
    std::fs::write(&big, std::fs::read(&log).unwrap().repeat(20)).unwrap();
    let out = common::sess_in_bash(
        "trap '' XFSZ; ulimit -f 10; ",
        &format!("cat '{}' -o '{}'", big.display(), out_path.display()),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}: cannot write", out_path.display())),
        "{err}"
    );
    assert!(!err.contains(".sess-"), "{err}");
    // Nothing is left behind: no output, no temporary file.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// A log that looks torn is usually one being written: `repair --in-place` leaves it alone
/// while a process holds it open for writing (renamed over, the writer's next records would
/// go to a file no name reaches), and repairs it once the writer is gone.
#[cfg(target_os = "linux")]
#[test]
fn repair_in_place_leaves_a_log_being_written_alone() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.jsonl");
    let text = b"{\"i\":1}\n{\"i\":2}\n{\"i\":";
    std::fs::write(&log, text).unwrap();
    let mut writer = StdCommand::new("sh")
        .arg("-c")
        .arg("exec 3>>\"$1\"; exec sleep 30")
        .arg("sh")
        .arg(&log)
        .spawn()
        .unwrap();
    // The child holds the log once its shell has run `exec 3>>`.
    let pid = writer.id();
    let real = std::fs::canonicalize(&log).unwrap();
    let opened = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        std::fs::read_link(format!("/proc/{pid}/fd/3")).is_ok_and(|to| to == real)
    });
    assert!(opened, "the writer never opened the log");
    sess()
        .args(["repair", "--in-place"])
        .arg(&log)
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "process {pid} has it open for writing"
        )));
    assert_eq!(std::fs::read(&log).unwrap(), text);
    writer.kill().unwrap();
    writer.wait().unwrap();
    sess()
        .args(["repair", "--in-place"])
        .arg(&log)
        .assert()
        .success();
    assert_eq!(std::fs::read(&log).unwrap(), b"{\"i\":1}\n{\"i\":2}\n");
}
