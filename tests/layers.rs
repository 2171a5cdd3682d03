//! Data flows one way: a module uses only modules of lower layers. The layers are the table
//! at the top of `src/lib.rs`; this test reads it and every `crate::` path in the library's
//! code (comments aside), and fails on any path that points sideways or up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Module name → layer, from the `| layer | modules | ... |` table in lib.rs.
fn layers() -> BTreeMap<String, u32> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut map = BTreeMap::new();
    for line in lib.lines() {
        let cells: Vec<&str> = line
            .trim_start_matches("//!")
            .split('|')
            .map(str::trim)
            .collect();
        if let [_, layer, modules, _, _] = cells[..]
            && let Ok(n) = layer.parse::<u32>()
        {
            for m in modules.split(',') {
                map.insert(m.trim().to_string(), n);
            }
        }
    }
    map
}

/// The library's source files, each with the top-level module it belongs to.
fn files(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let rel = p
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let top = rel.split(['/', '.']).next().unwrap().to_string();
        if ["main", "cli", "cmd", "range", "units", "lib"].contains(&top.as_str()) {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else if rel.ends_with(".rs") {
            out.push((top, p));
        }
    }
}

#[test]
fn no_module_uses_one_above_or_beside_it() {
    let layers = layers();
    assert!(
        layers.len() >= 15,
        "the table in lib.rs lists {} modules",
        layers.len()
    );
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut wrong = Vec::new();
    for (module, path) in &all {
        let Some(&mine) = layers.get(module) else {
            wrong.push(format!(
                "{}: module {module} is not in the table",
                path.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            for (at, _) in code.match_indices("crate::") {
                let used: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if used == *module {
                    continue;
                }
                match layers.get(&used) {
                    Some(&theirs) if theirs < mine => {}
                    other => wrong.push(format!(
                        "{}:{}: {module} (layer {mine}) uses {used} (layer {other:?})",
                        path.display(),
                        n + 1
                    )),
                }
            }
        }
    }
    // `use super::...` inside a module stays inside it; `crate::` is the only way out.
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
