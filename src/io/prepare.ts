/**
 * From a shaped rollout to a masked one: text is tokenized, messages rendered with the chat template, token
 * shapes pass through; then the grammar's masker runs. Also the output forms of a mask (`--mask-format`,
 * `--observation-weight`, `--spans chars`).
 */
import type { Masker, MaskResult } from '../masker.ts';
import type { Span } from '../scan/spans.ts';
import type { Diagnostic } from '../diagnostics.ts';
import type { Grammar } from '../grammar/schema.ts';
import type { OptionValues } from '../scan/bind.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';
import { compareMasks, type Disagreement } from '../conformance.ts';
import { prepareMessages } from './chat.ts';
import { prepareText, tokenCharOffsets, tokenizeText } from './text.ts';
import { fieldIndex, givenInStream, type ShapedRollout, type TokenRollout } from './shapes.ts';

/** What masking a shaped rollout needs: MaskerPool has this shape. */
export interface MaskContext {
  tokenizer: LoadedTokenizer;
  grammar: { grammar: Grammar };
  get(options: OptionValues): Masker;
}

export interface Prepared {
  rollout: TokenRollout;
  /** Diagnostics from reading the rollout (re-tokenized text, stripped special tokens, template prefixes). */
  diagnostics: Diagnostic[];
  /** The text the tokens were made from (text and messages shapes). */
  source?: string;
}

export function prepareRollout(context: MaskContext, rollout: ShapedRollout, templateArgs?: Record<string, unknown>): Prepared {
  if (rollout.kind === 'tokens') return { rollout, diagnostics: [] };
  if (rollout.kind === 'text') return prepareText(context.tokenizer, context.grammar.grammar, rollout);
  return prepareMessages(context.tokenizer, rollout, templateArgs);
}

/** A rollout as token ids, without a grammar (detection reads text and messages this way, before any grammar is chosen). */
export function tokenizeRollout(tokenizer: LoadedTokenizer, rollout: ShapedRollout): TokenRollout {
  if (rollout.kind === 'tokens') return rollout;
  if (rollout.kind === 'text') return tokenizeText(tokenizer, rollout).rollout;
  return prepareMessages(tokenizer, rollout).rollout;
}

/** Mask a prepared rollout; the reading diagnostics come first, then the grammar's, by token. */
export function maskPrepared(context: MaskContext, prepared: Prepared): MaskResult {
  const { rollout } = prepared;
  const result = context.get(rollout.options).mask(rollout.tokens, { promptLength: rollout.promptLength });
  if (prepared.diagnostics.length) result.diagnostics = [...prepared.diagnostics, ...result.diagnostics].sort((a, b) => a.token - b.token);
  return result;
}

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
  return compareMasks(context.tokenizer.table, prepared.rollout.tokens, stream.mask, result, stream.shift)
    .flatMap((run) => {
      // Outside what the framework's mask covers there is nothing to compare (its prompt, in most frames).
      const start = Math.max(run.start, from);
      const end = Math.min(run.end, to);
      return start < end ? [{ ...run, start, end, field: fieldIndex(given, start) }] : [];
    });
}

export type MaskFormat = 'list' | 'runs';

/** `[[start, end], …]` of the action runs (end exclusive). */
export function actionRuns(mask: ArrayLike<number>): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1) continue;
    let end = i + 1;
    while (end < mask.length && mask[end] === 1) end++;
    runs.push([i, end]);
    i = end;
  }
  return runs;
}

/** Weights instead of 0/1: 1 on action, `observationWeight` elsewhere (Agent-R1-style world-model loss). */
export function weighted(mask: ArrayLike<number>, observationWeight: number): number[] {
  return Array.from(mask, (bit) => (bit === 1 ? 1 : observationWeight));
}

/** Spans with character offsets into the source text (`chars: [start, end]`, code points), where they map exactly. */
export function spansWithChars(spans: Span[], offsets: Int32Array | undefined): Array<Span & { chars?: [number, number] }> {
  if (!offsets) return spans;
  return spans.map((span) => ({ ...span, chars: [offsets[span.start], offsets[span.end]] as [number, number] }));
}

export { tokenCharOffsets };
