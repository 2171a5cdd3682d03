//! Snapshot-delta rows taken whole: when every event of a row is a snapshot frame of one
//! run, the filter keeps at most the last of them, and only if no successor comes. So it
//! holds the row as it is and rebuilds that last event only when the run is orphaned.
//! Reading a packed log then costs its packed bytes plus what is written, not its logical
//! bytes.
//!
//! The shortcut must change nothing the filter writes. The events of a row share their
//! type (the row format says so), but the filter also reads each frame's kind fields,
//! pairing key and snapshot rule, and a row's batches could change those from one event
//! to the next. A row is taken whole only when its first event is spelled as sess spells
//! values (so what the filter reads of it is what it reads of every rebuilt event) and no
//! op of it can touch a field the filter reads. Any other row is expanded event by event,
//! as before.
//!
//! A row taken whole is not checked unless its last event is needed, as `cat --type`
//! passes rows by unchecked; `sess verify` reads every row.

use crate::json;
use crate::profile::{Class, FrameRule, Profile, Snapshot, Sub};
use crate::snapshots;
use crate::value::Value;

/// How the filter uses a field of a frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Its value (the kind, the pairing key): an op at, above or below it changes it.
    Value,
    /// Whether it is there (a snapshot rule): only an op at or above it changes that.
    Presence,
}

/// The kind of the events of `row`, and its first event, when the filter may take the row
/// as its last event alone: they are snapshot frames of one kind and key, none of which
/// opens or closes runs. `None` when the row must be expanded.
pub fn kind_of_row<'r>(profile: &Profile, row: &'r [u8]) -> Option<(String, &'r [u8])> {
    let first = snapshots::first_event(row)?;
    let kind = profile.kind_of(first)?.into_owned();
    if profile.classify(Some(&kind)) != Class::Frame || !only_runs_of(profile, &kind) {
        return None;
    }
    let rule = profile.frames.get(&kind)?;
    if rule.repeats.is_some() || !rule.snapshot.holds(first) {
        return None;
    }
    let reads = fields_read(profile, &kind, rule);
    let mut touched = false;
    let plain = snapshots::op_paths(row, &mut |path| {
        touched = touched || path.is_none_or(|p| reads.iter().any(|(f, u)| touches(p, f, *u)));
    });
    let canonical = || Value::is_canonical(first);
    (plain && !touched && canonical()).then_some((kind, first))
}

/// Whether a frame of `kind` does nothing but join its run: it is no opener of runs, and
/// no closer could hold for it.
fn only_runs_of(profile: &Profile, kind: &str) -> bool {
    let opens = profile
        .frames
        .values()
        .any(|r| r.opener.as_deref() == Some(kind));
    let closes = profile.closers.iter().any(|c| {
        c.kind
            .as_deref()
            .or(c.first.as_deref())
            .is_none_or(|w| w == kind)
    });
    !opens && !closes
}

/// The fields the filter reads of a frame of `kind`, as paths of keys.
fn fields_read<'p>(
    profile: &'p Profile,
    kind: &str,
    rule: &'p FrameRule,
) -> Vec<(Vec<&'p str>, Use)> {
    let split = |dotted: &'p str| dotted.split('.').collect::<Vec<_>>();
    let top = kind.split_once(':').map_or(kind, |(top, _)| top);
    let sub = match &profile.kind.sub {
        Sub::None => None,
        Sub::All(p) => Some(p),
        Sub::Per(m) => m.get(top),
    };
    let mut reads = vec![(split(&profile.kind.field), Use::Value)];
    reads.extend(sub.map(|p| (split(p), Use::Value)));
    // A row's events share their `type` whatever the profile reads.
    reads.push((vec!["type"], Use::Value));
    reads.extend(rule.key.as_deref().map(|k| (split(k), Use::Value)));
    if let Snapshot::IfAny(paths) = &rule.snapshot {
        reads.extend(paths.iter().map(|p| (split(p), Use::Presence)));
    }
    reads
}

/// Whether an op at `op` (a raw JSON array of keys and indices) can change what the
/// filter reads at `field`. A path that is no array of keys and indices touches all.
fn touches(op: &[u8], field: &[&str], how: Use) -> bool {
    if !op.starts_with(b"[") {
        return true;
    }
    let mut len = 0;
    for seg in json::elements(op) {
        let Some(key) = field.get(len) else {
            // The op is below the field.
            return how == Use::Value;
        };
        match names(seg, key) {
            Some(true) => len += 1,
            Some(false) => return false,
            None => return true,
        }
    }
    // The op is at or above the field.
    true
}

/// Whether a raw path segment names the object key `key`: a string spelling it, or a
/// number spelling its digits (a number on an object names the key in digits). `None` for
/// a segment that is neither.
fn names(seg: &[u8], key: &str) -> Option<bool> {
    if seg.starts_with(b"\"") {
        let inner = seg.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        return Some(json::key_is(inner, key));
    }
    json::safe_integer(seg).map(|n| key == n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_touches_a_value_at_above_or_below_it_and_a_presence_at_or_above_it() {
        let field = ["message", "role"];
        for (op, value, presence) in [
            (r#"["message"]"#, true, true),
            (r#"["message","role"]"#, true, true),
            (r#"["message","role",0]"#, true, false),
            (r#"["message","content",0,"text"]"#, false, false),
            (r#"["mess\u0061ge","role"]"#, true, true),
            (r#"[]"#, true, true),
        ] {
            let op = op.as_bytes();
            assert_eq!(touches(op, &field, Use::Value), value, "{op:?}");
            assert_eq!(touches(op, &field, Use::Presence), presence, "{op:?}");
        }
        assert!(touches(b"[7]", &["7"], Use::Value));
        assert!(!touches(b"[7]", &["8"], Use::Value));
        assert!(touches(b"[true]", &["x"], Use::Value));
        assert!(touches(b"0", &["x"], Use::Value));
    }

    /// A toy producer: `tick` frames are snapshots keyed by `id`, ended by `done`.
    fn toy(extra: &str) -> Profile {
        let text = format!(
            r#"{{"name":"toy","frames":{{"tick":{{"successor":"done","key":"id","snapshot":"always"}}}}{extra}}}"#
        );
        Profile::from_json(text.as_bytes(), "test").unwrap()
    }

    const ROW: &[u8] = br#"{"type":"snapshot-deltas","first":{"type":"tick","id":"a","n":"x"},"ops":[[["a",["n"],"y"]]]}"#;

    #[test]
    fn a_row_of_snapshots_of_one_run_is_taken_whole() {
        assert_eq!(
            kind_of_row(&toy(""), ROW).map(|(k, _)| k).as_deref(),
            Some("tick")
        );
        // The same ops at the key, or replacing the event, are not.
        for op in [
            r#"["s",["id"],"b"]"#,
            r#"["r",{"type":"tick"}]"#,
            r#"["d",[]]"#,
        ] {
            let row = String::from_utf8_lossy(ROW).replace(r#"["a",["n"],"y"]"#, op);
            assert_eq!(kind_of_row(&toy(""), row.as_bytes()), None, "{op}");
        }
        // Nor a verb spelled otherwise than sess writes it.
        let row = String::from_utf8_lossy(ROW).replace(r#"["a","#, r#"["\u0061","#);
        assert_eq!(kind_of_row(&toy(""), row.as_bytes()), None);
    }

    #[test]
    fn a_row_of_frames_that_open_or_close_runs_is_expanded() {
        let opener = r#","frames":{"tick":{"successor":"done","key":"id","snapshot":"always"},"tock":{"successor":"done","opener":"tick"}}"#;
        let profiles = [
            toy(r#","closers":["tick"]"#),
            toy(r#","closers":[{"has":["n"]}]"#),
            Profile::from_json(format!(r#"{{"name":"toy"{opener}}}"#).as_bytes(), "test").unwrap(),
        ];
        for p in &profiles {
            assert_eq!(kind_of_row(p, ROW), None, "{:?}", p.closers);
        }
        // Frames that are no snapshots keep every event of their run.
        let deltas = r#"{"name":"toy","frames":{"tick":{"successor":"done","key":"id"}}}"#;
        let deltas = Profile::from_json(deltas.as_bytes(), "test").unwrap();
        assert_eq!(kind_of_row(&deltas, ROW), None);
    }
}
