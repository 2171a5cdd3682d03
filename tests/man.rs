//! The man pages in `man/` are generated from the clap definitions. This test fails when
//! they are stale; regenerate them with `SESS_UPDATE_MAN=1 cargo test --test man`.

use std::path::Path;

#[test]
fn man_pages_are_fresh() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let pages = sess::cli::man_pages();
    if std::env::var_os("SESS_UPDATE_MAN").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        for (name, text) in &pages {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (name, text) in &pages {
        if std::fs::read(dir.join(name)).ok().as_deref() != Some(text.as_slice()) {
            stale.push(name.clone());
        }
    }
    let on_disk = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert!(
        stale.is_empty() && on_disk == pages.len(),
        "man pages are stale ({stale:?}, {on_disk} on disk, {} expected); run \
         SESS_UPDATE_MAN=1 cargo test --test man",
        pages.len()
    );
}
