//! The man pages in `man/` are generated from the clap definitions (by the hidden
//! `sess generate-man DIR`). This test fails when they are stale; regenerate them with
//! `SESS_UPDATE_MAN=1 cargo test --test man`.

mod common;

use std::path::Path;

#[test]
fn man_pages_are_fresh() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let fresh = tempfile::tempdir().unwrap();
    common::sess()
        .arg("generate-man")
        .arg(fresh.path())
        .assert()
        .success();
    let read = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .map(|r| {
                r.map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let pages = read(fresh.path());
    assert!(pages.len() > 5, "{} pages", pages.len());
    if std::env::var_os("SESS_UPDATE_MAN").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &pages {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let on_disk = read(&dir);
    let stale: Vec<&String> = pages
        .iter()
        .filter(|p| !on_disk.contains(p))
        .map(|(n, _)| n)
        .collect();
    assert!(
        stale.is_empty() && on_disk.len() == pages.len(),
        "man pages are stale ({stale:?}, {} on disk, {} expected); run \
         SESS_UPDATE_MAN=1 cargo test --test man",
        on_disk.len(),
        pages.len()
    );
}

#[test]
fn pages_read_as_the_commands_are_typed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let root = std::fs::read_to_string(dir.join("sess.1")).unwrap();
    assert!(
        !root.contains("sess\\-help"),
        "no page for `sess help` is shipped"
    );
    assert!(root.contains(".SH EXAMPLES"));
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Some(cmd) = name.strip_prefix("sess-") else {
            continue;
        };
        let page = std::fs::read_to_string(&path).unwrap();
        let synopsis = page.split(".SH SYNOPSIS\n").nth(1).unwrap();
        assert!(
            synopsis.starts_with(&format!("\\fBsess {cmd}\\fR")),
            "{name}: {}",
            synopsis.lines().next().unwrap()
        );
        assert!(!page.contains(".SH EXTRA"), "{name}");
        assert!(page.contains(".SH EXAMPLES"), "{name}: no examples");
        // The options every command takes are on every page.
        assert!(page.contains("\\-\\-quiet"), "{name}: no --quiet");
    }
}
