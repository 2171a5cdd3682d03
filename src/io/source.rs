//! Opens inputs: a file or stdin, plain or zstd. Knows nothing of JSON.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::frames::{FrameReader, Recovery};

/// The first four bytes of a zstd frame (little-endian 0xFD2FB528).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Where bytes come from. `-` means stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    Path(PathBuf),
}

impl Input {
    pub fn from_arg(arg: &Path) -> Input {
        if arg.as_os_str() == "-" {
            Input::Stdin
        } else {
            Input::Path(arg.to_path_buf())
        }
    }

    /// The inputs named on a command line; none means stdin.
    pub fn list(args: &[PathBuf]) -> Vec<Input> {
        if args.is_empty() {
            vec![Input::Stdin]
        } else {
            args.iter().map(|a| Input::from_arg(a)).collect()
        }
    }

    /// The name used in messages.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_string(),
            Input::Path(p) => p.display().to_string(),
        }
    }
}

/// How the bytes of an input are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Plain,
    Zstd,
}

/// Whether a zstd frame (or a zstd skippable frame) starts these bytes.
pub fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&ZSTD_MAGIC)
        || (head.len() >= 4 && head[0] & 0xF0 == 0x50 && head[1..4] == [0x2A, 0x4D, 0x18])
}

/// An opened input, yielding decompressed bytes.
pub struct Source {
    pub name: String,
    pub compression: Compression,
    pub reader: Box<dyn Read>,
    progress: Option<ProgressBar>,
}

impl Source {
    /// The progress bar drawn for this input, if any.
    pub fn progress_bar(&self) -> Option<ProgressBar> {
        self.progress.clone()
    }
}

/// Options shared by every command that reads inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Never draw a progress bar.
    pub quiet: bool,
    /// What to do with damaged zstd input.
    pub recovery: Recovery,
}

pub fn open(input: &Input, opts: OpenOptions) -> Result<Source> {
    let name = input.name();
    let (raw, size): (Box<dyn Read>, Option<u64>) = match input {
        Input::Stdin => (Box::new(io::stdin()), None),
        Input::Path(p) => {
            let f = File::open(p).with_context(|| format!("{name}: cannot open"))?;
            let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            (Box::new(f), size)
        }
    };
    let progress = size.and_then(|len| progress_bar(len, &name, opts));
    let raw: Box<dyn Read> = match &progress {
        Some(bar) => Box::new(bar.wrap_read(raw)),
        None => raw,
    };
    let (head, raw) = peek(raw).with_context(|| format!("{name}: cannot read"))?;
    let whole = io::Cursor::new(head.clone()).chain(raw);
    let (compression, reader): (Compression, Box<dyn Read>) = if is_zstd(&head) {
        let frames = FrameReader::new(whole, &name, opts.recovery);
        (Compression::Zstd, Box::new(frames))
    } else {
        (
            Compression::Plain,
            Box::new(BufReader::with_capacity(256 * 1024, whole)),
        )
    };
    Ok(Source {
        name,
        compression,
        reader,
        progress,
    })
}

/// Reads up to four bytes to sniff the format. A pipe may deliver them one at a time.
fn peek(mut r: Box<dyn Read>) -> io::Result<(Vec<u8>, Box<dyn Read>)> {
    let mut head = [0u8; 4];
    let got = super::read_full(&mut r, &mut head)?;
    Ok((head[..got].to_vec(), r))
}

fn progress_bar(len: u64, name: &str, opts: OpenOptions) -> Option<ProgressBar> {
    if opts.quiet || !io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .ok()?
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(name.to_string());
    Some(bar)
}
