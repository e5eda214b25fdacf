/** `check`: the mask a rollout brings against the grammar's, in the framework's own frame and field names. */
import type { MaskResult } from '../masker.ts';
import { compareMasks, directionOf, partsOf, truncatedTurnStart, type Disagreement } from '../conformance.ts';
import { PATTERN_WORDS, patternOf, type Pattern } from '../patterns.ts';
import { textOf, type ByteTable } from '../tokenizer/table.ts';
import { fieldIndex, givenInStream, type GivenMask } from './shapes.ts';
import type { MaskContext, Prepared } from './prepare.ts';

/**
 * `check` in the framework's own frame: the mask the rollout brings against the grammar's, over the positions
 * the framework's mask covers (a response-only mask is compared on the response; OpenRLHF's shifted
 * action_mask in target space). Each run also names where it sits in the framework's field
 * (`response_mask[12]`). Undefined when the rollout brings no mask.
 */
export function auditPrepared(context: MaskContext, prepared: Prepared, result: MaskResult): Array<Disagreement & { field: string }> | undefined {
  const given = prepared.rollout.given;
  const stream = givenInStream(prepared.rollout);
  if (!given || !stream) return undefined;
  const from = given.start + given.shift;
  const to = from + given.values.length;
  const table = context.tokenizer.table;
  const tokens = prepared.rollout.tokens;
  const inRange = (field: string) => (run: Disagreement) => {
    // Outside what the framework's mask covers there is nothing to compare (its prompt, in most frames).
    const start = Math.max(run.start, from);
    const end = Math.min(run.end, to);
    return start < end ? [{ ...run, start, end, field: fieldIndex({ ...given, field }, start) }] : [];
  };
  // A signal's nonzero set (no mask) is checked where it trains only: an advantage of exactly 0 is legitimate.
  let runs = compareMasks(table, tokens, stream.mask, result, stream.shift)
    .filter((run) => !given.trainedOnly || run.given === 1)
    .flatMap(inRange(given.field));
  if (given.signals?.length) {
    // What trains besides the mask (tinker's advantages, weights): a token it trains where the mask says 0 and the
    // protocol says 0 trains all the same, a disagreement named by the signal's own field.
    for (const signal of given.signals) {
      const alone = stream.mask.map(() => 0);
      signal.values.forEach((bit, i) => { if (bit && !given.values[i]) alone[given.start + i] = 1; });
      runs = runs.concat(compareMasks(table, tokens, alone, result, stream.shift).filter((run) => run.given === 1).flatMap(inRange(signal.field)));
    }
    runs.sort((a, b) => a.start - b.start);
  }
  return given.padding ? runs.concat(paddingRuns(table, tokens, given)) : runs;
}

/**
 * Runs of 1 in the mask over padding the stream leaves out (verl's padded batch, where attention_mask is 0): padding
 * trained. Their token ranges continue the stream's (token n is the first padding position), as the framework's
 * padded field counts them.
 */
function paddingRuns(table: ByteTable, tokens: ArrayLike<number>, given: GivenMask): Array<Disagreement & { field: string }> {
  const { values, ids } = given.padding!;
  const n = tokens.length;
  const runs: Array<Disagreement & { field: string }> = [];
  const decode = (list: number[]) => textOf(table, list.filter((id) => id < table.size));
  for (let k = 0; k < values.length; k++) {
    if (!values[k]) continue;
    let end = k + 1;
    while (end < values.length && values[end]) end++;
    const start = n + k;
    runs.push({
      class: 'mask-mismatch', start, end: n + end, given: 1, protocol: 0, direction: directionOf(1, 0),
      parts: [{ code: 'padding', words: 'padding (attention_mask 0)', start, end: n + end }],
      before: textOf(table, tokens, Math.max(0, n - 4), n) + decode(ids.slice(Math.max(0, k - 4), k)),
      text: decode(ids.slice(k, end)),
      after: decode(ids.slice(end, end + 4)),
      field: `${given.field}[${given.values.length + k}]`,
    });
    k = end - 1;
  }
  return runs;
}

/**
 * The pattern the whole mask under audit follows (src/patterns.ts), given one value per token (`given`, input
 * frame) over the positions [from, to) it covers and the disagreements found there. The stop tokens the
 * protocol trains are read from tagmask's parts, only when something disagrees.
 */
export function patternOfAudit(table: ByteTable, tokens: ArrayLike<number>, given: ArrayLike<number>, result: MaskResult, runs: Disagreement[], from = 0, to = tokens.length): Pattern | undefined {
  if (!runs.length) return undefined;
  const stops: number[] = [];
  // A stop token the protocol trains ends a span of the model's (or opens the trailing text): its last token, named by its part.
  for (const span of result.spans) {
    for (const k of [span.end - 1, span.start]) {
      if (k < from || k >= to || !result.mask[k] || stops.includes(k)) continue;
      if (partsOf(table, tokens, result, k, k + 1)[0]?.code === 'stop-token') stops.push(k);
    }
  }
  return patternOf({ given, protocol: result.mask, from, to, runs, stops, truncatedFrom: truncatedTurnStart(table, tokens, result) });
}

/** patternOfAudit for a prepared rollout: its given mask laid on the stream's tokens, over what it covers. */
export function auditPattern(context: MaskContext, prepared: Prepared, result: MaskResult, runs: Disagreement[]): Pattern | undefined {
  const given = prepared.rollout.given;
  const stream = givenInStream(prepared.rollout);
  if (!given || !stream || !runs.length) return undefined;
  const from = given.start + given.shift;
  const to = from + given.values.length;
  const perToken = new Uint8Array(prepared.rollout.tokens.length);
  for (let i = from; i < to; i++) perToken[i] = stream.mask[i - stream.shift] ? 1 : 0;
  // Padding the stream leaves out is no part of the mask's shape over the stream; trained alone, it is a pattern of its own.
  // A signal's nonzero set is no mask with a shape; runs named by another signal are no part of the mask's shape.
  if (given.trainedOnly) return undefined;
  const inStream = runs.filter((run) => run.start < to && !(hasField(run) && !run.field.startsWith(`${given.field}[`)));
  if (!inStream.length) return runs.every((run) => run.parts.every((part) => part.code === 'padding')) ? { code: 'padding-trained', words: PATTERN_WORDS['padding-trained'] } : undefined;
  return patternOfAudit(context.tokenizer.table, prepared.rollout.tokens, perToken, result, inStream, from, to);
}

const hasField = (run: Disagreement): run is Disagreement & { field: string } => typeof (run as { field?: unknown }).field === 'string';

/** An option value the grammar documents under which a disagreeing rollout's masks agree: `--set option=value`. */
export interface OptionHint { option: string; value: number | null }

/** At most this many other option values are tried per disagreeing rollout (each is one more masking). */
export const MAX_HINT_TRIALS = 8;

/**
 * The option values that make a disagreeing rollout agree fully: each option the grammar documents with a
 * list of values (0/1 flags), tried one at a time at each value other than the one the rollout was masked
 * with, at most MAX_HINT_TRIALS in all. Call it only for rollouts that disagree.
 */
export function optionHints(context: MaskContext, prepared: Prepared): OptionHint[] {
  const { rollout } = prepared;
  const current = context.get(rollout.options).bound.options;
  const hints: OptionHint[] = [];
  let trials = 0;
  for (const [option, spec] of Object.entries(context.grammar.grammar.options)) {
    for (const value of spec.values ?? []) {
      if (value === current[option]) continue;
      if (trials++ >= MAX_HINT_TRIALS) return hints;
      let result: MaskResult;
      try {
        result = context.get({ ...rollout.options, [option]: value }).mask(rollout.tokens, { promptLength: rollout.promptLength });
      } catch {
        continue; // a stream this value cannot read is no hint
      }
      if (auditPrepared(context, prepared, result)?.length === 0) hints.push({ option, value });
    }
  }
  return hints;
}
