//! The raw JSON scanner on arbitrary bytes: no panic, and what the validator accepts the
//! skipper spans whole, the field finder never reads past the line, and the block walk
//! skips every container exactly as the byte walk does. The canonical parse accepts exactly
//! the texts that parsing and writing give back, and the readers' strict line check agrees
//! with the validator (the cheap one must not panic).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::json;
use sess::value::Value;

fuzz_target!(|data: &[u8]| {
    let valid = json::validate(data).is_ok();
    if valid {
        let start = json::skip_ws(data, 0);
        let end = json::skip_value(data, start).expect("a valid value can be skipped");
        assert_eq!(json::skip_ws(data, end), data.len());
    }
    let _ = json::field(data, "type");
    for (k, v) in json::members(data) {
        assert!(k.len() <= data.len() && v.len() <= data.len());
        if let Some(s) = json::str_value(v) {
            let _ = s.len();
        }
        let _ = json::safe_integer(v);
        let _ = json::is_canonical_number(v);
    }
    for i in (0..data.len()).filter(|&i| matches!(data[i], b'{' | b'[')).take(8) {
        assert_eq!(
            json::blocks::container_end(data, i),
            json::blocks::scalar_end(data, i),
            "container at {i}"
        );
    }
    let _ = json::is_canonical_string(data);
    let _ = json::decode_utf16_units(data);
    let round_trips = Value::parse(data).is_ok_and(|v| v.to_json() == data);
    assert_eq!(Value::parse_canonical(data).is_some(), round_trips);
    let line = sess::io::Line {
        bytes: data,
        number: 1,
        offset: 0,
        ending: sess::io::Ending::Newline,
    };
    let mut strict = sess::syntax::Tally::new(sess::syntax::LineCheck::Strict);
    assert_eq!(strict.line("f", &line).is_ok(), valid);
    let _ = sess::syntax::Tally::new(sess::syntax::LineCheck::Warn).line("f", &line);
});
