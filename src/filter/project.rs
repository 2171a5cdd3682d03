//! Boundary projection, on raw bytes: a boundary keeps every member as it was spelled, in
//! place, except the ones its profile replaces (counted, renamed, dropped).

use crate::json;
use crate::profile::{Projection, Replace};

/// Projects a boundary line. Returns `None` when the line is not one JSON object (it is
/// then kept as it is).
pub fn project(line: &[u8], how: &Projection) -> Option<Vec<u8>> {
    let start = json::skip_ws(line, 0);
    if line.get(start) != Some(&b'{') || json::validate(line).is_err() {
        return None;
    }
    let rules: Vec<(Vec<&str>, &Replace)> = how
        .replace
        .iter()
        .map(|r| (r.field.split('.').collect(), r))
        .collect();
    let rules: Vec<(&[&str], &Replace)> = rules.iter().map(|(p, r)| (&p[..], *r)).collect();
    let mut out = Vec::with_capacity(256);
    object(line, &rules, how.scalars_only, &mut out);
    Some(out)
}

/// Writes the projection of one object. `rules` hold the paths that remain below it.
fn object(obj: &[u8], rules: &[(&[&str], &Replace)], scalars_only: bool, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    let mut counted = vec![false; rules.len()];
    for (key, value) in json::members(obj) {
        // Keys are matched decoded, but copied as they were spelled.
        let here: Vec<usize> = (0..rules.len())
            .filter(|&i| json::key_is(key, rules[i].0[0]))
            .collect();
        let Some(&i) = here.first() else {
            if !(scalars_only && matches!(value.first(), Some(b'{' | b'['))) {
                member(out, &mut first, key, value);
            }
            continue;
        };
        let (path, rule) = rules[i];
        if path.len() > 1 {
            let below: Vec<(&[&str], &Replace)> = here
                .iter()
                .map(|&j| (&rules[j].0[1..], rules[j].1))
                .collect();
            if value.first() == Some(&b'{') {
                let mut inner = Vec::new();
                object(value, &below, false, &mut inner);
                member(out, &mut first, key, &inner);
            } else {
                member(out, &mut first, key, value);
            }
            continue;
        }
        if let Some(name) = &rule.count {
            let n = array_len(value).to_string();
            member(out, &mut first, name.as_bytes(), n.as_bytes());
            counted[i] = true;
        } else if !rule.drop {
            for k in &rule.keep {
                if let Some(v) = json::field(value, &k.from) {
                    member(out, &mut first, k.name.as_bytes(), v);
                }
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
        // The nested count is added, 0, when the member is absent from its object.
        let line = br#"{"type":"progress","data":{"type":"hook_progress"}}"#;
        assert_eq!(
            s(project(line, &how).unwrap()),
            r#"{"type":"progress","data":{"type":"hook_progress","normalizedMessageCount":0}}"#
        );
    }
}
