//! The library's errors: what went wrong, and where (file, line, column, byte offset).
//! The binary turns them into its one-line messages; nothing here prints.

use std::fmt;
use std::io;

/// Where in the input something is: a file (or `<stdin>`), and as far as known a line, a
/// column and a byte offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub offset: Option<u64>,
}

impl Place {
    pub fn file(file: &str) -> Place {
        Place {
            file: file.to_string(),
            ..Place::default()
        }
    }

    /// No file: stdout, whose errors read "cannot write to stdout".
    pub fn stdout() -> Place {
        Place::default()
    }

    pub fn line(file: &str, line: u64) -> Place {
        Place {
            line: Some(line),
            ..Place::file(file)
        }
    }

    pub fn column(mut self, column: u64) -> Place {
        self.column = Some(column);
        self
    }

    pub fn offset(mut self, offset: u64) -> Place {
        self.offset = Some(offset);
        self
    }
}

/// `file[:line[:column]]`; the byte offset, when known, ends the message instead.
impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        Ok(())
    }
}

fn offset_suffix(place: &Place) -> String {
    place
        .offset
        .map_or(String::new(), |o| format!(" (byte offset {o})"))
}

/// `place: ` before a message, or nothing for a place with no file (stdout).
fn prefix(place: &Place) -> String {
    if place.file.is_empty() {
        String::new()
    } else {
        format!("{place}: ")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing failed. `what` says what sess was doing ("cannot open"). The
    /// I/O error is part of the message and not also a source, which `{:#}` would print a
    /// second time.
    #[error("{}{what}: {cause}{}", prefix(place), offset_suffix(place))]
    Io {
        place: Place,
        what: &'static str,
        cause: io::Error,
    },
    /// The input is not what it must be: invalid JSON in a row, a bad row or batch, a file
    /// of the wrong kind.
    #[error("{}{message}{}", prefix(place), offset_suffix(place))]
    Invalid { place: Place, message: String },
    /// A profile (a file, a flag) that cannot be used.
    #[error("{0}")]
    Profile(String),
    /// An output that cannot be written as asked (a directory, one of the inputs).
    #[error("{path}: {message}")]
    Output { path: String, message: String },
}

impl Error {
    pub fn io(place: Place, what: &'static str, source: io::Error) -> Error {
        Error::Io {
            place,
            what,
            cause: source,
        }
    }

    pub fn invalid(place: Place, message: impl Into<String>) -> Error {
        Error::Invalid {
            place,
            message: message.into(),
        }
    }

    /// Whether the error comes from writing to a closed pipe (`sess cat x | head -1`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { cause, .. } if cause.kind() == io::ErrorKind::BrokenPipe)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `message` about `file`, as `FILE: MESSAGE`, unless it names the file first already
/// (`FILE:LINE: ...`, as an [`Error`] does): the file is not named twice.
pub fn about(file: &str, message: &str) -> String {
    match message.strip_prefix(file) {
        Some(rest) if rest.starts_with(':') => message.to_string(),
        _ => format!("{file}: {message}"),
    }
}

/// Adds a place to an I/O error: `.at(place, "cannot read")`.
pub trait IoContext<T> {
    fn at(self, place: Place, what: &'static str) -> Result<T>;

    /// [`IoContext::at`] for a call made once per line: a place holds its file's name
    /// as a `String`, so it is built only when there is an error to name.
    fn at_with(self, place: impl FnOnce() -> Place, what: &'static str) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, place: Place, what: &'static str) -> Result<T> {
        self.map_err(|e| Error::io(place, what, e))
    }

    fn at_with(self, place: impl FnOnce() -> Place, what: &'static str) -> Result<T> {
        self.map_err(|e| Error::io(place(), what, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_that_names_its_file_first_is_not_given_the_name_again() {
        let line = Error::invalid(Place::line("a/g.jsonl", 1), "not JSONL").to_string();
        assert_eq!(about("a/g.jsonl", &line), "a/g.jsonl:1: not JSONL");
        let file = Error::invalid(Place::file("a/g.jsonl"), "an ELF executable").to_string();
        assert_eq!(about("a/g.jsonl", &file), "a/g.jsonl: an ELF executable");
        assert_eq!(
            about("a/g.jsonl", "compressed already"),
            "a/g.jsonl: compressed already"
        );
        // Another file whose name begins with this one's is another file.
        assert_eq!(about("a/g", "a/g.jsonl: x"), "a/g: a/g.jsonl: x");
    }
}
