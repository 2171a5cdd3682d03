//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `sess` binary under test.
pub fn sess() -> Command {
    Command::cargo_bin("sess").expect("the sess binary is built")
}

/// A file in `testdata/`.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The fixtures of every dialect in `testdata/`.
pub const FIXTURES: &[&str] = &[
    "pi-old.jsonl",
    "pi-new.jsonl",
    "pi-session.jsonl",
    "dsh.jsonl",
    "oplist.jsonl",
];

/// `../shared/conformance/SUB`, or `None` (after saying so) when it is absent: a user who
/// cloned only this project does not have it, and their tests must still pass.
pub fn conformance(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance")
        .join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} is absent", dir.display());
        None
    }
}

/// The files in `dir` whose names end with `suffix`, sorted.
pub fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// zstd-compresses bytes the way any standard tool would.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("zstd in memory")
}

/// A JSON value as JavaScript's `JSON.parse` sees it: numbers are doubles, strings are UTF-16
/// (lone surrogates allowed), duplicate keys keep the last value, key order is ignored.
/// serde_json rejects lone surrogate escapes, so tests compare values with this.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u16>),
    Arr(Vec<J>),
    Obj(std::collections::BTreeMap<Vec<u16>, J>),
}

/// Parses one JSON text; panics on malformed input (tests feed it known-good text).
pub fn parse_j(text: &[u8]) -> J {
    let mut p = JParser { b: text, i: 0 };
    let v = p.value();
    p.ws();
    assert_eq!(
        p.i,
        text.len(),
        "trailing text in {}",
        String::from_utf8_lossy(text)
    );
    v
}

struct JParser<'a> {
    b: &'a [u8],
    i: usize,
}

impl JParser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> J {
        self.ws();
        match self.b[self.i] {
            b'{' => {
                self.i += 1;
                let mut m = std::collections::BTreeMap::new();
                if self.eat(b'}') {
                    return J::Obj(m);
                }
                loop {
                    self.ws();
                    let J::Str(k) = self.value() else {
                        panic!("key")
                    };
                    assert!(self.eat(b':'));
                    let v = self.value();
                    m.insert(k, v);
                    if self.eat(b'}') {
                        return J::Obj(m);
                    }
                    assert!(self.eat(b','));
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                if self.eat(b']') {
                    return J::Arr(a);
                }
                loop {
                    a.push(self.value());
                    if self.eat(b']') {
                        return J::Arr(a);
                    }
                    assert!(self.eat(b','));
                }
            }
            b'"' => {
                let end = sess::json::string_end(self.b, self.i).expect("closed string");
                let inner = &self.b[self.i + 1..end - 1];
                self.i = end;
                J::Str(sess::json::decode_utf16_units(inner).expect("valid string"))
            }
            b't' => {
                self.i += 4;
                J::Bool(true)
            }
            b'f' => {
                self.i += 5;
                J::Bool(false)
            }
            b'n' => {
                self.i += 4;
                J::Null
            }
            _ => {
                let end = sess::json::number_end(self.b, self.i).expect("number");
                let v = sess::json::number_value(&self.b[self.i..end]).expect("number");
                self.i = end;
                // JSON.stringify writes -0 as 0 and infinities as null.
                if v.is_finite() {
                    J::Num(if v == 0.0 { 0.0 } else { v })
                } else {
                    J::Null
                }
            }
        }
    }
}

/// Every line of a JSONL text as a value.
pub fn parse_lines(text: &[u8]) -> Vec<J> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(parse_j)
        .collect()
}
