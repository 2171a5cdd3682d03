//! What `sess verify` checks, line by line and file by file. Each problem is a sentence
//! naming its file, line (and column) or byte offset; the caller prints them.

use std::fs::File;
use std::path::Path;

use crate::error::{IoContext, Place, Result};
use crate::frames::audit::{self, Audit};
use crate::frames::index::{INDEX_MAGIC, SKIPPABLE_MAGIC};
use crate::frames::walk;
use crate::input;
use crate::io::{Ending, Line};
use crate::json;
use crate::rows;
use crate::snapshots::{self, ExpandError};

/// The checks of one input's lines: each a valid JSON value, each packed row valid,
/// top-level `seq` rising by 1, the last line ending with a newline.
#[derive(Debug, Default)]
pub struct LineChecks {
    /// The seq the next seq-carrying event must have.
    next_seq: Option<i64>,
    /// The input is one JSON document over many lines: reported once, then not read.
    document: bool,
}

impl LineChecks {
    /// The problems of one line (most often none).
    pub fn line(&mut self, name: &str, line: &Line<'_>) -> Vec<String> {
        if self.document {
            return Vec::new();
        }
        if let Some(e) = crate::event::not_jsonl(name, line) {
            self.document = true;
            return vec![e.to_string()];
        }
        let mut problems = Vec::new();
        let at = line.place(name);
        let (len, offset) = (line.bytes.len(), line.offset);
        match line.ending {
            Ending::Newline => {}
            Ending::Unterminated => problems.push(format!(
                "{at}: the last line has no final newline ({len} bytes at byte offset {offset}); \
                 it is a whole JSON value ('sess repair' adds the newline)"
            )),
            Ending::Torn => {
                problems.push(format!(
                    "{at}: torn last line: no final newline and not a JSON value ({len} bytes at \
                     byte offset {offset}; 'sess repair' removes it)"
                ));
                return problems;
            }
        }
        if snapshots::is_row(line.bytes) {
            // Rebuilding every event checks every batch.
            if let Err(ExpandError::Row(why)) =
                snapshots::expand::<()>(line.bytes, &mut |_, _, _| Ok(true))
            {
                problems.push(format!("{at}: {why}"));
            }
            return problems;
        }
        // Rows are told apart first, so a valid row is scanned once.
        match rows::parse(line.bytes) {
            rows::Parsed::Row(row) => {
                for seq in row.seqs() {
                    self.seq(&at, seq, &mut problems);
                }
            }
            rows::Parsed::BadRow(e) => problems.push(format!("{at}: {e}")),
            rows::Parsed::BadJson(_, e) => problems.push(json_problem(&at, line, &e)),
            rows::Parsed::Event => match json::validate(line.json_text()) {
                Err(e) => problems.push(json_problem(&at, line, &e)),
                Ok(()) => {
                    let seq = json::field(line.bytes, "seq").and_then(json::safe_integer);
                    self.seq(&at, seq, &mut problems);
                }
            },
        }
        problems
    }

    /// Lines were lost here (reported already): the seq after them is not a problem of its
    /// own.
    pub fn lost(&mut self) {
        self.next_seq = None;
    }

    fn seq(&mut self, at: &str, seq: Option<i64>, problems: &mut Vec<String>) {
        let Some(seq) = seq else { return };
        if let Some(want) = self.next_seq
            && seq != want
        {
            problems.push(format!(
                "{at}: seq {seq} where {want} was expected (seq must rise by 1)"
            ));
        }
        self.next_seq = Some(seq + 1);
    }
}

fn json_problem(at: &str, line: &Line<'_>, e: &json::SyntaxError) -> String {
    let col = e.offset + 1;
    let offset = line.offset + e.offset as u64;
    format!("{at}:{col}: invalid JSON: {e} (byte offset {offset})")
}

/// What checking a file's container found without decompressing it.
#[derive(Debug, PartialEq, Eq)]
pub enum Container {
    /// A plain file, or a compressed one with one frame and no index (nothing to check).
    Unchecked,
    /// Its frames checked against its index: the problems found.
    Checked(Vec<String>),
    /// Several frames and no index: a warning. `sess pack` ends such a file with one, so if
    /// sess wrote it, its end may be missing (cut at a frame boundary, the frames after the
    /// cut are gone without a trace). DeepSeek Harness's layout and stock zstd write none,
    /// so it is not a problem.
    NoIndex(String),
}

/// A compressed file's frames checked against its index, without decompressing them.
pub fn container(path: &Path) -> Result<Container> {
    let name = path.display().to_string();
    if input::file_compression(path)? != Some(input::Compression::Zstd) {
        return Ok(Container::Unchecked);
    }
    let mut f = File::open(path).at(Place::file(&name), "cannot open")?;
    let at = || Place::file(&name);
    Ok(match audit::audit(&mut f).at(at(), "cannot read")? {
        Audit::Checked { problems, .. } => Container::Checked(
            problems
                .into_iter()
                .map(|p| format!("{name}: {p}"))
                .collect(),
        ),
        Audit::NoIndex => {
            let len = f.metadata().at(at(), "cannot read")?.len();
            let (spans, _) = walk::walk(&mut f, 0, len).at(at(), "cannot read")?;
            // The file ends with sess's index frame, but it did not read from the end. (Its
            // magic is zstd's seekable format's too: sess's index begins with its own.)
            if let Some(last) = spans.last()
                && last.kind
                    == (walk::Kind::Skippable {
                        magic: SKIPPABLE_MAGIC,
                    })
                && begins_sess_index(&mut f, last.offset).at(at(), "cannot read")?
            {
                return Ok(Container::Checked(vec![format!(
                    "{name}: the frame index at byte {} is damaged (its trailer does not \
                     read); the frames are checked one by one instead",
                    last.offset
                )]));
            }
            let frames = spans
                .iter()
                .filter(|s| matches!(s.kind, walk::Kind::Zstd { .. }))
                .count();
            match frames {
                0 | 1 => Container::Unchecked,
                _ => Container::NoIndex(format!(
                    "{name}: {frames} zstd frames and no frame index: sess pack ends such a \
                     file with one, so if sess wrote it, its end may be missing (DeepSeek \
                     Harness's layout and stock zstd write none)"
                )),
            }
        }
    })
}

/// Whether the skippable frame at `offset` holds sess's index: its payload begins with
/// [`INDEX_MAGIC`].
fn begins_sess_index(f: &mut File, offset: u64) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut head = [0u8; 8 + INDEX_MAGIC.len()];
    f.seek(SeekFrom::Start(offset))?;
    match f.read_exact(&mut head) {
        Ok(()) => Ok(&head[8..] == INDEX_MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The problem of an input that holds zstd frames without a content checksum.
pub fn unchecked_frames(name: &str, count: u64) -> Option<String> {
    (count > 0).then(|| {
        format!(
            "{name}: {count} zstd frame(s) have no content checksum, so their lines cannot be \
             verified"
        )
    })
}
