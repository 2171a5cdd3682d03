//! Bounding an opted-in frame (`--include-live-events`) to `--max-frame-bytes`: a frame
//! too large keeps its kind, its identifiers (clipped) and the tail of its text.

use crate::profile::Bounding;
use crate::value::{self, Value};

/// What replaces the text a bounded frame could not keep.
pub const TRUNCATED: &str = "[live output truncated]";

/// Identifier fields longer than this (UTF-16 units) are clipped.
const ID_CLIP: usize = 64;

/// Whether [`bound`] keeps a frame as it is.
pub fn kept_whole(line: &[u8], cap: usize) -> bool {
    line.len() <= cap
}

/// Bounds an opted-in frame to `cap` serialized bytes. A frame within the cap is kept as it
/// is. A larger one becomes `{"type":T,<identifiers>,"truncated":true,"text":"[live output
/// truncated]…tail"}`: the tail of its text, its top-level identifiers (fields named `id` or
/// ending in `Id`, `Name` or `name`) clipped, and nothing else. Sizes are measured on the
/// serialized bytes, after JSON escaping. Returns `None` when not even the type fits.
pub fn bound(line: &[u8], cap: usize, how: &Bounding) -> Option<Vec<u8>> {
    if kept_whole(line, cap) {
        return Some(line.to_vec());
    }
    // A CRLF log's frame keeps its `\r`, within the cap: the output's lines all end alike.
    if let Some(body) = line.strip_suffix(b"\r") {
        let mut out = bounded(body, cap.checked_sub(1)?, how)?;
        out.push(b'\r');
        return Some(out);
    }
    bounded(line, cap, how)
}

/// [`bound`] of a frame larger than `cap`.
fn bounded(line: &[u8], cap: usize, how: &Bounding) -> Option<Vec<u8>> {
    let (kind, ids, text) = match Value::parse(line) {
        Ok(v) => {
            let kind = v.get("type").cloned();
            let text = frame_text(&v, how);
            let ids = match v {
                Value::Object(members) => identifiers(members),
                _ => Vec::new(),
            };
            (kind, ids, text)
        }
        // Too deep to read whole (or not JSON): its kind and identifiers are read from its
        // top-level members as written, and no text is kept (the kind was null: such a
        // frame is still a frame of its kind).
        Err(_) => {
            let mut kind = None;
            let mut members = Vec::new();
            for (key, raw) in crate::json::members(line) {
                // Only the members kept are read (another may be the deep one).
                let Some(key) = decoded_key(key) else {
                    continue;
                };
                let is_type = value::eq_str(&key, "type");
                if !(is_type || is_identifier(&key)) {
                    continue;
                }
                let Ok(value) = Value::parse(raw) else {
                    continue;
                };
                match is_type {
                    true => kind = Some(value),
                    false => members.push((key, value)),
                }
            }
            (kind, identifiers(members), Vec::new())
        }
    };
    let kind = kind.unwrap_or(Value::Null);
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

/// The top-level members that are identifiers with a string value.
fn identifiers(members: Vec<(Vec<u16>, Value)>) -> Vec<(Vec<u16>, Vec<u16>)> {
    members
        .into_iter()
        .filter(|(k, _)| is_identifier(k))
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            _ => None,
        })
        .collect()
}

/// A member's key as written (between its quotes), decoded.
fn decoded_key(raw: &[u8]) -> Option<Vec<u16>> {
    let quoted = [b"\"", raw, b"\""].concat();
    match Value::parse(&quoted).ok()? {
        Value::String(s) => Some(s),
        _ => None,
    }
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

/// The text a frame carries, in document order: every string under a key the profile
/// names, within the first of its `within` members the frame has (or the whole frame).
fn frame_text(v: &Value, how: &Bounding) -> Vec<u16> {
    fn walk(v: &Value, keys: &[String], out: &mut Vec<u16>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| walk(i, keys, out)),
            Value::Object(members) => {
                for (k, v) in members {
                    match v {
                        Value::String(s) if keys.iter().any(|n| value::eq_str(k, n)) => {
                            out.extend_from_slice(s)
                        }
                        _ => walk(v, keys, out),
                    }
                }
            }
            _ => {}
        }
    }
    let v = how.within.iter().find_map(|m| v.get(m)).unwrap_or(v);
    let mut out = Vec::new();
    walk(v, &how.text, &mut out);
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn s(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    fn pi() -> Bounding {
        crate::profile::registry::builtin("pi").unwrap().bound
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
                let b = bound(&f, cap, &pi()).unwrap();
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

    /// A CRLF log's bounded frames lost their `\r`: the output mixed line endings.
    #[test]
    fn a_bounded_frame_of_a_crlf_log_keeps_its_cr_within_the_cap() {
        let mut f = frame_with(&"x".repeat(5000), "call-1");
        f.push(b'\r');
        for cap in [1024, 1100] {
            let out = bound(&f, cap, &pi()).unwrap();
            assert!(out.len() <= cap, "{} > {cap}", out.len());
            let body = out.strip_suffix(b"\r").expect("the \\r kept");
            assert!(json::validate(body).is_ok());
            assert_eq!(
                s(body.to_vec()),
                s(bound(&f[..f.len() - 1], cap - 1, &pi()).unwrap())
            );
        }
    }

    /// A frame nested past the reader's depth was written as `{"type":null,...}`, its
    /// identifiers dropped.
    #[test]
    fn a_frame_too_deep_to_read_keeps_its_type_and_identifiers() {
        let n = 1200;
        let deep = format!(
            "{}{{\"text\":\"{}\"}}{}",
            "{\"a\":".repeat(n),
            "y".repeat(3000),
            "}".repeat(n)
        );
        let line = format!(r#"{{"type":"message_update","toolCallId":"abc","message":{deep}}}"#);
        let out = s(bound(line.as_bytes(), 1024, &pi()).unwrap());
        assert_eq!(
            out,
            r#"{"type":"message_update","toolCallId":"abc","truncated":true,"text":"[live output truncated]"}"#
        );
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
        let b = bound(&f, 1024, &pi()).unwrap();
        assert!(b.len() <= 1024);
        assert!(json::validate(&b).is_ok());
        assert!(s(b).contains("\\ud800"));
        let huge_id = "i".repeat(1 << 20);
        let f = frame_with("out", &huge_id);
        let b = bound(&f, 1024, &pi()).unwrap();
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
        assert_eq!(bound(&small, 4096, &pi()).unwrap(), small);
        // Not even the type fits: dropped.
        assert_eq!(bound(&frame_with(&"x".repeat(5000), "c"), 10, &pi()), None);
    }
}
