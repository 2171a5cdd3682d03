//! Durability classes: which events are facts worth keeping and which are live frames.
//!
//! - **fact**: durable; written always, byte for byte. Any type a profile does not name.
//! - **frame**: a live snapshot or delta whose *successor* carries the same value, so a
//!   reader that skips frames rebuilds the run exactly. Dropped unless opted in.
//! - **mirror**: a live duplicate of a durable event. Dropped unless opted in.
//! - **boundary**: durable, but projected so it stops repeating what it closes over.
//!
//! A profile names the frames, mirrors and boundaries of one producer. The filter that
//! applies it lives in [`crate::filter`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::dialect::Dialect;
use crate::json;
use crate::value::{self, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Fact,
    Frame,
    Mirror,
    Boundary,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Fact, Class::Frame, Class::Mirror, Class::Boundary];

    pub fn name(self) -> &'static str {
        match self {
            Class::Fact => "fact",
            Class::Frame => "frame",
            Class::Mirror => "mirror",
            Class::Boundary => "boundary",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a frame carries the whole value so far (so the last one suffices) or a delta
/// (so a run without its successor must be kept whole).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Snapshot {
    Always,
    Never,
    /// A snapshot when any of these fields (dotted paths of keys) is present. pi 0.73's
    /// `message_update` carries `assistantMessageEvent.partial` and `message`; pi 1.6's
    /// carries only the delta. The cheapest path to find goes first.
    #[serde(untagged)]
    IfAny(#[serde(deserialize_with = "one_or_many")] Vec<String>),
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl Snapshot {
    /// Whether `line` is a snapshot frame under this rule.
    pub fn holds(&self, line: &[u8]) -> bool {
        match self {
            Snapshot::Always => true,
            Snapshot::Never => false,
            Snapshot::IfAny(paths) => paths.iter().any(|p| json::path(line, p).is_some()),
        }
    }
}

/// How a frame type pairs with its successor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRule {
    /// The event that carries the frames' value once the run is over.
    pub successor: String,
    /// A top-level field pairing frames with their successor (pi: `toolCallId`). Without
    /// one, frames belong to the one open run of their type.
    pub key: Option<String>,
    /// An event that opens a new run, proving an open run of this type will never get its
    /// successor (pi: `message_start` for `message_update`).
    pub opener: Option<String>,
    pub snapshot: Snapshot,
}

/// How a boundary is projected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// `turn_end`: `message` becomes `messageRole`, `toolResults` becomes `toolResultCount`.
    TurnEnd,
    /// `agent_end`: `messages` becomes `messageCount`.
    AgentEnd,
    /// Any other boundary: arrays and objects are dropped, scalars kept.
    Scalars,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub frames: BTreeMap<String, FrameRule>,
    pub mirrors: BTreeSet<String>,
    pub boundaries: BTreeMap<String, Projection>,
    /// Types that end every open run without a successor (pi: `agent_end`).
    pub closers: BTreeSet<String>,
}

impl Profile {
    /// Every type a fact; nothing filtered.
    pub fn empty() -> Profile {
        Profile {
            name: "none".into(),
            ..Profile::default()
        }
    }

    /// pi `--mode json`, both generations.
    pub fn pi() -> Profile {
        let mut p = Profile {
            name: "pi".into(),
            ..Profile::default()
        };
        p.frames.insert(
            "message_update".into(),
            FrameRule {
                successor: "message_end".into(),
                key: None,
                opener: Some("message_start".into()),
                // `partial` comes early in the line, `message` after the first snapshot.
                snapshot: Snapshot::IfAny(vec![
                    "assistantMessageEvent.partial".into(),
                    "message".into(),
                ]),
            },
        );
        p.frames.insert(
            "tool_execution_update".into(),
            FrameRule {
                successor: "tool_execution_end".into(),
                key: Some("toolCallId".into()),
                opener: None,
                snapshot: Snapshot::Always,
            },
        );
        p.boundaries.insert("turn_end".into(), Projection::TurnEnd);
        p.boundaries
            .insert("agent_end".into(), Projection::AgentEnd);
        p.closers.insert("agent_end".into());
        p
    }

    /// DeepSeek Harness: `agent/stream-chunk` mirrored the durable `assistant/chunk`.
    pub fn dsh() -> Profile {
        let mut p = Profile {
            name: "dsh".into(),
            ..Profile::default()
        };
        p.mirrors.insert("agent/stream-chunk".into());
        p
    }

    /// The profile for a dialect, as `auto` chooses it.
    pub fn for_dialect(d: Dialect) -> Profile {
        match d {
            Dialect::PiStreamOld | Dialect::PiStreamNew | Dialect::PiStream => Profile::pi(),
            Dialect::Dsh => Profile::dsh(),
            _ => Profile::empty(),
        }
    }

    pub fn classify(&self, kind: Option<&str>) -> Class {
        let Some(t) = kind else { return Class::Fact };
        if self.frames.contains_key(t) {
            Class::Frame
        } else if self.mirrors.contains(t) {
            Class::Mirror
        } else if self.boundaries.contains_key(t) {
            Class::Boundary
        } else {
            Class::Fact
        }
    }

    /// Makes `t` a fact, whatever it was.
    pub fn set_fact(&mut self, t: &str) {
        self.frames.remove(t);
        self.mirrors.remove(t);
        self.boundaries.remove(t);
    }

    /// Adds `--frame TYPE=SUCCESSOR`: a keyless delta frame (kept whole when orphaned).
    pub fn add_frame_flag(&mut self, spec: &str) -> Result<()> {
        let Some((t, succ)) = spec.split_once('=') else {
            bail!("--frame expects TYPE=SUCCESSOR, got '{spec}'");
        };
        if t.is_empty() || succ.is_empty() {
            bail!("--frame expects TYPE=SUCCESSOR, got '{spec}'");
        }
        self.set_fact(t);
        self.frames.insert(
            t.to_string(),
            FrameRule {
                successor: succ.to_string(),
                key: None,
                opener: None,
                snapshot: Snapshot::Never,
            },
        );
        Ok(())
    }

    pub fn add_boundary(&mut self, t: &str) {
        self.set_fact(t);
        let projection = match t {
            "turn_end" => Projection::TurnEnd,
            "agent_end" => Projection::AgentEnd,
            _ => Projection::Scalars,
        };
        self.boundaries.insert(t.to_string(), projection);
    }

    pub fn add_mirror(&mut self, t: &str) {
        self.set_fact(t);
        self.mirrors.insert(t.to_string());
    }

    /// Reads a profile file (see `docs/FORMAT.md`, "Profile files").
    pub fn from_file(path: &Path) -> Result<Profile> {
        let text =
            std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let file: ProfileFile = serde_json::from_slice(&text)
            .with_context(|| format!("{}: not a valid profile file", path.display()))?;
        let mut p = match file.extends.as_deref() {
            None | Some("none") => Profile::empty(),
            Some("pi") => Profile::pi(),
            Some("dsh") => Profile::dsh(),
            Some(other) => bail!(
                "{}: unknown profile to extend: '{other}' (pi, dsh or none)",
                path.display()
            ),
        };
        p.name = path.display().to_string();
        for (t, f) in file.frames {
            p.set_fact(&t);
            p.frames.insert(
                t,
                FrameRule {
                    successor: f.successor,
                    key: f.key,
                    opener: f.opener,
                    snapshot: f.snapshot.unwrap_or(Snapshot::Never),
                },
            );
        }
        for t in &file.mirrors {
            p.add_mirror(t);
        }
        for t in &file.boundaries {
            p.add_boundary(t);
        }
        for t in &file.closers {
            p.closers.insert(t.clone());
        }
        for t in &file.facts {
            p.set_fact(t);
        }
        Ok(p)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    extends: Option<String>,
    #[serde(default)]
    frames: BTreeMap<String, FrameFile>,
    #[serde(default)]
    mirrors: Vec<String>,
    #[serde(default)]
    boundaries: Vec<String>,
    #[serde(default)]
    closers: Vec<String>,
    #[serde(default)]
    facts: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameFile {
    successor: String,
    key: Option<String>,
    opener: Option<String>,
    snapshot: Option<Snapshot>,
}

// ---------------------------------------------------------------------------------------
// Boundary projection, on raw bytes
// ---------------------------------------------------------------------------------------

/// Projects a boundary so it stops repeating what it closes over. Every other top-level
/// field is copied as raw text, in place; only the fields closed over are replaced.
/// Returns `None` when the line is not a JSON object (it is then kept as it is).
pub fn project(line: &[u8], how: Projection) -> Option<Vec<u8>> {
    let start = json::skip_ws(line, 0);
    if line.get(start) != Some(&b'{') || json::validate(line).is_err() {
        return None;
    }
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let mut first = true;
    let mut push = |out: &mut Vec<u8>, key: &[u8], value: &[u8]| {
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(key);
        out.extend_from_slice(b"\":");
        out.extend_from_slice(value);
    };
    let mut counted = false;
    for (key, value) in json::members(line) {
        // Keys are matched decoded, but copied as they were spelled.
        let name = ["message", "toolResults", "messages"]
            .into_iter()
            .find(|n| json::key_is(key, n))
            .unwrap_or_default();
        match (how, name) {
            (Projection::TurnEnd, "message") => {
                let role = json::field(value, "role");
                if let Some(role) = role {
                    push(&mut out, b"messageRole", role);
                }
            }
            (Projection::TurnEnd, "toolResults") | (Projection::AgentEnd, "messages") => {
                let name: &[u8] = if how == Projection::TurnEnd {
                    b"toolResultCount"
                } else {
                    b"messageCount"
                };
                push(&mut out, name, array_len(value).to_string().as_bytes());
                counted = true;
            }
            (Projection::Scalars, _) if matches!(value.first(), Some(b'{' | b'[')) => {}
            _ => push(&mut out, key, value),
        }
    }
    // A boundary with nothing to close over still projects: a count of 0.
    if !counted {
        match how {
            Projection::TurnEnd => push(&mut out, b"toolResultCount", b"0"),
            Projection::AgentEnd => push(&mut out, b"messageCount", b"0"),
            Projection::Scalars => {}
        }
    }
    out.push(b'}');
    Some(out)
}

/// The number of elements of a raw JSON array (0 for anything else).
fn array_len(raw: &[u8]) -> usize {
    if raw.first() != Some(&b'[') {
        return 0;
    }
    let mut n = 0;
    let mut i = json::skip_ws(raw, 1);
    while i < raw.len() && raw[i] != b']' {
        let Some(end) = json::skip_value(raw, i) else {
            break;
        };
        n += 1;
        i = json::skip_ws(raw, end);
        if raw.get(i) == Some(&b',') {
            i = json::skip_ws(raw, i + 1);
        }
    }
    n
}

// ---------------------------------------------------------------------------------------
// Frame bounding
// ---------------------------------------------------------------------------------------

/// What replaces the text a bounded frame could not keep.
pub const TRUNCATED: &str = "[live output truncated]";

/// Identifier fields longer than this (UTF-16 units) are clipped.
const ID_CLIP: usize = 64;

/// Bounds an opted-in frame to `cap` serialized bytes. A frame within the cap is kept as it
/// is. A larger one becomes `{"type":T,<identifiers>,"truncated":true,"text":"[live output
/// truncated]…tail"}`: the tail of its text, its top-level identifiers (fields named `id` or
/// ending in `Id`, `Name` or `name`) clipped, and nothing else. Sizes are measured on the
/// serialized bytes, after JSON escaping. Returns `None` when not even the type fits.
pub fn bound(line: &[u8], cap: usize) -> Option<Vec<u8>> {
    if line.len() <= cap {
        return Some(line.to_vec());
    }
    let v = Value::parse(line).ok();
    let kind = v
        .as_ref()
        .and_then(|v| v.get("type"))
        .cloned()
        .unwrap_or(Value::Null);
    let text = v.as_ref().map(frame_text).unwrap_or_default();
    let ids: Vec<(Vec<u16>, Vec<u16>)> = match &v {
        Some(Value::Object(members)) => members
            .iter()
            .filter(|(k, _)| is_identifier(k))
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k.clone(), s.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // Try with clipped identifiers, then with shorter ones, then without: each attempt is a
    // direct computation, so the loop ends after at most three.
    for clip in [Some(ID_CLIP), Some(8), None] {
        let ids: Vec<(Vec<u16>, Vec<u16>)> = match clip {
            Some(n) => ids
                .iter()
                .map(|(k, v)| (k.clone(), clip_units(v, n)))
                .collect(),
            None => Vec::new(),
        };
        let skeleton = render_bounded(&kind, &ids, &[]);
        if skeleton.len() > cap {
            continue;
        }
        let tail = tail_within(&text, cap - skeleton.len());
        let out = render_bounded(&kind, &ids, tail);
        debug_assert!(out.len() <= cap);
        return Some(out);
    }
    None
}

fn is_identifier(key: &[u16]) -> bool {
    let k = String::from_utf16_lossy(key);
    k == "id" || k.ends_with("Id") || k.ends_with("Name") || k.ends_with("name")
}

fn clip_units(s: &[u16], n: usize) -> Vec<u16> {
    if s.len() <= n {
        return s.to_vec();
    }
    let mut end = n;
    // Never split a surrogate pair.
    if end > 0 && (0xD800..=0xDBFF).contains(&s[end - 1]) {
        end -= 1;
    }
    let mut out = s[..end].to_vec();
    out.push(0x2026); // …
    out
}

fn render_bounded(kind: &Value, ids: &[(Vec<u16>, Vec<u16>)], tail: &[u16]) -> Vec<u8> {
    let mut out = b"{\"type\":".to_vec();
    kind.write_json(&mut out);
    for (k, v) in ids {
        out.push(b',');
        value::write_string(k, &mut out);
        out.push(b':');
        value::write_string(v, &mut out);
    }
    out.extend_from_slice(b",\"truncated\":true,\"text\":");
    let mut text: Vec<u16> = TRUNCATED.encode_utf16().collect();
    text.extend_from_slice(tail);
    value::write_string(&text, &mut out);
    out.push(b'}');
    out
}

/// The longest tail of `text` whose escaped form fits in `budget` bytes. Never starts in
/// the middle of a surrogate pair.
fn tail_within(text: &[u16], budget: usize) -> &[u16] {
    let mut used = 0;
    let mut start = text.len();
    while start > 0 {
        let (n, size) = last_char(&text[..start]);
        if used + size > budget {
            break;
        }
        used += size;
        start -= n;
    }
    &text[start..]
}

/// The last character of `s`: how many units it takes and its escaped size in bytes.
fn last_char(s: &[u16]) -> (usize, usize) {
    let u = s[s.len() - 1];
    if (0xDC00..=0xDFFF).contains(&u) && s.len() >= 2 && (0xD800..=0xDBFF).contains(&s[s.len() - 2])
    {
        return (2, 4);
    }
    let size = match u {
        0x22 | 0x5C | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => 2,
        0..=0x1F | 0xD800..=0xDFFF => 6,
        0x20..=0x7F => 1,
        0x80..=0x7FF => 2,
        _ => 3,
    };
    (1, size)
}

/// The text a frame carries, in document order: every string under a key named `text`,
/// `thinking`, `delta` or `partialJson`. pi frames keep their output there.
fn frame_text(v: &Value) -> Vec<u16> {
    fn walk(v: &Value, out: &mut Vec<u16>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(members) => {
                for (k, v) in members {
                    match v {
                        Value::String(s)
                            if ["text", "thinking", "delta", "partialJson"]
                                .iter()
                                .any(|n| value::eq_str(k, n)) =>
                        {
                            out.extend_from_slice(s)
                        }
                        _ => walk(v, out),
                    }
                }
            }
            _ => {}
        }
    }
    // A snapshot frame carries its value twice (`message` and `partial`); one copy is enough.
    let v = match (v.get("message"), v.get("assistantMessageEvent")) {
        (Some(m), _) => m,
        (None, Some(e)) => e,
        _ => v,
    };
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn classifies_pi_types() {
        let pi = Profile::pi();
        let cases = [
            ("message_update", Class::Frame),
            ("tool_execution_update", Class::Frame),
            ("turn_end", Class::Boundary),
            ("agent_end", Class::Boundary),
            ("message_end", Class::Fact),
            ("message_start", Class::Fact),
            ("tool_execution_start", Class::Fact),
            ("tool_execution_end", Class::Fact),
            ("bash_execution_update", Class::Fact),
            ("agent_start", Class::Fact),
            ("agent_settled", Class::Fact),
            ("turn_start", Class::Fact),
            ("session", Class::Fact),
            ("something_new", Class::Fact),
        ];
        for (t, c) in cases {
            assert_eq!(pi.classify(Some(t)), c, "{t}");
        }
        assert_eq!(pi.classify(None), Class::Fact);
        assert_eq!(
            Profile::dsh().classify(Some("agent/stream-chunk")),
            Class::Mirror
        );
        assert_eq!(
            Profile::dsh().classify(Some("assistant/chunk")),
            Class::Fact
        );
    }

    #[test]
    fn every_pi_frame_has_a_durable_successor() {
        let pi = Profile::pi();
        for rule in pi.frames.values() {
            assert_eq!(pi.classify(Some(&rule.successor)), Class::Fact);
        }
    }

    #[test]
    fn projects_boundaries_keeping_other_fields_raw() {
        let turn = br#"{"type":"turn_end","id":7,"message":{"role":"assistant","content":[]},"toolResults":[{"a":1},{"b":[2,3]}],"ts":1.50}"#;
        assert_eq!(
            s(project(turn, Projection::TurnEnd).unwrap()),
            r#"{"type":"turn_end","id":7,"messageRole":"assistant","toolResultCount":2,"ts":1.50}"#
        );
        assert_eq!(
            s(project(br#"{"type":"turn_end"}"#, Projection::TurnEnd).unwrap()),
            r#"{"type":"turn_end","toolResultCount":0}"#
        );
        let agent = br#"{"type":"agent_end","messages":[{},{},{}],"willRetry":false}"#;
        assert_eq!(
            s(project(agent, Projection::AgentEnd).unwrap()),
            r#"{"type":"agent_end","messageCount":3,"willRetry":false}"#
        );
        assert_eq!(
            s(project(
                br#"{"type":"x","a":[1],"b":"keep","c":{"d":1}}"#,
                Projection::Scalars
            )
            .unwrap()),
            r#"{"type":"x","b":"keep"}"#
        );
        assert_eq!(project(b"not json", Projection::TurnEnd), None);
    }

    pub(super) fn frame_with(text: &str, id: &str) -> Vec<u8> {
        let mut out = br#"{"type":"tool_execution_update","toolCallId":"#.to_vec();
        value::write_string(&id.encode_utf16().collect::<Vec<_>>(), &mut out);
        out.extend_from_slice(br#","toolName":"bash","args":{"command":"x"},"partialResult":{"content":[{"type":"text","text":"#);
        value::write_string(&text.encode_utf16().collect::<Vec<_>>(), &mut out);
        out.extend_from_slice(br#"}],"details":{"big":true}}}"#);
        out
    }

    #[test]
    fn bounded_frames_fit_the_cap_whatever_the_text() {
        let texts = [
            "a".repeat(10_000),
            "\u{1}\u{2}\n\"\\".repeat(3_000),
            "文字化け".repeat(3_000),
            "🦀👍🏽".repeat(3_000),
            "x".repeat(5000) + "\u{1F980}",
        ];
        for cap in [1024, 1500, 4096, 9999] {
            for t in &texts {
                let f = frame_with(t, "call_1");
                let b = bound(&f, cap).unwrap();
                assert!(b.len() <= cap, "{} > {cap}", b.len());
                if f.len() <= cap {
                    assert_eq!(b, f, "a frame within the cap is kept as it is");
                    continue;
                }
                let v = Value::parse(&b).unwrap();
                let text = v.get("text").unwrap().as_str().unwrap();
                assert!(text.starts_with(TRUNCATED));
                assert!(t.ends_with(&text[TRUNCATED.len()..]), "keeps a tail");
                assert!(text.len() > TRUNCATED.len(), "keeps some text");
                assert_eq!(v.get("toolCallId").unwrap().as_str().unwrap(), "call_1");
                assert!(v.get("args").is_none() && v.get("partialResult").is_none());
            }
        }
    }

    #[test]
    fn bounding_handles_lone_surrogates_and_huge_ids() {
        let mut f =
            br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":""#
                .to_vec();
        for _ in 0..2000 {
            f.extend_from_slice(br"ab\ud800");
        }
        f.extend_from_slice(br#""}}"#);
        let b = bound(&f, 1024).unwrap();
        assert!(b.len() <= 1024);
        assert!(json::validate(&b).is_ok());
        assert!(s(b).contains("\\ud800"));
        let huge_id = "i".repeat(1 << 20);
        let f = frame_with("out", &huge_id);
        let b = bound(&f, 1024).unwrap();
        assert!(b.len() <= 1024, "{}", b.len());
        assert!(
            Value::parse(&b)
                .unwrap()
                .get("toolCallId")
                .unwrap()
                .as_str()
                .unwrap()
                .len()
                < 100
        );
        // Within the cap, a frame is kept byte for byte.
        let small = frame_with("out", "c");
        assert_eq!(bound(&small, 4096).unwrap(), small);
        // Not even the type fits: dropped.
        assert_eq!(bound(&frame_with(&"x".repeat(5000), "c"), 10), None);
    }
}
