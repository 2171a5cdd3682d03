//! The wire decoder and the applier on arbitrary op lists: no panic, every rejection an
//! error. And for every batch that decodes, encoding it again and decoding that with a
//! fresh stream gives the same ops; and the text kept in step with the ops applied
//! ([`Spelled`]) is the value written whole after each one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::delta::oplist::{Replay, parse_record};
use sess::delta::spell::Spelled;
use sess::delta::wire::{Decoder, Encoder};
use sess::value::Value;

fuzz_target!(|data: &[u8]| {
    let mut replay = Replay::default();
    let mut value: Option<Value> = None;
    let mut spelled = Spelled::of(None);
    for line in data.split(|&b| b == b'\n') {
        let Ok(rec) = parse_record(line) else { continue };
        let Ok(ops) = Decoder::default().decode(&rec.ops) else { continue };
        let wire = Encoder::default().encode(&ops).to_json();
        let again = Decoder::default().decode(&Value::parse(&wire).expect("the encoder writes JSON"));
        assert_eq!(again.as_ref().ok(), Some(&ops));
        for op in ops {
            let before = spelled.text().to_vec();
            let ok = spelled.apply(&mut value, op).is_ok();
            let whole = value.as_ref().map(Value::to_json).unwrap_or_default();
            assert_eq!(spelled.text(), &whole[..], "the text kept in step");
            if !ok {
                assert_eq!(spelled.text(), &before[..], "a failed op changed the text");
            }
        }
        if replay.batch(&rec.ops).is_err() {
            break;
        }
    }
});
