//! The wire decoder and the applier on arbitrary op lists: no panic, every rejection an
//! error. And for every batch that decodes, encoding it again and decoding that with a
//! fresh stream gives the same ops; the text kept in step with the ops applied
//! ([`Spelled`], which holds no value) is the value written whole after each one, and fails
//! as applying the op to the value does; and whenever a record is read
//! from its bytes ([`raw`]), it is what the general path reads, batch after batch, and
//! applying it as read gives the value and the error the general replay gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sess::delta::apply::apply;
use sess::delta::oplist::{Ops, Replay, parse_record};
use sess::delta::raw;
use sess::delta::spell::Spelled;
use sess::delta::wire::{Decoder, Encoder};
use sess::value::Value;

fuzz_target!(|data: &[u8]| {
    let (mut replay, mut as_read) = (Replay::default(), Replay::default());
    let mut value: Option<Value> = None;
    let mut spelled = Spelled::of(None);
    let (mut fast, mut slow) = (Decoder::default(), Decoder::default());
    // One batch for the decoder, one for the replay, each reused from line to line.
    let (mut batch, mut as_read_batch) = (raw::Batch::default(), raw::Batch::default());
    for line in data.split(|&b| b == b'\n') {
        let general = parse_record(line);
        let read = raw::record(line, &mut batch);
        if let Some(r) = &read {
            let rec = general.as_ref().expect("the general path reads what the raw one reads");
            assert_eq!((r.seq, &r.address), (rec.seq, &rec.address));
            let parsed = Value::parse(r.ops).expect("raw ops are valid JSON");
            assert_eq!(parsed, rec.ops);
            let expected = slow.decode_owned(parsed.clone());
            match r.read.then(|| fast.decode_raw(&mut batch)).flatten() {
                Some(ops) => assert_eq!(Ok(ops), expected),
                None => assert_eq!(fast.decode_owned(parsed), expected),
            }
        }
        let Ok(rec) = general else { continue };
        let Ok(ops) = Decoder::default().decode(&rec.ops) else { continue };
        let wire = Encoder::default().encode(ops.clone()).to_json();
        let again = Decoder::default().decode(&Value::parse(&wire).expect("the encoder writes JSON"));
        // Compared as JSON: a number too large for a double (1e400) is Infinity, which JSON
        // (as JSON.stringify) writes as null.
        assert_eq!(again.as_deref().ok().map(as_json), Some(as_json(&ops)));
        for op in ops {
            let before = spelled.text().to_vec();
            let got = spelled.apply(op.clone());
            let want = apply(&mut value, op);
            assert_eq!(got, want, "the text's op fails as the value's does");
            let whole = value.as_ref().map(Value::to_json).unwrap_or_default();
            assert_eq!(spelled.text(), &whole[..], "the text kept in step");
            if want.is_err() {
                assert_eq!(spelled.text(), &before[..], "a failed op changed the text");
            }
        }
        let ops = match raw::record(line, &mut as_read_batch) {
            Some(r) => Ops::Raw(r.ops, r.read.then_some(&mut as_read_batch)),
            None => Ops::Parsed(rec.ops.clone()),
        };
        let applied = as_read.batch(ops, false);
        let expected = replay.batch(Ops::Parsed(rec.ops), false);
        assert_eq!(applied, expected);
        assert_eq!(as_read.value, replay.value);
        if expected.is_err() {
            break;
        }
    }
});

/// Ops as the JSON of their tuples.
fn as_json(ops: &[sess::delta::Op]) -> Vec<u8> {
    Value::Array(ops.iter().map(sess::delta::Op::to_value).collect()).to_json()
}
