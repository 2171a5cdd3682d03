#!/usr/bin/env node
// Scripted mock model server for the capture harness (Node, no dependencies).
//
// Speaks enough of
//   - the Anthropic Messages API  (POST /v1/messages, SSE or JSON; POST /v1/messages/count_tokens)
//   - the OpenAI Responses API    (POST /v1/responses, SSE or JSON; POST /v1/responses/compact)
// to drive the real Claude Code and Codex CLIs through scripted scenarios (see scenarios.js).
// Every request (method, path, selected headers, body size, what was answered) is appended
// to the request log as one JSON line. Unknown paths get a 404 with a JSON error body.
//
// It also acts as a refusing HTTP proxy: when the CLIs are started with
// HTTPS_PROXY/HTTP_PROXY pointing here, every CONNECT (or absolute-URI request) to any other
// host is logged as {"kind":"proxy-attempt", host} and refused with 403, so the log shows which
// outside hosts a CLI tried to reach. (Inside `unshare -n` those hosts are unreachable anyway.)
//
// usage: node mock.js --port 8787 --log requests.jsonl [--turns N] [--compact-every N]
//                     [--ready-file F] [--dump-dir DIR]

'use strict';
const http = require('http');
const fs = require('fs');
const crypto = require('crypto');
const S = require('./scenarios.js');

const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : dflt;
}
const PORT = parseInt(opt('port', '8787'), 10);
const LOG = opt('log', null);
const READY = opt('ready-file', null);
const TURNS = parseInt(opt('turns', '60'), 10);
const DUMP_DIR = opt('dump-dir', null); // optional: write each request body here (debugging)
const COMPACT_EVERY = parseInt(opt('compact-every', '0'), 10);
S.configure({ turns: TURNS, compactEvery: COMPACT_EVERY });

let reqCounter = 0;
function log(obj) {
  obj.t = new Date().toISOString();
  const line = JSON.stringify(obj) + '\n';
  if (LOG) fs.appendFileSync(LOG, line);
  else process.stdout.write(line);
}

// ---------------------------------------------------------------- deterministic ids
// Ids are derived from (scenario, step, index) so two runs of the same script give the
// same ids in the mock's answers.
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function hid(seed, n) {
  let s = '', i = 0;
  while (s.length < n) {
    const h = crypto.createHash('sha256').update(seed + '#' + i++).digest();
    for (const b of h) if (b < 248) s += B62[b % 62];
  }
  return s.slice(0, n);
}
// tool call id -> {scenario, step}; lets the mock tell from a request's history which
// scripted step comes next (tool loops terminate even with parallel calls).
const callStep = new Map();

// ---------------------------------------------------------------- helpers
function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b) => b && (b.type === 'text' || b.type === 'input_text'))
    .map((b) => b.text || '')
    .join('\n');
}
function findMarker(text) {
  const m = /scenario=([A-Za-z0-9_.-]+)/.exec(text || '');
  return m ? m[1] : null;
}
function progressMarker(text) {
  // written by the mock into compaction summaries: [mock-progress scenario=X step=N]
  const re = /\[mock-progress scenario=([A-Za-z0-9_.-]+) step=(\d+)\]/g;
  let m, last = null;
  while ((m = re.exec(text || ''))) last = { scenario: m[1], step: parseInt(m[2], 10) };
  return last;
}
function approxTokens(n) {
  return Math.max(1, Math.round(n / 4));
}

// ---------------------------------------------------------------- Anthropic
function anthropicPlan(body) {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  const tools = Array.isArray(body.tools) ? body.tools.map((t) => t.name) : [];
  const toolProps = {};
  (body.tools || []).forEach((t) => (toolProps[t.name] = Object.keys((t.input_schema && t.input_schema.properties) || {})));
  const systemText = typeof body.system === 'string' ? body.system : textOf(body.system || []);
  // latest user message carrying a human text with a scenario marker
  let mi = -1, scenario = null;
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role !== 'user') continue;
    const sc = findMarker(textOf(msgs[i].content));
    if (sc) { mi = i; scenario = sc; break; }
  }
  let step = 0;
  // compaction summaries written by the mock carry the progress
  for (let i = Math.max(mi, 0); i < msgs.length; i++) {
    const p = progressMarker(textOf(msgs[i].content));
    if (p && p.scenario === scenario) step = Math.max(step, p.step);
  }
  for (let i = mi + 1; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type === 'tool_use' && callStep.has(b.id)) {
        const cs = callStep.get(b.id);
        if (cs.scenario === scenario) step = Math.max(step, cs.step + 1);
      }
    }
  }
  const lastUser = msgs.length ? textOf(msgs[msgs.length - 1].content) : '';
  return { scenario, step, tools, toolProps, systemText, lastUser, nmsgs: msgs.length };
}

function anthropicTurn(body, reqInfo) {
  const plan = anthropicPlan(body);
  let turn = null, why = '';
  const isCompact = S.looksLikeCompactionRequest(plan.lastUser, plan.systemText, plan.tools);
  if (isCompact) {
    // Claude Code /compact or auto-compaction: answer with a summary carrying the progress
    const sc = plan.scenario;
    turn = S.compactionSummary('anthropic', sc, plan.step);
    why = 'compaction';
  } else if (plan.tools.length === 0 || !plan.scenario) {
    turn = S.sideAnswer('anthropic', plan, body);
    why = 'side';
  } else {
    turn = S.turnFor('anthropic', plan.scenario, plan.step, plan.tools, plan.toolProps);
    why = 'script';
  }
  reqInfo.scenario = plan.scenario;
  reqInfo.step = plan.step;
  reqInfo.answer = why + ':' + turn.label;
  return { plan, turn };
}

function anthropicBlocks(turn, plan) {
  const seed = `${plan.scenario}|${plan.step}|${turn.label}`;
  const blocks = [];
  if (turn.thinking) blocks.push({ type: 'thinking', thinking: turn.thinking, signature: 'bW9jay1zaWduYXR1cmU' + hid(seed + 'sig', 60) });
  if (turn.text) blocks.push({ type: 'text', text: turn.text });
  (turn.tools || []).forEach((t, k) => {
    const id = 'toolu_01' + hid(`${seed}|tool|${k}`, 22);
    callStep.set(id, { scenario: plan.scenario, step: plan.step });
    blocks.push({ type: 'tool_use', id, name: t.name, input: t.input });
  });
  return blocks;
}

function chunk(s, size) {
  const out = [];
  // split on character boundaries (code points), small deltas
  const cps = Array.from(s);
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

function handleAnthropic(req, res, body, reqInfo) {
  const { plan, turn } = anthropicTurn(body, reqInfo);
  const model = body.model || 'claude-mock';
  const msgId = 'msg_01' + hid(`${plan.scenario}|${plan.step}|${turn.label}|msg|${reqCounter}`, 22);
  const blocks = anthropicBlocks(turn, plan);
  const stop = (turn.tools || []).length ? 'tool_use' : 'end_turn';
  const inTok = approxTokens(reqInfo.bytes);
  let outChars = 0;
  blocks.forEach((b) => (outChars += JSON.stringify(b).length));
  const usage = {
    input_tokens: inTok,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: approxTokens(outChars),
  };
  if (!body.stream) {
    const msg = { id: msgId, type: 'message', role: 'assistant', model, content: blocks, stop_reason: stop, stop_sequence: null, usage };
    const s = JSON.stringify(msg);
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_' + msgId });
    res.end(s);
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': 'req_' + msgId,
  });
  const ev = (name, data) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  ev('message_start', {
    type: 'message_start',
    message: { id: msgId, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  ev('ping', { type: 'ping' });
  blocks.forEach((b, index) => {
    if (b.type === 'thinking') {
      ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const c of chunk(b.thinking, 24)) ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: c } });
      ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } });
    } else if (b.type === 'text') {
      ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const c of chunk(b.text, 16)) ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: c } });
    } else if (b.type === 'tool_use') {
      ev('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      for (const c of chunk(JSON.stringify(b.input), 40)) ev('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: c } });
    }
    ev('content_block_stop', { type: 'content_block_stop', index });
  });
  ev('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  ev('message_stop', { type: 'message_stop' });
  res.end();
}

// ---------------------------------------------------------------- OpenAI Responses
function responsesPlan(body) {
  const input = Array.isArray(body.input) ? body.input : typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : [];
  const tools = Array.isArray(body.tools) ? body.tools.map((t) => t.name || t.type) : [];
  const toolTypes = {};
  (body.tools || []).forEach((t) => (toolTypes[t.name || t.type] = t.type));
  let mi = -1, scenario = null;
  for (let i = input.length - 1; i >= 0; i--) {
    const it = input[i];
    if ((it.type === 'message' || !it.type) && it.role === 'user') {
      const sc = findMarker(textOf(it.content));
      if (sc) { mi = i; scenario = sc; break; }
    }
  }
  let step = 0;
  for (let i = 0; i < input.length; i++) {
    const it = input[i];
    if ((it.type === 'message' || !it.type)) {
      const p = progressMarker(textOf(it.content));
      if (p && p.scenario === scenario) step = Math.max(step, p.step);
    }
    if (it.type === 'compaction' || it.type === 'compaction_summary') {
      const p = progressMarker(it.encrypted_content ? Buffer.from(String(it.encrypted_content), 'base64').toString('utf8') : '');
      if (p && p.scenario === scenario) step = Math.max(step, p.step);
    }
  }
  for (let i = mi + 1; i < input.length; i++) {
    const it = input[i];
    if ((it.type === 'function_call' || it.type === 'custom_tool_call') && callStep.has(it.call_id)) {
      const cs = callStep.get(it.call_id);
      if (cs.scenario === scenario) step = Math.max(step, cs.step + 1);
    }
  }
  // latest unified-exec session still running (for write_stdin polling steps)
  let execSession = null;
  for (let i = mi + 1; i < input.length; i++) {
    const it = input[i];
    if (it.type === 'function_call_output') {
      const out = typeof it.output === 'string' ? it.output : JSON.stringify(it.output || '');
      const m = /Process running with session ID (\d+)/.exec(out);
      if (m) execSession = parseInt(m[1], 10);
    }
  }
  let lastUser = '';
  for (let i = input.length - 1; i >= 0; i--) {
    const it = input[i];
    if ((it.type === 'message' || !it.type) && it.role === 'user') { lastUser = textOf(it.content); break; }
  }
  const last = input.length ? input[input.length - 1] : null;
  const lastIsUser = !!last && (last.type === 'message' || !last.type) && last.role === 'user';
  return { scenario, step, tools, toolTypes, execSession, lastUser, lastIsUser, instructions: body.instructions || '', nitems: input.length };
}

function responsesItems(turn, plan) {
  const seed = `${plan.scenario}|${plan.step}|${turn.label}`;
  const items = [];
  if (turn.thinking) {
    items.push({
      type: 'reasoning',
      id: 'rs_' + hid(seed + 'rs', 24),
      summary: [{ type: 'summary_text', text: turn.thinking }],
      encrypted_content: 'bW9jay1lbmNyeXB0ZWQtcmVhc29uaW5n' + hid(seed + 'enc', 40),
    });
  }
  if (turn.text) {
    items.push({
      type: 'message',
      id: 'msg_' + hid(seed + 'msg', 24),
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: turn.text, annotations: [] }],
    });
  }
  (turn.tools || []).forEach((t, k) => {
    const call_id = 'call_' + hid(`${seed}|call|${k}`, 24);
    callStep.set(call_id, { scenario: plan.scenario, step: plan.step });
    if (t.custom) {
      items.push({ type: 'custom_tool_call', id: 'ctc_' + hid(`${seed}|ctc|${k}`, 24), status: 'completed', call_id, name: t.name, input: t.input });
    } else {
      items.push({ type: 'function_call', id: 'fc_' + hid(`${seed}|fc|${k}`, 24), status: 'completed', call_id, name: t.name, arguments: JSON.stringify(t.input) });
    }
  });
  return items;
}

function handleResponses(req, res, body, reqInfo) {
  const plan = responsesPlan(body);
  let turn, why;
  if (S.looksLikeCompactionRequest(plan.lastUser, plan.instructions, plan.tools)) {
    turn = S.compactionSummary('openai', plan.scenario, plan.step);
    why = 'compaction';
  } else if (!plan.scenario || plan.tools.length === 0) {
    turn = S.sideAnswer('openai', plan, body);
    why = 'side';
  } else {
    turn = S.turnFor('openai', plan.scenario, plan.step, plan.tools, plan.toolTypes, { execSession: plan.execSession });
    why = 'script';
  }
  reqInfo.scenario = plan.scenario;
  reqInfo.step = plan.step;
  reqInfo.answer = why + ':' + turn.label;
  const model = body.model || 'gpt-mock';
  const respId = 'resp_' + hid(`${plan.scenario}|${plan.step}|${turn.label}|${reqCounter}`, 24);
  const items = responsesItems(turn, plan);
  const inTok = (why === 'script' && S.inputTokensFor('openai', plan.scenario, plan.step)) || approxTokens(reqInfo.bytes);
  let outChars = 0;
  items.forEach((b) => (outChars += JSON.stringify(b).length));
  const outTok = approxTokens(outChars);
  const usage = {
    input_tokens: inTok,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outTok,
    output_tokens_details: { reasoning_tokens: turn.thinking ? approxTokens(turn.thinking.length) : 0 },
    total_tokens: inTok + outTok,
  };
  const created = Math.floor(Date.now() / 1000);
  const baseResp = { id: respId, object: 'response', created_at: created, model, status: 'in_progress', output: [], usage: null };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': respId });
    res.end(JSON.stringify({ ...baseResp, status: 'completed', output: items, usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': respId });
  let seq = 0;
  const ev = (data) => {
    data.sequence_number = seq++;
    res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  ev({ type: 'response.created', response: baseResp });
  ev({ type: 'response.in_progress', response: baseResp });
  items.forEach((item, output_index) => {
    if (item.type === 'reasoning') {
      ev({ type: 'response.output_item.added', output_index, item: { ...item, summary: [] } });
      ev({ type: 'response.reasoning_summary_part.added', item_id: item.id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
      for (const c of chunk(item.summary[0].text, 24)) ev({ type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index, summary_index: 0, delta: c });
      ev({ type: 'response.reasoning_summary_text.done', item_id: item.id, output_index, summary_index: 0, text: item.summary[0].text });
      ev({ type: 'response.reasoning_summary_part.done', item_id: item.id, output_index, summary_index: 0, part: item.summary[0] });
    } else if (item.type === 'message') {
      const text = item.content[0].text;
      ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } });
      ev({ type: 'response.content_part.added', item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      for (const c of chunk(text, 16)) ev({ type: 'response.output_text.delta', item_id: item.id, output_index, content_index: 0, delta: c });
      ev({ type: 'response.output_text.done', item_id: item.id, output_index, content_index: 0, text });
      ev({ type: 'response.content_part.done', item_id: item.id, output_index, content_index: 0, part: item.content[0] });
    } else if (item.type === 'function_call') {
      ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const c of chunk(item.arguments, 40)) ev({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta: c });
      ev({ type: 'response.function_call_arguments.done', item_id: item.id, output_index, arguments: item.arguments });
    } else if (item.type === 'custom_tool_call') {
      ev({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', input: '' } });
      for (const c of chunk(item.input, 40)) ev({ type: 'response.custom_tool_call_input.delta', item_id: item.id, output_index, delta: c });
      ev({ type: 'response.custom_tool_call_input.done', item_id: item.id, output_index, input: item.input });
    }
    ev({ type: 'response.output_item.done', output_index, item });
  });
  ev({ type: 'response.completed', response: { ...baseResp, status: 'completed', output: items, usage } });
  res.end();
}

// Remote compaction endpoint (used by Codex for OpenAI-hosted providers); answered in case
// it is called: returns the compacted history as a single user message with the summary.
function handleResponsesCompact(req, res, body, reqInfo) {
  const plan = responsesPlan(body);
  const turn = S.compactionSummary('openai', plan.scenario, plan.step);
  reqInfo.scenario = plan.scenario;
  reqInfo.step = plan.step;
  reqInfo.answer = 'remote-compact';
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ output: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: turn.text }] }] }));
}

// ---------------------------------------------------------------- server
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const n = ++reqCounter;
    const url = req.url || '/';
    const info = { kind: 'request', n, method: req.method, path: url, bytes: raw.length, ua: req.headers['user-agent'] || '' };
    if (req.headers['anthropic-beta']) info.anthropic_beta = req.headers['anthropic-beta'];
    // absolute-URI request through the proxy: refuse and log (plain http to another host)
    if (/^https?:\/\//i.test(url) && !/^https?:\/\/(127\.0\.0\.1|localhost)(:\d+)?\//i.test(url)) {
      info.kind = 'proxy-attempt';
      info.host = req.headers.host;
      log(info);
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('mock: outside hosts are not reachable\n');
      return;
    }
    let body = null;
    if (raw.length) {
      let txt = raw;
      try {
        if ((req.headers['content-encoding'] || '').includes('zstd')) throw new Error('zstd body not supported');
        if ((req.headers['content-encoding'] || '').includes('gzip')) txt = require('zlib').gunzipSync(raw);
        if ((req.headers['content-encoding'] || '').includes('br')) txt = require('zlib').brotliDecompressSync(raw);
        body = JSON.parse(txt.toString('utf8'));
      } catch (e) {
        info.parse_error = String(e.message || e);
      }
    }
    if (DUMP_DIR && raw.length) fs.writeFileSync(`${DUMP_DIR}/${String(n).padStart(4, '0')}.json`, body ? JSON.stringify(body, null, 1) : raw);
    const p = url.replace(/^\/+/, '/').split('?')[0];
    if (body) {
      const rawStr = raw.toString('utf8');
      const a = /Primary working directory: ([^\s"\\]+)/.exec(rawStr);
      if (a && /\/v1\/messages/.test(p)) S.setCwd('anthropic', a[1]);
      const o = /<cwd>([^<]+)<\/cwd>/.exec(rawStr);
      if (o && /\/v1\/responses/.test(p)) S.setCwd('openai', o[1]);
    }
    try {
      if (req.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(p)) {
        const t = approxTokens(raw.length);
        info.answer = 'count_tokens';
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: t }));
      } else if (req.method === 'POST' && /\/v1\/messages$/.test(p) && body) {
        info.stream = !!body.stream;
        info.model = body.model;
        handleAnthropic(req, res, body, info);
      } else if (req.method === 'POST' && /\/v1\/responses\/compact$/.test(p) && body) {
        handleResponsesCompact(req, res, body, info);
      } else if (req.method === 'POST' && /\/v1\/responses$/.test(p) && body) {
        info.stream = !!body.stream;
        info.model = body.model;
        handleResponses(req, res, body, info);
      } else if (req.method === 'GET' && /\/v1\/models$/.test(p)) {
        info.answer = 'models';
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
      } else {
        info.answer = '404';
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `mock: no handler for ${req.method} ${p}` } }));
      }
    } catch (e) {
      info.answer = '500';
      info.error = String(e.stack || e);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'mock failure' } }));
    }
    log(info);
  });
});

// HTTPS through the proxy: log the target host and refuse.
server.on('connect', (req, socket) => {
  log({ kind: 'proxy-attempt', n: ++reqCounter, method: 'CONNECT', host: req.url, ua: req.headers['user-agent'] || '' });
  socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
});

server.keepAliveTimeout = 60000;
server.listen(PORT, '127.0.0.1', () => {
  log({ kind: 'listening', port: server.address().port, turns: TURNS });
  if (READY) fs.writeFileSync(READY, String(server.address().port));
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { server.close(); process.exit(0); });
