/**
 * Files through the library, line by line: `mask`/`check` (rollouts in, masks or verdicts out) and
 * `merge` (trajectories in, datums out). A bad line yields an output line with "error" and a message
 * naming the line; the others go on. What is said to people goes through `log`, worded by src/report.
 */
import type { MaskResult } from './masker.ts';
import { compareMasks, frameOf } from './conformance.ts';
import { JsonlWriter, OutputClosed, OutputError, readJsonlBatches } from './io/jsonl.ts';
import { readRolloutBytes, type RolloutLine } from './io/rollout.ts';
import { errorLine, idJson, idOf, messageOf, writable, writeCheckLine, writeMaskLine } from './io/lines.ts';
import { datumToJson, parseTrajectoryLine } from './io/trajectory.ts';
import { auditExtension, trajectoryToData } from './merge.ts';
import { formatDisagreement, formatFrame, formatSplit } from './report/text.ts';
import type { ByteTable } from './tokenizer/table.ts';
import type { MaskerPool } from './suites.ts';
import type { HtmlReport } from './report/html.ts';

/** What `runRollouts` reports progress to (the CLI's terminal line): bytes read, rollouts and tokens so far. */
export interface Progress {
  update(bytes: number, rollouts: number, tokens: number): void;
  done(): void;
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

export type Mode = 'mask' | 'check';

/** Stream rollouts from `input` through the masker into `output`; every rollout also goes into `html` when given. */
export async function runRollouts(pool: MaskerPool, input: string, output: string | undefined, mode: Mode, log: (line: string) => void, html?: HtmlReport, progress?: Progress): Promise<RunSummary> {
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
            writeCheckLine(writer, id, rollout.tokens.length, frame, disagreements, result.diagnostics);
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

/** Merge every trajectory of `input`; returns how many lines failed. `table` decodes the split report. */
export async function runMerge(input: string, output: string | undefined, table: ByteTable | undefined, log: (line: string) => void): Promise<number> {
  const writer = new JsonlWriter(output);
  let failed = 0;
  try {
    for await (const batch of readJsonlBatches(input)) {
      for (const line of batch) {
        const where = `${input === '-' ? '<stdin>' : input}:${line.number}`;
        let id: unknown = null;
        try {
          let value: unknown;
          try {
            value = JSON.parse(line.text);
          } catch (error) {
            throw new Error(`not valid JSON (${messageOf(error)})`);
          }
          const parsed = parseTrajectoryLine(value, where);
          id = parsed.id;
          const { trajectory, advantage } = parsed;
          const idText = idJson(id);
          const data = trajectoryToData(trajectory, advantage);
          if (data.length === 0) {
            throw new Error(trajectory.transitions.length === 0
              ? 'no transitions: nothing to merge'
              : `no datum: all ${trajectory.transitions.length} transitions are empty (no observation and no action tokens)`);
          }
          // Every line of this trajectory is made before any is written: a failure writes nothing half-done.
          const lines = data.map((datum, index) => `{"id":${idText},${JSON.stringify(datumToJson(null, index, datum)).slice('{"id":null,'.length)}\n`);
          for (const text of lines) writer.write(text);
          trajectory.transitions.forEach((transition, k) => {
            if (transition.ob.length === 0 && transition.ac.tokens.length === 0) log(`${where}: trajectory ${idText} transitions[${k}] is empty (no observation, no action tokens): it adds nothing`);
          });
          const audit = auditExtension(trajectory);
          for (const split of audit.splits) log(`${where}: ${formatSplit(idText, split, audit.cost, data.length, table)}`);
        } catch (error) {
          if (error instanceof OutputError || error instanceof OutputClosed) throw error;
          failed++;
          const message = messageOf(error);
          log(message.startsWith(where) ? message : `${where}: ${message}`);
          writer.write(errorLine(id ?? idOf(line.text), line.number, message));
        }
      }
    }
    writer.close();
  } catch (error) {
    writer.abort();
    throw error;
  }
  return failed;
}
