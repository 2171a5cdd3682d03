//! `repair` of a damaged plain log (a crash's zero bytes in lines, torn and cut lines, any
//! bytes): it never panics; every line it keeps is one JSON value and, unless rebuilt to
//! stand alone (an interned line), bytes of the input, in the input's order; the losses it
//! reports lie in the input, in order, without overlapping.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let Ok(report) = sess::repair::salvage_plain(data, &mut out) else {
        return;
    };
    let mut kept: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    assert_eq!(
        kept.pop(),
        Some(&b""[..]),
        "every kept line ends with a newline"
    );
    assert_eq!(kept.len() as u64, report.lines_kept);
    let mut at = 0;
    for line in kept {
        assert!(sess::json::validate(line).is_ok(), "{line:?}");
        if sess::intern::is_interned(line) {
            continue;
        }
        let found = data[at..]
            .windows(line.len().max(1))
            .position(|w| w == line)
            .unwrap_or_else(|| panic!("{line:?} is not in the input after byte {at}"));
        at += found + line.len();
    }
    let mut end = 0;
    for loss in &report.losses {
        assert!(
            end <= loss.from && loss.from <= loss.to,
            "{:?}",
            report.losses
        );
        assert!(loss.to <= data.len() as u64, "{:?}", report.losses);
        end = loss.to;
    }
});
