#!/usr/bin/env node
// Prints, for every *.jsonl under the given folders: bytes, lines, and the counts of the
// top-level `type` values (with the sub-kind for the generic wrappers: system/<subtype>,
// stream_event/<event.type>, response_item|event_msg/<payload.type>, item.*/<item.type>).
// usage: node summarize.js DIR... [--flat]   (--flat: top-level `type` only)
'use strict';
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const flat = args.includes('--flat');
const dirs = args.filter((a) => !a.startsWith('--'));
function walk(p, out) {
  const st = fs.statSync(p);
  if (st.isDirectory()) for (const e of fs.readdirSync(p).sort()) walk(path.join(p, e), out);
  else if (p.endsWith('.jsonl')) out.push(p);
  return out;
}
for (const d of dirs) {
  for (const f of walk(d, [])) {
    const txt = fs.readFileSync(f, 'utf8');
    const lines = txt.split('\n').filter((l) => l.length);
    const c = new Map();
    let bad = 0;
    for (const l of lines) {
      let o;
      try { o = JSON.parse(l); } catch { bad++; continue; }
      let t = String(o.type);
      if (!flat) {
        if (t === 'system' && o.subtype) t += '/' + o.subtype;
        else if (t === 'stream_event' && o.event) t += '/' + o.event.type;
        else if ((t === 'response_item' || t === 'event_msg') && o.payload) t += '/' + o.payload.type;
        else if (t.startsWith('item.') && o.item) t += '/' + o.item.type;
      }
      c.set(t, (c.get(t) || 0) + 1);
    }
    const parts = [...c.entries()].map(([k, v]) => `${k}=${v}`).join(' ');
    console.log(`${path.relative(process.cwd(), f)}\t${Buffer.byteLength(txt)} B\t${lines.length} lines${bad ? `\t(${bad} unparsable)` : ''}\n    ${parts}`);
  }
}
