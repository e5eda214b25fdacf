/**
 * Where the CLI's time goes, stage by stage, in one process (no process startup):
 *
 *     npx tsx bench/stages.ts IN.jsonl TOKENIZER [--reps 3]     → one JSON line on stdout
 *
 * It runs the same loop as `runRollouts` (src/run.ts) with the same modules, and charges the wall
 * time between laps to the stage that ran: read (readJsonl: chunked read into one buffer, newline split),
 * parse (readRecord: ids read from bytes, the rest through JSON.parse), mask (Masker.mask: scan,
 * mask, spans, diagnostics), record (the summary's action count), serialize (writeMaskLine into the
 * JsonlWriter buffer), write (JsonlWriter flushes and rename; timed by wrapping its flush/close methods). A second pass times JSON.parse alone, and a third the real `runRollouts`.
 * Two figures per stage: `cold`, the first pass in the process (what the CLI pays: fresh memory is
 * page-faulted in, code is still being optimized), and `warm`, the minimum over the next `--reps` passes
 * (memory and code reused; on a shared machine the minimum is the least disturbed run).
 *
 * Run in its own process on purpose: it feeds the masker number[] ids, and the in-memory benchmark must
 * not see those shapes (V8 would make the shared scanner polymorphic).
 */
import { MaskerPool } from '../src/masker.ts';
import { runRollouts } from '../src/run.ts';
import { idJson, writeMaskLine } from '../src/io/lines.ts';
import { JsonlWriter, readJsonl } from '../src/io/jsonl.ts';
import { readRecord } from '../src/io/records.ts';
import type { TokenRollout } from '../src/io/shapes.ts';
import { now } from './timing.ts';

const STAGES = ['read', 'parse', 'mask', 'record', 'serialize', 'write'] as const;
type Stage = (typeof STAGES)[number];

let writeMs = 0;
function timeWriterIo(): void {
  // JsonlWriter's flush (private in TypeScript) and close do the file I/O: time them from outside.
  const proto = JsonlWriter.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ['flush', 'close']) {
    const original = proto[name];
    proto[name] = function (this: unknown, ...args: unknown[]) {
      const t0 = now();
      try {
        return original.apply(this, args);
      } finally {
        writeMs += now() - t0;
      }
    };
  }
}

async function lapPass(pool: MaskerPool, input: string, output: string): Promise<{ stages: Record<Stage, number>; tokens: number; totalMs: number }> {
  const stages = Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>;
  writeMs = 0;
  let tokens = 0;
  let action = 0;
  const writer = new JsonlWriter(output);
  const t0 = now();
  let mark = t0;
  const lap = (stage: Stage) => {
    const t = now();
    stages[stage] += t - mark;
    mark = t;
  };
  for (const line of readJsonl(input)) {
    lap('read');
    const rollout = readRecord(line, undefined, false).line.rollouts[0] as TokenRollout;
    lap('parse');
    const result = pool.get(rollout.options).mask(rollout.tokens, { promptLength: rollout.promptLength });
    lap('mask');
    tokens += result.mask.length;
    for (const span of result.spans) if (span.role === 'action') action += span.end - span.start;
    lap('record');
    writeMaskLine(writer, idJson(rollout.id), result);
    lap('serialize');
  }
  writer.close();
  lap('serialize');
  const totalMs = now() - t0;
  // Flushes happened inside serialize laps (and close): move their time to `write`.
  stages.serialize -= writeMs;
  stages.write = writeMs;
  if (action < 0) throw new Error('unreachable');
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

  timeWriterIo();
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
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
