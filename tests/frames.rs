//! The zstd frame container under fault injection: cuts at every byte of the tail, every
//! single bit flipped, zero-filled and garbage tails, and the recovery modes.

mod common;

use std::io::{Read, Write};

use common::{sess, stdout_ok, testdata};
use predicates::prelude::*;
use sess::frames::writer::{self, FrameWriter, Layout};
use sess::frames::{FrameReader, Index, Recovery};

fn log(lines: usize) -> Vec<u8> {
    (0..lines)
        .flat_map(|i| {
            format!(
                "{{\"type\":\"e\",\"seq\":{i},\"text\":\"{}\"}}\n",
                "abc ".repeat(i % 37)
            )
            .into_bytes()
        })
        .collect()
}

fn framed(data: &[u8], frame_size: usize) -> (Vec<u8>, Index) {
    let opts = writer::FrameOptions {
        level: 3,
        frame_size,
        layout: Layout::Sess,
        first_seq: sess::event::line_seq,
        compress_thread: false,
        frames_at_once: false,
    };
    let mut w = FrameWriter::new(Vec::new(), opts).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

/// Reads with a recovery mode: the output, or the error, and the warnings.
fn read(file: &[u8], mode: Recovery) -> (Result<Vec<u8>, String>, Vec<String>) {
    let mut r = FrameReader::new(file, "test", mode);
    let mut out = Vec::new();
    let res = r
        .read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| e.to_string());
    (res, r.notices().to_vec())
}

#[test]
fn a_clean_file_reads_back_exactly_in_every_mode() {
    let data = log(2000);
    let (file, index) = framed(&data, 8 * 1024);
    assert!(index.entries.len() > 5);
    for mode in [
        Recovery::TolerateTail,
        Recovery::Absolute,
        Recovery::PointInTime,
        Recovery::SkipCorrupt,
    ] {
        let (out, notices) = read(&file, mode);
        assert_eq!(out.unwrap(), data);
        assert!(notices.is_empty());
    }
}

#[test]
fn every_cut_in_the_last_two_frames_keeps_exactly_the_complete_lines() {
    let data = log(600);
    let (file, index) = framed(&data, 4 * 1024);
    let n = index.entries.len();
    let last_two_start = index.entries[n - 2].offset as usize;
    // Where each frame's content ends in the plain data.
    let mut content_end = Vec::new();
    let mut acc = 0usize;
    for e in &index.entries {
        acc += e.uncompressed as usize;
        content_end.push((e.offset + u64::from(e.compressed), acc));
    }
    for cut in last_two_start..file.len() {
        let (out, notices) = read(&file[..cut], Recovery::TolerateTail);
        let out = out.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert!(
            data.starts_with(&out),
            "cut {cut}: not a prefix: never a wrong line"
        );
        assert!(
            out.is_empty() || out.ends_with(b"\n"),
            "cut {cut}: complete lines only"
        );
        let complete = content_end
            .iter()
            .filter(|(end, _)| *end as usize <= cut)
            .map(|(_, c)| *c)
            .max()
            .unwrap_or(0);
        assert!(
            out.len() >= complete,
            "cut {cut}: every complete frame is kept"
        );
        // A cut exactly between frames looks like a file without an index: nothing torn.
        let at_boundary = content_end.iter().any(|(end, _)| *end as usize == cut);
        if out.len() < data.len() && !at_boundary {
            assert!(!notices.is_empty(), "cut {cut}: a torn tail is reported");
        }
        let (strict, _) = read(&file[..cut], Recovery::Absolute);
        if out.len() < data.len() && !at_boundary {
            assert!(strict.is_err(), "cut {cut}: absolute refuses a torn tail");
        }
    }
}

#[test]
fn every_single_bit_flip_is_detected_or_harmless() {
    let data = log(60);
    let (file, index) = framed(&data, 1024);
    assert!(index.entries.len() >= 3);
    let mut detected = 0;
    for byte in 0..file.len() {
        for bit in 0..8 {
            let mut f = file.clone();
            f[byte] ^= 1 << bit;
            let (out, notices) = read(&f, Recovery::TolerateTail);
            match &out {
                Err(_) => detected += 1,
                Ok(_) if !notices.is_empty() => detected += 1,
                Ok(out) => assert!(
                    *out == data,
                    "flip {byte}:{bit} yields a wrong line silently"
                ),
            }
            // Whatever is kept is made of whole, true lines, in both modes (what a flip that
            // passes for a tear leaves included).
            for out in [out.ok(), read(&f, Recovery::SkipCorrupt).0.ok()] {
                let text = String::from_utf8_lossy(out.as_deref().unwrap_or_default());
                let all = String::from_utf8_lossy(&data);
                assert!(
                    text.lines().all(|l| all.lines().any(|d| d == l)),
                    "flip {byte}:{bit}: {text}"
                );
            }
        }
    }
    assert!(detected > file.len() * 4, "{detected} flips detected");
}

/// A deterministic xorshift, so the test needs no randomness crate.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn ten_thousand_random_flips_in_a_large_file() {
    let data = log(8_000);
    let (file, _) = framed(&data, 64 * 1024);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..10_000 {
        let at = (rng(&mut seed) % (file.len() as u64 * 8)) as usize;
        let mut f = file.clone();
        f[at / 8] ^= 1 << (at % 8);
        let (out, notices) = read(&f, Recovery::TolerateTail);
        if let Ok(out) = out
            && notices.is_empty()
        {
            assert!(out == data, "flip at bit {at} yields a wrong line silently");
        }
    }
}

#[test]
fn zero_filled_and_garbage_tails_are_ignored_with_a_warning() {
    let data = log(300);
    let (file, _) = framed(&data, 4096);
    for tail in [
        vec![0u8; 4096],
        b"garbage after the end\n".to_vec(),
        vec![0xFF; 3],
    ] {
        let mut f = file.clone();
        f.extend(&tail);
        let (out, notices) = read(&f, Recovery::TolerateTail);
        assert_eq!(out.unwrap(), data);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(read(&f, Recovery::Absolute).0.is_err());
    }
}

#[test]
fn a_last_line_without_a_newline_survives_a_damaged_or_torn_tail() {
    let mut data = log(300);
    data.pop();
    let (file, _) = framed(&data, 4096);
    let modes = [
        Recovery::TolerateTail,
        Recovery::PointInTime,
        Recovery::SkipCorrupt,
    ];
    for tail in [vec![0u8; 100], b"garbage".to_vec()] {
        let f = [&file[..], &tail].concat();
        for mode in modes {
            assert_eq!(read(&f, mode).0.unwrap(), data, "{mode:?}");
        }
    }
    // A cut inside the index: the last data frame is whole.
    let cut = &file[..file.len() - 10];
    for mode in modes {
        assert_eq!(read(cut, mode).0.unwrap(), data, "{mode:?}");
    }
}

/// The byte ranges of the zstd frames of `file`.
fn frames_in(file: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut at = 0;
    let mut frames = Vec::new();
    while at < file.len() {
        let len = zstd::zstd_safe::find_frame_compressed_size(&file[at..]).unwrap();
        frames.push(at..at + len);
        at += len;
    }
    frames
}

#[test]
fn lines_that_run_across_frames_go_out_whole_and_damage_never_joins_their_ends() {
    let data = log(400);
    let file = common::zstd_frames(&data, 1000);
    for mode in [
        Recovery::TolerateTail,
        Recovery::Absolute,
        Recovery::SkipCorrupt,
    ] {
        assert_eq!(read(&file, mode).0.unwrap(), data, "{mode:?}");
    }
    let lines: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
    let frames = frames_in(&file);
    for k in 0..frames.len() - 1 {
        let mut f = file.clone();
        f[frames[k].start + frames[k].len() / 2] ^= 0x10;
        // The frames before the damaged one, the start of the line it cuts last, without a
        // newline (the line reader drops it: it is not JSON).
        let (out, notices) = read(&f, Recovery::PointInTime);
        let before = &data[..k * 1000];
        assert_eq!(out.unwrap(), before, "frame {k}: {notices:?}");
        // So too for a cut just inside the frame.
        let cut = &file[..frames[k].start + 6];
        assert_eq!(read(cut, Recovery::TolerateTail).0.unwrap(), before);
        if k % 9 == 4 {
            let whole = before
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |n| n + 1);
            let dir = tempfile::tempdir().unwrap();
            for (name, bytes, mode) in [
                ("f", &f[..], "point-in-time"),
                ("cut", cut, "tolerate-tail"),
            ] {
                let path = dir.path().join(name);
                std::fs::write(&path, bytes).unwrap();
                let out = sess()
                    .args(["cat", "--recovery", mode])
                    .arg(&path)
                    .output()
                    .unwrap();
                assert!(out.stdout == before[..whole], "frame {k}, {name}");
            }
        }
        // Every line kept is a line of the log (the end of a cut line is dropped), and the
        // lines of the frames after the damaged one are kept.
        let (out, notices) = read(&f, Recovery::SkipCorrupt);
        let out = out.unwrap();
        let kept: Vec<&[u8]> = out.split_inclusive(|&c| c == b'\n').collect();
        let mut want = lines.iter().peekable();
        for line in &kept {
            assert!(
                want.any(|w| w == line),
                "frame {k}: {}",
                String::from_utf8_lossy(line)
            );
        }
        let after = &data[(k + 1) * 1000..];
        let first = after.iter().position(|&c| c == b'\n').unwrap() + 1;
        assert!(out.ends_with(&after[first..]), "frame {k}: {notices:?}");
        assert!(out.len() < data.len() - 1000);
    }
}

#[test]
fn a_line_that_is_not_json_after_a_skip_in_an_indexed_file_is_kept() {
    // Frames an index lists hold whole lines: what follows a skip between two of them is a
    // whole line, whatever it holds.
    let mut data = log(400);
    let (_, index) = framed(&data, 4096);
    let at: usize = index.entries[..3]
        .iter()
        .map(|e| e.uncompressed as usize)
        .sum();
    let end = at + data[at..].iter().position(|&c| c == b'\n').unwrap();
    data[at..end].fill(b'x');
    let (mut file, index) = framed(&data, 4096);
    let victim = index.entries[2];
    file[(victim.offset + u64::from(victim.compressed) / 2) as usize] ^= 0x10;
    let mut r =
        FrameReader::new(&file[..], "test", Recovery::SkipCorrupt).with_index(&index.entries);
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    let lost = at - victim.uncompressed as usize..at;
    assert!(out == [&data[..lost.start], &data[lost.end..]].concat());
}

/// Cases of frames that cut lines (each frame written with its content checksum, as
/// `zstd --check` does), then damaged: `repair` keeps exactly what `cat --recovery
/// skip-corrupt` keeps, and that is `want`.
#[test]
fn repair_and_readers_agree_where_frames_cut_lines_around_damage() {
    type Case = (&'static [&'static str], Damage, &'static str);
    #[derive(Clone, Copy)]
    enum Damage {
        None,
        /// The second frame's magic.
        Magic,
        /// The second frame's last byte (its checksum).
        Check,
        /// The file cut this many bytes into the second frame.
        Cut(usize),
    }
    let cases: [Case; 7] = [
        // Garbage where the frame after a cut line should be, with a good frame after it.
        (
            &["{\"a\":1}\n{\"b\":2}", "\n", "{\"c\":3}\n"],
            Damage::Magic,
            "{\"a\":1}\n{\"c\":3}\n",
        ),
        (
            &["{\"a\":1}\n{\"b\":\"xx", "yy\"}\n", "{\"c\":3}\n"],
            Damage::Magic,
            "{\"a\":1}\n{\"c\":3}\n",
        ),
        // An empty frame after a last line without a newline (cat a.zst empty.zst).
        (
            &["{\"a\":1}\n{\"b\":2}", ""],
            Damage::None,
            "{\"a\":1}\n{\"b\":2}\n",
        ),
        // A damaged or torn frame after a whole last line without a newline.
        (
            &["{\"a\":1}\n{\"b\":2}", "\n{\"c\":3}\n"],
            Damage::Check,
            "{\"a\":1}\n{\"b\":2}\n",
        ),
        (
            &["{\"a\":1}\n{\"b\":2}", "\n{\"c\":3}\n"],
            Damage::Cut(2),
            "{\"a\":1}\n{\"b\":2}\n",
        ),
        (
            &["{\"a\":1}\n{\"b\":2}", "\n{\"c\":3}\n"],
            Damage::Cut(6),
            "{\"a\":1}\n{\"b\":2}\n",
        ),
        // The end of a cut line that runs to the end of the file.
        (
            &["{\"a\":1}\n{\"b\":\"xx", "yy", "zz\"}"],
            Damage::Check,
            "{\"a\":1}\n",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (bad, fixed) = (dir.path().join("bad.zst"), dir.path().join("fixed.zst"));
    for (k, (frames, damage, want)) in cases.iter().enumerate() {
        let mut z = zstd::bulk::Compressor::new(3).unwrap();
        z.include_checksum(true).unwrap();
        let parts: Vec<Vec<u8>> = frames
            .iter()
            .map(|f| z.compress(f.as_bytes()).unwrap())
            .collect();
        let second = parts[0].len();
        let mut file = parts.concat();
        match damage {
            Damage::None => {}
            Damage::Magic => file[second] ^= 0x40,
            Damage::Check => file[second + parts[1].len() - 1] ^= 1,
            Damage::Cut(n) => file.truncate(second + n),
        }
        std::fs::write(&bad, &file).unwrap();
        let skipped = stdout_ok(sess().args(["cat", "--recovery", "skip-corrupt"]).arg(&bad));
        assert_eq!(String::from_utf8_lossy(&skipped), *want, "case {k}");
        sess()
            .args(["repair", "-f", "-o"])
            .arg(&fixed)
            .arg(&bad)
            .assert()
            .success();
        let got = stdout_ok(sess().arg("cat").arg(&fixed));
        assert_eq!(String::from_utf8_lossy(&got), *want, "case {k}");
    }
}

/// Frames of 40 lines each, as `zstd` writes them from a pipe: a checksum, no content size.
fn piped_frames(data: &[u8]) -> (Vec<u8>, Vec<&[u8]>) {
    let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
    let groups: Vec<Vec<u8>> = lines.chunks(40).map(|g| g.concat()).collect();
    let mut file = Vec::new();
    let mut parts = Vec::new();
    let mut at = 0;
    for g in &groups {
        let mut e = zstd::stream::Encoder::new(&mut file, 3).unwrap();
        e.include_checksum(true).unwrap();
        e.write_all(g).unwrap();
        e.finish().unwrap();
        parts.push(&data[at..at + g.len()]);
        at += g.len();
    }
    (file, parts)
}

#[test]
fn a_damaged_block_header_that_runs_on_into_later_frames_is_damage_not_a_tear() {
    let data = log(400);
    let (file, parts) = piped_frames(&data);
    let frames = frames_in(&file);
    assert_eq!(frames.len(), parts.len());
    for (k, f) in frames.iter().enumerate() {
        // Frame header: magic, descriptor, window byte; the descriptor states no content
        // size and no dictionary (what lets a raw block run on unchecked).
        assert_eq!(file[f.start + 4] & 0xe3, 0x00, "frame {k}'s descriptor");
        let block = f.start + 6;
        // Its first block made raw and longer than the rest of the file.
        let size = u32::try_from(file.len() - block).unwrap();
        assert!(size < 128 << 10);
        let mut bad = file.clone();
        bad[block..block + 3].copy_from_slice(&(size << 3).to_le_bytes()[..3]);
        let last = k + 1 == frames.len();
        let (out, notices) = read(&bad, Recovery::SkipCorrupt);
        let want: Vec<u8> = parts[..k].concat();
        let after: Vec<u8> = parts[k + 1..].concat();
        if last {
            // At the end nothing follows to tell it from a tear: its prefix's whole lines
            // (here, the frame's compressed bytes read as raw content) are the documented
            // salvage, flagged as unverified.
            let out = out.unwrap();
            assert!(out.starts_with(&want), "frame {k}");
            assert!(notices[0].contains("is torn"), "frame {k}: {notices:?}");
            continue;
        }
        assert_eq!(out.unwrap(), [&want[..], &after[..]].concat(), "frame {k}");
        assert!(
            notices[0].contains(&format!("skipped damaged bytes {}..{}", f.start, f.end)),
            "frame {k}: {notices:?}"
        );
        let (out, _) = read(&bad, Recovery::TolerateTail);
        assert!(
            out.unwrap_err().contains("a good frame follows"),
            "frame {k}"
        );
        assert_eq!(
            read(&bad, Recovery::PointInTime).0.unwrap(),
            want,
            "frame {k}"
        );
    }
}

#[test]
fn a_torn_frame_too_large_to_hold_names_every_line_it_kept() {
    // One frame of over 64 MiB (stock zstd of a large log), cut at nine tenths: its lines
    // go out as they decode, before the tear is found.
    let line = format!("{{\"type\":\"e\",\"text\":\"{}\"}}\n", "a".repeat(1000));
    let data = line.repeat(80 << 10);
    let mut z = zstd::bulk::Compressor::new(1).unwrap();
    z.include_checksum(true).unwrap();
    let file = z.compress(data.as_bytes()).unwrap();
    let cut = &file[..file.len() * 9 / 10];
    let (out, notices) = read(cut, Recovery::TolerateTail);
    let kept = out.unwrap().iter().filter(|&&b| b == b'\n').count();
    assert!(kept > (64 << 20) / line.len(), "{kept}");
    let said = format!("kept {kept} complete line(s)");
    assert!(notices[0].contains(&said), "{said}: {notices:?}");
}

#[test]
fn damage_before_the_tail_is_an_error_and_skip_corrupt_skips_it() {
    let data = log(400);
    let (file, index) = framed(&data, 4096);
    let victim = index.entries[2];
    let mut f = file.clone();
    f[(victim.offset + u64::from(victim.compressed) / 2) as usize] ^= 0x10;
    let (out, _) = read(&f, Recovery::TolerateTail);
    let err = out.unwrap_err();
    assert!(err.contains(&format!("byte {}", victim.offset)), "{err}");
    assert!(err.contains("a good frame follows"), "{err}");
    // point-in-time keeps the first two frames and stops.
    let (out, notices) = read(&f, Recovery::PointInTime);
    let before: usize = index.entries[..2]
        .iter()
        .map(|e| e.uncompressed as usize)
        .sum();
    assert_eq!(out.unwrap(), data[..before]);
    assert_eq!(notices.len(), 1);
    // skip-corrupt loses exactly the damaged frame.
    let (out, notices) = read(&f, Recovery::SkipCorrupt);
    let lost = before..before + victim.uncompressed as usize;
    let mut want = data[..lost.start].to_vec();
    want.extend_from_slice(&data[lost.end..]);
    assert_eq!(out.unwrap(), want);
    assert!(
        notices[0].contains(&format!("skipped damaged bytes {}..", victim.offset)),
        "{notices:?}"
    );
}

#[test]
#[cfg_attr(sess_no_zstd_cli, ignore = "the zstd CLI is not installed")]
fn stock_zstd_reads_sess_output() {
    let dir = tempfile::tempdir().unwrap();
    let zstd_dc = |path: &std::path::Path| {
        let z = std::process::Command::new("zstd")
            .arg("-dc")
            .arg(path)
            .output()
            .unwrap();
        assert!(z.status.success(), "{}", path.display());
        z.stdout
    };
    for f in common::FIXTURES {
        // Several frames hold exactly the packed JSONL.
        let out = dir.path().join(format!("{f}.zst"));
        sess()
            .args(["pack", "--frame-size", "300", "-o"])
            .arg(&out)
            .arg(testdata(f))
            .assert()
            .success();
        let plain = sess()
            .args([
                "pack",
                "--frame-size",
                "300",
                "--plain",
                "--intern-min",
                "256",
            ])
            .arg(testdata(f))
            .output()
            .unwrap()
            .stdout;
        assert!(
            zstd_dc(&out) == plain,
            "{f}: zstd -dc gives the packed JSONL"
        );
        // One frame holds the packed JSONL or, when that is smaller, the input as it was.
        sess()
            .args(["pack", "-f", "-o"])
            .arg(&out)
            .arg(testdata(f))
            .assert()
            .success();
        let plain = sess()
            .args(["pack", "--plain", "--intern-min", "256"])
            .arg(testdata(f))
            .output()
            .unwrap()
            .stdout;
        let one = zstd_dc(&out);
        assert!(
            one == plain || one == std::fs::read(testdata(f)).unwrap(),
            "{f}: zstd -dc of one frame"
        );
        // Stock zstd's own output reads back the same.
        let theirs = dir.path().join(format!("{f}.theirs.zst"));
        let st = std::process::Command::new("zstd")
            .args(["-q", "-f", "-o"])
            .arg(&theirs)
            .arg(testdata(f))
            .status()
            .unwrap();
        assert!(st.success());
        sess()
            .arg("cat")
            .arg(&theirs)
            .assert()
            .success()
            .stdout(std::fs::read(testdata(f)).unwrap());
    }
    // An empty log, from a file or a pipe, is one empty frame: stock zstd refused the empty
    // file sess wrote for it ("unexpected end of file").
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = dir.path().join("empty.zst");
    sess()
        .arg("pack")
        .arg(&empty)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(zstd_dc(&out), b"");
    let piped = sess().arg("pack").write_stdin("").output().unwrap();
    assert!(piped.status.success());
    std::fs::write(&out, &piped.stdout).unwrap();
    assert_eq!(zstd_dc(&out), b"");
    sess().arg("cat").arg(&out).assert().success().stdout("");
    sess()
        .args(["pack", "--layout", "dsh", "-f", "-o"])
        .arg(&out)
        .arg(&empty)
        .assert()
        .success();
    assert_eq!(zstd_dc(&out), b"");
}

#[test]
fn pack_refuses_a_terminal_and_unpack_reads_both_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(testdata("dsh.jsonl")).unwrap();
    for layout in ["sess", "dsh"] {
        let out = dir.path().join(format!("{layout}.zst"));
        sess()
            .args(["pack", "--frame-size", "300", "--layout", layout, "-o"])
            .arg(&out)
            .arg(testdata("dsh.jsonl"))
            .assert()
            .success();
        sess()
            .arg("unpack")
            .arg(&out)
            .assert()
            .success()
            .stdout(original.clone());
        let bytes = std::fs::read(&out).unwrap();
        let has_index = Index::read_from(&mut std::io::Cursor::new(&bytes))
            .unwrap()
            .is_some();
        assert_eq!(has_index, layout == "sess");
    }
    // DSH's layout: the header line alone in the first frame.
    let bytes = std::fs::read(dir.path().join("dsh.zst")).unwrap();
    let first = zstd::zstd_safe::find_frame_compressed_size(&bytes).unwrap();
    let header = zstd::decode_all(&bytes[..first]).unwrap();
    assert_eq!(
        header,
        original.split_inclusive(|&b| b == b'\n').next().unwrap()
    );
    sess()
        .args(["pack", "--plain", "--level", "0"])
        .write_stdin("")
        .assert()
        .code(2);
    // On a real terminal (a pseudo-terminal here), compressed output is refused.
    let (tty, _master) = pseudo_terminal();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sess"))
        .arg("pack")
        .arg(testdata("dsh.jsonl"))
        .stdout(tty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("refusing to write compressed output to a terminal"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not a terminal: written.
    sess()
        .arg("pack")
        .arg(testdata("dsh.jsonl"))
        .assert()
        .success();
}

/// A pseudo-terminal: the side a program writes to, and the side that keeps it open.
fn pseudo_terminal() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the integers it is given; the null
    // pointers ask for no name and default settings.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(slave),
            std::fs::File::from_raw_fd(master),
        )
    }
}

fn packed_file(
    dir: &std::path::Path,
    lines: usize,
    frame_size: usize,
) -> (std::path::PathBuf, Vec<u8>) {
    let data = log(lines);
    (packed(dir, &data, frame_size), data)
}

/// `data` packed by `sess pack` into frames of `frame_size`, as `dir`/log.jsonl.zst.
fn packed(dir: &std::path::Path, data: &[u8], frame_size: usize) -> std::path::PathBuf {
    let plain = dir.join("plain.jsonl");
    std::fs::write(&plain, data).unwrap();
    let z = dir.join("log.jsonl.zst");
    sess()
        .args(["pack", "--frame-size", &frame_size.to_string(), "-o"])
        .arg(&z)
        .arg(&plain)
        .assert()
        .success();
    z
}

#[test]
fn cat_tail_and_seq_seek_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let (z, data) = packed_file(dir.path(), 3000, 4096);
    let text = String::from_utf8(data).unwrap();
    let all: Vec<&str> = text.lines().collect();
    let want = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    sess()
        .args(["cat", "--tail", "5"])
        .arg(&z)
        .assert()
        .success()
        .stdout(want(&all[2995..]));
    sess()
        .args(["cat", "--seq", "1500..1510"])
        .arg(&z)
        .assert()
        .success()
        .stdout(want(&all[1500..=1510]));
    sess()
        .args(["cat", "--seq", "2990.."])
        .arg(&z)
        .assert()
        .success()
        .stdout(want(&all[2990..]));
    // Without an index (DSH's layout) the frame headers are walked instead.
    let d = dir.path().join("dsh.zst");
    sess()
        .args(["pack", "--layout", "dsh", "--frame-size", "4096", "-o"])
        .arg(&d)
        .arg(dir.path().join("plain.jsonl"))
        .assert()
        .success();
    sess()
        .args(["cat", "--tail", "5"])
        .arg(&d)
        .assert()
        .success()
        .stdout(want(&all[2995..]));
    sess()
        .args(["cat", "--seq", "100..101"])
        .arg(&d)
        .assert()
        .success()
        .stdout(want(&all[100..=101]));
    // Stdin has no index: the same answer, read through.
    sess()
        .args(["cat", "--tail", "5"])
        .pipe_stdin(&z)
        .unwrap()
        .assert()
        .success()
        .stdout(want(&all[2995..]));
    // A log joined to itself (seq starts again): each selection is what a read through of
    // the plain log gives. The seek from the last frame that begins at or before the range
    // found the second copy only.
    let twice = [text.as_bytes(), text.as_bytes()].concat();
    let joined = dir.path().join("joined");
    std::fs::create_dir(&joined).unwrap();
    let plain = joined.join("plain.jsonl");
    // In small frames, and in frames of one copy each (whose first seqs are equal).
    for frame_size in [4096, text.len()] {
        let z = packed(&joined, &twice, frame_size);
        for range in ["2990..", "1500..1510", "0..3"] {
            let read = |f: &std::path::Path| stdout_ok(sess().args(["cat", "--seq", range]).arg(f));
            let (got, want) = (read(&z), read(&plain));
            assert_eq!(got, want, "--seq {range}, frames of {frame_size}");
            assert!(!want.is_empty());
        }
        std::fs::remove_file(&z).unwrap();
    }
}

/// `--recovery absolute` fails on damage anywhere: a seek passed over damage in a frame it
/// did not need, and `cat --tail` printed its lines with exit 0.
#[test]
fn absolute_fails_a_seek_on_damage_it_would_pass_over() {
    let dir = tempfile::tempdir().unwrap();
    let (z, _) = packed_file(dir.path(), 3000, 4096);
    let mut bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    let victim = index.entries[1];
    bytes[(victim.offset + 30) as usize] ^= 0x40;
    std::fs::write(&z, &bytes).unwrap();
    sess()
        .args(["cat", "--tail", "2"])
        .arg(&z)
        .assert()
        .success();
    for selection in [["--tail", "2"], ["--seq", "2990.."]] {
        sess()
            .args(["cat", "--recovery", "absolute"])
            .args(selection)
            .arg(&z)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("damaged"));
    }
}

/// Frames cut mid-line (`pzstd`, zstd files put together with `cat`, a pack whose input
/// had no final newline followed by another): `cat --tail` and `cat --seq` give the lines
/// a read through gives, joined across frames, none split or dropped as torn.
#[test]
fn seeking_reads_lines_that_run_across_frames_as_a_read_through_does() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(300);
    let cut_anywhere = dir.path().join("cut.jsonl.zst");
    std::fs::write(&cut_anywhere, common::zstd_frames(&text, 1000)).unwrap();
    // Two packs put together, the first without its final newline.
    let a = dir.path().join("a.jsonl");
    std::fs::write(&a, &text[..text.len() - 1]).unwrap();
    let b = dir.path().join("b.jsonl");
    std::fs::write(&b, log(5)).unwrap();
    let mut both = Vec::new();
    for (plain, size) in [(&a, "4096"), (&b, "1M")] {
        let packed = plain.with_extension("zst");
        sess()
            .args(["pack", "--quiet", "--frame-size", size, "-o"])
            .arg(&packed)
            .arg(plain)
            .assert()
            .success();
        both.extend(std::fs::read(&packed).unwrap());
    }
    let joined = dir.path().join("both.jsonl.zst");
    std::fs::write(&joined, both).unwrap();
    for file in [&cut_anywhere, &joined] {
        let whole = stdout_ok(sess().args(["cat", "--quiet"]).arg(file));
        let whole = String::from_utf8(whole).unwrap();
        let lines: Vec<&str> = whole.lines().collect();
        for n in [1, 5, 6, 7, 40, 299, 400] {
            let got = stdout_ok(
                sess()
                    .args(["cat", "--quiet", "--tail", &n.to_string()])
                    .arg(file),
            );
            let want: String = lines[lines.len().saturating_sub(n)..]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(String::from_utf8(got).unwrap(), want, "{file:?} --tail {n}");
        }
        let seq = stdout_ok(sess().args(["cat", "--quiet", "--seq", "0.."]).arg(file));
        assert_eq!(String::from_utf8(seq).unwrap(), whole, "{file:?} --seq 0..");
    }
}

/// Frames without a checksum are told of once per file, as a read through tells it, however
/// many frames a seeking read decodes (some twice, to know where their lines begin).
#[test]
fn a_seeking_read_tells_of_frames_without_a_checksum_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = log(300);
    let file = dir.path().join("unchecked.jsonl.zst");
    let frames: Vec<u8> = text
        .chunks(1000)
        .flat_map(|piece| zstd::encode_all(piece, 1).unwrap())
        .collect();
    std::fs::write(&file, frames).unwrap();
    for args in [&["--tail", "40"][..], &["--seq", "100..120"], &[]] {
        let out = sess().arg("cat").args(args).arg(&file).output().unwrap();
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches("no content checksum").count(),
            1,
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_seeking_read_names_lines_as_a_read_through_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = log(3000);
    // A torn last line (a write cut short): each reader warns, naming it and its place.
    let torn_at = text.len();
    text.extend_from_slice(br#"{"type":"e","seq":3000,"te"#);
    let z = packed(dir.path(), &text, 4096);
    let name = z.display().to_string();
    for args in [
        &["cat"][..],
        &["cat", "--tail", "600"],
        &["cat", "--seq", "2400.."],
    ] {
        sess()
            .args(args)
            .arg(&z)
            .assert()
            .success()
            .stderr(predicate::str::contains(format!("{name}:3001: ")))
            .stderr(predicate::str::contains(format!("byte offset {torn_at})")));
    }
}

#[test]
fn verify_checks_frames_against_the_index_without_decompressing() {
    let dir = tempfile::tempdir().unwrap();
    let (z, _) = packed_file(dir.path(), 2000, 4096);
    sess()
        .args(["verify", "--index-only"])
        .arg(&z)
        .assert()
        .success();
    let bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    let victim = index.entries[3];
    let mut bad = bytes.clone();
    bad[(victim.offset + 20) as usize] ^= 0x01;
    std::fs::write(&z, &bad).unwrap();
    sess()
        .args(["verify", "--index-only"])
        .arg(&z)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(format!(
            "frame 3 at byte {}: crc32",
            victim.offset
        )));
    // Read through, the damage is named with the lines it cost, and reading goes on.
    let before: u64 = index.entries[..3].iter().map(|e| u64::from(e.lines)).sum();
    let lost = format!(
        "damaged bytes {}..{} (zstd: Data corruption detected): lost lines {}..{} of the original",
        victim.offset,
        index.entries[4].offset,
        before + 1,
        before + u64::from(victim.lines)
    );
    sess()
        .arg("verify")
        .arg(&z)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains(lost).and(predicate::str::contains(format!(
                "FAILED: {} lines in 1 input(s), 2 problem(s)",
                2000 - victim.lines
            ))),
        );
}

#[test]
fn an_index_pointing_past_the_end_is_reported_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (z, data) = packed_file(dir.path(), 500, 4096);
    let mut bytes = std::fs::read(&z).unwrap();
    // Drop one frame's worth of bytes before the index: its entries now point past it.
    let (index, at) = common::index_of(&bytes);
    let cut = index.entries.last().unwrap().offset as usize;
    bytes.drain(cut..at as usize);
    std::fs::write(&z, &bytes).unwrap();
    assert!(
        Index::read_from(&mut std::io::Cursor::new(&bytes))
            .unwrap()
            .unwrap()
            .is_err()
    );
    sess()
        .args(["verify", "--index-only"])
        .arg(&z)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "frame index: index entry points outside",
        ));
    // Readers do not need the index: everything before the dropped frame reads back.
    let out = sess().arg("cat").arg(&z).output().unwrap();
    assert!(out.status.success());
    assert!(data.starts_with(&out.stdout) && out.stdout.len() < data.len());
    // --tail falls back to reading through rather than trusting a bad index.
    let tail = sess()
        .args(["cat", "--tail", "1"])
        .arg(&z)
        .output()
        .unwrap()
        .stdout;
    assert!(out.stdout.ends_with(&tail));
}

/// A torn final frame loses the lines in the blocks the cut went through, which never
/// decode: their count is not known, and repair said "no lines" (`"lines": 0`) for a frame
/// of 15 KB none of which decoded. Wherever the cut falls, a count repair gives is the
/// lines really lost.
#[test]
fn a_torn_final_frame_never_reports_fewer_lines_lost_than_it_lost() {
    let dir = tempfile::tempdir().unwrap();
    let data = log(3000);
    let (bytes, index) = framed(&data, 16 << 10);
    let last = index.entries.last().unwrap();
    let (start, end) = (last.offset, last.offset + u64::from(last.compressed));
    let total = data.iter().filter(|&&b| b == b'\n').count() as u64;
    let z = dir.path().join("torn.zst");
    let (mut unknown, mut known) = (0, 0);
    // Cut inside the checksum (the last 4 bytes), every block has decoded.
    for cut in (start + 1..end).step_by(97).chain(end - 4..end) {
        std::fs::write(&z, &bytes[..cut as usize]).unwrap();
        let out = sess()
            .args(["repair", "--json", "-o", "/dev/null"])
            .arg(&z)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let report: serde_json::Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
        let kept = report["lines_kept"].as_u64().unwrap();
        let lost = &report["lost"].as_array().unwrap()[0];
        match lost["lines"].as_u64() {
            Some(n) => {
                known += 1;
                assert_eq!(kept + n, total, "cut at {cut}: {err}");
            }
            None => unknown += 1,
        }
    }
    assert!(unknown > 0 && known > 0, "{unknown} unknown, {known} known");
}

/// A flip in a zstd file's magic made it read as plain text, and repair kept the bits of
/// compressed data that parse as JSON (`3`, `9E3`) as lines, exit 0.
#[test]
fn repair_of_a_file_whose_zstd_magic_took_a_flip_keeps_frames_not_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let (path, data) = packed_file(dir.path(), 400, 1024);
    let file = std::fs::read(&path).unwrap();
    let all = String::from_utf8(data).unwrap();
    let fixed = dir.path().join("fixed.zst");
    for byte in 0..4 {
        for bit in 0..8 {
            let mut bad = file.clone();
            bad[byte] ^= 1 << bit;
            std::fs::write(&path, &bad).unwrap();
            sess()
                .args(["repair", "-f", "-o"])
                .arg(&fixed)
                .arg(&path)
                .assert()
                .success()
                .stderr(predicate::str::contains("lost bytes 0.."));
            let got = String::from_utf8(stdout_ok(sess().arg("cat").arg(&fixed))).unwrap();
            assert!(
                got.lines().all(|l| all.lines().any(|d| d == l)),
                "flip {byte}:{bit}: {got}"
            );
            // Only the first frame is lost.
            assert!(got.len() > all.len() * 9 / 10, "flip {byte}:{bit}");
        }
    }
    // Of one frame, nothing survives: an error, and no file.
    let one = dir.path().join("one.zst");
    let mut bad = zstd::encode_all(all.as_bytes(), 3).unwrap();
    bad[0] ^= 0x80;
    std::fs::write(&one, &bad).unwrap();
    std::fs::remove_file(&fixed).unwrap();
    sess()
        .args(["repair", "-o"])
        .arg(&fixed)
        .arg(&one)
        .assert()
        .failure()
        .stderr(predicate::str::contains("no complete record survived"));
    assert!(!fixed.exists());
}

#[test]
fn repair_keeps_good_frames_and_reports_losses() {
    let dir = tempfile::tempdir().unwrap();
    let (z, data) = packed_file(dir.path(), 2000, 4096);
    let bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    let victim = index.entries[2];
    let mut bad = bytes.clone();
    bad[(victim.offset + 30) as usize] ^= 0x40;
    // And a torn tail: the last data frame cut in half, the index gone.
    let last = index.entries.last().unwrap();
    bad.truncate((last.offset + u64::from(last.compressed) / 2) as usize);
    std::fs::write(&z, &bad).unwrap();
    let fixed = dir.path().join("fixed.zst");
    let before: u64 = index.entries[..2].iter().map(|e| u64::from(e.lines)).sum();
    sess()
        .arg("repair")
        .arg(&z)
        .arg("-o")
        .arg(&fixed)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "lost bytes {}..{}",
            victim.offset,
            victim.offset + u64::from(victim.compressed)
        )))
        // The index went with the torn tail, so the lost frame's line count is unknown.
        .stderr(predicate::str::contains(format!(
            "an unknown number of lines after line {before}"
        )))
        .stderr(predicate::str::contains("a torn final frame"));
    sess()
        .arg("verify")
        .arg(&fixed)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("seq"));
    sess()
        .args(["verify", "--index-only"])
        .arg(&fixed)
        .assert()
        .success();
    // Every kept line is a line of the original, in order, and everything else is there.
    let out = sess().arg("cat").arg(&fixed).output().unwrap().stdout;
    let text = String::from_utf8(data).unwrap();
    let got = String::from_utf8(out).unwrap();
    let lost: std::collections::HashSet<&str> = text
        .lines()
        .filter(|l| !got.lines().any(|g| g == *l))
        .collect();
    assert!(got.lines().all(|l| text.lines().any(|d| d == l)));
    assert!(!lost.is_empty() && lost.len() < 400, "{}", lost.len());
    // In place: atomic, and the result reads cleanly.
    sess()
        .args(["repair", "--in-place"])
        .arg(&z)
        .assert()
        .success();
    sess()
        .args(["verify", "--index-only"])
        .arg(&z)
        .assert()
        .success();
}

#[test]
fn repair_of_frames_that_cut_lines_drops_what_damage_cut_as_readers_do() {
    // Frames cut where pzstd or `cat a.zst b.zst` may: inside lines and at line ends. A
    // line that lost bytes cut is dropped, both its ends, and nothing else; the lines of a
    // torn final frame after such bytes (and a frame inside the cut line) are kept, the end
    // of the cut line not.
    let mut data = log(3000);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', &data).map(|k| k + 1))
        .collect();
    let lines = |a: usize, b: usize| starts[a]..starts[b];
    data.splice(lines(55, 56), b"not JSON, kept as read\n".iter().copied());
    let starts: Vec<usize> = std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', &data).map(|k| k + 1))
        .collect();
    let at = |line: usize| starts[line];
    let mid = |line: usize| (starts[line] + starts[line + 1]) / 2;
    let cuts = [
        0,
        mid(10),
        at(20),
        mid(30),
        at(40),
        at(50),
        at(55),
        mid(70),
        mid(80),
        mid(80) + 20,
        data.len(),
    ];
    let mut file = Vec::new();
    let mut frames = Vec::new();
    for w in cuts.windows(2) {
        let z = common::zstd_frames(&data[w[0]..w[1]], usize::MAX);
        frames.push(file.len()..file.len() + z.len());
        file.extend(z);
    }
    for k in [2, 4, 7] {
        file[frames[k].start + frames[k].len() / 2] ^= 0x10;
    }
    file.truncate(frames[9].start + frames[9].len() * 2 / 3);
    let dir = tempfile::tempdir().unwrap();
    let (bad, fixed) = (dir.path().join("bad.zst"), dir.path().join("fixed.zst"));
    std::fs::write(&bad, &file).unwrap();
    let skipped = stdout_ok(sess().args(["cat", "--recovery", "skip-corrupt"]).arg(&bad));
    sess()
        .arg("repair")
        .arg(&bad)
        .arg("-o")
        .arg(&fixed)
        .assert()
        .success();
    let got = stdout_ok(sess().arg("cat").arg(&fixed));
    assert!(got == skipped, "{}", String::from_utf8_lossy(&got));
    let mut want = data[..at(20)].to_vec();
    want.extend_from_slice(&data[at(31)..at(40)]);
    want.extend_from_slice(&data[at(50)..at(70)]);
    want.extend_from_slice(&data[at(81)..at(200)]);
    assert!(got.starts_with(&want), "{}", String::from_utf8_lossy(&got));
    let rest = &data[at(200)..];
    assert!(rest.starts_with(&got[want.len()..]) && got.ends_with(b"\n"));
}

#[test]
fn repair_of_a_plain_log_drops_damaged_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.jsonl");
    std::fs::write(&p, "{\"a\":1}\n{\"b\":\n{\"c\":3}\n{\"d\"").unwrap();
    sess()
        .args(["repair", "--in-place"])
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains("lost bytes 8..14 (invalid JSON at column 6: expected a JSON value): line 2 of the original"))
        .stderr(predicate::str::contains("lost bytes 22..26 (a torn last line: no final newline and not a JSON value): line 4 of the original"));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "{\"a\":1}\n{\"c\":3}\n"
    );
}

#[test]
fn streaming_pack_writes_a_frame_per_window_that_survives_a_kill() {
    use std::process::{Command as StdCommand, Stdio};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live.jsonl.zst");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("sess"))
        .args(["pack", "--window", "100", "-o"])
        .arg(&out)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let first = b"{\"type\":\"a\",\"seq\":0}\n{\"type\":\"b\",\"seq\":1}\n";
    stdin.write_all(first).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // The window expired while the input was quiet: the frame is in the file already.
    let (got, _) = read(&std::fs::read(&out).unwrap(), Recovery::TolerateTail);
    assert_eq!(got.unwrap(), first);
    let second = b"{\"type\":\"c\",\"seq\":2}\n";
    stdin.write_all(second).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // A crash (SIGKILL) keeps every frame written before it.
    child.kill().unwrap();
    child.wait().unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let (got, notices) = read(&bytes, Recovery::Absolute);
    assert_eq!(got.unwrap(), [&first[..], &second[..]].concat());
    assert!(notices.is_empty());
    assert!(
        Index::read_from(&mut std::io::Cursor::new(&bytes))
            .unwrap()
            .is_none(),
        "no index: the run never ended"
    );
}

#[test]
fn seeking_reads_name_damage_where_it_is_and_honour_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let (z, data) = packed_file(dir.path(), 3000, 4096);
    let mut bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    // The last frame is damaged: --tail decodes it first.
    let victim = *index.entries.last().unwrap();
    bytes[(victim.offset + 20) as usize] ^= 0x01;
    std::fs::write(&z, &bytes).unwrap();
    sess()
        .args(["cat", "--tail", "2"])
        .arg(&z)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "at byte {}",
            victim.offset
        )));
    // Point-in-time keeps everything before the damage: the tail of that.
    let kept: u64 = index.entries[..index.entries.len() - 1]
        .iter()
        .map(|e| u64::from(e.lines))
        .sum();
    let text = String::from_utf8(data).unwrap();
    let all: Vec<&str> = text.lines().collect();
    let want: String = all[kept as usize - 2..kept as usize]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    sess()
        .args(["cat", "--recovery", "point-in-time", "--tail", "2"])
        .arg(&z)
        .assert()
        .success()
        .stdout(want);
}

#[test]
fn verify_warns_of_a_file_of_frames_without_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (z, _) = packed_file(dir.path(), 3000, 4096);
    sess().arg("verify").arg(&z).assert().success().stderr("");
    let bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    // Cut at a frame boundary: every frame left is whole, and the index is gone.
    let cut = index.entries[index.entries.len() / 2].offset as usize;
    std::fs::write(&z, &bytes[..cut]).unwrap();
    sess()
        .arg("verify")
        .arg(&z)
        .assert()
        .success()
        .stderr(predicate::str::contains("zstd frames and no frame index"));
}

/// A frame whose header lost its checksum flag decodes, with nothing to vouch for its bytes
/// (and its checksum left as 4 stray bytes after it). The index's crc32 says it is damaged:
/// repair drops it as such, and what it writes verifies.
#[test]
fn repair_drops_a_frame_whose_checksum_flag_was_cleared() {
    let dir = tempfile::tempdir().unwrap();
    // No seq: verify would also name the gap the lost frame leaves in it.
    let data: Vec<u8> = (0..3000)
        .flat_map(|i| format!("{{\"type\":\"e\",\"i\":{i}}}\n").into_bytes())
        .collect();
    let z = packed(dir.path(), &data, 4096);
    let mut bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    let frame = index.entries[1];
    // The frame header descriptor's Content_Checksum_flag (RFC 8878 3.1.1.1.1).
    bytes[frame.offset as usize + 4] &= !0x04;
    std::fs::write(&z, &bytes).unwrap();
    let fixed = dir.path().join("fixed.zst");
    sess()
        .arg("repair")
        .arg(&z)
        .arg("-o")
        .arg(&fixed)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "it has no content checksum, and its bytes do not match the index's crc32",
        ));
    sess().arg("verify").arg(&fixed).assert().success();
    // Every line but the lost frame's, in order.
    let first = index.entries[0].lines as usize;
    let lost = frame.lines as usize;
    let want: Vec<&[u8]> = data
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .filter(|(k, _)| !(first..first + lost).contains(k))
        .map(|(_, l)| l)
        .collect();
    let got = stdout_ok(sess().arg("unpack").arg(&fixed));
    assert_eq!(got, want.concat());
}

/// A frame whose magic is damaged is no frame at all, but the index still says where it
/// was and how many lines it held: repair names them, as verify does.
#[test]
fn repair_names_the_lines_of_a_frame_whose_magic_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let (z, _) = packed_file(dir.path(), 3000, 4096);
    let mut bytes = std::fs::read(&z).unwrap();
    let (index, _) = common::index_of(&bytes);
    let frame = index.entries[1];
    bytes[frame.offset as usize] ^= 0x01;
    std::fs::write(&z, &bytes).unwrap();
    let first = u64::from(index.entries[0].lines) + 1;
    let lost = format!(
        "lines {first}..{} of the original",
        first + u64::from(frame.lines) - 1
    );
    sess()
        .arg("verify")
        .arg(&z)
        .assert()
        .failure()
        .stdout(predicate::str::contains(&lost));
    sess()
        .arg("repair")
        .arg(&z)
        .arg("-o")
        .arg(dir.path().join("fixed.zst"))
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "(no zstd frame magic): {lost}"
        )));
}

/// The index's trailer (the last 12 bytes: its length and magic) damaged so that the index
/// no longer reads from the end: that is a problem verify names, not a file without one.
#[test]
fn verify_names_an_index_whose_trailer_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let (z, _) = packed_file(dir.path(), 3000, 4096);
    let bytes = std::fs::read(&z).unwrap();
    let (_, at) = common::index_of(&bytes);
    let end = bytes.len();
    let flipped = {
        let mut b = bytes.clone();
        b[end - 1] ^= 0x04;
        b
    };
    let zeroed = {
        let mut b = bytes.clone();
        b[end - 12..].fill(0);
        b
    };
    for damaged in [flipped, zeroed] {
        std::fs::write(&z, &damaged).unwrap();
        sess()
            .arg("verify")
            .arg(&z)
            .assert()
            .failure()
            .stdout(predicate::str::contains(format!(
                "the frame index at byte {at} is damaged"
            )))
            .stdout(predicate::str::contains("3000 lines"));
        // Its lines read as ever.
        sess().arg("cat").arg(&z).assert().success();
    }
    // zstd's seekable format ends with a skippable frame of the same magic, holding its
    // seek table: that is no damaged index of sess's.
    let mut seekable = common::zstd_frames(b"{\"a\":1}\n{\"a\":2}\n", 8);
    seekable.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
    seekable.extend_from_slice(&9u32.to_le_bytes());
    seekable.extend_from_slice(&[0, 0, 0, 0, 0]);
    seekable.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    std::fs::write(&z, &seekable).unwrap();
    sess()
        .arg("verify")
        .arg(&z)
        .assert()
        .success()
        .stdout(predicate::str::contains("ok: 2 lines"));
}

#[test]
fn pack_writes_the_same_bytes_on_one_thread_and_two() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    std::fs::write(&big, log(3000)).unwrap();
    for file in [big.clone(), testdata("pi-old.jsonl"), testdata("dsh.jsonl")] {
        for extra in [
            &["--frame-size", "1K"][..],
            &["--frame-size", "64K", "--layout", "dsh"],
            &[],
        ] {
            let pack = |threads: &str| {
                stdout_ok(
                    sess()
                        .args(["pack", "--threads", threads])
                        .args(extra)
                        .arg(&file),
                )
            };
            let one = pack("1");
            assert!(one == pack("2"), "{} {extra:?}", file.display());
            assert!(
                stdout_ok(sess().arg("unpack").write_stdin(one)) == std::fs::read(&file).unwrap()
            );
        }
    }
}

/// `n` bytes of base64 text ([`common::noise`]).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    common::noise(n, seed).into_bytes()
}

/// `data` as one zstd frame with a content checksum.
fn one_frame(data: &[u8]) -> Vec<u8> {
    common::zstd_frames(data, usize::MAX)
}

#[test]
fn a_long_line_of_a_frame_too_large_to_hold_goes_out_as_it_decodes() {
    // A frame of over 64 MiB held each line whole until its end (as decoded, beside the
    // reader's copy): a line of 116 MB was held twice in the reader, and packing snapshot
    // frames read from such a file took 467 MiB where the bound was 285 MiB. A line not
    // yet ended now goes out 8 MiB at a time.
    let (l1, l2) = (noise(70 << 20, 1), noise(20 << 20, 2));
    let short = b"{\"type\":\"s\"}\n";
    let data = [&l1[..], b"\n", short, &l2, b"\n", short].concat();
    let file = one_frame(&data);
    for mode in [Recovery::TolerateTail, Recovery::Absolute] {
        let (out, notices) = read(&file, mode);
        assert!(out.unwrap() == data, "{mode:?}");
        assert!(notices.is_empty());
    }
    // Cut inside the second long line: the lines before it are kept, and what went out
    // of it ends where the input does (the line reader's rule for a torn last line then
    // applies), where the bytes that went out before the tear could not be taken back.
    let before = l1.len() + 1 + short.len();
    let cut =
        &file[..(file.len() as u64 * (before as u64 + (12 << 20)) / data.len() as u64) as usize];
    let (out, notices) = read(cut, Recovery::TolerateTail);
    let out = out.unwrap();
    assert!(out[..before] == data[..before]);
    let rest = &out[before..];
    assert!(
        rest.len() >= 8 << 20,
        "{} bytes of the cut line",
        rest.len()
    );
    assert!(l2.starts_with(rest), "not a prefix of the cut line");
    assert!(
        notices[0].contains("kept 2 complete line(s)")
            && notices[0].contains("partial line after them"),
        "{notices:?}"
    );
    let err = read(cut, Recovery::Absolute).0.err();
    assert!(err.is_some_and(|e| e.contains("ends inside the frame")));
    // Damage found at the end of such a frame is an error that says what went out: it
    // said "after some of its lines were output" when a reader of one line had none.
    let mut bad = file.clone();
    *bad.last_mut().unwrap() ^= 1;
    let err = read(&bad, Recovery::SkipCorrupt).0.unwrap_err();
    assert!(err.contains("of its lines were passed on"), "{err}");
    let mut bad = one_frame(&l1);
    *bad.last_mut().unwrap() ^= 1;
    let err = read(&bad, Recovery::SkipCorrupt).0.unwrap_err();
    assert!(
        err.contains("after part of a line in it was passed on"),
        "{err}"
    );
}

/// A line of 70 MiB that runs across two frames, as pzstd or `cat` of files may cut one:
/// the first frame (over the 64 MiB a reader holds, so the line goes out in part as it
/// decodes) ends 1000 bytes short of its end, and the second holds those, its newline and
/// `lines`. Returns the line, the file, and where the second frame begins.
fn a_line_across_frames(seed: u64, lines: &[u8]) -> (Vec<u8>, Vec<u8>, usize) {
    let l1 = noise(70 << 20, seed);
    let (head, tail) = l1.split_at(l1.len() - 1000);
    let mut file = one_frame(head);
    let second = file.len();
    file.extend(one_frame(&[tail, b"\n", lines].concat()));
    (l1, file, second)
}

#[test]
fn damage_after_part_of_a_line_went_out_is_not_skipped() {
    // A frame of over 64 MiB that ends inside a line (as pzstd or `cat` of files may
    // cut), whose head went out as it decoded: skipping damage in the frame holding its
    // end would join that head to the lines after the damage. Stopping there ends it.
    let lines = log(400);
    let (l1, mut file, second) = a_line_across_frames(3, &lines);
    let head = &l1[..l1.len() - 1000];
    file.extend(one_frame(&lines));
    let mut bad = file.clone();
    bad[second + (file.len() - second) / 4] ^= 0x10;
    let err = read(&bad, Recovery::SkipCorrupt).0.err();
    let err = err.unwrap_or_else(|| panic!("skip-corrupt read on"));
    assert!(
        err.contains("inside a line that was output in part"),
        "{err}"
    );
    let err = read(&bad, Recovery::TolerateTail).0.err();
    assert!(err.is_some_and(|e| e.contains("a good frame follows")));
    // Point-in-time ends the line where the damage begins, as a tear would: its head
    // alone, without a newline, for the line reader's rule for a torn last line.
    let (out, notices) = read(&bad, Recovery::PointInTime);
    assert!(out.unwrap() == head, "not the line's head alone");
    assert!(
        notices[0].contains("stopped at damaged input"),
        "{notices:?}"
    );
    let (out, _) = read(&file, Recovery::SkipCorrupt);
    assert!(out.unwrap() == [&l1[..], b"\n", &lines, &lines].concat());
}

#[test]
fn a_tear_after_a_line_that_went_out_in_part_ends_keeps_that_line_whole() {
    // The line goes on into the next frame, which holds its end and the lines after it,
    // and is torn: the line ends in the decodable prefix, so it is kept whole, with the
    // complete lines after it, and the partial line at the tear is dropped.
    let lines = log(4000);
    let (l1, file, second) = a_line_across_frames(5, &lines);
    let cut = &file[..second + (file.len() - second) * 3 / 4];
    let (out, notices) = read(cut, Recovery::TolerateTail);
    let out = out.unwrap();
    let whole = [&l1[..], b"\n", &lines].concat();
    assert!(
        out.len() > l1.len() + 1 && whole.starts_with(&out),
        "{} bytes",
        out.len()
    );
    assert_eq!(out.last(), Some(&b'\n'));
    assert!(notices[0].contains("dropped"), "{notices:?}");
}

/// Asserts that `sess cat` of `a` and `b` each compressed as one frame, joined as `cat
/// a.zst b.zst` joins them, gives `want`.
fn cat_of_joined(a: &[u8], b: &[u8], want: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("joined.jsonl.zst");
    std::fs::write(&path, [one_frame(a), one_frame(b)].concat()).unwrap();
    let out = stdout_ok(sess().args(["cat", "-q"]).arg(&path));
    let end = String::from_utf8_lossy(&out[out.len().saturating_sub(120)..]).into_owned();
    assert!(out == want, "{} bytes, ending {end:?}", out.len());
}

#[test]
fn a_file_joined_after_a_line_that_went_out_in_part_is_still_told_apart() {
    // `cat a.zst b.zst`: a ends inside a line of 70 MB (it has no final newline), in one
    // frame whose lines go out in pieces; b begins with an interned line, which must be
    // read alone to be rebuilt. Once part of the line had gone out, the glue between the
    // two was not looked for, and the interned line went out as it was, not rebuilt.
    let line = [&br#"{"n":""#[..], &noise(70 << 20, 9), br#""}"#].concat();
    let interned =
        br#"{"type":"sess-interned","v":1,"defs":[[5,5,0]],"refs":[],"line":{"v":"abc"}}"#;
    // Glued as `zstd -dc` glues them, the interned one rebuilt.
    let want = [&line[..], br#"{"v":"abc"}"#, b"\n"].concat();
    cat_of_joined(&line, &[&interned[..], b"\n"].concat(), &want);
}

#[test]
fn an_interned_line_of_a_frame_too_large_to_hold_is_not_passed_in_pieces() {
    // The glue rule must see an interned line whole to tell it from a line pzstd cut: one
    // that went out in pieces left only its tail to judge, and the line after it was
    // read as part of it.
    let value = [&br#"{"n":""#[..], &noise(70 << 20, 11), br#""}"#].concat();
    let interned = [
        &br#"{"type":"sess-interned","v":1,"defs":[],"refs":[],"line":"#[..],
        &value,
        b"}",
    ]
    .concat();
    cat_of_joined(
        &interned,
        b"{\"b\":1}\n",
        &[&value[..], b"{\"b\":1}\n"].concat(),
    );
}
