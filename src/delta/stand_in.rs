//! A stand-in batch: about the bytes that the op batch carrying one snapshot to the next
//! would hold, guessed from the ranges [`super::approx::changed`] finds and the JSON bytes
//! around them, without parsing either text. `sess stats` writes it where `sess pack`
//! writes a real batch, so that interning and compression see bytes of about that size.
//!
//! Ops name values: an append holds just the bytes added at the end of a string, a value
//! put in an array or an object is held as it is written, a deletion between values or at
//! a string's front holds a path or a count, and any other change sets the string or token
//! it lies in, once however many changes it holds. What it does not see is listed in
//! `docs/FORMAT.md`, "How `sess stats` estimates snapshot rows".

use std::io::Write;
use std::ops::Range;

use super::approx;
use crate::json;

/// How far each way from a change its string's quotes are looked for.
const REACH: usize = 4096;

/// The longest token (a number, `true`, ...) a change is widened to.
const TOKEN: usize = 64;

/// How far an insertion is slid to the right to meet the end of its string: an insertion
/// into a run of equal bytes can be found anywhere along it.
const SLIDE: usize = 4096;

/// The stand-in for the batch that carries `last` to `line`: `[op,op,...]`, each op
/// `["a",N,"BYTES"]` or `["s",N,"BYTES"]` (`N` counts the ops, and in `BYTES` a `"` is
/// written `'` and a `\` is written `/`, so that the stand-in is JSON of that length).
///
/// None where the estimate writes the frame itself: when the stand-in would be longer
/// than the frame (writing the frame is then smaller, and a run ends), or when the bytes
/// that changed are not spelled as sess spells JSON (`sess pack` cannot rebuild such a
/// frame, and ends the run there).
pub fn batch(last: &[u8], line: &[u8]) -> Option<Vec<u8>> {
    let mut held: Vec<(Held, Range<usize>)> = Vec::new();
    let mut spelled = true;
    approx::changed(last, line, |r, replaced| {
        // A change in the value the last op already holds whole costs nothing more, and
        // its bytes were looked at.
        if held
            .last()
            .is_some_and(|(_, last)| last.start <= r.start && r.end <= last.end)
        {
            return;
        }
        let (how, r) = hold(line, r, replaced);
        spelled &= spelled_as_sess(line, r.clone(), how);
        push_merged(&mut held, how, r);
    });
    if !spelled {
        return None;
    }
    let mut batch = b"[".to_vec();
    for (n, (how, r)) in held.iter().enumerate() {
        if batch.len() > line.len() {
            return None;
        }
        let comma = if n > 0 { "," } else { "" };
        let verb = match how {
            Held::Appended | Held::Put => 'a',
            Held::String | Held::Token => 's',
        };
        write!(batch, r#"{comma}["{verb}",{n},""#).expect("writes to a Vec");
        batch.extend(line[r.clone()].iter().map(|&b| match b {
            b'"' => b'\'',
            b'\\' => b'/',
            b => b,
        }));
        batch.extend_from_slice(b"\"]");
    }
    batch.push(b']');
    (batch.len() <= line.len()).then_some(batch)
}

/// What an op holds of a change.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Held {
    /// Bytes added at the end of a string.
    Appended,
    /// Values put between others, in an array or an object.
    Put,
    /// The string the change lies in, set whole: its content.
    String,
    /// The token the change lies in, set whole (or bytes around it, in a string whose
    /// quotes were not found).
    Token,
}

/// What an op would hold of the change `r` of `line`, and which bytes.
fn hold(line: &[u8], r: Range<usize>, replaced: bool) -> (Held, Range<usize>) {
    if r.is_empty() {
        return deleted(line, r.start);
    }
    let around = string_around(line, &r);
    if !replaced {
        if let Some(added) = appended(line, r.clone()) {
            return (Held::Appended, added);
        }
        // Values put between others hold quotes or the bytes between values (a run of
        // whitespace is some too, which no value sess writes holds).
        let between = |b: &u8| matches!(b, b',' | b':' | b'[' | b']' | b'{' | b'}');
        let values = has_quote(line, &r)
            || line[r.clone()].iter().all(u8::is_ascii_whitespace)
            || line[r.clone()].iter().any(between);
        if values && around.is_none() && !in_token(line, &r) {
            return (Held::Put, r);
        }
    }
    match around {
        Some(content) => (Held::String, content),
        None => (Held::Token, token_around(line, r)),
    }
}

/// What an op would hold where bytes were deleted, at `at`: the string they were in,
/// whole, unless they were its first (an op drops units from its front), or the token;
/// nothing between values (an op that deletes one names only its path).
fn deleted(line: &[u8], at: usize) -> (Held, Range<usize>) {
    match string_around(line, &(at..at)) {
        Some(content) if content.start == at => (Held::Put, at..at),
        Some(content) => (Held::String, content),
        None => (Held::Token, token_around(line, at..at)),
    }
}

/// Adds a held range, merged with the ones before it that it reaches into: changes in one
/// value are one op.
fn push_merged(held: &mut Vec<(Held, Range<usize>)>, how: Held, r: Range<usize>) {
    let (mut how, mut r) = (how, r);
    while let Some((h, last)) = held.last()
        && r.start < last.end
    {
        how = if *h == how { how } else { Held::Token };
        r = last.start.min(r.start)..last.end.max(r.end);
        held.pop();
    }
    held.push((how, r));
}

/// The inserted range `r`, slid right along equal bytes, if it then ends a string: it is
/// followed by a quote that closes a value, and holds none.
fn appended(line: &[u8], r: Range<usize>) -> Option<Range<usize>> {
    for k in 0..SLIDE {
        let end = r.end + k;
        if line.get(end) == Some(&b'"') && !escaped(line, end) {
            let slid = r.start + k..end;
            let ends_value = matches!(line.get(end + 1), Some(b',' | b'}' | b']'));
            return (ends_value && !has_quote(line, &slid)).then_some(slid);
        }
        if line.get(end) != Some(&line[r.start + k]) {
            return None;
        }
    }
    None
}

/// The content of the string `r` lies in: between the nearest unescaped quotes each side,
/// the first one opening a string (after `:`, `,`, `[` or `{`) and the last one closing
/// it (before `,`, `}`, `]` or `:`). Quotes are looked for within [`REACH`] bytes; where
/// none is found on a side (and the line goes on), the string is taken to go on beyond,
/// and its content is cut at the reach. Where none is found on either side, the bytes
/// near `r` must also look like text.
fn string_around(line: &[u8], r: &Range<usize>) -> Option<Range<usize>> {
    let from = r.start.saturating_sub(REACH);
    let open = memchr::memrchr_iter(b'"', &line[from..r.start])
        .map(|p| from + p)
        .find(|&p| !escaped(line, p));
    let to = (r.end + REACH).min(line.len());
    let close = first_quote(line, r.end..to);
    if open.is_none() && close.is_none() && !looks_like_text(line, r) {
        return None;
    }
    let start = match open {
        Some(q) => opens(line, q).then_some(q + 1)?,
        None => (from > 0).then_some(from)?,
    };
    let end = match close {
        Some(q) => closes(line, q).then_some(q)?,
        None => (to < line.len()).then_some(to)?,
    };
    Some(start..end)
}

/// Whether the quote at `q` opens a string: it follows `:`, `,`, `[` or `{`.
fn opens(line: &[u8], q: usize) -> bool {
    q > 0 && matches!(line[q - 1], b':' | b',' | b'[' | b'{')
}

/// Whether the quote at `q` closes a string: `,`, `}`, `]` or `:` follows it.
fn closes(line: &[u8], q: usize) -> bool {
    matches!(line.get(q + 1), Some(b',' | b'}' | b']' | b':'))
}

/// The first unescaped quote in the bytes `r` of `line`.
fn first_quote(line: &[u8], r: Range<usize>) -> Option<usize> {
    memchr::memchr_iter(b'"', &line[r.clone()])
        .map(|p| r.start + p)
        .find(|&p| !escaped(line, p))
}

/// Whether the bytes near `r` hold a space, a letter other than `e` or a byte of UTF-8:
/// text, not an array of numbers.
fn looks_like_text(line: &[u8], r: &Range<usize>) -> bool {
    let near = &line[r.start.saturating_sub(TOKEN)..(r.end + TOKEN).min(line.len())];
    near.iter()
        .any(|&b| b == b' ' || b >= 0x80 || (b.is_ascii_alphabetic() && !matches!(b, b'e' | b'E')))
}

/// Whether `r` lies in a token (a number, `true`...): it holds no structural byte and one
/// beside it is a token's.
fn in_token(line: &[u8], r: &Range<usize>) -> bool {
    let beside = |at: Option<&u8>| at.is_some_and(|b| !structural(*b));
    !line[r.clone()].iter().any(|&b| structural(b))
        && (beside(r.start.checked_sub(1).map(|p| &line[p])) || beside(line.get(r.end)))
}

/// `r` widened to the token around it, up to [`TOKEN`] bytes each way.
fn token_around(line: &[u8], r: Range<usize>) -> Range<usize> {
    let before = &line[r.start.saturating_sub(TOKEN)..r.start];
    let start = r.start - before.iter().rev().take_while(|&&b| !structural(b)).count();
    let after = &line[r.end..(r.end + TOKEN).min(line.len())];
    let end = r.end + after.iter().take_while(|&&b| !structural(b)).count();
    start..end
}

/// Bytes that end a token.
fn structural(b: u8) -> bool {
    matches!(b, b'"' | b',' | b':' | b'[' | b']' | b'{' | b'}') || json::is_ws(b)
}

/// Whether `r` holds an unescaped quote.
fn has_quote(line: &[u8], r: &Range<usize>) -> bool {
    first_quote(line, r.clone()).is_some()
}

/// Whether the byte at `at` follows an odd number of backslashes, counting at most
/// [`TOKEN`] of them: an estimate may misread a longer run, and is not slowed by it.
fn escaped(line: &[u8], at: usize) -> bool {
    let before = &line[at.saturating_sub(TOKEN)..at];
    before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// Whether the bytes `r` of `line`, held `how`, are spelled as sess writes JSON, as far as
/// they show: valid UTF-8, no control character raw, escapes only where `JSON.stringify`
/// writes them ([`json::canonical_escape_len`]), a number held as a token spelled as
/// `JSON.stringify` spells it, and no whitespace between tokens (looked for where it is
/// known whether the bytes begin in a string: for a token, its first quote tells).
fn spelled_as_sess(line: &[u8], r: Range<usize>, how: Held) -> bool {
    if how == Held::Token && !number_as_sess(&line[r.clone()]) {
        return false;
    }
    let mut outside = match how {
        Held::Put => Some(true),
        Held::Appended | Held::String => Some(false),
        Held::Token => starts_outside(line, &r),
    };
    // Bytes that begin in the middle of an escape are looked at from its next byte.
    let mut i = (r.start + usize::from(escaped(line, r.start))).min(r.end);
    while i < r.end {
        match line[i] {
            b'"' => outside = outside.map(|o| !o),
            b' ' if outside == Some(true) => return false,
            c if c < 0x20 => return false,
            // Outside strings a backslash is no JSON: it can only begin an escape.
            b'\\' => match json::canonical_escape_len(line, i) {
                Some(len) => i += len - 1,
                None => return false,
            },
            _ => {}
        }
        i += 1;
    }
    whole_chars_are_utf8(line, r)
}

/// Whether a token that is all a number's bytes is spelled as `JSON.stringify` spells its
/// value (`1.0`, `1e2` and `-0` are not). Any other token passes.
fn number_as_sess(token: &[u8]) -> bool {
    let numeric = |b: &u8| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E');
    !token
        .first()
        .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
        || !token.iter().all(numeric)
        || json::is_canonical_number(token)
}

/// Whether the characters the bytes `r` of `line` are part of are valid UTF-8.
fn whole_chars_are_utf8(line: &[u8], r: Range<usize>) -> bool {
    let continues = |at: usize| line.get(at).is_some_and(|&b| b & 0xc0 == 0x80);
    let (mut start, mut end) = (r.start, r.end);
    while start > r.start.saturating_sub(3) && continues(start) {
        start -= 1;
    }
    while end < r.end + 3 && continues(end) {
        end += 1;
    }
    let chars = &line[start..end];
    chars.is_ascii() || std::str::from_utf8(chars).is_ok()
}

/// Whether the bytes `r` of `line` begin between values, told from their first unescaped
/// quote: one that closes a string (before `,`, `}`, `]` or `:`) says no, one that opens
/// one (after `,`, `[`, `{` or `:`) says yes. None when there is no such quote.
fn starts_outside(line: &[u8], r: &Range<usize>) -> Option<bool> {
    let q = first_quote(line, r.clone())?;
    if closes(line, q) {
        return Some(false);
    }
    opens(line, q).then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ops of the stand-in, as (verb, bytes held).
    fn ops(last: &str, line: &str) -> Option<Vec<(char, String)>> {
        let b = batch(last.as_bytes(), line.as_bytes())?;
        let v: serde_json::Value = serde_json::from_slice(&b).expect("a stand-in is JSON");
        let ops = v.as_array().expect("an array of ops").iter().map(|op| {
            let verb = op[0].as_str().unwrap().chars().next().unwrap();
            (verb, op[2].as_str().unwrap().to_string())
        });
        Some(ops.collect())
    }

    /// A line padded with a long unchanged string, so that no change is most of it.
    fn padded(s: &str) -> String {
        format!(r#"{{"pad":"{}",{}}}"#, "p".repeat(2000), &s[1..s.len() - 1])
    }

    #[test]
    fn text_added_at_the_end_of_a_string_is_held_alone() {
        let last = padded(r#"{"text":"Here is the","n":[1,2]}"#);
        let line = padded(r#"{"text":"Here is the path","n":[1,2]}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', " path".into())]);
        // Into a run of equal bytes, found at its start, it is still an append.
        let last = padded(r#"{"text":"aaaa","n":1}"#);
        let line = padded(r#"{"text":"aaaaaaa","n":1}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', "aaa".into())]);
    }

    #[test]
    fn text_added_to_a_string_longer_than_the_reach_is_held_alone() {
        let long = "one, two ".repeat(REACH / 4);
        let last = format!(r#"{{"text":"{long}","n":1}}"#);
        let line = format!(r#"{{"text":"{long}and, three","n":1}}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', "and, three".into())]);
        // Put inside it, far from both ends: its quotes are not found, and it is set as
        // far as the reach goes each way.
        let line = format!(r#"{{"text":"{long}three {long}","n":1}}"#);
        let last = format!(r#"{{"text":"{long}{long}","n":1}}"#);
        let got = ops(&last, &line).unwrap();
        let reach = 2 * REACH..2 * REACH + 20;
        assert!(
            matches!(&got[..], [('s', held)] if held.contains("three") && reach.contains(&held.len())),
            "{got:?}"
        );
    }

    #[test]
    fn text_put_inside_a_string_sets_the_string() {
        let last = padded(r#"{"text":"Here the path","n":1}"#);
        let line = padded(r#"{"text":"Here is the path","n":1}"#);
        assert_eq!(
            ops(&last, &line).unwrap(),
            [('s', "Here is the path".into())]
        );
        let last = padded(r#"{"n":12,"m":true}"#);
        let line = padded(r#"{"n":1234,"m":true}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('s', "1234".into())]);
    }

    #[test]
    fn values_put_between_others_are_held_as_written() {
        let last = padded(r#"{"c":[{"t":"a"}],"u":1}"#);
        let line = padded(r#"{"c":[{"t":"a"},{"t":"bb"}],"u":1}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', ",{'t':'bb'}".into())]);
        let last = padded(r#"{"n":[1,2]}"#);
        let line = padded(r#"{"n":[1,2,3]}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', ",3".into())]);
    }

    #[test]
    fn many_changes_in_one_string_set_it_once() {
        // A letter in every 48, far enough apart to be found one by one.
        let text: String = (0..40)
            .map(|i| format!("{i:02}{}", "abcdefg ".repeat(23)))
            .collect();
        let mut edited = text.clone().into_bytes();
        edited.iter_mut().step_by(48).for_each(|b| *b = b'X');
        let edited = String::from_utf8(edited).unwrap();
        let mut found = 0;
        approx::changed(text.as_bytes(), edited.as_bytes(), |_, _| found += 1);
        assert!(found > 20, "{found}");
        let wide = |s: &str| {
            format!(
                r#"{{"pad":"{}",{}}}"#,
                "p".repeat(20_000),
                &s[1..s.len() - 1]
            )
        };
        let last = wide(&format!(r#"{{"a":"{text}","b":"{text}"}}"#));
        let line = wide(&format!(r#"{{"a":"{edited}","b":"{text}"}}"#));
        assert_eq!(ops(&last, &line).unwrap(), [('s', edited.clone())]);
        // Changed in both strings: both set, and not one byte twice.
        let line = wide(&format!(r#"{{"a":"{edited}","b":"{edited}"}}"#));
        let held: usize = ops(&last, &line)
            .unwrap()
            .iter()
            .map(|(_, b)| b.len())
            .sum();
        assert!(
            (2 * edited.len()..2 * edited.len() + 16).contains(&held),
            "{held}"
        );
        // Where the ops would be longer than the line, it is written whole.
        let last = format!(r#"{{"a":"{text}","b":"{text}","c":1}}"#);
        let line = format!(r#"{{"a":"{edited}","b":"{edited}","c":2}}"#);
        assert_eq!(ops(&last, &line), None);
    }

    #[test]
    fn bytes_deleted_set_their_string_unless_they_were_its_first() {
        let last = padded(r#"{"text":"Here is the path","n":[1,2,3],"s":"xy"}"#);
        let line = padded(r#"{"text":"Here the path","n":[1,2,3],"s":"xy"}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('s', "Here the path".into())]);
        let line = padded(r#"{"text":"Here is the","n":[1,2,3],"s":"xy"}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('s', "Here is the".into())]);
        // Units dropped from the front, an element or a member taken out: a count or a
        // path, held here as nothing.
        let line = padded(r#"{"text":"is the path","n":[1,2,3],"s":"xy"}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', "".into())]);
        let line = padded(r#"{"text":"Here is the path","n":[1,3],"s":"xy"}"#);
        let held = ops(&last, &line).unwrap();
        assert!(held.len() == 1 && held[0].1.len() <= 1, "{held:?}");
        // A backslash taken out of an escape respells it: the run ends.
        let last = padded(r#"{"text":"caf\\u00E9","n":1}"#);
        let line = padded(r#"{"text":"caf\u00E9","n":1}"#);
        assert_eq!(ops(&last, &line), None);
    }

    #[test]
    fn bytes_not_spelled_as_sess_spells_them_end_the_run() {
        let last = padded(r#"{"a":1,"b":"x","c":"caf"}"#);
        for line in [
            r#"{"a": 1,"b":"x","c":"caf"}"#,
            r#"{"a":1, "b":"x","c":"caf"}"#,
            r#"{"a":1,"b":"x","c":"caf\u00e9"}"#,
            r#"{"a":1,"b":"x","c":"caf\u00E9"}"#,
            r#"{"a":1,"b":"x","c":"caf\/"}"#,
            r#"{"a":1,"b":"x","c":"caf\ud83d\ude00"}"#,
            r#"{"a":1.0,"b":"x","c":"caf"}"#,
            r#"{"a":1e2,"b":"x","c":"caf"}"#,
            "{\"a\":1,\"b\":\"x\",\"c\":\"caf\u{1}\"}",
        ] {
            assert_eq!(ops(&last, &padded(line)), None, "{line}");
        }
        // A number changed as sess writes numbers is set.
        let line = padded(r#"{"a":25,"b":"x","c":"caf"}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('s', "25".into())]);
        // Bytes that are no UTF-8 end the run; a character whose bytes the change splits
        // is looked at whole.
        let line = padded(r#"{"a":1,"b":"x","c":"café"}"#).into_bytes();
        let mut bad = line.clone();
        let at = bad.len() - 2;
        bad.splice(at..at, [0xc3, 0xa9, 0xff]);
        assert_eq!(batch(&line, &bad), None);
        bad[at + 2] = b'!';
        assert!(batch(&line, &bad).is_some());
        let mut accent = line.clone();
        accent[at - 1] = 0xa8;
        assert!(batch(&line, &accent).is_some());
        assert!(spelled_as_sess("\"é\"".as_bytes(), 2..3, Held::Appended));
        assert!(spelled_as_sess("\"é\"".as_bytes(), 1..2, Held::Appended));
        for (line, held) in [
            (r#"{"a":1,"b":"x","c":"caf\u001f"}"#, "/u001f"),
            (r#"{"a":1,"b":"x","c":"caf\ud800"}"#, "/ud800"),
            (r#"{"a":1,"b":"x","c":"caf\n\"é"}"#, "/n/'é"),
            (r#"{"a":1,"b":"x","c":"caf words"}"#, " words"),
        ] {
            assert_eq!(
                ops(&last, &padded(line)).unwrap(),
                [('a', held.into())],
                "{line}"
            );
        }
    }

    #[test]
    fn spaces_count_where_it_is_known_whether_they_lie_in_a_string() {
        // The end of one string and the start of another.
        let bytes = br#"a b","t":"c d"#;
        let all = 0..bytes.len();
        assert!(spelled_as_sess(bytes, all.clone(), Held::String));
        assert!(spelled_as_sess(bytes, all.clone(), Held::Token));
        // Read as values put between others, "a b" would lie between tokens.
        assert!(!spelled_as_sess(bytes, all, Held::Put));
        // Held as a token, their first quote tells: here it opens a string.
        let bytes = br#","t":"c d"#;
        assert!(spelled_as_sess(bytes, 0..bytes.len(), Held::Token));
        // Text added, and a space after the colon that follows, found as one change.
        let line = br#"{"text":"the end","model": "m"}"#;
        assert!(!spelled_as_sess(line, 12..27, Held::Token));
        assert!(spelled_as_sess(line, 12..26, Held::Token));
        // An escape cut at the start of the range is passed by, not misread as `\x`.
        assert!(spelled_as_sess(br#""C:\\x""#, 4..6, Held::Appended));
        assert!(spelled_as_sess(br#""C:\\x""#, 3..6, Held::Appended));
        assert!(!spelled_as_sess(br#""C:\/x""#, 3..6, Held::Appended));
    }

    #[test]
    fn quotes_after_escaped_backslashes_end_strings() {
        assert!(!escaped(br#"a\\"#, 3));
        assert!(escaped(br#"a\""#, 2));
        assert!(escaped(br#"\\\""#, 3));
        let last = padded(r#"{"p":"C:\\dir","n":1}"#);
        let line = padded(r#"{"p":"C:\\dir\\sub","n":1}"#);
        assert_eq!(ops(&last, &line).unwrap(), [('a', "//sub".into())]);
    }

    proptest::proptest! {
        /// Any two texts of JSON's bytes (and some that are no JSON): a stand-in is JSON
        /// no longer than the line, or there is none.
        #[test]
        fn any_texts_give_a_stand_in_no_longer_than_the_line(
            a in proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 0..600),
            b in proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 0..600),
        ) {
            if let Some(stand_in) = batch(&a, &b) {
                proptest::prop_assert!(stand_in.len() <= b.len());
                proptest::prop_assert!(serde_json::from_slice::<serde_json::Value>(&stand_in).is_ok());
            }
        }
    }

    /// Bytes of JSON, a few of which are made to be misread: escapes, a control character,
    /// UTF-8 (`é`, and a byte that is no UTF-8).
    const ALPHABET: &[u8] = b"ab e1 \"\\untd:,[]{}\x01\xc3\xa9\xff";
}
