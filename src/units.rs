//! Sizes and durations as people write them on a command line: `64K`, `4MiB`, `1G`,
//! `200ms`, `2s`. Binary units (K = 1024), as zstd's own flags read them.

/// A byte count: digits with an optional `K`, `M`, `G` or `T` (any case), and an optional
/// `B` or `iB` after it (`65536`, `64K`, `64KiB`, `4MB`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, unit) = number_and_unit(s).ok_or_else(|| {
        format!("'{s}' is not a size (a number of bytes, or one like 64K, 4M, 1G)")
    })?;
    if unit.starts_with('.') {
        return Err(format!("'{s}': a size is a whole number (1536K, not 1.5M)"));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "'{s}': unknown unit '{unit}' (expected K, M, G or T)"
            ));
        }
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// A byte count within `min..=max`, for a flag's value parser.
pub fn bytes_in(min: u64, max: u64) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |s| {
        let n = parse_bytes(s)?;
        if n < min || n > max {
            return Err(format!("{n} bytes is outside {min}..={max}"));
        }
        Ok(n)
    }
}

/// A duration in milliseconds: digits with an optional `ms`, `s` or `m` (`200`, `200ms`,
/// `2s`, `1m`).
pub fn parse_millis(s: &str) -> Result<u64, String> {
    let (n, unit) = number_and_unit(s)
        .ok_or_else(|| format!("'{s}' is not a duration (milliseconds, or one like 200ms, 2s)"))?;
    let factor = match unit {
        "" | "ms" => 1,
        "s" => 1000,
        "m" | "min" => 60_000,
        _ => {
            return Err(format!(
                "'{s}': unknown unit '{unit}' (expected ms, s or m)"
            ));
        }
    };
    n.checked_mul(factor)
        .ok_or_else(|| format!("'{s}' is too long"))
}

/// The leading digits of `s` as a number, and what follows them.
fn number_and_unit(s: &str) -> Option<(u64, &str)> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    Some((n.parse().ok()?, unit))
}

/// A number of days, fractions allowed, from 0 to 100 years (`--older-than`).
pub fn parse_days(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(d) if d.is_finite() && (0.0..=36_500.0).contains(&d) => Ok(d),
        _ => Err(format!("'{s}' is not a number of days from 0 to 36500")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_days() {
        assert_eq!(parse_days("7"), Ok(7.0));
        assert_eq!(parse_days("0.5"), Ok(0.5));
        assert_eq!(parse_days("0"), Ok(0.0));
        for bad in ["-1", "nan", "inf", "1e9", "week"] {
            assert!(parse_days(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_sizes_and_durations() {
        assert_eq!(parse_bytes("65536"), Ok(65536));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("64kib"), Ok(65536));
        assert_eq!(parse_bytes("4MB"), Ok(4 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert!(parse_bytes("1.5M").unwrap_err().contains("whole number"));
        assert!(parse_bytes("M").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("64Q").unwrap_err().contains("unknown unit"));
        assert!(
            parse_bytes("99999999999T")
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(bytes_in(1024, 1 << 30)("1K"), Ok(1024));
        assert!(bytes_in(1024, 1 << 30)("1023").is_err());
        assert_eq!(parse_millis("200"), Ok(200));
        assert_eq!(parse_millis("200ms"), Ok(200));
        assert_eq!(parse_millis("2s"), Ok(2000));
        assert_eq!(parse_millis("1m"), Ok(60_000));
        assert!(parse_millis("2h").is_err());
    }
}
