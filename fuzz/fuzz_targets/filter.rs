//! The filter on arbitrary logs with the pi profile, with and without live events: no
//! panic, and every fact comes out byte for byte and in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::profile::{Choice, Class, Overrides, registry};
use sess::event;
use sess::filter::{Filter, FilterOptions};

fuzz_target!(|data: &[u8]| {
    let include_live = data.first().is_some_and(|b| b & 1 == 1);
    let cap = 1024;
    let opts = FilterOptions {
        include_live,
        max_frame_bytes: cap,
        ..FilterOptions::default()
    };
    let profile = registry::builtin("pi").unwrap();
    let mut f = Filter::new(Choice::fixed(profile.clone()), Overrides::default(), opts).unwrap();
    let mut out = Vec::new();
    let mut facts: Vec<&[u8]> = Vec::new();
    for line in data.split_inclusive(|&b| b == b'\n') {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (line, false),
        };
        let kind = event::kind(body);
        if profile.classify(kind.as_deref()) == Class::Fact {
            facts.push(body);
        }
        f.event(body, nl, &mut out).unwrap();
    }
    f.end_input(&mut out).unwrap();
    let lines: Vec<&[u8]> = out
        .split_inclusive(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\n").unwrap_or(l))
        .collect();
    // The facts are a subsequence of the output.
    let mut next = 0;
    for l in &lines {
        if next < facts.len() && *l == facts[next] {
            next += 1;
        }
    }
    assert_eq!(next, facts.len(), "a fact was lost or changed");
});
