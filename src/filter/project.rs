//! Boundary projection, on raw bytes: a boundary keeps every member as it was spelled, in
//! place, except the ones its profile replaces (counted, renamed, dropped).

use crate::json;
use crate::profile::{Projection, Replace};

/// Projects a boundary line. Returns `None` when the line is not one JSON object (it is
/// then kept as it is).
///
/// One pass: what is kept is checked strictly on the way, what is dropped or counted only
/// skipped as JSON-shaped, so the cost of a boundary that repeats a whole history is one
/// skip of that history.
pub fn project(line: &[u8], how: &Projection) -> Option<Vec<u8>> {
    let rules: Vec<(Vec<&str>, &Replace)> = how
        .replace
        .iter()
        .map(|r| (r.field.split('.').collect(), r))
        .collect();
    let rules: Vec<(&[&str], &Replace)> = rules.iter().map(|(p, r)| (&p[..], *r)).collect();
    let start = json::skip_ws(line, 0);
    // The whitespace around the object stays, a CRLF log's `\r` with it.
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&line[..start]);
    let end = object(line, start, &rules, how.scalars_only, &mut out)?;
    (json::skip_ws(line, end) == line.len()).then(|| {
        out.extend_from_slice(&line[end..]);
        out
    })
}

/// Writes the projection of the object at `b[i]`; returns the index after it. `rules`
/// hold the paths that remain below it.
fn object(
    b: &[u8],
    i: usize,
    rules: &[(&[&str], &Replace)],
    scalars_only: bool,
    out: &mut Vec<u8>,
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    out.push(b'{');
    let mut first = true;
    let mut counted = vec![false; rules.len()];
    let mut at = json::skip_ws(b, i + 1);
    if b.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key, value) = key_colon(b, at)?;
            let end = one_member(
                b,
                key,
                value,
                rules,
                scalars_only,
                &mut counted,
                &mut first,
                out,
            )?;
            at = json::skip_ws(b, end);
            match b.get(at) {
                Some(b',') => at = json::skip_ws(b, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    // A boundary with nothing to close over still projects: a count of 0.
    for (i, (path, rule)) in rules.iter().enumerate() {
        if let (1, Some(name), false) = (path.len(), &rule.count, counted[i]) {
            member(out, &mut first, name.as_bytes(), b"0");
        }
    }
    out.push(b'}');
    Some(at)
}

/// The raw key (between its quotes) of the member at `b[i]`, and where its value starts.
fn key_colon(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let key_end = json::string_end_strict(b, i).ok()?;
    let key = &b[i + 1..key_end - 1];
    std::str::from_utf8(key).ok()?;
    let colon = json::skip_ws(b, key_end);
    (b.get(colon) == Some(&b':')).then(|| (key, json::skip_ws(b, colon + 1)))
}

/// Projects one member whose value starts at `b[v]`; returns the index after the value.
#[allow(clippy::too_many_arguments)]
fn one_member(
    b: &[u8],
    key: &[u8],
    v: usize,
    rules: &[(&[&str], &Replace)],
    scalars_only: bool,
    counted: &mut [bool],
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Option<usize> {
    // Keys are matched decoded, but copied as they were spelled.
    let here: Vec<usize> = (0..rules.len())
        .filter(|&i| json::key_is(key, rules[i].0[0]))
        .collect();
    let Some(&i) = here.first() else {
        let end = json::value_end_strict(b, v).ok()?;
        if !(scalars_only && matches!(b.get(v), Some(b'{' | b'['))) {
            member(out, first, key, &b[v..end]);
        }
        return Some(end);
    };
    let (path, rule) = rules[i];
    if path.len() > 1 {
        if b.get(v) != Some(&b'{') {
            let end = json::value_end_strict(b, v).ok()?;
            member(out, first, key, &b[v..end]);
            return Some(end);
        }
        let below: Vec<(&[&str], &Replace)> = here
            .iter()
            .map(|&j| (&rules[j].0[1..], rules[j].1))
            .collect();
        let mut inner = Vec::new();
        let end = object(b, v, &below, false, &mut inner)?;
        member(out, first, key, &inner);
        return Some(end);
    }
    if let Some(name) = &rule.count {
        let (n, end) = array_len(b, v)?;
        member(out, first, name.as_bytes(), n.to_string().as_bytes());
        counted[i] = true;
        return Some(end);
    }
    let end = json::skip_value(b, v)?;
    if !rule.drop {
        let value = &b[v..end];
        for k in &rule.keep {
            if let Some(kept) = json::field(value, &k.from) {
                json::validate(kept).ok()?;
                member(out, first, k.name.as_bytes(), kept);
            }
        }
    }
    Some(end)
}

fn member(out: &mut Vec<u8>, first: &mut bool, key: &[u8], value: &[u8]) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key);
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value);
}

/// The number of elements of the raw JSON array at `b[i]` (0 for any other value), and
/// the index after the value, found in the same walk.
fn array_len(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if b.get(i) != Some(&b'[') {
        return Some((0, json::skip_value(b, i)?));
    }
    let mut n = 0;
    let mut at = json::skip_ws(b, i + 1);
    if b.get(at) == Some(&b']') {
        return Some((0, at + 1));
    }
    loop {
        at = json::skip_ws(b, json::skip_value(b, at)?);
        n += 1;
        match b.get(at) {
            Some(b',') => at = json::skip_ws(b, at + 1),
            Some(b']') => return Some((n, at + 1)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::registry;

    fn s(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn projects_boundaries_keeping_other_fields_raw() {
        let pi = registry::builtin("pi").unwrap();
        let (turn, agent) = (&pi.boundaries["turn_end"], &pi.boundaries["agent_end"]);
        let line = br#"{"type":"turn_end","id":7,"message":{"role":"assistant","content":[]},"toolResults":[{"a":1},{"b":[2,3]}],"ts":1.50}"#;
        assert_eq!(
            s(project(line, turn).unwrap()),
            r#"{"type":"turn_end","id":7,"messageRole":"assistant","toolResultCount":2,"ts":1.50}"#
        );
        assert_eq!(
            s(project(br#"{"type":"turn_end"}"#, turn).unwrap()),
            r#"{"type":"turn_end","toolResultCount":0}"#
        );
        let line = br#"{"type":"agent_end","messages":[{},{},{}],"willRetry":false}"#;
        assert_eq!(
            s(project(line, agent).unwrap()),
            r#"{"type":"agent_end","messageCount":3,"willRetry":false}"#
        );
        let scalars = Projection {
            replace: Vec::new(),
            scalars_only: true,
        };
        assert_eq!(
            s(project(br#"{"type":"x","a":[1],"b":"keep","c":{"d":1}}"#, &scalars).unwrap()),
            r#"{"type":"x","b":"keep"}"#
        );
        assert_eq!(project(b"not json", turn), None);
    }

    #[test]
    fn projects_members_below_the_top() {
        let how: Projection = serde_json::from_str(
            r#"{"replace":[{"field":"data.normalizedMessages","count":"normalizedMessageCount"},{"field":"data.blob","drop":true}]}"#,
        )
        .unwrap();
        let line = br#"{"type":"progress","data":{"type":"agent_progress","normalizedMessages":[1,2],"blob":"x","agentId":"a"},"uuid":"u"}"#;
        assert_eq!(
            s(project(line, &how).unwrap()),
            r#"{"type":"progress","data":{"type":"agent_progress","normalizedMessageCount":2,"agentId":"a"},"uuid":"u"}"#
        );
        // Every cut of the line is either kept whole (None) or projects to JSON.
        let line = br#"{"type":"progress","data":{"type":"agent_progress","normalizedMessages":[{"a":"x\"]"},[]],"blob":"x","agentId":"a"},"uuid":"u"}"#;
        for cut in 0..line.len() {
            if let Some(p) = project(&line[..cut], &how) {
                panic!("{cut}: {}", s(p));
            }
        }
        // What is kept is checked strictly; what is dropped only skipped.
        assert_eq!(project(br#"{"type":"p","ts":01}"#, &how), None);
        assert_eq!(project(b"{\"type\":\"p\",\"k\xff\":1}", &how), None);
        assert_eq!(
            s(project(br#"{"data":{"blob":[01,"\x"]}}"#, &how).unwrap()),
            r#"{"data":{"normalizedMessageCount":0}}"#
        );
        // The nested count is added, 0, when the member is absent from its object.
        let line = br#"{"type":"progress","data":{"type":"hook_progress"}}"#;
        assert_eq!(
            s(project(line, &how).unwrap()),
            r#"{"type":"progress","data":{"type":"hook_progress","normalizedMessageCount":0}}"#
        );
    }
}
