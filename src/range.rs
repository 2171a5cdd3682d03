//! Inclusive ranges given on the command line as `A..B`, `A..`, `..B` or `N`.

use std::fmt;
use std::str::FromStr;

/// An inclusive range of positive numbers (1-based positions, or seq values from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    /// Inclusive; `None` is open-ended.
    pub end: Option<u64>,
}

impl Range {
    pub fn contains(&self, n: u64) -> bool {
        n >= self.start && self.end.is_none_or(|e| n <= e)
    }

    /// Whether every number after `n` is past the range.
    pub fn is_past(&self, n: u64) -> bool {
        self.end.is_some_and(|e| n >= e)
    }

    /// A range of 1-based positions (`--lines`): as [`FromStr`], but a 0 written in it is
    /// refused (`..B` still starts at the first).
    pub fn one_based(s: &str) -> Result<Range, String> {
        let range: Range = s.parse()?;
        let (start, end) = s.split_once("..").unwrap_or((s, s));
        let zero = |t: &str| t.trim().parse::<u64>() == Ok(0);
        if zero(start) || zero(end) {
            return Err(format!("'{s}': lines are numbered from 1"));
        }
        Ok(range)
    }
}

impl FromStr for Range {
    type Err = String;

    fn from_str(s: &str) -> Result<Range, String> {
        let num = |t: &str| {
            t.trim().parse::<u64>().map_err(|_| {
                format!("'{t}' is not a non-negative integer (expected A..B, A.., ..B or N)")
            })
        };
        let range = match s.split_once("..") {
            None => {
                let n = num(s)?;
                Range {
                    start: n,
                    end: Some(n),
                }
            }
            Some((a, b)) => Range {
                start: if a.is_empty() { 0 } else { num(a)? },
                end: if b.is_empty() { None } else { Some(num(b)?) },
            },
        };
        if range.end.is_some_and(|e| e < range.start) {
            return Err(format!("range '{s}' ends before it starts"));
        }
        Ok(range)
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.end {
            Some(e) => write!(f, "{}..{}", self.start, e),
            None => write!(f, "{}..", self.start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ranges_start_at_one() {
        assert_eq!(Range::one_based("1..5"), "1..5".parse());
        assert_eq!(Range::one_based("..5"), "..5".parse());
        for bad in ["0", "0..5", "..0", " 0 .."] {
            assert!(
                Range::one_based(bad).unwrap_err().contains("from 1"),
                "{bad}"
            );
        }
    }

    #[test]
    fn parses_forms() {
        assert_eq!(
            "3..5".parse(),
            Ok(Range {
                start: 3,
                end: Some(5)
            })
        );
        assert_eq!(
            "3..".parse(),
            Ok(Range {
                start: 3,
                end: None
            })
        );
        assert_eq!(
            "..5".parse(),
            Ok(Range {
                start: 0,
                end: Some(5)
            })
        );
        assert_eq!(
            "7".parse(),
            Ok(Range {
                start: 7,
                end: Some(7)
            })
        );
        assert!("5..3".parse::<Range>().is_err());
        assert!("a..3".parse::<Range>().is_err());
        assert!("-1".parse::<Range>().is_err());
    }

    #[test]
    fn contains_is_inclusive() {
        let r: Range = "2..4".parse().unwrap();
        assert!(!r.contains(1) && r.contains(2) && r.contains(4) && !r.contains(5));
        assert!(r.is_past(4) && !r.is_past(3));
    }
}
