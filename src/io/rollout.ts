/**
 * Input lines: what a rollout line may hold, validated with messages that name the field and index.
 */
import type { OptionValues } from '../scan/bind.ts';
import { isObject, MAX_TOKEN_ID, tokenArray } from './json.ts';
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

let idBuffer = new Uint32Array(1 << 16);
/** A reused id buffer up to this size (16 MB) is kept between lines; a larger one only while lines need it. */
const ID_BUFFER_KEPT = 1 << 22;

/** Anything the byte reader does not expect goes through the plain reader, which decides. */
const slowPath = (bytes: Buffer) => readRolloutLine(bytes.toString('utf8'));
const TOKENS_KEY = Buffer.from('"tokens"');
const UNICODE_ESCAPE = Buffer.from('\\u');

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

/**
 * The line with its top-level `"tokens"` array read from the bytes (a view into a reused buffer) and the rest
 * parsed with that array left empty; undefined for anything unusual (the caller then parses the whole line).
 */
export function spliceTokens(bytes: Buffer): { value: Record<string, unknown>; ids: Uint32Array } | undefined {
  const key = bytes.indexOf(TOKENS_KEY);
  // The raw key must be the only one: a second `"tokens"` (nested or duplicated), or any `\u` escape (which
  // could spell another `"tokens"` key, `"\u0074okens"`), leaves the line to JSON.parse.
  if (key < 0 || bytes.indexOf(TOKENS_KEY, key + TOKENS_KEY.length) >= 0 || bytes.indexOf(UNICODE_ESCAPE) >= 0) return undefined;
  let at = key + TOKENS_KEY.length;
  const end = bytes.length;
  const space = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;
  while (at < end && space(bytes[at])) at++;
  if (bytes[at++] !== 0x3a) return undefined;
  while (at < end && space(bytes[at])) at++;
  if (bytes[at] !== 0x5b) return undefined;
  // Past the end a Buffer reads undefined, which no test below accepts: the loop cannot run away.
  const open = at++;
  // At most one id per two bytes (`1,`) from here on. A buffer grown for a huge line (44 M ids: 176 MB) is
  // let go once a normal line comes, instead of being held for the rest of the run.
  const most = ((end - at) >> 1) + 1;
  if (idBuffer.length < most) idBuffer = new Uint32Array(Math.max(most, idBuffer.length * 2));
  else if (idBuffer.length > ID_BUFFER_KEPT && most < idBuffer.length >> 3) idBuffer = new Uint32Array(Math.max(most, 1 << 16));
  const ids = idBuffer;
  let count = 0;
  let close = -1;
  // Digits and commas (spaces allowed around them); a value is a plain non-negative integer of at most
  // 10 digits. The loop is written for the common shape `[1,22,333]`.
  let c = bytes[at];
  while (c === 32 || c === 9 || c === 10 || c === 13) c = bytes[++at];
  if (c === 0x5d) close = at;
  else for (;;) {
    const first = at;
    let value = 0;
    while (c >= 0x30 && c <= 0x39) { value = value * 10 + (c - 0x30); c = bytes[++at]; }
    const digits = at - first;
    // JSON has no leading zeros (`007` is not a number): such a line is JSON.parse's to reject.
    if (digits === 0 || digits > 10 || value > MAX_TOKEN_ID || (digits > 1 && bytes[first] === 0x30)) return undefined;
    ids[count++] = value;
    while (c === 32 || c === 9 || c === 10 || c === 13) c = bytes[++at];
    if (c === 0x2c) {
      c = bytes[++at];
      while (c === 32 || c === 9 || c === 10 || c === 13) c = bytes[++at];
      continue;
    }
    if (c === 0x5d) { close = at; break; }
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8', 0, open + 1) + bytes.toString('utf8', close));
  } catch {
    return undefined;
  }
  // The array read must be the line's own top-level "tokens": the spliced line then holds `[]` there.
  if (!isObject(value) || !Array.isArray(value.tokens) || value.tokens.length !== 0) return undefined;
  return { value, ids: ids.subarray(0, count) };
}
