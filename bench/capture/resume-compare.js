#!/usr/bin/env node
// Compares the request bodies the mock dumped during two resume runs (used by resume.sh).
//
// usage: node resume-compare.js DIR_A DIR_B [BEFORE_A AFTER_A BEFORE_B AFTER_B]
//        node resume-compare.js --filter-diff ORIG.jsonl FILTERED.jsonl
//   DIR_A, DIR_B: mock --dump-dir folders (0001.json, 0002.json, ...), one per run.
//   BEFORE_x / AFTER_x: the transcript placed before the run and the same file after it; then
//   it also reports whether the placed bytes are still the file's prefix, what was appended
//   (count and types of records, whether the new prompt is there) and whether the first
//   appended record has the same parentUuid in both runs (the resumed turn hangs off the same
//   record of the old conversation).
// Requests are paired by position. For each pair it reports whether `messages` is deeply
// equal, and every JSON path that differs (in `messages` and in the rest of the body, with
// metadata.user_id masked: a fresh HOME gets a fresh random user id). Prints one JSON object.
'use strict';
const fs = require('fs');
const path = require('path');

function load(dir) {
  return fs.readdirSync(dir).filter((f) => /^\d+\.json$/.test(f)).sort()
    .map((f) => ({ file: f, body: JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) }));
}
function short(v) {
  const s = JSON.stringify(v);
  return s === undefined ? 'undefined' : s.length > 160 ? s.slice(0, 160) + `...(${s.length} chars)` : s;
}
function diff(a, b, p, out) {
  if (out.length >= 40) return;
  if (a === b) return;
  const ta = Array.isArray(a) ? 'array' : typeof a, tb = Array.isArray(b) ? 'array' : typeof b;
  if (ta !== tb || a === null || b === null || (ta !== 'object' && ta !== 'array')) {
    out.push({ path: p, a: short(a), b: short(b) });
    return;
  }
  if (ta === 'array') {
    if (a.length !== b.length) out.push({ path: p + '.length', a: a.length, b: b.length });
    for (let i = 0; i < Math.min(a.length, b.length); i++) diff(a[i], b[i], `${p}[${i}]`, out);
    return;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) diff(a[k], b[k], `${p}.${k}`, out);
}
function mask(body) {
  const b = JSON.parse(JSON.stringify(body));
  if (b.metadata && b.metadata.user_id) b.metadata.user_id = '<masked>';
  delete b.messages;
  return b;
}
// --filter-diff ORIG FILTERED: how `sess filter` changed a transcript, record by record
// (matched by uuid; records without one, like file-history-snapshot, by their bytes): kept
// byte for byte, projected (which data keys went and came) or dropped, and where a record now
// stands: after which record of the original it comes in the filtered file.
if (process.argv[2] === '--filter-diff') {
  const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean);
  const a = lines(process.argv[3]), b = lines(process.argv[4]);
  const key = (l) => { const o = JSON.parse(l); return o.uuid ? 'uuid:' + o.uuid : 'line:' + l; };
  const ka = a.map(key), kb = b.map(key);
  const posB = new Map(kb.map((k, j) => [k, j])), posA = new Map(ka.map((k, i) => [k, i]));
  const out = { records_orig: a.length, records_filtered: b.length, bytes_orig: 0, bytes_filtered: 0, summary: {}, records: [] };
  a.forEach((l) => (out.bytes_orig += Buffer.byteLength(l) + 1)); b.forEach((l) => (out.bytes_filtered += Buffer.byteLength(l) + 1));
  a.forEach((l, i) => {
    const o = JSON.parse(l), j = posB.get(ka[i]), t = o.type + (o.data && o.data.type ? ':' + o.data.type : '');
    let what, where = '';
    if (j === undefined) what = 'dropped';
    else {
      if (b[j] === l) what = 'kept byte for byte';
      else {
        const q = JSON.parse(b[j]), da = Object.keys(o.data || {}), db = Object.keys(q.data || {});
        what = `projected: data lost [${da.filter((k) => !db.includes(k))}] gained [${db.filter((k) => !da.includes(k))}]`;
      }
      // the record before it: in the original, and (as an original line number) in the filtered file
      const before = j === 0 ? 0 : posA.has(kb[j - 1]) ? posA.get(kb[j - 1]) + 1 : '?';
      if (before !== i) where = `moved: was after line ${i} of the original, now after original line ${before}`;
    }
    out.records.push({ line: i + 1, type: t, bytes: Buffer.byteLength(l), filtered_bytes: j === undefined ? 0 : Buffer.byteLength(b[j]), what, where });
    const sk = t + ': ' + what + (where ? ', moved' : '');
    out.summary[sk] = (out.summary[sk] || 0) + 1;
  });
  console.log(JSON.stringify(out, null, 1));
  process.exit(0);
}
const A = load(process.argv[2]), B = load(process.argv[3]);
const res = { requests_a: A.length, requests_b: B.length, pairs: [] };
for (let i = 0; i < Math.max(A.length, B.length); i++) {
  const a = A[i], b = B[i];
  if (!a || !b) { res.pairs.push({ i, missing: a ? 'b' : 'a' }); continue; }
  const md = [], od = [];
  diff(a.body.messages, b.body.messages, 'messages', md);
  diff(mask(a.body), mask(b.body), 'body', od);
  res.pairs.push({
    i, file: a.file,
    n_messages_a: (a.body.messages || []).length, n_messages_b: (b.body.messages || []).length,
    messages_identical: md.length === 0, messages_diff: md,
    rest_identical: od.length === 0, rest_diff: od,
  });
}
res.all_messages_identical = A.length === B.length && res.pairs.every((p) => p.messages_identical);
res.all_rest_identical = A.length === B.length && res.pairs.every((p) => p.rest_identical);
function transcript(before, after) {
  const bb = fs.readFileSync(before), ab = fs.existsSync(after) ? fs.readFileSync(after) : Buffer.alloc(0);
  const prefix = ab.length >= bb.length && ab.subarray(0, bb.length).equals(bb);
  const added = prefix ? ab.subarray(bb.length).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const types = {};
  for (const o of added) { const k = o.type + (o.data && o.data.type ? ':' + o.data.type : '') + (o.subtype ? ':' + o.subtype : ''); types[k] = (types[k] || 0) + 1; }
  const firstChained = added.find((o) => 'parentUuid' in o);
  const prompt = added.find((o) => o.type === 'user' && /scenario=rs-(next|cont)/.test(JSON.stringify(o.message || '')));
  return {
    added,
    before_bytes: bb.length, after_bytes: ab.length, prefix_kept: prefix, appended: added.length, appended_types: types,
    new_prompt_recorded: !!prompt, first_appended_parentUuid: firstChained ? firstChained.parentUuid : null,
    versions_appended: [...new Set(added.map((o) => o.version).filter(Boolean))],
  };
}
if (process.argv.length >= 8) {
  const [ba, aa, bb, ab] = process.argv.slice(4, 8);
  const ta = transcript(ba, aa), tb = transcript(bb, ab);
  res.transcripts = { a: ta, b: tb, same_first_parent: ta.first_appended_parentUuid === tb.first_appended_parentUuid };
  // the appended records themselves, with what a run generates masked: uuids, timestamps,
  // startTime and the numbers of *duration* and *Ms keys (sentAtMs, toolInputStreamMs, ...);
  // and once more without the bookkeeping records whose count varies
  // from run to run in 2.1.332 (atis-latch, last-prompt, mode; see README "Deterministic")
  const mask = (o) => JSON.stringify(o)
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<ts>')
    .replace(/"(startTime|[A-Za-z_]*[Dd]uration[A-Za-z_]*|[A-Za-z_]*Ms)":[0-9.]+/g, '"$1":0');
  const BOOK = new Set(['atis-latch', 'last-prompt', 'mode']);
  const cmpList = (x, y) => { const d = []; for (let i = 0; i < Math.max(x.length, y.length); i++) if (x[i] !== y[i]) d.push(i); return d; };
  const xa = ta.added.map(mask), xb = tb.added.map(mask);
  const ya = ta.added.filter((o) => !BOOK.has(o.type)).map(mask), yb = tb.added.filter((o) => !BOOK.has(o.type)).map(mask);
  res.transcripts.appended_identical_masked = cmpList(xa, xb).length === 0;
  res.transcripts.appended_differing_masked = cmpList(xa, xb);
  res.transcripts.appended_identical_masked_without_bookkeeping = cmpList(ya, yb).length === 0;
  res.transcripts.appended_differing_masked_without_bookkeeping = cmpList(ya, yb).map((i) => ({ i, a: (ya[i] || '').slice(0, 300), b: (yb[i] || '').slice(0, 300) }));
  delete ta.added; delete tb.added;
}
console.log(JSON.stringify(res, null, 1));
