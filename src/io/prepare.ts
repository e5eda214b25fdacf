/**
 * From a shaped rollout to a masked one: text is tokenized, messages rendered with the chat template, token
 * shapes pass through; then the grammar's masker runs. Auditing a given mask is io/audit.ts, the output
 * forms of a mask io/mask-forms.ts.
 */
import type { Masker, MaskResult } from '../masker.ts';
import type { Diagnostic } from '../diagnostics.ts';
import type { Grammar } from '../grammar/schema.ts';
import type { OptionValues } from '../scan/bind.ts';
import type { LoadedTokenizer } from '../tokenizer/load.ts';
import { prepareMessages } from './chat.ts';
import { prepareText, tokenizeText } from './text.ts';
import type { ShapedRollout, TokenRollout } from './shapes.ts';

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
