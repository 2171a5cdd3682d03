// Scripts for the mock model (see mock.js). No dependencies.
//
// A prompt carries a marker `scenario=NAME`; the mock finds the latest user message with a
// marker and works out which step of NAME comes next from the tool calls it answered since
// (and from `[mock-progress scenario=NAME step=N]` markers it wrote into compaction
// summaries). Each step is one model turn:
//   { label, thinking?, text?, tools?: [{ kind, ... }] }
// A turn without tools ends the CLI's turn (end_turn / no function calls); a step index past
// the end of the script also ends it, so every tool loop terminates.
//
// Tool calls are written abstractly ({kind:'sh', cmd}, {kind:'write', file, content},
// {kind:'edit', file, old, new}, {kind:'read', file}, {kind:'agent', prompt}) and mapped to
// the tool names the CLI actually offered in the request (Claude Code: Bash/Write/Edit/Read/
// Agent or Task; Codex: exec_command/shell/shell_command and apply_patch).
//
// Text is deterministic: a seeded generator (seed = scenario + step) over a fixed
// vocabulary, with some non-ASCII, tabs, quotes and backticks mixed in.

'use strict';

let CFG = { turns: 60 };
function configure(c) { CFG = { ...CFG, ...c }; }

// ---------------------------------------------------------------- text
function rng(seedStr) {
  let h = 2166136261 >>> 0;
  for (let i = 0; i < seedStr.length; i++) { h ^= seedStr.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  let a = h || 1;
  return () => { // mulberry32
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const WORDS = ('the a of and to in session record line parser stream tool call result output '
  + 'transcript offset byte index header token usage model turn reply prompt folder file '
  + 'frame field value schema version writer reader cursor chunk buffer delta summary '
  + 'compaction subagent parent child branch resume fork continue uuid timestamp cwd '
  + 'because while so but then when each every next last first small large long short '
  + 'reads writes keeps skips joins splits counts checks stores emits carries holds').split(/\s+/);
const SPICE = ['naïve', 'café', 'Zürich', 'déjà vu', '🙂', '→', '“quoted”', '"double"', "'single'", '`tick`', 'tab\there', 'back\\slash', '<angle>', '&amp;', '日本語', 'emoji🚀'];
function sentence(r, n) {
  const w = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    w.push(x < 0.04 ? SPICE[Math.floor(r() * SPICE.length)] : WORDS[Math.floor(r() * WORDS.length)]);
  }
  const s = w.join(' ');
  return s.charAt(0).toUpperCase() + s.slice(1) + '.';
}
function para(seed, words) {
  const r = rng(seed);
  const out = [];
  let left = words;
  while (left > 0) { const n = 6 + Math.floor(r() * 14); out.push(sentence(r, Math.min(n, left))); left -= n; }
  return out.join(' ');
}
// long markdown answer: headings, lists, a code block, paragraphs
function longText(seed, words) {
  const r = rng(seed + '|long');
  const parts = [];
  let left = words, sec = 1;
  while (left > 0) {
    parts.push(`## Part ${sec}: ${sentence(r, 4).replace(/\.$/, '')}`);
    const p = 60 + Math.floor(r() * 80);
    parts.push(para(`${seed}|p${sec}`, p));
    if (sec % 2 === 0) parts.push(['- ' + sentence(r, 7), '- ' + sentence(r, 9), '- ' + sentence(r, 5)].join('\n'));
    if (sec % 3 === 0) parts.push('```rust\nfn step_' + sec + '(line: &str) -> usize {\n    line.split(\'\\t\').count() // ' + sentence(r, 5) + '\n}\n```');
    left -= p + 20; sec++;
  }
  return parts.join('\n\n');
}
function rowsCmd(tag, n) {
  return `for i in $(seq 1 ${n}); do printf '%s %06d: %s\\n' "${tag}" "$i" "the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnopqrstuvwxyz"; done`;
}
function fileBody(seed, title, lines) {
  const out = [`# ${title}`, '', 'STATUS: draft', ''];
  for (let i = 0; i < lines; i++) out.push(`${String(i + 1).padStart(3, '0')} ${para(`${seed}|l${i}`, 10)}`);
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------- scripts
// Each script is a function (ctx) -> array of steps; ctx = { cwd }.
const SCRIPTS = {
  // ---- small: 2 model turns, one tool call
  small: (c) => [
    { thinking: para('small-think', 40), text: 'Hello! I will run one shell command to check the environment.',
      tools: [{ kind: 'sh', cmd: 'echo hello from the mock; seq 1 5', desc: 'Print a greeting' }] },
    { text: para('small-final', 60) },
  ],

  // ---- medium: 9+ model turns, many tools, long outputs, a subagent (Claude Code)
  medium: (c) => [
    { thinking: para('m0t', 60), text: para('m0', 30),
      tools: [{ kind: 'sh', cmd: "echo 'hello from a mock-driven session'; uname -s; seq 1 20", desc: 'Print a greeting and some numbers' }] },
    { text: 'I will write a notes file.',
      tools: [{ kind: 'write', file: `${c.cwd}/cap-medium.md`, content: fileBody('m1', 'Medium capture notes', 60) }] },
    { thinking: para('m2t', 50),
      tools: [{ kind: 'sh', cmd: rowsCmd('row', 1500), desc: 'Print 1500 rows' }] },
    { text: 'Now I will edit the status line.',
      tools: [{ kind: 'edit', file: `${c.cwd}/cap-medium.md`, old: 'STATUS: draft', new: 'STATUS: final (edited by the mock)' }] },
    { tools: [{ kind: 'read', file: `${c.cwd}/cap-medium.md` }] },
    { text: 'I will ask a subagent to summarize the file.',
      tools: [{ kind: 'agent', desc: 'Summarize the notes file', prompt: `scenario=sub-medium Read ${c.cwd}/cap-medium.md, count its lines and report a short summary.` }] },
    { thinking: para('m6t', 30), text: 'Two commands in parallel.',
      tools: [{ kind: 'sh', cmd: rowsCmd('p0', 600), desc: 'Print 600 rows (0)' }, { kind: 'sh', cmd: rowsCmd('p1', 600), desc: 'Print 600 rows (1)' }] },
    { tools: [{ kind: 'sh', cmd: 'ls; echo to-stderr >&2; exit 3', desc: 'A failing command' }] },
    { thinking: para('m8t', 80), text: longText('m8', 4000) },
  ],
  // subagent started by medium (Claude Code only)
  'sub-medium': (c) => [
    { text: 'Counting lines first.', tools: [{ kind: 'sh', cmd: `wc -l ${c.cwd}/cap-medium.md; head -3 ${c.cwd}/cap-medium.md`, desc: 'Count lines' }] },
    { tools: [{ kind: 'read', file: `${c.cwd}/cap-medium.md` }] },
    { text: 'Summary: ' + para('sub-final', 120) },
  ],
  'medium-resume': (c) => [
    { text: 'Checking the status line again after resuming.',
      tools: [{ kind: 'sh', cmd: `grep -n STATUS ${c.cwd}/cap-medium.md; ls ${c.cwd}`, desc: 'Check the status line' }] },
    { thinking: para('mr1t', 40), text: para('mr1', 200) },
  ],
  'medium-continue': (c) => [
    { text: 'Continued session: ' + para('mc0', 150) },
  ],
  'medium-after-compact': (c) => [
    { tools: [{ kind: 'sh', cmd: `tail -2 ${c.cwd}/cap-medium.md`, desc: 'Show the end of the notes' }] },
    { text: 'After the compaction: ' + para('mac1', 100) },
  ],
  'medium-fork': (c) => [
    { tools: [{ kind: 'sh', cmd: 'echo forked session; date -u +%Y-%m-%d', desc: 'Print a marker' }] },
    { text: 'Forked: ' + para('mf1', 80) },
  ],

  // ---- codex medium: same spirit, shell + apply_patch, a compaction after step 5
  'cx-medium': (c) => [
    { thinking: para('x0t', 50), text: para('x0', 30),
      tools: [{ kind: 'sh', cmd: "echo 'hello from a mock-driven session'; seq 1 20" }] },
    { text: 'Adding a notes file.',
      tools: [{ kind: 'patch-add', file: 'cap-medium.md', content: fileBody('x1', 'Medium capture notes', 60) }] },
    { thinking: para('x2t', 40), tools: [{ kind: 'sh', cmd: rowsCmd('row', 1500) }] },
    { tools: [{ kind: 'patch-update', file: 'cap-medium.md', old: 'STATUS: draft', new: 'STATUS: final (patched by the mock)' }] },
    { text: 'Checking the result.', tools: [{ kind: 'sh', cmd: `grep -n STATUS ${c.cwd}/cap-medium.md; wc -l ${c.cwd}/cap-medium.md` }] },
    { thinking: para('x5t', 30), text: 'Two long commands in parallel.', compactAfter: true,
      tools: [{ kind: 'sh', cmd: rowsCmd('p0', 800) }, { kind: 'sh', cmd: rowsCmd('p1', 800) }] },
    { tools: [{ kind: 'sh', cmd: 'ls; echo to-stderr >&2; exit 3' }] },
    { text: 'A slower loop; I will poll it.', tools: [{ kind: 'sh', yieldMs: 250, cmd: 'for i in $(seq 1 30); do echo "tick $i: lorem ipsum"; if [ $((i % 3)) -eq 0 ]; then sleep 0.1; fi; done' }] },
    { tools: [{ kind: 'poll' }] },
    { thinking: para('x8t', 80), text: longText('x8', 4000) },
  ],
  'cx-medium-resume': (c) => [
    { text: 'Resumed; checking the file.', tools: [{ kind: 'sh', cmd: `grep -n STATUS ${c.cwd}/cap-medium.md; ls -la ${c.cwd}` }] },
    { thinking: para('xr1t', 30), text: para('xr1', 200) },
  ],

  // ---- large: CFG.turns model turns (tool calls with long outputs, long answers, file
  // writes), for sessions of tens of MB. Claude Code keeps a Bash output inline in the
  // transcript (twice: tool_result and toolUseResult) only below its ~30 KB persistence
  // threshold, so its rows stay at 280 (~26 KB); Codex stores long outputs itself.
  large: (c) => {
    const rows = c.api === 'anthropic' ? 280 : 3000;
    const steps = [];
    for (let i = 0; i < CFG.turns; i++) {
      const k = i % 4;
      if (k === 0) steps.push({ thinking: para(`L${i}t`, 60), text: para(`L${i}`, 80), tools: [{ kind: 'sh', cmd: rowsCmd(`L${i}`, rows), desc: `Print ${rows} rows (${i})` }] });
      else if (k === 1) steps.push({ text: longText(`L${i}`, 1500), tools: [{ kind: 'write', file: `${c.cwd}/large-${i}.md`, content: fileBody(`L${i}`, `Large file ${i}`, 300), patchFile: `large-${i}.md` }] });
      else if (k === 2) steps.push({ tools: [{ kind: 'sh', cmd: rowsCmd(`M${i}`, rows - 30), desc: `Print ${rows - 30} rows (${i})` }, { kind: 'sh', cmd: `cat ${c.cwd}/large-${i - 1}.md`, desc: 'Show the file' }] });
      else steps.push({ thinking: para(`L${i}t`, 200), text: longText(`L${i}`, 2500), tools: [{ kind: 'sh', cmd: `echo step ${i}; wc -c ${c.cwd}/large-${i - 2}.md`, desc: 'Marker' }] });
    }
    steps.push({ text: longText('L-final', 3000) });
    return steps;
  },

  // ---- resume experiment (resume.sh; Claude Code only). `rs` is written by an older Claude
  // Code (2.1.39) that still records `progress` lines: a slow Bash whose output streams for
  // ~6 s (bash_progress), a foreground subagent that runs its own slow Bash (agent_progress),
  // a 300-row Bash, then a text answer. `rs-next` / `rs-cont` are the prompts given on
  // `--resume <id>` / `--continue`: one Bash + text, and text only.
  rs: (c) => [
    { thinking: para('rs0t', 40), text: 'A slow command whose output streams.',
      tools: [{ kind: 'sh', cmd: 'for i in $(seq 1 12); do echo "tick $i: streaming output line"; sleep 0.5; done', desc: 'Stream 12 ticks' }] },
    { text: 'I will ask a subagent to look at the folder.',
      tools: [{ kind: 'agent', desc: 'Inspect the folder', prompt: `scenario=sub-rs Look at ${c.cwd} slowly and report what is there.` }] },
    { tools: [{ kind: 'sh', cmd: rowsCmd('rs', 300), desc: 'Print 300 rows' }] },
    { thinking: para('rs3t', 40), text: longText('rs3', 600) },
  ],
  'sub-rs': (c) => [
    { text: 'Looking slowly.', tools: [{ kind: 'sh', cmd: `for i in $(seq 1 8); do echo "sub tick $i"; sleep 0.5; done; ls -la ${c.cwd}`, desc: 'Slow listing' }] },
    { text: 'Subagent report: ' + para('sub-rs-final', 80) },
  ],
  'rs-next': (c) => [
    { text: 'Resumed; one more command.', tools: [{ kind: 'sh', cmd: `echo resumed; ls ${c.cwd}`, desc: 'Print a marker' }] },
    { thinking: para('rsn1t', 30), text: 'After the resume: ' + para('rsn1', 80) },
  ],
  'rs-cont': (c) => [
    { text: 'Continued: ' + para('rsc0', 60) },
  ],
};
SCRIPTS['cx-small'] = SCRIPTS.small;
SCRIPTS['cx-large'] = SCRIPTS.large;

// ---------------------------------------------------------------- mapping to CLI tools
function pick(tools, names) { return names.find((n) => tools.includes(n)); }

function mapToolAnthropic(t, tools, props) {
  switch (t.kind) {
    case 'sh': return { name: 'Bash', input: { command: t.cmd, description: t.desc || 'Run a command' } };
    case 'write': return { name: 'Write', input: { file_path: t.file, content: t.content } };
    case 'edit': return { name: 'Edit', input: { file_path: t.file, old_string: t.old, new_string: t.new, replace_all: false } };
    case 'read': return { name: 'Read', input: { file_path: t.file } };
    case 'agent': {
      const name = pick(tools, ['Agent', 'Task']) || 'Agent';
      const input = { description: t.desc, prompt: t.prompt, subagent_type: 'general-purpose' };
      // run the subagent in the foreground, so its report comes back as the tool result
      if (((props || {})[name] || []).includes('run_in_background')) input.run_in_background = false;
      return { name, input };
    }
    case 'poll': return { name: 'Bash', input: { command: 'echo nothing to poll', description: 'Poll' } };
    case 'patch-add': return { name: 'Write', input: { file_path: t.file, content: t.content } };
    case 'patch-update': return { name: 'Edit', input: { file_path: t.file, old_string: t.old, new_string: t.new, replace_all: false } };
  }
  throw new Error('unknown tool kind ' + t.kind);
}

function mapToolOpenAI(t, tools, types, cwd, ctx) {
  const shell = pick(tools, ['exec_command', 'shell_command', 'shell', 'local_shell']);
  const sh = (cmd, yieldMs) => {
    if (shell === 'exec_command') return { name: shell, input: { cmd, workdir: cwd, yield_time_ms: yieldMs || 10000 } };
    if (shell === 'shell_command') return { name: shell, input: { command: cmd, workdir: cwd, timeout_ms: 20000 } };
    return { name: shell || 'shell', input: { command: ['bash', '-lc', cmd], workdir: cwd, timeout_ms: 20000 } };
  };
  const patch = (text) => {
    if (tools.includes('apply_patch')) {
      if (types.apply_patch === 'custom') return { name: 'apply_patch', custom: true, input: text };
      return { name: 'apply_patch', input: { input: text } };
    }
    return sh(`apply_patch <<'PATCH'\n${text}PATCH`);
  };
  switch (t.kind) {
    case 'sh': return sh(t.cmd, t.yieldMs);
    case 'poll':
      // unified exec: wait for the command the previous step left running
      if (tools.includes('write_stdin') && ctx.execSession != null) return { name: 'write_stdin', input: { session_id: ctx.execSession, chars: '', yield_time_ms: 5000 } };
      return sh('echo nothing to poll');
    case 'read': return sh(`cat ${t.file}`);
    case 'write': {
      const rel = t.patchFile || t.file;
      return patch(`*** Begin Patch\n*** Add File: ${rel}\n${t.content.split('\n').slice(0, -1).map((l) => '+' + l).join('\n')}\n*** End Patch\n`);
    }
    case 'patch-add':
      return patch(`*** Begin Patch\n*** Add File: ${t.file}\n${t.content.split('\n').slice(0, -1).map((l) => '+' + l).join('\n')}\n*** End Patch\n`);
    case 'edit':
    case 'patch-update':
      return patch(`*** Begin Patch\n*** Update File: ${t.file}\n@@\n-${t.old}\n+${t.new}\n*** End Patch\n`);
    case 'agent': return sh(`echo 'no subagent tool here'`);
  }
  throw new Error('unknown tool kind ' + t.kind);
}

let CWD = { anthropic: process.env.CAPTURE_WORK || '/tmp', openai: process.env.CAPTURE_WORK || '/tmp' };
function setCwd(api, cwd) { if (cwd) CWD[api] = cwd; }

// scripts are rebuilt per request; cache the last few (large ones are big)
const scriptCache = new Map();
function scriptFor(api, scenario, cwd) {
  const f = SCRIPTS[scenario];
  if (!f) return null;
  const key = `${api}|${scenario}|${cwd}`;
  if (!scriptCache.has(key)) {
    if (scriptCache.size > 16) scriptCache.clear();
    scriptCache.set(key, f({ cwd, api }));
  }
  return scriptCache.get(key);
}

function turnFor(api, scenario, step, tools, types, ctx) {
  const cwd = CWD[api];
  const script = scriptFor(api, scenario, cwd);
  if (!script) return { label: `unknown-scenario`, text: `mock: no script named ${scenario}.` };
  if (step >= script.length) return { label: `${scenario}#${step}-past-end`, text: 'Done.' };
  const s = script[step];
  const out = { label: `${scenario}#${step}`, thinking: s.thinking, text: s.text, compactAfter: !!s.compactAfter };
  if (s.tools) out.tools = s.tools.map((t) => (api === 'anthropic' ? mapToolAnthropic(t, tools, types) : mapToolOpenAI(t, tools, types || {}, cwd, ctx || {})));
  return out;
}

// Reported input_tokens: normally ~bytes/4 of the request; a step marked compactAfter reports
// a count above the auto-compaction limit run.sh writes into Codex's config, so Codex
// compacts before its next request. CFG.compactEvery (large) does this every N steps.
const COMPACT_REPORT = 900000;
function inputTokensFor(api, scenario, step) {
  const script = scriptFor(api, scenario, CWD[api]);
  if (!script || step >= script.length) return 0;
  if (script[step].compactAfter) return COMPACT_REPORT;
  if (/large/.test(scenario) && CFG.compactEvery && step > 0 && step % CFG.compactEvery === 0) return COMPACT_REPORT;
  return 0;
}

const COMPACT_RE = /CONTEXT CHECKPOINT COMPACTION|create a detailed summary of the conversation|summary of the conversation so far|Your task is to create a detailed summary/i;
function looksLikeCompactionRequest(lastUser, system, tools) {
  return COMPACT_RE.test(lastUser || '');
}
function compactionSummary(api, scenario, step) {
  const body = `1. Task: scenario=${scenario} [mock-progress scenario=${scenario} step=${step}]\n2. Progress: ${para(`compact|${scenario}|${step}`, 120)}\n3. Next: continue with step ${step} of the script.`;
  // Claude Code asks for an <analysis> block followed by a <summary> block
  const text = api === 'anthropic'
    ? `<analysis>\n${para(`compact-analysis|${scenario}|${step}`, 60)}\n</analysis>\n\n<summary>\n${body}\n</summary>`
    : `Handoff summary.\n${body}`;
  return { label: `compaction(${scenario}#${step})`, text };
}
function sideAnswer(api, plan, body) {
  // requests without tools or without a scenario marker (titles, topic checks, quota probes)
  return { label: 'side', text: 'Mock capture session' };
}

module.exports = { configure, turnFor, inputTokensFor, looksLikeCompactionRequest, compactionSummary, sideAnswer, setCwd, SCRIPTS, para, longText };
