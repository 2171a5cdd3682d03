//! Seeking reads (`cat --tail`, `cat --seq`) on arbitrary files: no panic, every failure an
//! error. And on text cut into zstd frames anywhere (as `pzstd` or `cat` of compressed
//! files cut it), the lines read frame by frame are the lines of the text, each once and
//! whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::frames::seek::Seekable;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.zst");
    if mode & 1 == 0 {
        // The bytes as the file.
        std::fs::write(&path, rest).unwrap();
        if let Ok(Some(mut file)) = Seekable::open(&path) {
            let _ = lines_by_frame(&mut file);
        }
        return;
    }
    // Text, then cut points: each byte after the first 0xff one cuts the text there.
    let (text, cuts) = match rest.iter().position(|&b| b == 0xff) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) * (text.len() + 1) / 256)
        .collect();
    at.sort_unstable();
    let mut file = Vec::new();
    let mut from = 0;
    for to in at.into_iter().chain([text.len()]) {
        file.extend(zstd::encode_all(&text[from..to], 1).unwrap());
        from = to;
    }
    std::fs::write(&path, &file).unwrap();
    let mut seekable = Seekable::open(&path).unwrap().expect("frames written whole");
    let got = lines_by_frame(&mut seekable).expect("frames written whole read back");
    let want: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(got, want);
});

/// The lines of every frame, in order, each with its newline when it had one.
fn lines_by_frame(file: &mut Seekable) -> std::io::Result<Vec<Vec<u8>>> {
    let mut all = Vec::new();
    for k in 0..file.frames().len() {
        let mut lines = file.lines(k)?;
        while let Some(line) = lines.next_line()? {
            let mut bytes = line.bytes.to_vec();
            if line.terminated() {
                bytes.push(b'\n');
            }
            all.push(bytes);
        }
    }
    Ok(all)
}
