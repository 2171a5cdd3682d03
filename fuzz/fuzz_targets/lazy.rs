//! The filter taking snapshot-delta rows whole (`sess filter` on a packed log) against the
//! filter given each of their events, on arbitrary logs with the pi profile: the same
//! output, whenever every row in the input expands (a row that does not is an error when
//! read event by event, and may be dropped unread when taken whole).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::filter::{Filter, FilterOptions};
use sess::profile::{Choice, Overrides, registry};
use sess::snapshots;

fn filter(data: &[u8], lazy: bool) -> Option<Vec<u8>> {
    let opts = FilterOptions {
        lazy_rows: lazy,
        ..FilterOptions::default()
    };
    let profile = registry::builtin("pi").unwrap();
    let mut f = Filter::new(Choice::fixed(profile), Overrides::default(), opts).unwrap();
    let mut out = Vec::new();
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        if snapshots::is_row(line) {
            if f.row(line, ("fuzz", n as u64 + 1), &mut out).ok()? {
                continue;
            }
            let mut events = Vec::new();
            snapshots::expand::<()>(line, &mut |_, _, ev| {
                events.push(ev.to_vec());
                Ok(true)
            })
            .ok()?;
            for ev in events {
                f.event(&ev, true, &mut out).unwrap();
            }
        } else {
            f.event(line, true, &mut out).unwrap();
        }
    }
    f.end_input(&mut out).ok()?;
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let every_row_expands = data.split(|&b| b == b'\n').all(|line| {
        !snapshots::is_row(line) || snapshots::expand::<()>(line, &mut |_, _, _| Ok(true)).is_ok()
    });
    if !every_row_expands {
        return;
    }
    let whole = filter(data, true).expect("every row expands");
    let by_event = filter(data, false).expect("every row expands");
    assert_eq!(whole, by_event);
});
