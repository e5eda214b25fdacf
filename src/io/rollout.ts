/**
 * Input lines: what a rollout line may hold, validated with messages that name the field and index.
 */
import type { OptionValues } from '../scan.ts';

export interface RolloutLine {
  id: unknown;
  tokens: number[];
  promptLength: number;
  options: OptionValues;
  /** A mask the rollout brings (for `check`): aligned with tokens, or with targets when one shorter. */
  mask?: number[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function tokenArray(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) throw new Error(`"${field}" must be an array of token ids`);
  for (let i = 0; i < value.length; i++) {
    const id = value[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
      throw new Error(`${field}[${i}]: expected a token id (non-negative integer), got ${JSON.stringify(id)}`);
    }
  }
  return value as number[];
}

function maskArray(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) throw new Error(`"${field}" must be an array of 0/1`);
  return value.map((item, i) => {
    // Float masks (tinker writes 0.0/1.0) and booleans are accepted; anything else is an error.
    if (item === 0 || item === 1) return item;
    if (item === true || item === false) return item ? 1 : 0;
    throw new Error(`${field}[${i}]: expected 0 or 1, got ${JSON.stringify(item)}`);
  });
}

/** A line's own grammar option values (`"options": {"max_obs_tokens": 500}`). */
export function readOptions(value: unknown): OptionValues {
  if (value === undefined) return {};
  if (!isObject(value)) throw new Error('"options" must be an object of grammar option values');
  for (const [key, item] of Object.entries(value)) {
    if (item !== null && typeof item !== 'number') throw new Error(`options.${key}: expected a number or null, got ${JSON.stringify(item)}`);
  }
  return value as OptionValues;
}

/**
 * Parse one rollout line: `{"id", "tokens", "prompt_length"?, "options"?, "mask"?}` or verl-style
 * `{"id", "prompt_ids", "response_ids", "response_mask"?}` (prompt = prompt_ids).
 */
export function readRolloutLine(text: string): RolloutLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`not valid JSON (${(error as Error).message})`);
  }
  if (!isObject(value)) throw new Error('a rollout line must be a JSON object');
  const options = readOptions(value.options);
  if (value.prompt_ids !== undefined || value.response_ids !== undefined) {
    const prompt = tokenArray(value.prompt_ids, 'prompt_ids');
    const response = tokenArray(value.response_ids, 'response_ids');
    const line: RolloutLine = { id: value.id, tokens: prompt.concat(response), promptLength: prompt.length, options };
    if (value.response_mask !== undefined) {
      const responseMask = maskArray(value.response_mask, 'response_mask');
      if (responseMask.length !== response.length) throw new Error(`response_mask has ${responseMask.length} entries for ${response.length} response_ids`);
      line.mask = new Array<number>(prompt.length).fill(0).concat(responseMask);
    }
    return line;
  }
  const tokens = tokenArray(value.tokens, 'tokens');
  let promptLength = -1;
  if (value.prompt_length !== undefined) {
    const length = value.prompt_length;
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) throw new Error(`prompt_length: expected a non-negative integer, got ${JSON.stringify(length)}`);
    if (length > tokens.length) throw new Error(`prompt_length ${length} is longer than the rollout (${tokens.length} tokens)`);
    promptLength = length;
  }
  const line: RolloutLine = { id: value.id, tokens, promptLength, options };
  if (value.mask !== undefined) {
    line.mask = maskArray(value.mask, 'mask');
    if (line.mask.length !== tokens.length && line.mask.length !== tokens.length - 1) {
      throw new Error(`mask has ${line.mask.length} entries for ${tokens.length} tokens (expected ${tokens.length}, or ${tokens.length - 1} in target space)`);
    }
  }
  return line;
}
