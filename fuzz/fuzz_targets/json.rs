//! The raw JSON scanner on arbitrary bytes: no panic, and what the validator accepts the
//! skipper spans whole, and the field finder never reads past the line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::json;

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
    let _ = json::is_canonical_string(data);
    let _ = json::decode_utf16_units(data);
});
