/**
 * `tagmask mask` and `tagmask check`: rollouts in, masks (or verdicts) out, one line per rollout.
 * A bad line yields an output line with "error" and a message on stderr naming the line; the others go on.
 */
import { Masker, type MaskResult } from '../index.ts';
import { loadGrammar } from '../grammar/load.ts';
import { needsAttributes, prepareAttributeReader } from '../attributes.ts';
import { loadTokenizer, type LoadedTokenizer } from '../tokenizer/load.ts';
import type { CompiledGrammar } from '../grammar/compile.ts';
import type { OptionValues } from '../scan/bind.ts';
import { compareMasks, formatDisagreement, formatFrame, frameOf } from '../conformance.ts';
import { JsonlWriter, OutputClosed, OutputError, readJsonlBatches } from '../io/jsonl.ts';
import { readRolloutBytes, type RolloutLine } from '../io/rollout.ts';
import type { HtmlReport } from '../report/html.ts';
import type { ProgressLine } from './terminal.ts';

/**
 * One Masker per distinct option set (rollouts may bring their own options). Binding a new set costs only
 * its small option arrays (the vocabulary tables are shared), so the pool keeps the most recently used
 * MAX_OPTION_SETS and drops the oldest: a file where every line has its own budget stays bounded in memory.
 */
export class MaskerPool {
  static readonly MAX_OPTION_SETS = 64;
  private readonly maskers = new Map<string, Masker>();
  constructor(readonly grammar: CompiledGrammar, readonly tokenizer: LoadedTokenizer, readonly options: OptionValues) {}

  get(lineOptions: OptionValues): Masker {
    const options = { ...this.options, ...lineOptions };
    const key = JSON.stringify(Object.entries(options).sort());
    let masker = this.maskers.get(key);
    if (masker) {
      // Most recently used last: Map keeps insertion order.
      this.maskers.delete(key);
    } else {
      masker = new Masker(this.grammar, this.tokenizer.table, options);
      if (this.maskers.size >= MaskerPool.MAX_OPTION_SETS) this.maskers.delete(this.maskers.keys().next().value!);
    }
    this.maskers.set(key, masker);
    return masker;
  }

  static async open(grammar: string, tokenizer: string, options: OptionValues): Promise<MaskerPool> {
    const compiled = loadGrammar(grammar);
    if (needsAttributes(compiled.grammar.tags)) await prepareAttributeReader();
    const pool = new MaskerPool(compiled, await loadTokenizer(tokenizer), options);
    pool.get({}); // bad --set values fail here, before any line is read
    return pool;
  }
}

export interface RunSummary {
  rollouts: number;
  failed: number;
  tokens: number;
  actionTokens: number;
  diagnostics: Map<string, number>;
  disagreeing: number;
  /** check: disagreeing runs by direction ("trains on environment text", "leaves model tokens untrained"). */
  directions: Map<string, number>;
  /** check: masks one shorter than their tokens, read in target space. */
  targetFrame: number;
}

function newSummary(): RunSummary {
  return { rollouts: 0, failed: 0, tokens: 0, actionTokens: 0, diagnostics: new Map(), disagreeing: 0, directions: new Map(), targetFrame: 0 };
}

function record(summary: RunSummary, result: MaskResult) {
  summary.rollouts++;
  summary.tokens += result.mask.length;
  for (const span of result.spans) if (span.role === 'action') summary.actionTokens += span.end - span.start;
  for (const item of result.diagnostics) summary.diagnostics.set(item.code, (summary.diagnostics.get(item.code) ?? 0) + 1);
}

type Mode = 'mask' | 'check';

/** Stream rollouts from `input` through the masker into `output`; every rollout also goes into `html` when given. */
export async function runRollouts(pool: MaskerPool, input: string, output: string | undefined, mode: Mode, log: (line: string) => void, html?: HtmlReport, progress?: ProgressLine): Promise<RunSummary> {
  const writer = new JsonlWriter(output);
  const summary = newSummary();
  const where = input === '-' ? '<stdin>' : input;
  try {
    let bytes = 0;
    for await (const batch of readJsonlBatches(input)) {
      for (const line of batch) {
        bytes += line.bytes.length + 1;
        let rollout: RolloutLine | undefined;
        try {
          rollout = readRolloutBytes(line.bytes);
          // The id goes back out as JSON; one that cannot be written (nested too deeply) fails its line here, before anything is written.
          const id = idJson(rollout.id);
          if (mode === 'check' && !rollout.mask) throw new Error('no mask to check: give "mask" (or verl-style "response_mask")');
          const result = pool.get(rollout.options).mask(rollout.tokens, { promptLength: rollout.promptLength });
          if (mode === 'mask') {
            writeMaskLine(writer, id, result);
            html?.add(pool.tokenizer.table, { id: rollout.id, tokens: rollout.tokens, result, source: `${where}:${line.number}` });
          } else {
            const frame = frameOf(rollout.mask!.length, rollout.tokens.length);
            const disagreements = compareMasks(pool.tokenizer.table, rollout.tokens, rollout.mask!, result, frame === 'targets' ? 1 : 0);
            const verdict = JSON.stringify({ agree: disagreements.length === 0, tokens: rollout.tokens.length, frame, disagreements, diagnostics: result.diagnostics });
            writer.write(`{"id":${id},${verdict.slice(1)}\n`);
            html?.add(pool.tokenizer.table, { id: rollout.id, tokens: rollout.tokens, result, audit: { mask: rollout.mask!, frame, disagreements }, source: `${where}:${line.number}` });
            if (disagreements.length) summary.disagreeing++;
            if (frame === 'targets') summary.targetFrame++;
            for (const run of disagreements) summary.directions.set(run.direction, (summary.directions.get(run.direction) ?? 0) + 1);
            if (disagreements.length && frame === 'targets') log(`${where}:${line.number}: ${formatFrame(rollout.id, rollout.mask!.length, rollout.tokens.length)}`);
            for (const run of disagreements) log(`${where}:${line.number}: ${formatDisagreement(rollout.id, run)}`);
          }
          // Counted only once its line is out: a rollout that failed is never counted as masked.
          record(summary, result);
        } catch (error) {
          // A failed write ends the run (the caller removes the temporary output); anything else is this line's failure.
          if (error instanceof OutputError || error instanceof OutputClosed) throw error;
          summary.failed++;
          const message = messageOf(error);
          log(`${where}:${line.number}: ${message}`);
          const id = rollout ? rollout.id : idOf(line.text);
          writer.write(errorLine(id, line.number, message));
          html?.add(pool.tokenizer.table, { id: writable(id), tokens: [], error: message, source: `${where}:${line.number}` });
        }
      }
      progress?.update(bytes, summary.rollouts + summary.failed, summary.tokens);
    }
    progress?.done();
    writer.close();
  } catch (error) {
    progress?.done();
    writer.abort();
    throw error;
  }
  return summary;
}

/** A thrown value's message, whatever was thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `id` as JSON; throws (a line error) when it cannot be written, e.g. nested thousands of levels deep. */
export function idJson(id: unknown): string {
  try {
    return JSON.stringify(id ?? null) ?? 'null';
  } catch (error) {
    throw new Error(`"id" cannot be written back as JSON (${messageOf(error)})`);
  }
}

/** The id itself when it can be written as JSON, else null. */
function writable(id: unknown): unknown {
  try { idJson(id); return id; } catch { return null; }
}

/** The output line of a failed input line. Never throws: an id that cannot be written becomes null. */
export function errorLine(id: unknown, line: number, message: string): string {
  return `{"id":${JSON.stringify(writable(id) ?? null)},"line":${line},"error":${JSON.stringify(message)}}\n`;
}

/** The id of a line that failed validation, if it can still be read. */
export function idOf(text: string): unknown {
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as { id?: unknown }).id ?? null : null;
  } catch {
    return null;
  }
}

const tagJson = new Map<string, string>();

/** The output line, written piece by piece: the same JSON as JSON.stringify, without building the object twice. `id` is already JSON. */
export function writeMaskLine(writer: JsonlWriter, id: string, result: MaskResult) {
  writer.write(`{"id":${id},"mask":`);
  writer.writeMask(result.mask);
  let spans = ',"spans":[';
  let first = true;
  for (const span of result.spans) {
    let tag = tagJson.get(span.tag);
    if (tag === undefined) { tag = JSON.stringify(span.tag); tagJson.set(span.tag, tag); }
    const attrs = span.attrs ? `,"attrs":${JSON.stringify(span.attrs)}` : '';
    spans += `${first ? '' : ','}{"role":"${span.role}","tag":${tag},"start":${span.start},"end":${span.end}${attrs}}`;
    first = false;
    // A rollout with a million spans: hand them over in pieces rather than as one huge string.
    if (spans.length > 1 << 16) { writer.write(spans); spans = ''; }
  }
  writer.write(`${spans}],"diagnostics":[`);
  const diagnostics = result.diagnostics;
  for (let i = 0; i < diagnostics.length; i++) writer.write(`${i ? ',' : ''}${JSON.stringify(diagnostics[i])}`);
  writer.write(']}\n');
}

export function formatSummary(summary: RunSummary, mode: Mode): string {
  const share = summary.tokens ? ((100 * summary.actionTokens) / summary.tokens).toFixed(1) : '0.0';
  const codes = [...summary.diagnostics].sort((a, b) => b[1] - a[1]).map(([code, count]) => `${code}×${count}`).join(', ');
  const parts = [`${summary.rollouts} rollouts masked (${summary.tokens} tokens, ${share}% action)`];
  if (mode === 'check') {
    parts.push(`${summary.rollouts - summary.disagreeing} agree, ${summary.disagreeing} disagree`);
    for (const [direction, runs] of summary.directions) parts.push(`${runs} run(s) where the given mask ${direction}`);
    if (summary.targetFrame) parts.push(`${summary.targetFrame} mask(s) one shorter than their tokens, read in target space`);
  }
  if (summary.failed) parts.push(`${summary.failed} failed`);
  if (codes) parts.push(`diagnostics: ${codes}`);
  return parts.join('; ');
}
