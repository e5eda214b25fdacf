/**
 * Where the CLI's time goes, stage by stage, in one process (no process startup):
 *
 *     npx tsx bench/stages.ts IN.jsonl TOKENIZER [--reps 3] [--ab]     → one JSON line on stdout
 *
 * It runs what `runRollouts` (src/run.ts) runs for plain flat lines, src/io/mask-lines.ts, with the same
 * modules, a batch at a time (the same 2^18 ids), and charges wall time to: read (readJsonl: chunked read into
 * the reused buffers, newline split), parse (as MaskLines.take: readPlainLine, the commonest line read from its
 * bytes with no JSON.parse, else readTokens: ids straight from the bytes into the batch's Uint32Array, the rest
 * of the line through JSON.parse, shape and prompt_length checks, the id's JSON), mask
 * (one maskBatch call per batch, into one reused mask buffer), serialize (the same maskBatch again with the
 * callback that writes each line's bytes, minus the mask time), write (JsonlWriter: the bytes to the file,
 * rename). A second pass times JSON.parse alone, and a third the real `runRollouts`.
 * Two figures per stage: `cold`, the first pass in the process (what the CLI pays: fresh memory is
 * page-faulted in, code is still being optimized), and `warm`, the minimum over the next `--reps` passes
 * (memory and code reused; on a shared machine the minimum is the least disturbed run). Per token: `nsPerToken`.
 *
 * `--ab`: also the parse stage before and after src/io/id-run.ts (the ids read by the byte loop alone, then with the
 * plain run in WebAssembly; useIdRun), in the same process, in alternating order, `--reps` pairs: the stage passes
 * (wall, as above), and the lines' parse alone over their bytes held in memory (CPU and wall of each pass).
 *
 * Run in its own process on purpose: the in-memory benchmark must not see the shapes this one feeds V8.
 */
import { MaskerPool } from '../src/masker.ts';
import { runRollouts } from '../src/run.ts';
import { idJson } from '../src/io/lines.ts';
import { JsonlWriter, readJsonl } from '../src/io/jsonl.ts';
import { IdArena, readPlainLine, readTokens, type PlainLine } from '../src/io/records.ts';
import { useIdRun } from '../src/io/id-run.ts';
import { ByteOut, spanHeads, writeScannedLine } from '../src/io/mask-lines.ts';
import { detectShape, flatRollout } from '../src/io/shapes.ts';
import { newSummary } from '../src/summary.ts';
import { now } from './timing.ts';

const STAGES = ['read', 'parse', 'mask', 'serialize', 'write'] as const;
type Stage = (typeof STAGES)[number];
const GROUP_IDS = 1 << 18;

async function lapPass(pool: MaskerPool, input: string, output: string): Promise<{ stages: Record<Stage, number>; tokens: number; totalMs: number }> {
  const stages = Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>;
  const masker = pool.get({});
  const heads = spanHeads(masker);
  const summary = newSummary();
  const arena = new IdArena();
  const plain: PlainLine = { idText: '', promptLength: -1 };
  let starts = new Uint32Array(1 << 12);
  let promptLengths = new Int32Array(1 << 12);
  const idTexts: string[] = [];
  let mask = new Uint8Array(1 << 16);
  const out = new ByteOut();
  const writer = new JsonlWriter(output);
  let count = 0;
  let tokens = 0;
  const t0 = now();
  let mark = t0;
  const lap = (stage: Stage) => {
    const t = now();
    stages[stage] += t - mark;
    mark = t;
  };
  const each = (r: number, scanned: Parameters<typeof writeScannedLine>[3]) => writeScannedLine(out, heads, idTexts[r], scanned, summary);
  const batch = () => {
    if (count === 0) return;
    if (mask.length < arena.used) mask = new Uint8Array(arena.used * 2);
    const view = starts.subarray(0, count + 1);
    const t1 = now();
    masker.maskBatch(arena.ids, view, promptLengths, mask);
    const t2 = now();
    masker.maskBatch(arena.ids, view, promptLengths, mask, each);
    const t3 = now();
    stages.mask += t2 - t1;
    stages.serialize += Math.max(0, t3 - t2 - (t2 - t1));
    tokens += arena.used;
    mark = now();
    writer.writeBytes(out.take());
    lap('write');
    arena.reset(GROUP_IDS);
    count = 0;
  };
  for (const line of readJsonl(input)) {
    lap('read');
    const before = arena.used;
    if (count + 2 > starts.length) {
      const s2 = new Uint32Array(starts.length * 2); s2.set(starts); starts = s2;
      const p2 = new Int32Array(promptLengths.length * 2); p2.set(promptLengths); promptLengths = p2;
    }
    // As MaskLines.take: the commonest line without JSON.parse, else the ids from the bytes and the rest parsed.
    if (readPlainLine(line.bytes, arena, plain)) {
      idTexts[count] = plain.idText;
      promptLengths[count] = plain.promptLength;
    } else {
      const value = readTokens(line.bytes, arena)!;
      if (detectShape(value).name !== 'flat') throw new Error('not a flat line');
      const rollout = flatRollout(value, arena.ids.subarray(before, arena.used));
      idTexts[count] = idJson(rollout.id);
      promptLengths[count] = rollout.promptLength;
    }
    starts[count] = before;
    starts[++count] = arena.used;
    lap('parse');
    if (arena.used >= GROUP_IDS) batch();
  }
  batch();
  writer.close();
  lap('write');
  // The loop as the CLI runs it (each batch masked once): the stages' sum.
  const totalMs = STAGES.reduce((sum, stage) => sum + stages[stage], 0);
  if (t0 < 0) throw new Error('unreachable');
  return { stages, tokens, totalMs };
}

async function jsonParsePass(input: string): Promise<{ readMs: number; parseMs: number }> {
  let readMs = 0;
  let parseMs = 0;
  let mark = now();
  let sink = 0;
  for (const line of readJsonl(input)) {
    const t1 = now();
    readMs += t1 - mark;
    sink += (JSON.parse(line.text) as { tokens: number[] }).tokens.length;
    mark = now();
    parseMs += mark - t1;
  }
  if (sink < 0) throw new Error('unreachable');
  return { readMs, parseMs };
}

/** Each line's parse alone (as MaskLines.take, plain lines), over their bytes in memory: CPU and wall ms of one pass. */
function parseOnlyPass(lines: Buffer[]): { cpuMs: number; wallMs: number; tokens: number } {
  const arena = new IdArena();
  const plain: PlainLine = { idText: '', promptLength: -1 };
  let tokens = 0;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  for (const bytes of lines) {
    if (!readPlainLine(bytes, arena, plain)) throw new Error('--ab: not a plain line');
    if (arena.used >= GROUP_IDS) { tokens += arena.used; arena.reset(GROUP_IDS); }
  }
  tokens += arena.used;
  const wallMs = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs, tokens };
}

interface Spread { median: number; min: number; max: number }
const spread = (values: number[]): Spread => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const r = (x: number) => +x.toFixed(3);
  return { median: r(median), min: r(sorted[0]), max: r(sorted[sorted.length - 1]) };
};

/** `--ab`: ns per token of the parse stage, byte loop alone (`before`) and with the plain run (`after`), per pair. */
export interface ParseAB {
  pairs: number;
  stageWall: { before: Spread; after: Spread; afterOverBefore: Spread };
  parseOnlyCpu: { before: Spread; after: Spread; afterOverBefore: Spread };
  parseOnlyWall: { before: Spread; after: Spread; afterOverBefore: Spread };
}

async function parseAB(pool: MaskerPool, input: string, output: string, pairs: number): Promise<ParseAB> {
  // Copied: a line's bytes are a view into a buffer the next read reuses.
  const lines = Array.from(readJsonl(input), (line) => Buffer.from(line.bytes));
  const runs = { before: { stage: [] as number[], cpu: [] as number[], wall: [] as number[] }, after: { stage: [] as number[], cpu: [] as number[], wall: [] as number[] } };
  try {
    for (let p = 0; p < pairs + 1; p++) {
      for (const side of p % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const)) {
        useIdRun(side === 'after');
        const pass = await lapPass(pool, input, output);
        const only = parseOnlyPass(lines);
        // The first pair warms both sides up.
        if (p === 0) continue;
        runs[side].stage.push((pass.stages.parse * 1e6) / pass.tokens);
        runs[side].cpu.push((only.cpuMs * 1e6) / only.tokens);
        runs[side].wall.push((only.wallMs * 1e6) / only.tokens);
      }
    }
  } finally {
    useIdRun(true);
  }
  const of = (key: 'stage' | 'cpu' | 'wall') => ({
    before: spread(runs.before[key]),
    after: spread(runs.after[key]),
    afterOverBefore: spread(runs.after[key].map((x, i) => x / runs.before[key][i])),
  });
  return { pairs, stageWall: of('stage'), parseOnlyCpu: of('cpu'), parseOnlyWall: of('wall') };
}

export interface StageResult {
  tokens: number;
  /** Wall ms per stage of the first pass in the process (what the CLI pays). */
  coldStageMs: Record<Stage, number>;
  coldLoopMs: number;
  /** Wall ms per stage, min over the later passes. */
  stageMs: Record<Stage, number>;
  loopMs: number;
  /** JSON.parse alone over the same lines (min over reps); the rest of `parse` is field validation. */
  jsonParseMs: number;
  /** The real `runRollouts` (min over reps), for comparison with loopMs. */
  runRolloutsMs: number;
  /** MaskerPool.open: grammar + tokenizer (warm byte-table cache) + first Masker. */
  openMs: number;
  reps: number;
  /** Warm ns per token of each stage. */
  nsPerToken: Record<Stage, number>;
  /** `--ab` only. */
  parseAB?: ParseAB;
}

async function main() {
  const args = process.argv.slice(2);
  const [input, tokenizer] = args;
  const repsAt = args.indexOf('--reps');
  const reps = repsAt >= 0 ? Number(args[repsAt + 1]) : 3;
  const output = `${input}.stages-out.jsonl`;
  const t0 = now();
  const pool = await MaskerPool.open('search-r1', tokenizer, {});
  const openMs = now() - t0;

  const stageMs = Object.fromEntries(STAGES.map((s) => [s, Infinity])) as Record<Stage, number>;
  let loopMs = Infinity;
  let tokens = 0;
  let jsonParseMs = Infinity;
  let runRolloutsMs = Infinity;
  const cold = await lapPass(pool, input, output);
  for (let r = 0; r < reps; r++) {
    const pass = await lapPass(pool, input, output);
    tokens = pass.tokens;
    loopMs = Math.min(loopMs, pass.totalMs);
    for (const s of STAGES) stageMs[s] = Math.min(stageMs[s], pass.stages[s]);
    jsonParseMs = Math.min(jsonParseMs, (await jsonParsePass(input)).parseMs);
    const t = now();
    await runRollouts(pool, { input, output });
    runRolloutsMs = Math.min(runRolloutsMs, now() - t);
  }
  const ab = args.includes('--ab') ? await parseAB(pool, input, output, reps) : undefined;
  const round = (x: number) => +x.toFixed(1);
  const result: StageResult = {
    tokens,
    coldStageMs: Object.fromEntries(STAGES.map((s) => [s, round(cold.stages[s])])) as Record<Stage, number>,
    coldLoopMs: round(cold.totalMs),
    stageMs: Object.fromEntries(STAGES.map((s) => [s, round(stageMs[s])])) as Record<Stage, number>,
    loopMs: round(loopMs),
    jsonParseMs: round(jsonParseMs),
    runRolloutsMs: round(runRolloutsMs),
    openMs: round(openMs),
    reps,
    nsPerToken: Object.fromEntries(STAGES.map((s) => [s, +((stageMs[s] * 1e6) / tokens).toFixed(2)])) as Record<Stage, number>,
    parseAB: ab,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
