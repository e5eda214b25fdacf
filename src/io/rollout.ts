/**
 * Input lines: what a rollout line may hold, validated with messages that name the field and index.
 */
import type { OptionValues } from '../scan/bind.ts';
import { isObject, tokenArray } from './json.ts';
import { spliceTokens } from './records.ts';
import { maskValues, promptLengthOf, readOptions } from './shapes.ts';

export interface RolloutLine {
  id: unknown;
  /** From `readRolloutBytes`: a view into a reused buffer, valid until the next line is read. */
  tokens: ArrayLike<number>;
  promptLength: number;
  options: OptionValues;
  /** A mask the rollout brings (for `check`): aligned with tokens, or with targets when one shorter. */
  mask?: number[];
}

export { tokenArray };

export { readOptions };

/**
 * Parse one rollout line: `{"id", "tokens", "prompt_length"?, "options"?, "mask"?}` or verl-style
 * `{"id", "prompt_ids", "response_ids", "response_mask"?}` (prompt = prompt_ids), or a tinker datum
 * `{"id", "tokens", "target_tokens", "mask"}` (`tagmask merge` output: the mask is in target space).
 */
export function readRolloutLine(text: string): RolloutLine {
  // A JSON text may begin with a byte order mark (RFC 8259 §8.1): ignored, as the line reader does.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`);
  }
  return rolloutFromJson(value);
}

function rolloutFromJson(value: unknown, tokensRead?: Uint32Array): RolloutLine {
  if (!isObject(value)) throw new Error('a rollout line must be a JSON object');
  const options = readOptions(value.options);
  if (value.prompt_ids !== undefined || value.response_ids !== undefined) {
    const prompt = tokenArray(value.prompt_ids, 'prompt_ids');
    const response = tokenArray(value.response_ids, 'response_ids');
    const line: RolloutLine = { id: value.id, tokens: prompt.concat(response), promptLength: prompt.length, options };
    if (value.response_mask !== undefined) {
      const responseMask = maskValues(value.response_mask, 'response_mask');
      if (responseMask.length !== response.length) throw new Error(`response_mask has ${responseMask.length} entries for ${response.length} response_ids`);
      line.mask = new Array<number>(prompt.length).fill(0).concat(responseMask);
    }
    return line;
  }
  let tokens: ArrayLike<number> = tokensRead ?? tokenArray(value.tokens, 'tokens');
  if (value.target_tokens !== undefined) {
    // A tinker datum (`tagmask merge` output): `tokens` is the model input, all but the last token.
    const targets = tokenArray(value.target_tokens, 'target_tokens');
    if (targets.length !== tokens.length) throw new Error(`target_tokens has ${targets.length} entries for ${tokens.length} tokens`);
    if (targets.length > 0) tokens = [...Array.from(tokens), targets[targets.length - 1]];
  }
  const line: RolloutLine = { id: value.id, tokens, promptLength: promptLengthOf(value, tokens.length), options };
  if (value.mask !== undefined) {
    line.mask = maskValues(value.mask, 'mask');
    if (line.mask.length !== tokens.length && line.mask.length !== tokens.length - 1) {
      throw new Error(`mask has ${line.mask.length} entries for ${tokens.length} tokens (expected ${tokens.length}, or ${tokens.length - 1} in target space)`);
    }
  }
  return line;
}

/** Anything the byte reader does not expect goes through the plain reader, which decides. */
const slowPath = (bytes: Buffer) => readRolloutLine(bytes.toString('utf8'));

/**
 * `readRolloutLine` for the CLI's hot path: the `"tokens"` array (most of a line's bytes) is read straight
 * from the bytes into a reused Uint32Array, and only the rest of the line goes through JSON.parse
 * (JSON.parse of long number arrays was the CLI's largest cost: bench/README.md). Anything unusual falls
 * back to the plain reader, so both accept and reject exactly the same lines.
 */
export function readRolloutBytes(bytes: Buffer): RolloutLine {
  const spliced = spliceTokens(bytes);
  return spliced ? rolloutFromJson(spliced.value, spliced.ids) : slowPath(bytes);
}

