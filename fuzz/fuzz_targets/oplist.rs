//! The wire decoder and the applier on arbitrary op lists: no panic, every rejection an
//! error. And for every batch that decodes, encoding it again and decoding that with a
//! fresh stream gives the same ops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::delta::oplist::{Replay, parse_record};
use sess::delta::wire::{Decoder, Encoder};
use sess::value::Value;

fuzz_target!(|data: &[u8]| {
    let mut replay = Replay::default();
    for line in data.split(|&b| b == b'\n') {
        let Ok(rec) = parse_record(line) else { continue };
        let Ok(ops) = Decoder::default().decode(&rec.ops) else { continue };
        let wire = Encoder::default().encode(&ops).to_json();
        let again = Decoder::default().decode(&Value::parse(&wire).expect("the encoder writes JSON"));
        assert_eq!(again.as_ref().ok(), Some(&ops));
        if replay.batch(&rec.ops).is_err() {
            break;
        }
    }
});
