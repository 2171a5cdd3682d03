//! Property tests for `sess filter`: on random pi-shaped logs in any interleaving, the output
//! equals an independent model of the policy: facts byte for byte and in order, frames
//! dropped when their successor comes, orphaned runs kept (last snapshot, or every delta)
//! right before the event that proves them orphaned.

use proptest::prelude::*;
use sess::filter::{Filter, FilterOptions};
use sess::profile::{Choice, Overrides, registry};

#[derive(Debug, Clone)]
enum Ev {
    Header,
    MessageStart,
    /// snapshot (old generation) or delta (new generation), with its text
    MessageUpdate(bool, String),
    MessageEnd,
    ToolStart(u8),
    ToolUpdate(u8, String),
    ToolEnd(u8),
    TurnEnd,
    AgentEnd,
    BashUpdate(String),
    Unknown(String),
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec![
            "a", " b", "é", "文", "🦀", "\\\"", "\\\\", "\\n", "\\u0001", "\\ud800", "{",
        ]),
        0..5,
    )
    .prop_map(|v| v.concat())
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        1 => Just(Ev::Header),
        3 => Just(Ev::MessageStart),
        8 => (any::<bool>(), text()).prop_map(|(s, t)| Ev::MessageUpdate(s, t)),
        3 => Just(Ev::MessageEnd),
        2 => (0u8..3).prop_map(Ev::ToolStart),
        6 => ((0u8..3), text()).prop_map(|(i, t)| Ev::ToolUpdate(i, t)),
        2 => (0u8..3).prop_map(Ev::ToolEnd),
        1 => Just(Ev::TurnEnd),
        1 => Just(Ev::AgentEnd),
        1 => text().prop_map(Ev::BashUpdate),
        1 => text().prop_map(Ev::Unknown),
    ]
}

fn render(e: &Ev) -> String {
    match e {
        Ev::Header => r#"{"type":"session","version":3,"id":"x"}"#.into(),
        Ev::MessageStart => {
            r#"{"type":"message_start","message":{"role":"assistant","content":[]}}"#.into()
        }
        Ev::MessageUpdate(true, t) => format!(
            r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"{t}","partial":{{"content":[{{"type":"text","text":"{t}"}}]}}}},"message":{{"content":[{{"type":"text","text":"{t}"}}]}}}}"#
        ),
        Ev::MessageUpdate(false, t) => format!(
            r#"{{"type":"message_update","usage":{{"input":0}},"assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"{t}"}}}}"#
        ),
        Ev::MessageEnd => {
            r#"{"type":"message_end","message":{"role":"assistant","content":[]}}"#.into()
        }
        Ev::ToolStart(i) => {
            format!(r#"{{"type":"tool_execution_start","toolCallId":"c{i}","toolName":"bash"}}"#)
        }
        Ev::ToolUpdate(i, t) => format!(
            r#"{{"type":"tool_execution_update","toolCallId":"c{i}","toolName":"bash","partialResult":{{"content":[{{"type":"text","text":"{t}"}}]}}}}"#
        ),
        Ev::ToolEnd(i) => {
            format!(r#"{{"type":"tool_execution_end","toolCallId":"c{i}","result":{{}}}}"#)
        }
        Ev::TurnEnd => {
            r#"{"type":"turn_end","message":{"role":"assistant"},"toolResults":[{}]}"#.into()
        }
        Ev::AgentEnd => r#"{"type":"agent_end","messages":[{},{}]}"#.into(),
        Ev::BashUpdate(t) => format!(r#"{{"type":"bash_execution_update","delta":"{t}"}}"#),
        Ev::Unknown(t) => format!(r#"{{"type":"x_{}","v":"{t}"}}"#, t.len()),
    }
}

/// The policy, written from the brief, independent of the implementation.
fn model(evs: &[Ev]) -> Vec<String> {
    // Open runs in the order they opened: (key: None for the message run, Some(tool)), lines.
    let mut open: Vec<(Option<u8>, Vec<String>)> = Vec::new();
    let mut out = Vec::new();
    let emit_runs = |open: &mut Vec<(Option<u8>, Vec<String>)>,
                     out: &mut Vec<String>,
                     which: &dyn Fn(Option<u8>) -> bool| {
        let (orphans, rest): (Vec<_>, Vec<_>) = open.drain(..).partition(|(k, _)| which(*k));
        *open = rest;
        for (_, lines) in orphans {
            out.extend(lines);
        }
    };
    for e in evs {
        let line = render(e);
        match e {
            Ev::MessageStart => emit_runs(&mut open, &mut out, &|k| k.is_none()),
            Ev::AgentEnd => emit_runs(&mut open, &mut out, &|_| true),
            _ => {}
        }
        match e {
            Ev::MessageUpdate(..) | Ev::ToolUpdate(..) => {
                // Message frames belong to the one open message; tool frames to their call.
                let (key, is_snapshot) = match e {
                    Ev::MessageUpdate(s, _) => (None, *s),
                    Ev::ToolUpdate(i, _) => (Some(*i), true),
                    _ => unreachable!(),
                };
                let run = match open.iter().position(|(k, _)| *k == key) {
                    Some(p) => &mut open[p].1,
                    None => {
                        open.push((key, Vec::new()));
                        &mut open.last_mut().unwrap().1
                    }
                };
                // A snapshot holds everything before it.
                if is_snapshot {
                    run.clear();
                }
                run.push(line);
            }
            Ev::MessageEnd => {
                open.retain(|(k, _)| k.is_some());
                out.push(line);
            }
            Ev::ToolEnd(i) => {
                open.retain(|(k, _)| *k != Some(*i));
                out.push(line);
            }
            _ => out.push(line),
        }
    }
    for (_, lines) in open {
        out.extend(lines);
    }
    out
}

/// What `sess filter` writes, holding at most `hold` bytes of frames in memory (the rest
/// in a temporary file).
fn filter(evs: &[Ev], keep_boundaries: bool, hold: usize) -> Vec<String> {
    let opts = FilterOptions {
        keep_boundaries,
        hold_in_memory: hold,
        ..FilterOptions::default()
    };
    let mut f = Filter::new(
        Choice::fixed(registry::builtin("pi").unwrap()),
        Overrides::default(),
        opts,
    )
    .unwrap();
    let mut out = Vec::new();
    for e in evs {
        f.event(render(e).as_bytes(), true, &mut out).unwrap();
        assert!(
            f.held_in_memory() <= hold,
            "{} > {hold}",
            f.held_in_memory()
        );
    }
    f.end_input(&mut out).unwrap();
    assert_eq!(f.held_in_memory(), 0, "every frame let go is counted out");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn is_boundary(line: &str) -> bool {
    line.starts_with(r#"{"type":"turn_end""#) || line.starts_with(r#"{"type":"agent_end""#)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn filter_matches_the_model(evs in proptest::collection::vec(ev(), 0..60), hold in prop_oneof![Just(FilterOptions::default().hold_in_memory), 0usize..600]) {
        let want = model(&evs);
        prop_assert_eq!(filter(&evs, true, hold), want.clone());
        // With projection, only the boundary lines differ.
        let projected = filter(&evs, false, hold);
        prop_assert_eq!(projected.len(), want.len());
        for (got, want) in projected.iter().zip(&want) {
            if is_boundary(want) {
                prop_assert!(is_boundary(got) && got.len() < want.len(), "{} / {}", got, want);
            } else {
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn facts_survive_byte_for_byte_in_order(evs in proptest::collection::vec(ev(), 0..60)) {
        let is_fact = |l: &str| !l.contains(r#""type":"message_update""#)
            && !l.contains(r#""type":"tool_execution_update""#)
            && !is_boundary(l);
        let input: Vec<String> = evs.iter().map(render).filter(|l| is_fact(l)).collect();
        let output: Vec<String> = filter(&evs, false, FilterOptions::default().hold_in_memory).into_iter().filter(|l| is_fact(l)).collect();
        prop_assert_eq!(output, input);
    }
}
