/**
 * The merge against its peer: tinker-cookbook's own `trajectory_to_data` (bench/tinker_peer.py, in a Python
 * child process) and tagmask's `trajectoryToData`, each timed in its own process over the same trajectories,
 * one pass per round, rounds paired (peer, then tagmask). The ratio of each pair is reported: the first
 * pair cold (no warm-up, the way a training step calls it once per batch) and the later pairs warm.
 *
 *   TINKER_COOKBOOK=/path/to/tinker-cookbook npx tsx --conditions=development bench/merge.ts [--rounds N] [--trajectories N]
 *
 * Without TINKER_COOKBOOK (or without python3 with torch and numpy) the comparison is skipped with a message.
 * Before timing, every datum of both is compared value by value; any difference fails the run.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { trajectoryToData, type Trajectory, type Transition } from '../src/index.ts';
import { prng } from './corpus.ts';
import { median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface MergeLine { id: number; transitions: Transition[]; advantage: number }

/**
 * Long agent trajectories: a 300–1,000-token prompt, 3–12 turns of 40–400 sampled tokens, each next
 * observation the previous one plus the action plus 50–500 new tokens (tool output); about 1 in 12
 * transitions starts a new context (the prompt and the last tool output only: a summarizing or truncating
 * agent), about 1 in 25 is a parse error masked out. Logprobs are arbitrary doubles (rounded to float32 by both).
 */
export function mergeCorpus(count = 300, seed = 0x6d657267): MergeLine[] {
  const random = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const ids = (n: number) => Array.from({ length: n }, () => int(0, 151_000));
  const lines: MergeLine[] = [];
  for (let id = 0; id < count; id++) {
    const prompt = ids(int(300, 1000));
    let ob = prompt.slice();
    const transitions: Transition[] = [];
    const turns = int(3, 12);
    for (let k = 0; k < turns; k++) {
      const tokens = ids(int(40, 400));
      const transition: Transition = { ob, ac: { tokens, logprobs: tokens.map(() => -random() * 8) }, reward: 0, episode_done: k === turns - 1 };
      if (random() < 0.04) transition.metrics = { parse_error_masked: 1 };
      transitions.push(transition);
      const tool = ids(int(50, 500));
      ob = random() < 1 / 12 ? prompt.concat(tool) : ob.concat(tokens, tool);
    }
    lines.push({ id, transitions, advantage: +(random() * 2 - 1).toFixed(3) });
  }
  return lines;
}

export interface MergeResult {
  trajectories: number;
  datums: number;
  /** Tokens in every datum (unshifted), the merge's output size. */
  tokens: number;
  identical: boolean;
  mismatches: string[];
  peer: { ms: number[]; torch?: string; numpy?: string };
  tagmask: { ms: number[] };
  /** peer ms / tagmask ms, per paired round; [0] is the cold pair. */
  ratios: number[];
  cold: number;
  warm: { median: number; min: number; max: number };
  /** Every pair, the cold one included (nothing discarded as warm-up): median and range. */
  all: { median: number; min: number; max: number };
  /**
   * A fresh Node process allocating and writing buffers of the cold pass's sizes (13 bytes per datum token,
   * one buffer per datum) and nothing else: what first-touch page faults alone cost, the floor of any cold pass
   * that returns its datums in new memory.
   */
  freshMemory: { bytes: number; ms: number[] };
}

/** A skipped comparison says why. */
export type MergeOutcome = MergeResult | { skipped: string };

class Peer {
  private readonly lines: AsyncIterableIterator<string>;
  private constructor(private readonly child: ReturnType<typeof spawn>) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  }

  static async start(file: string): Promise<{ peer: Peer; ready: Record<string, unknown> } | { skipped: string }> {
    const child = spawn('python3', [join(root, 'bench/tinker_peer.py'), file], { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
    let stderr = '';
    child.stderr!.on('data', (chunk) => { stderr += chunk; });
    const spawned = await new Promise<string | undefined>((done) => { child.on('error', (error) => done(error.message)); child.on('spawn', () => done(undefined)); });
    if (spawned) return { skipped: `python3 did not start (${spawned})` };
    const peer = new Peer(child);
    const first = await peer.lines.next();
    if (first.done) return { skipped: `bench/tinker_peer.py exited: ${stderr.trim().split('\n').at(-1) ?? ''}` };
    const ready = JSON.parse(first.value) as Record<string, unknown>;
    if (ready.error) return { skipped: String(ready.error) };
    return { peer, ready };
  }

  async ask(command: string): Promise<Record<string, number>> {
    this.child.stdin!.write(`${command}\n`);
    const answer = await this.lines.next();
    if (answer.done) throw new Error(`bench/tinker_peer.py exited during "${command}"`);
    return JSON.parse(answer.value);
  }

  quit(): void { this.child.stdin!.end('quit\n'); }
}

/** Every datum of the peer's dump against tagmask's, value by value (float32 values are the same doubles). */
function compare(lines: MergeLine[], dumped: Array<Array<Record<string, number[]>>>): string[] {
  const mismatches: string[] = [];
  const fields = ['tokens', 'target_tokens', 'logprobs', 'advantages', 'mask'] as const;
  lines.forEach((line, t) => {
    const ours = trajectoryToData({ transitions: line.transitions }, line.advantage);
    const theirs = dumped[t];
    if (ours.length !== theirs.length) { mismatches.push(`trajectory ${t}: ${ours.length} datums, peer ${theirs.length}`); return; }
    ours.forEach((datum, d) => {
      for (const field of fields) {
        const a = datum[field];
        const b = theirs[d][field];
        if (a.length !== b.length) { mismatches.push(`trajectory ${t} datum ${d} ${field}: length ${a.length}, peer ${b.length}`); continue; }
        for (let i = 0; i < a.length; i++) {
          if (a[i] !== b[i]) { mismatches.push(`trajectory ${t} datum ${d} ${field}[${i}]: ${a[i]}, peer ${b[i]}`); break; }
        }
      }
    });
  });
  return mismatches;
}

export async function mergeBench(options: { rounds: number; trajectories: number; workDir: string; log: (line: string) => void }): Promise<MergeOutcome> {
  const cookbook = process.env.TINKER_COOKBOOK;
  if (!cookbook) return { skipped: 'TINKER_COOKBOOK is not set (a checkout of github.com/thinking-machines-lab/tinker-cookbook); see bench/README.md' };
  if (!existsSync(join(cookbook, 'tinker_cookbook/rl/data_processing.py'))) return { skipped: `TINKER_COOKBOOK=${cookbook} holds no tinker_cookbook/rl/data_processing.py` };
  const lines = mergeCorpus(options.trajectories);
  mkdirSync(options.workDir, { recursive: true });
  const file = join(options.workDir, 'merge-trajectories.json');
  writeFileSync(file, JSON.stringify(lines));
  const started = await Peer.start(file);
  if ('skipped' in started) return started;
  const { peer, ready } = started;
  try {
    const trajectories: Trajectory[] = lines.map((line) => ({ transitions: line.transitions }));
    const pass = () => {
      let datums = 0;
      for (let t = 0; t < trajectories.length; t++) datums += trajectoryToData(trajectories[t], lines[t].advantage).length;
      return datums;
    };
    // Timed first, cold on both sides; the identity check comes after (it would warm tagmask up).
    const peerMs: number[] = [];
    const ourMs: number[] = [];
    for (let r = 0; r < options.rounds; r++) {
      peerMs.push((await peer.ask('run')).ms);
      const t0 = now();
      pass();
      ourMs.push(now() - t0);
    }
    const dump = join(options.workDir, 'merge-peer-datums.json');
    await peer.ask(`dump ${dump}`);
    const mismatches = compare(lines, JSON.parse(readFileSync(dump, 'utf8')));
    let datums = 0;
    let tokens = 0;
    for (let t = 0; t < trajectories.length; t++) for (const datum of trajectoryToData(trajectories[t], lines[t].advantage)) { datums++; tokens += datum.sequence.length; }
    const sizes: number[] = [];
    for (let t = 0; t < trajectories.length; t++) for (const datum of trajectoryToData(trajectories[t], lines[t].advantage)) sizes.push(13 * datum.sequence.length);
    const freshMs = [firstTouchMs(sizes), firstTouchMs(sizes), firstTouchMs(sizes)];
    const ratios = peerMs.map((ms, r) => ms / ourMs[r]);
    const warm = ratios.slice(1);
    return {
      trajectories: lines.length, datums, tokens, identical: mismatches.length === 0, mismatches: mismatches.slice(0, 10),
      peer: { ms: peerMs.map((x) => +x.toFixed(1)), torch: ready.torch as string, numpy: ready.numpy as string },
      tagmask: { ms: ourMs.map((x) => +x.toFixed(2)) },
      ratios: ratios.map((x) => +x.toFixed(1)),
      cold: +ratios[0].toFixed(1),
      warm: { median: +median(warm).toFixed(1), min: +Math.min(...warm).toFixed(1), max: +Math.max(...warm).toFixed(1) },
      all: { median: +median(ratios).toFixed(1), min: +Math.min(...ratios).toFixed(1), max: +Math.max(...ratios).toFixed(1) },
      freshMemory: { bytes: sizes.reduce((a, b) => a + b, 0), ms: freshMs.map((x) => +x.toFixed(1)) },
    };
  } finally {
    peer.quit();
  }
}

/**
 * Milliseconds a fresh Node process takes to allocate one zeroed ArrayBuffer per size and write every byte of
 * it (the merge writes nearly every page of its datums). Measured in a child so that no memory this process
 * already touched is reused.
 */
function firstTouchMs(sizes: number[]): number {
  const script = `const sizes = JSON.parse(process.argv[1]); const keep = []; const t0 = performance.now();
    for (const size of sizes) { const buffer = new ArrayBuffer(size); new Uint8Array(buffer).fill(1); keep.push(buffer); }
    console.log(performance.now() - t0);`;
  return Number(execFileSync(process.execPath, ['-e', script, JSON.stringify(sizes)], { encoding: 'utf8' }));
}

export function describeMerge(outcome: MergeOutcome): string {
  if ('skipped' in outcome) return `merge vs tinker-cookbook: skipped (${outcome.skipped})`;
  const x = outcome;
  return [
    `merge vs tinker-cookbook's trajectory_to_data (torch ${x.peer.torch}, numpy ${x.peer.numpy}): ${x.trajectories} trajectories → ${x.datums} datums, ${x.tokens} tokens; datums ${x.identical ? 'identical' : `DIFFER (${x.mismatches.join('; ')})`}`,
    `  peer ms per pass: ${x.peer.ms.join(' ')}; tagmask ms: ${x.tagmask.ms.join(' ')}`,
    `  tagmask is ${x.cold}× faster on the cold first pass; warm paired rounds ${x.warm.median}× (${x.warm.min}–${x.warm.max}); all rounds ${x.all.median}× (${x.all.min}–${x.all.max}); goal ≥ 30×`,
    `  first touch of the datums' ${(x.freshMemory.bytes / 1e6).toFixed(1)} MB of new memory alone, in a fresh process: ${x.freshMemory.ms.join(' ')} ms ` +
      `(median ${median(x.freshMemory.ms).toFixed(1)} ms against the cold pass's ${x.tagmask.ms[0]} ms: the first pass pays the page faults of its output)`,
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  const outcome = await mergeBench({ rounds: Number(value('--rounds', '7')), trajectories: Number(value('--trajectories', '300')), workDir: value('--work-dir', '/tmp/tagmask-bench'), log: console.log });
  console.log(describeMerge(outcome));
  if ('identical' in outcome && !outcome.identical) process.exitCode = 1;
}
