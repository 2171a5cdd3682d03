//! What commands ask of a raw line, answered by scanning its bytes.

use std::borrow::Cow;

use crate::json;

/// The top-level `type` of a line, if the line is an object with a string `type`.
/// Only the bytes up to that field are looked at.
pub fn kind(line: &[u8]) -> Option<Cow<'_, str>> {
    json::field(line, "type").and_then(json::str_value)
}

/// Whether the line's top-level `type` is one of `types`. Compares raw bytes first, so an
/// unescaped type (the common case) costs no allocation.
pub fn kind_is_one_of(line: &[u8], types: &[String]) -> bool {
    let Some(raw) = json::field(line, "type") else {
        return false;
    };
    if let Some(inner) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\""))
        && !inner.contains(&b'\\')
    {
        return types.iter().any(|t| t.as_bytes() == inner);
    }
    json::str_value(raw).is_some_and(|t| types.iter().any(|x| *x == t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kind() {
        assert_eq!(kind(br#"{"type":"a/b","x":1}"#).as_deref(), Some("a/b"));
        assert_eq!(kind(br#"{"x":{"type":"no"}}"#), None);
        assert_eq!(kind(br#"{"type":7}"#), None);
        let types = vec!["message_end".to_string()];
        assert!(kind_is_one_of(br#"{"type":"message_end"}"#, &types));
        assert!(kind_is_one_of(br#"{"type":"message\u005fend"}"#, &types));
        assert!(!kind_is_one_of(br#"{"type":"message_start"}"#, &types));
        assert!(!kind_is_one_of(b"not json", &types));
    }
}
